import Dispatch
import Foundation
import Testing
@testable import Strata

/// Holds one context's save on its own queue, right after it captured its changes, until
/// released: a deterministic way to let another commit land while the save is in flight.
/// It holds the first `saves` such saves, each until ``open()``. With `operation`
/// ``ContextEvent/Operation/applyChildSave``, it holds the context right after it applied a child's
/// save instead (the child's actor is free meanwhile).
final class SaveGate: Sendable {
    private let context: String
    private let operation: ContextEvent.Operation
    private let armed: Locked<Int>
    private let release = DispatchSemaphore(value: 0)
    private let (reached, reachedContinuation) = AsyncStream.makeStream(of: Void.self)

    init(context: String, operation: ContextEvent.Operation = .save, saves: Int = 1) {
        self.context = context
        self.operation = operation
        armed = Locked(saves)
    }

    /// The stack's observer: blocks the first saves of `context` that captured something.
    var observer: ContextObserver {
        { [self] event in
            guard event.context == context, event.operation == operation, event.objectCount > 0 else { return }
            let held = armed.withLock { armed in
                defer { armed = max(armed - 1, 0) }
                return armed > 0
            }
            guard held else { return }
            reachedContinuation.yield()
            _ = release.wait(timeout: .now() + .seconds(30 * TestTiming.slowdown))
        }
    }

    /// Waits until the next save is held.
    func waitUntilHeld() async -> Bool {
        await firstElement(of: reached, timeout: .seconds(10)) != nil
    }

    func open() { release.signal() }
}

@Suite struct StackConsistencyTests {
    /// A hybrid stack over a seeded store whose writer's first save is held by a gate.
    struct GatedHybrid {
        let directory = TemporaryDirectory("strata-stack-consistency")
        let store: Store
        let gate: SaveGate
        let stack: Stack
        let objects: ConstraintTests.Objects
        let outcomes: AsyncStream<Stack.WriterSaveOutcome>
        var writer: ObjectContext { stack.writerContext! }
        var view: ObjectContext { stack.viewContext }

        /// `started: false` leaves the stack not started: the merges a started stack makes
        /// by itself are landed by hand, in the order a test needs.
        init(gate: SaveGate = SaveGate(context: "writer"), started: Bool = true) async throws {
            self.gate = gate
            store = try StoreTesting.create(in: directory, durability: .relaxed)
            stack = Stack(.hybrid, store: store, modelClasses: [Artist.self, Album.self, Song.self], observer: gate.observer)
            if started { await stack.start() }
            objects = try await seedSongbook(store)
            outcomes = stack.writerSaves()
        }
    }

    /// The next outcome of the writer's asynchronous saves, or `nil` after a hard timeout.
    static func nextOutcome(_ outcomes: AsyncStream<Stack.WriterSaveOutcome>) async -> Stack.WriterSaveOutcome? {
        await firstElement(of: outcomes, timeout: .seconds(10))
    }

    @Test("hybrid: one conflicting asynchronous writer save does not make every later view save fail")
    func writerConflictDoesNotWedgeLaterSaves() async throws {
        let h = try await GatedHybrid()
        defer { h.directory.remove() }
        let (store, gate, stack, o, outcomes) = (h.store, h.gate, h.stack, h.objects, h.outcomes)

        // The user renames a1; the save returns once the writer has it.
        await stack.viewContext.perform { c in c.object(with: o.a1, as: Artist.self).name = "user's" }
        try await stack.save(stack.viewContext)
        // While the writer's save of it is in flight, an import renames a1 too.
        #expect(await gate.waitUntilHeld(), "the writer's save started")
        let importer = stack.newImportContext()
        await importer.perform { c in c.object(with: o.a1, as: Artist.self).name = "import's" }
        try await stack.save(importer)
        gate.open()
        let first = await Self.nextOutcome(outcomes)
        #expect(first?.error?.code == .conflict, "the conflict is reported: \(String(describing: first))")

        // Later, the user changes an unrelated object and saves.
        await stack.viewContext.perform { c in c.object(with: o.a2, as: Artist.self).name = "unrelated" }
        try await stack.save(stack.viewContext)
        let second = await Self.nextOutcome(outcomes)
        #expect(second?.error == nil, "a later save of an unrelated object is written: \(String(describing: second?.error))")
        #expect(store.currentGeneration.value(o.a2, "name") == .string("unrelated"))
        await store.close()
    }

    @Test("hybrid: a conflict the asynchronous writer save meets keeps the import's value, as the view shows it, and writes the rest")
    func writerConflictKeepsStoreValueAndWritesTheRest() async throws {
        let h = try await GatedHybrid()
        defer { h.directory.remove() }
        let (store, gate, stack, o, outcomes) = (h.store, h.gate, h.stack, h.objects, h.outcomes)
        await stack.viewContext.perform { c in
            c.object(with: o.a1, as: Artist.self).name = "user's"
            c.object(with: o.a3, as: Artist.self).name = "also the user's"
        }
        try await stack.save(stack.viewContext)
        #expect(await gate.waitUntilHeld(), "the writer's save started")
        let importer = stack.newImportContext()
        await importer.perform { c in c.object(with: o.a1, as: Artist.self).name = "import's" }
        try await stack.save(importer)
        gate.open()
        let outcome = try #require(await Self.nextOutcome(outcomes))
        #expect(outcome.error?.code == .conflict)
        #expect(outcome.error?.conflicts.map(\.key) == ["name"])
        #expect(outcome.transaction != nil, "the keys without a conflict are written")
        #expect(store.currentGeneration.value(o.a1, "name") == .string("import's"))
        #expect(store.currentGeneration.value(o.a3, "name") == .string("also the user's"))
        await waitUntil(stack.viewContext, "the view shows what the store has") { c in
            c.object(with: o.a1, as: Artist.self).name == "import's"
        }
        let pending = await stack.writerContext!.hasChanges
        #expect(!pending, "nothing is left pending in the writer")
        await store.close()
    }
}

extension StackConsistencyTests {
    @Test("hybrid: an editor's change to an object an import deletes is a reported conflict, not silently dropped")
    func editorChangeToObjectDeletedByImport() async throws {
        let directory = TemporaryDirectory("strata-stack-consistency")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let stack = Stack(.hybrid, store: store, modelClasses: [Artist.self, Album.self, Song.self])
        await stack.start()
        let o = try await seedSongbook(store)
        let editor = await stack.newEditorContext()
        let conflicts = editor.mergeConflicts()
        await editor.perform { c in c.object(with: o.a2, as: Artist.self).name = "renamed by the user" }
        let importer = stack.newImportContext()
        await importer.perform { c in c.delete(c.object(with: o.a2)) }
        try await stack.save(importer)
        let reported = await firstElement(of: conflicts, timeout: .seconds(10))
        #expect(reported?.first?.object == o.a2 && reported?.first?.key == nil,
                "the user's change to a deleted object is reported: \(String(describing: reported))")
        let stillPending = await editor.hasChanges
        #expect(stillPending, "the user's change is still there for the next save to report (merge policy error)")
        let refused = await #expect(throws: StoreError.self) { try await stack.save(editor) }
        #expect(refused?.code == .conflict)
        // A rollback lets the deletion win: the object is a tombstone, nothing is pending.
        let (deleted, pending) = await editor.perform { c in
            c.rollback()
            return (c.object(with: o.a2).isDeleted, c.hasChanges)
        }
        #expect(deleted && !pending)
        await store.close()
    }
}

extension StackConsistencyTests {
    @Test("a coordinator's did-save stream delivers concurrent commits in transaction order")
    func coordinatorDidSaveInOrder() async throws {
        let directory = TemporaryDirectory("strata-stack-consistency")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        let writers = 4, saves = 100
        let stream = coordinator.didSave()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<writers {
                group.addTask {
                    let context = ObjectContext(coordinator: coordinator, name: "writer-\(n)")
                    for i in 0..<saves {
                        await context.perform { c in
                            let artist = c.insert(Artist.self)
                            artist.artistID = n * 10_000 + i
                        }
                        try await context.save()
                    }
                }
            }
            try await group.waitForAll()
        }
        var seen: [UInt64] = []
        var iterator = stream.makeAsyncIterator()
        while seen.count < writers * saves, let next = await iterator.next() { seen.append(next.transaction) }
        let outOfOrder = zip(seen, seen.dropFirst()).filter { $0.0 > $0.1 }
        #expect(outOfOrder.isEmpty, "\(outOfOrder.count) transactions delivered after a later one, first: \(outOfOrder.prefix(3))")
        await store.close()
    }
}

/// Holds the next file write once armed, on the thread making it, until released: a
/// deterministic way to keep a commit waiting for its transaction to be written.
final class WriteHold: Sendable {
    private let armed = Locked(false)
    private let release = DispatchSemaphore(value: 0)
    private let (reached, reachedContinuation) = AsyncStream.makeStream(of: Void.self)

    /// The store's file calls pass through this.
    func observe(_ call: FileCall) {
        guard call == .write else { return }
        let hold = armed.withLock { armed in defer { armed = false }; return armed }
        guard hold else { return }
        reachedContinuation.yield()
        _ = release.wait(timeout: .now() + .seconds(30 * TestTiming.slowdown))
    }

    func arm() { armed.withLock { $0 = true } }

    /// Waits until a write is held.
    func waitUntilHeld() async -> Bool {
        await firstElement(of: reached, timeout: .seconds(10)) != nil
    }

    func open() { release.signal() }
}

extension StackConsistencyTests {
    @Test("nested: a song deleted while the writer's save of its insertion is in flight is deleted, and its album lets go of it")
    func deleteWhileWriterSavesTheInsert() async throws {
        let directory = TemporaryDirectory("strata-stack-consistency")
        defer { directory.remove() }
        let hold = WriteHold()
        let store = try Store.create(at: directory.appending("store.strata"), schema: Fixtures.songbook,
                                     configuration: .init(durability: .relaxed, fileIO: HookedFileIO(wrapping: POSIXFileIO()) { hold.observe($0) }))
        let o = try await seedSongbook(store)
        let stack = Stack(.nested, store: store, modelClasses: [Artist.self, Album.self, Song.self])
        await stack.start()
        let outcomes = stack.writerSaves()

        // A song on album y, saved: the writer's save of it waits while its transaction is written.
        let song = await stack.viewContext.perform { c in
            let song = c.insert(Song.self)
            song.songID = StoreTesting.uuid(99)
            song.title = "short-lived"
            song.milliseconds = 1000
            song.album = c.object(with: o.y, as: Album.self)
            return song.objectID
        }
        hold.arm()
        try await stack.save(stack.viewContext)
        #expect(await hold.waitUntilHeld(), "the writer's save of the insertion is being written")
        // Meanwhile the user deletes it; the writer is handed the deletion.
        await stack.viewContext.perform { c in c.delete(c.object(with: song)) }
        try await stack.save(stack.viewContext)
        hold.open()

        let first = await StackConsistencyTests.nextOutcome(outcomes)
        let second = await StackConsistencyTests.nextOutcome(outcomes)
        #expect(first != nil && first?.error == nil, "the insertion is written: \(String(describing: first?.error))")
        #expect(second != nil && second?.error == nil, "the deletion is written: \(String(describing: second?.error))")
        let generation = store.currentGeneration
        #expect(generation.object(song) == nil, "the acknowledged deletion is in the store")
        #expect(generation.value(o.y, "songs")?.referencedObjects == [], "album y lists no song")
        #expect(generation.integrityProblems().isEmpty, "\(generation.integrityProblems().prefix(3))")
        let pending = await stack.writerContext!.hasChanges
        #expect(!pending, "nothing is left pending in the writer")
        await stack.close()
    }
}

extension StackConsistencyTests {
    /// The user deletes a song; while the writer's save of it waits, an import moves the song
    /// to another album. The writer saves again keeping the store's side (the song stays, in
    /// the album the import gave it): the view shows the song in that album, as the store has
    /// it, whether it merged the import before the writer's answer or not.
    @Test("hybrid: a deletion the writer drops for an import's move shows the song in its new album", arguments: [false, true])
    @MainActor func droppedDeletionOfAMovedSong(mergedFirst: Bool) async throws {
        let h = try await GatedHybrid()
        defer { h.directory.remove() }
        let (store, gate, stack, o, outcomes) = (h.store, h.gate, h.stack, h.objects, h.outcomes)
        let view = stack.viewContext
        view.performAndWait { c in
            c.mergePolicy = .storeWins
            _ = c.object(with: o.x, as: Album.self).songs
            _ = c.object(with: o.y, as: Album.self).songs
            c.delete(c.object(with: o.s))
        }
        try await stack.save(view)
        #expect(await gate.waitUntilHeld(), "the writer's save started")
        let importer = stack.newImportContext()
        await importer.perform { c in c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self) }
        try await stack.save(importer)
        if mergedFirst {
            await waitUntil(view, "the view merged the import") { c in c.object(with: o.y, as: Album.self).songs.isEmpty }
        }
        gate.open()
        let outcome = await Self.nextOutcome(outcomes)
        #expect(outcome?.error?.code == .conflict, "\(String(describing: outcome))")
        #expect(store.currentGeneration.value(o.s, "album") == .object(o.y))
        #expect(store.currentGeneration.value(o.y, "songs") == .objects([o.s]))
        let shown = await waitUntil(view, "the view shows the song in its new album") { c in
            c.object(with: o.y, as: Album.self).songs.map(\.objectID) == [o.s] && !c.object(with: o.s).isDeleted
        }
        if !shown {
            let state = view.performAndWait { c in
                (c.object(with: o.s).isDeleted, c.object(with: o.y, as: Album.self).songs.map(\.objectID), relationshipDisagreements(c))
            }
            Issue.record("the view shows \(state)")
        }
        await store.close()
    }
}

extension StackConsistencyTests {
    /// The IDs a fetch of an entity gives in a context.
    static func shown(_ c: isolated ObjectContext, _ entity: String) -> [ObjectID] {
        (try? c.fetch(FetchRequest(entity: entity)).map(\.objectID)) ?? []
    }

    /// The user changes an artist and a song (moving it to another album) and saves; while
    /// the writer's save of that waits, an import deletes the three. The writer saves again
    /// keeping the store's side — nothing is left to write — and the view lets go of them as
    /// the writer does. (The writer's layer kept the rows the view had handed it, so the view,
    /// reading through it, showed the deleted objects for good.)
    @Test("hybrid: objects an import deletes while the writer saves the view's changes to them are gone from the view",
          arguments: [MergePolicy.rollback, .storeWins, .error])
    @MainActor func importDeletesWhatTheWriterSaves(policy: MergePolicy) async throws {
        let h = try await GatedHybrid()
        defer { h.directory.remove() }
        let (store, gate, stack, o, outcomes) = (h.store, h.gate, h.stack, h.objects, h.outcomes)
        let view = stack.viewContext
        view.performAndWait { c in
            c.mergePolicy = policy
            c.object(with: o.a2, as: Artist.self).name = "user's"
            c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self)
        }
        try await stack.save(view)
        #expect(await gate.waitUntilHeld(), "the writer's save started")
        let importer = stack.newImportContext()
        await importer.perform { c in
            c.delete(c.object(with: o.a2))
            c.delete(c.object(with: o.s))
            c.delete(c.object(with: o.y))
        }
        try await stack.save(importer)
        gate.open()
        let outcome = await Self.nextOutcome(outcomes)
        #expect(outcome?.error?.code == .conflict, "\(String(describing: outcome))")
        #expect(store.currentGeneration.object(o.a2) == nil && store.currentGeneration.object(o.s) == nil)
        let gone = await waitUntil(view, "the view lets go of what the import deleted") { c in
            !c.hasChanges && !Self.shown(c, "Artist").contains(o.a2) && !Self.shown(c, "Album").contains(o.y) && !Self.shown(c, "Song").contains(o.s)
        }
        if !gone {
            Issue.record("the view shows \(view.performAndWait { c in (Self.shown(c, "Artist"), Self.shown(c, "Album"), Self.shown(c, "Song")) })")
        }
        await store.close()
    }
}

extension StackConsistencyTests {
    /// The user deletes an artist; before the view saves, a background context adds an
    /// album to it. The view's save deletes the artist, and the album goes with it (the
    /// artist's albums cascade) or lets go of it — in the store and in the view alike.
    @Test("hybrid: an album added elsewhere to an artist the view deletes follows the deletion in the view",
          arguments: [MergePolicy.contextWins, .storeWins, .overwrite])
    @MainActor func albumAddedToAnArtistTheViewDeletes(policy: MergePolicy) async throws {
        let directory = TemporaryDirectory("strata-stack-consistency")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let stack = Stack(.hybrid, store: store, modelClasses: [Artist.self, Album.self, Song.self])
        await stack.start()
        let o = try await seedSongbook(store)
        let outcomes = stack.writerSaves()
        let view = stack.viewContext
        view.performAndWait { c in
            c.mergePolicy = policy
            c.delete(c.object(with: o.a2))
        }
        let background = stack.newBackgroundContext()
        let z = try await background.perform { c in
            let album = c.insert(entity: "Album")
            album["albumID"] = .int(99)
            album["title"] = .string("z")
            album["artist"] = .object(o.a2)
            try await c.save()
            return album.objectID
        }
        try await stack.save(view)
        let outcome = await Self.nextOutcome(outcomes)
        let stored = store.currentGeneration
        #expect(stored.object(o.a2) == nil, "\(String(describing: outcome))")
        let storedArtist: Value? = stored.object(z) == nil ? nil : stored.value(z, "artist")
        let consistent = await waitUntil(view, "the view shows the album as the store has it") { c in
            let album = try? c.existingObject(with: z)
            let shown: Value?? = album.map { $0.isDeleted ? nil : $0["artist"] }
            return relationshipDisagreements(c).isEmpty && (shown ?? nil) == storedArtist && !c.hasChanges
        }
        if !consistent {
            let state = view.performAndWait { c in
                (relationshipDisagreements(c), (try? c.existingObject(with: z)).map { ($0.isDeleted, $0["artist"]) },
                 c.insertedObjects.map(\.objectID), c.updatedObjects.map { ($0.objectID, $0.changedValues) }, c.deletedObjects.map(\.objectID))
            }
            Issue.record("store: \(String(describing: storedArtist)); the view: \(state); writer: \(String(describing: outcome))")
        }
        await store.close()
    }
}

extension StackConsistencyTests {
    /// The user moves a song to another album; an import deletes that album's artist, whose
    /// cascade takes the album: while the writer's save of the move is held (`order` 0), or
    /// before the view saves and after the view merged it (1), or right before the view saves,
    /// both merges landing wherever they may (2). However the writer resolves it, the view ends
    /// as the store has the song and both albums (the song in neither album: what it was
    /// moved to is gone, what it was moved from let go of it).
    @Test("hybrid: a song moved to an album an import deletes ends in the view as in the store",
          arguments: [MergePolicy.rollback, .storeWins, .contextWins, .overwrite], [0, 1, 2])
    @MainActor func songMovedToAnAlbumAnImportDeletes(policy: MergePolicy, order: Int) async throws {
        let h = try await GatedHybrid()
        defer { h.directory.remove() }
        let (store, gate, stack, o, outcomes) = (h.store, h.gate, h.stack, h.objects, h.outcomes)
        let setup = stack.newImportContext(name: "setup")
        await setup.perform { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        try await stack.save(setup)
        let view = stack.viewContext
        await waitUntil(view, "the view shows y by a2") { c in c.object(with: o.y, as: Album.self).artist?.objectID == o.a2 }
        view.performAndWait { c in
            c.mergePolicy = policy
            _ = c.object(with: o.x, as: Album.self).songs
            c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self)
        }
        let importer = stack.newImportContext()
        await importer.perform { c in c.delete(c.object(with: o.a2)) }  // the cascade takes y
        if order == 0 {
            try await stack.save(view)
            #expect(await gate.waitUntilHeld(), "the writer's save started")
            try await stack.save(importer)
            gate.open()
        } else {
            gate.open()  // (order 1 and 2: nothing to hold)
            try await stack.save(importer)
            if order == 1 { await waitUntil(view, "the view merged the deletion") { c in c.object(with: o.y).isDeleted } }
            try await stack.save(view)
        }
        let outcome = await Self.nextOutcome(outcomes)
        let stored = store.currentGeneration
        #expect(stored.object(o.y) == nil, "\(String(describing: outcome))")
        #expect(stored.integrityProblems().isEmpty)
        let storedS: Value? = stored.object(o.s) == nil ? nil : stored.value(o.s, "album")
        let storedX = stored.value(o.x, "songs")
        let converged = await waitUntil(view, "the view shows the song and x as the store has them") { c in
            let s = c.object(with: o.s)
            let shownS: Value? = s.isDeleted ? nil : s["album"]
            return shownS == storedS && c.object(with: o.x)["songs"] == storedX && relationshipDisagreements(c).isEmpty
        }
        if !converged {
            let state = view.performAndWait { c in
                (c.object(with: o.s).isDeleted, c.object(with: o.s)["album"], c.object(with: o.x)["songs"], relationshipDisagreements(c), c.hasChanges)
            }
            Issue.record("store: s \(String(describing: storedS)), x \(storedX); view (s deleted, s.album, x.songs, problems, pending): \(state); writer: \(String(describing: outcome))")
        }
        await store.close()
    }
}

extension StackConsistencyTests {
    /// `songMovedToAnAlbumAnImportDeletes` with order 2, made deterministic: the writer merges
    /// the import's deletion of a2 (its cascade took y) before the view's save of the move
    /// reaches it, and the view merges the deletion while that save is in flight (the writer,
    /// held by a gate, has applied it). The writer put the song back in x while the view's
    /// merge took it out of y: the view kept "s in no album" as a change nobody made, on a
    /// base of x, while x listed s — and the writer, holding nothing, wrote nothing. Now the
    /// writer lets go of the deleted album as the store and the merge do: s is in neither
    /// album, in the store and in the view.
    @Test("hybrid: a song moved to an album an import deletes, merged by the writer before and by the view during the view's save",
          arguments: [MergePolicy.rollback, .storeWins, .contextWins, .overwrite])
    @MainActor func songMovedToAnAlbumDeletedWhileTheViewSaves(policy: MergePolicy) async throws {
        // Not started: the merges the stack makes automatically are landed by hand, in this order.
        let h = try await GatedHybrid(gate: SaveGate(context: "writer", operation: .applyChildSave), started: false)
        defer { h.directory.remove() }
        let (store, gate, stack, o, outcomes, writer, view) = (h.store, h.gate, h.stack, h.objects, h.outcomes, h.writer, h.view)
        let setup = stack.newImportContext(name: "setup")
        await setup.perform { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        try await stack.save(setup)
        view.performAndWait { c in
            c.mergePolicy = policy
            _ = c.object(with: o.x, as: Album.self).songs
            c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self)
        }
        let importer = stack.newImportContext()
        await importer.perform { c in c.delete(c.object(with: o.a2)) }  // the cascade takes y
        let imported = importer.didSave()
        try await stack.save(importer)
        let deletion = try #require(await firstElement(of: imported, timeout: .seconds(10)))
        #expect(deletion.deleted.contains(o.y))
        await writer.merge(deletion)  // 1. the writer, following the store, merges it
        let saving = Task { try await stack.save(view) }  // 2. the view saves the move into the writer
        #expect(await gate.waitUntilHeld(), "the writer applied the view's save")
        await view.merge(deletion)  // 3. the view merges it (through the writer), its save in flight
        gate.open()
        try await saving.value
        let outcome = await Self.nextOutcome(outcomes)  // 4. the writer's save to the store
        #expect(outcome != nil && outcome?.error == nil, "\(String(describing: outcome))")
        let stored = store.currentGeneration
        #expect(stored.object(o.y) == nil)
        #expect(stored.integrityProblems().isEmpty, "\(stored.integrityProblems().prefix(3))")
        let (storedS, storedX) = (stored.value(o.s, "album"), stored.value(o.x, "songs"))
        let (shownS, shownX, problems, pending) = view.performAndWait { c in
            (c.object(with: o.s)["album"], c.object(with: o.x)["songs"], relationshipDisagreements(c), c.hasChanges)
        }
        #expect(shownS == storedS && shownX == storedX && problems.isEmpty && !pending,
                "store: s \(String(describing: storedS)), x \(String(describing: storedX)); view (s.album, x.songs, problems, pending): \((shownS, shownX, problems, pending)); writer: \(String(describing: outcome))")
        // As orders 0 and 1 end, and as the store resolves a move to an album another
        // transaction deleted: the song is in neither album.
        #expect(storedS == .null && storedX == .objects([]))
        let writerPending = await writer.hasChanges
        #expect(!writerPending)
        await store.close()
    }
}
