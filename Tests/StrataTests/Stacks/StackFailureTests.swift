import Dispatch
import Foundation
import Testing

@testable import Strata

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Failure and lifecycle paths of the stack presets: write/fsync failures, closing, refused
/// writer saves, and what the asynchronous presets (`nested`, `hybrid`) report.
///
/// Every wait is on an event with a hard timeout (a stream element, a gate, a task's
/// completion); nothing sleeps to let something happen.
@Suite struct StackFailureTests {
    static let models: [ManagedObject.Type] = [Artist.self, Album.self, Song.self]

    // MARK: - Helpers

    /// Holds one context operation (reported through the coordinator's observer, on the
    /// context's own executor) until released: the context's thread waits inside it while
    /// the test lines up other work.
    final class EventGate: Sendable {
        private struct State {
            var armed: (context: String, operation: ContextEvent.Operation)?
            var holding = false
        }

        private let state = Locked(State())
        private let release = DispatchSemaphore(value: 0)

        func arm(_ context: String, _ operation: ContextEvent.Operation) {
            state.withLock { $0.armed = (context, operation) }
        }

        var isHolding: Bool { state.withLock { $0.holding } }

        func releaseHeld() { release.signal() }

        func observe(_ event: ContextEvent) {
            let hold = state.withLock { s -> Bool in
                guard let armed = s.armed, armed.context == event.context, armed.operation == event.operation else { return false }
                s.armed = nil
                s.holding = true
                return true
            }
            guard hold else { return }
            _ = release.wait(timeout: .now() + .seconds(60 * TestTiming.slowdown))
            state.withLock { $0.holding = false }
        }
    }

    /// Saves through the stack and, where the preset writes asynchronously, waits (with a
    /// timeout) for the writer's outcome, throwing its error.
    static func saveDurably(_ stack: Stack, _ context: ObjectContext, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let outcomes = stack.writerSaves()
        try await stack.save(context)
        guard stack.savesAsynchronously(context) else { return }
        guard let outcome = await firstElement(of: outcomes, timeout: .seconds(30)) else {
            Issue.record("no writer outcome within 30 s", sourceLocation: sourceLocation)
            return
        }
        if let error = outcome.error { throw error }
    }

    /// Whether `task` finishes within `timeout` (it is not cancelled either way). Returns
    /// at the deadline even if the task is still running (a task group would wait for it).
    static func finishes<T: Sendable>(_ task: Task<T, any Error>, within timeout: Duration) async -> Bool {
        let pending = Locked<CheckedContinuation<Bool, Never>?>(nil)
        return await withCheckedContinuation { continuation in
            pending.withLock { $0 = continuation }
            Task {
                _ = await task.result
                pending.withLock { c in defer { c = nil }; return c }?.resume(returning: true)
            }
            Task {
                try? await Task.sleep(for: timeout * TestTiming.slowdown)
                pending.withLock { c in defer { c = nil }; return c }?.resume(returning: false)
            }
        }
    }

    /// Whether a stream ends (rather than staying open) within `timeout`.
    static func ends<Element: Sendable>(_ stream: AsyncStream<Element>, within timeout: Duration) async -> Bool {
        await returns(within: timeout) {
            for await _ in stream {}
            return true
        }
    }

    static func insertArtist(_ context: ObjectContext, id artistID: Int, name: String) async -> ObjectID {
        await context.perform { c in
            let artist = c.insert(Artist.self)
            artist.artistID = artistID
            artist.name = name
            return artist.objectID
        }
    }

    // MARK: - A poisoned store: later saves are refused, in every preset

    /// After a failed fsync poisons the journal, a later save is refused with a typed
    /// `poisoned` error in every preset — also the ones whose writer saves asynchronously
    /// (their saves through the view once went on to a writer that could never write them).
    @Test("after a failed fsync, stack saves are refused with `poisoned`", arguments: StackPreset.allCases)
    func poisonedStoreRefusesStackSaves(preset: StackPreset) async throws {
        let faults = FaultInjectingFileIO(wrapping: InMemoryFileIO())
        let store = try Store.create(at: "/store", schema: Fixtures.songbook,
                                     configuration: Store.Configuration(durability: .full, fileIO: faults))
        let stack = Stack(preset, store: store, modelClasses: Self.models)
        await stack.start()
        let view = stack.viewContext
        _ = await Self.insertArtist(view, id: 1, name: "acknowledged")
        try await Self.saveDurably(stack, view)

        // Every fsync from now on fails.
        faults.inject(.init(callIndex: 0, kind: .error(EIO), persistence: .forever, operations: [.sync]))
        _ = await Self.insertArtist(view, id: 2, name: "meets the failure")
        var first: StoreError?
        do { try await Self.saveDurably(stack, view) } catch { first = error as? StoreError; #expect(first != nil, "\(error)") }
        #expect(first?.code == .poisoned, "\(preset): the failing save is reported as poisoned: \(String(describing: first))")
        #expect(store.journal.failure != nil, "\(preset): the journal is poisoned")

        // A later save through the view context must be refused, not accepted.
        _ = await Self.insertArtist(view, id: 3, name: "after the failure")
        let later = await #expect(throws: StoreError.self, "\(preset): a save through the view after poisoning") {
            try await stack.save(view)
        }
        #expect(later?.code == .poisoned, "\(preset)")

        // So must an import context's save.
        let importer = stack.newImportContext()
        _ = await Self.insertArtist(importer, id: 4, name: "import after the failure")
        let imported = await #expect(throws: StoreError.self, "\(preset): an import save after poisoning") {
            try await stack.save(importer)
        }
        #expect(imported?.code == .poisoned, "\(preset)")
        await store.close()
    }

    // MARK: - A closed store: an editor's save is refused, in every preset

    /// Saving an editor after the store underneath the stack was closed throws `closed` in
    /// every preset.
    @Test("saving an editor after the store closed throws `closed`", arguments: StackPreset.allCases)
    func closedStoreRefusesEditorSave(preset: StackPreset) async throws {
        let store = try Store.create(at: "/store", schema: Fixtures.songbook,
                                     configuration: Store.Configuration(durability: .relaxed, fileIO: InMemoryFileIO()))
        let stack = Stack(preset, store: store, modelClasses: Self.models)
        await stack.start()
        let id = await Self.insertArtist(stack.viewContext, id: 1, name: "saved")
        try await Self.saveDurably(stack, stack.viewContext)
        let editor = await stack.newEditorContext()
        await editor.perform { c in c.object(with: id, as: Artist.self).name = "edited after close" }
        await store.close()
        await store.close()  // a second close neither hangs nor traps
        let error = await #expect(throws: StoreError.self, "\(preset): an editor's save after the store closed") {
            try await stack.save(editor)
        }
        #expect(error?.code == .closed, "\(preset)")
    }

    // MARK: - One refused writer save wedges every later one (hybrid)

    /// Under `hybrid`, the view hands an insert with unique key 77 to the writer; before the
    /// writer writes it, an import commits another object with key 77. The writer's save is
    /// refused (`uniqueViolation`, reported, naming the dropped object); the view shows the
    /// store's state again, and an unrelated later save is written (left pending, the refused
    /// insert once failed every later writer save).
    @Test("a refused writer save does not stop later, unrelated saves from being written")
    func refusedWriterSaveWedgesLaterSaves() async throws {
        let directory = TemporaryDirectory("strata-stack-failure-wedge")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let gate = EventGate()
        let stack = Stack(.hybrid, store: store, modelClasses: Self.models, observer: { gate.observe($0) })
        await stack.start()
        let view = stack.viewContext

        _ = await Self.insertArtist(view, id: 77, name: "view's")
        let firstOutcomes = stack.writerSaves()
        // Hold the writer just after it has taken the view's changes, before it writes them.
        gate.arm("writer", .applyChildSave)
        let handOver = Task { try await stack.save(view) }
        try #require(await eventually(within: 30) { gate.isHolding }, "the writer takes the view's save")
        let importer = stack.newImportContext()
        _ = await Self.insertArtist(importer, id: 77, name: "import's")
        try await importer.save()
        gate.releaseHeld()
        try await handOver.value

        let first = await firstElement(of: firstOutcomes, timeout: .seconds(30))
        try #require(first != nil, "the writer reports its save")
        #expect(first?.error?.code == .uniqueViolation, "the clash is reported: \(String(describing: first?.error))")
        #expect(first?.droppedObjects.count == 1, "the refused insert is named")
        let holders = try await view.perform { c in
            try c.fetch(FetchRequest(entity: "Artist", predicate: try! ObjectPredicate(format: "artistID == 77"))).map { try $0.value(forKey: "name") }
        }
        #expect(holders.count == 1 && holders.first == .string("import's"), "the view shows the store's state: \(holders)")

        // An unrelated save afterwards.
        let laterOutcomes = stack.writerSaves()
        let unrelated = await Self.insertArtist(view, id: 78, name: "unrelated, later")
        var refused: StoreError?
        do { try await stack.save(view) } catch { refused = error }
        if refused == nil {
            let later = await firstElement(of: laterOutcomes, timeout: .seconds(30))
            #expect(later?.error == nil,
                    "a later, unrelated save was accepted by stack.save but its writer save failed: \(String(describing: later?.error))")
            #expect(store.currentGeneration.value(unrelated, "artistID") == .int(78), "the unrelated save is durable")
        }
        await store.close()
    }

    // MARK: - Closing the stack keeps every save the writer had accepted

    /// `stack.save(view)` under `nested`/`hybrid` returns once the writer has the changes.
    /// `stack.close()` waits for the writer's saves (here the writer is held while it
    /// validates and captures them) before it closes the store, so the reopened store has them.
    @Test("closing the stack keeps every save it accepted", arguments: [StackPreset.nested, .hybrid])
    func closeKeepsAcceptedSaves(preset: StackPreset) async throws {
        let directory = TemporaryDirectory("strata-stack-failure-close")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let gate = EventGate()
        let stack = Stack(preset, store: store, modelClasses: Self.models, observer: { gate.observe($0) })
        await stack.start()
        let id = await Self.insertArtist(stack.viewContext, id: 5, name: "accepted")
        let outcomes = stack.writerSaves()
        gate.arm("writer", .save)
        try await stack.save(stack.viewContext)
        try #require(await eventually(within: 30) { gate.isHolding }, "the writer starts its save")
        let closing = Task { await stack.close() }
        gate.releaseHeld()
        let closed = await Self.finishes(Task { await closing.value }, within: .seconds(30))
        #expect(closed, "stack.close() returned")
        await closing.value
        let outcome = await firstElement(of: outcomes, timeout: .seconds(30))
        #expect(outcome?.error == nil, "\(preset): the writer's save of accepted changes failed: \(String(describing: outcome?.error))")
        let reopened = try StoreTesting.open(in: directory, durability: .relaxed)
        #expect(reopened.currentGeneration.object(id) != nil, "\(preset): a save the stack accepted is in the reopened store")
        await reopened.close()
    }

    /// `stack.close()` while the view's save into the writer is still running (the writer
    /// is held while it takes the view's changes): the close waits for that save too, so the
    /// save reported done is written and in the reopened store. (The close once went ahead,
    /// closed the store under it, and the save — reported done — was lost, never reported
    /// on `writerSaves()`.)
    @Test("closing the stack during a save through the view keeps that save", arguments: [StackPreset.nested, .hybrid])
    func closeDuringHandOverKeepsSave(preset: StackPreset) async throws {
        let directory = TemporaryDirectory("strata-stack-failure-close-handover")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let gate = EventGate()
        let stack = Stack(preset, store: store, modelClasses: Self.models, observer: { gate.observe($0) })
        await stack.start()
        let id = await Self.insertArtist(stack.viewContext, id: 7, name: "accepted while closing")
        let outcomes = stack.writerSaves()
        gate.arm("writer", .applyChildSave)
        let saving = Task { try await stack.save(stack.viewContext) }
        try #require(await eventually(within: 30) { gate.isHolding }, "the writer takes the view's save")
        let closing = Task { await stack.close() }
        gate.releaseHeld()
        #expect(await Self.finishes(Task { await closing.value }, within: .seconds(30)), "stack.close() returned")
        try await saving.value
        var reported: [Stack.WriterSaveOutcome] = []
        for await outcome in outcomes { reported.append(outcome) }
        #expect(reported.count == 1 && reported.first?.error == nil, "\(preset): the writer's save is reported: \(reported.map(\.error))")
        let reopened = try StoreTesting.open(in: directory, durability: .relaxed)
        #expect(reopened.currentGeneration.object(id) != nil, "\(preset): the save stack.save reported done is in the reopened store")
        await reopened.close()
    }

    /// The plain pattern, no gate: save through the view, then close the stack.
    @Test("save through the view then close the stack: the save is in the reopened store", arguments: [StackPreset.nested, .hybrid])
    func saveThenCloseKeepsSave(preset: StackPreset) async throws {
        var lost = 0
        for round in 0..<5 {
            let directory = TemporaryDirectory("strata-stack-failure-close-plain")
            defer { directory.remove() }
            let store = try StoreTesting.create(in: directory, durability: .relaxed)
            let stack = Stack(preset, store: store, modelClasses: Self.models)
            await stack.start()
            let id = await Self.insertArtist(stack.viewContext, id: round + 1, name: "accepted")
            try await stack.save(stack.viewContext)
            await stack.close()
            let reopened = try StoreTesting.open(in: directory, durability: .relaxed)
            if reopened.currentGeneration.object(id) == nil { lost += 1 }
            await reopened.close()
        }
        #expect(lost == 0, "\(preset): \(lost) of 5 saves that stack.save accepted were not in the reopened store")
    }

    // MARK: - The writer's stream after close

    /// `writerSaves()` ends when the store closes (as `Store.commits()` and a coordinator's
    /// `didSave()` do), so `for await outcome in ...` does not hang.
    @Test("writerSaves() ends when the store is closed", arguments: [StackPreset.nested, .hybrid])
    func writerSavesEndsOnClose(preset: StackPreset) async throws {
        let store = try Store.create(at: "/store", schema: Fixtures.songbook,
                                     configuration: Store.Configuration(durability: .relaxed, fileIO: InMemoryFileIO()))
        let stack = Stack(preset, store: store, modelClasses: Self.models)
        await stack.start()
        let outcomes = stack.writerSaves()
        let commits = store.commits()
        let didSave = stack.coordinator.didSave()
        await store.close()
        #expect(await Self.ends(commits, within: .seconds(10)), "the store's own stream ends")
        #expect(await Self.ends(didSave, within: .seconds(10)), "the coordinator's stream ends")
        #expect(await Self.ends(outcomes, within: .seconds(10)), "\(preset): writerSaves() is still open after the store closed")
    }

    // MARK: - Handing over to the writer waits for the disk

    /// Under `nested`/`hybrid` the view's save "returns once the writer has the changes",
    /// also while the writer's previous save waits for its fsync (a writer writing and
    /// syncing on its own queue once held the hand-over until the disk answered).
    @Test("a view save returns while the writer's previous fsync is in progress", arguments: [StackPreset.nested, .hybrid])
    func viewSaveDoesNotWaitForWritersFsync(preset: StackPreset) async throws {
        let gate = SyncGate()
        let io = HookedFileIO(wrapping: InMemoryFileIO(), hook: { gate.observe($0) })
        let store = try Store.create(at: "/store", schema: Fixtures.songbook,
                                     configuration: Store.Configuration(durability: .full, fileIO: io))
        let stack = Stack(preset, store: store, modelClasses: Self.models)
        await stack.start()
        let view = stack.viewContext
        _ = await Self.insertArtist(view, id: 1, name: "warm-up")
        try await Self.saveDurably(stack, view)
        await store.journal.flush()

        gate.hold(sync: gate.syncs)
        let outcomes = stack.writerSaves()
        _ = await Self.insertArtist(view, id: 2, name: "first")
        try await stack.save(view)
        try #require(await eventually(within: 30) { gate.isHolding }, "the writer's fsync is held")

        _ = await Self.insertArtist(view, id: 3, name: "second")
        let second = Task { try await stack.save(view) }
        let returned = await Self.finishes(second, within: .seconds(10))
        #expect(returned, "\(preset): handing the view's save to the writer waited for the writer's fsync")
        gate.releaseHeld()
        try await second.value
        let outcome = await firstElement(of: outcomes, timeout: .seconds(30))
        #expect(outcome?.error == nil)
        await store.close()
    }

    // MARK: - Cancellation and refused child saves

    /// A save in a cancelled task still completes as a whole (nothing checks cancellation
    /// half-way), and a failed save into a parent changes nothing there.
    @Test("cancellation and refused child saves leave consistent state", arguments: [StackPreset.mainParent, .hybrid])
    func cancellationAndRefusedChildSave(preset: StackPreset) async throws {
        let directory = TemporaryDirectory("strata-stack-failure-holds")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let stack = Stack(preset, store: store, modelClasses: Self.models)
        await stack.start()
        let editor = await stack.newEditorContext()
        let id = await Self.insertArtist(editor, id: 9, name: "cancelled task")
        let outcomes = stack.writerSaves()
        let task = Task { try await stack.save(editor) }
        task.cancel()
        try await task.value
        if stack.savesAsynchronously(editor) {
            let outcome = await firstElement(of: outcomes, timeout: .seconds(30))
            #expect(outcome != nil && outcome?.error == nil)
        }
        #expect(store.currentGeneration.object(id) != nil)

        // A refused child save (validation) leaves the parent unchanged.
        let child = await stack.newEditorContext()
        await child.perform { c in
            let song = c.insert(Song.self)
            song.songID = StoreTesting.uuid(1)
            song.title = "forbidden"
            song.milliseconds = 1
            c.object(with: id, as: Artist.self).name = "changed with a bad song"
        }
        let error = await #expect(throws: StoreError.self) { try await stack.save(child) }
        #expect(error?.code == .validationFailed)
        let viewChanged = await stack.viewContext.hasChanges
        #expect(!viewChanged)
        await store.close()
    }
}

extension StackFailureTests {
    /// The store (not the stack) closes while the view's save is being handed to the writer:
    /// `save(_:)` has accepted it, so it is written or reported on `writerSaves()` with
    /// `closed`. (The stream ended after the writer's last save, before the hand-over ended:
    /// the save, reported done, was neither written nor reported.)
    @Test("a save handed to the writer while the store closes is written or reported", arguments: [StackPreset.nested, .hybrid])
    func storeClosedDuringHandOver(preset: StackPreset) async throws {
        let directory = TemporaryDirectory("strata-stack-handover")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let gate = EventGate()
        let stack = Stack(preset, store: store, modelClasses: Self.models, observer: { gate.observe($0) })
        await stack.start()
        let id = await Self.insertArtist(stack.viewContext, id: 7, name: "handed over")
        let outcomes = stack.writerSaves()
        gate.arm("writer", .applyChildSave)  // hold the writer while it takes the view's changes
        let saving = Task { try await stack.save(stack.viewContext) }
        try #require(await eventually(within: 30) { gate.isHolding })
        await store.close()
        gate.releaseHeld()
        try await saving.value
        let outcome = await firstElement(of: outcomes, timeout: .seconds(20))
        let reopened = try StoreTesting.open(in: directory, durability: .relaxed)
        let durable = reopened.currentGeneration.object(id) != nil
        await reopened.close()
        #expect(durable || outcome?.error?.code == .closed, "\(preset): outcome \(String(describing: outcome)), durable: \(durable)")
    }
}
