/// The concurrency topologies of the Core Data stack debate, as presets behind one API: a
/// view context on the main actor, background and import contexts, disposable editor
/// contexts, and saving that makes changes durable the way each preset does it.
public enum StackPreset: String, Sendable, Hashable, CaseIterable {
    /// The main context owns the coordinator; background contexts are its children
    /// (their saves land in the main context, which saves to the store). Kugler's stack 1.
    case mainParent
    /// A private writer context owns the coordinator, the main context is its child, and
    /// workers are the main context's children; the main context's saves are pushed to the
    /// writer and written from there asynchronously. Zarra's asynchronous saving; Kugler's stack 2.
    case nested
    /// The main and background contexts are siblings on one coordinator; the main context
    /// merges their saves. Kugler's stack 3, `NSPersistentContainer`.
    case sharedCoordinator
    /// Imports run through their own coordinator on the same store; the main context merges
    /// what they commit. Kugler's "separate coordinators".
    case separateCoordinators
    /// A writer context saves the main context's changes asynchronously; imports run on
    /// their own coordinator; editor contexts are children of the main context that merge
    /// the imports' changes while open. The "hybrid three-tier stack".
    case hybrid
}

/// One stack preset built over a store: the contexts it gives and how it saves them.
///
/// ```swift
/// let stack = Stack(.hybrid, store: store, modelClasses: [Artist.self, Album.self])
/// await stack.start()                          // once, before use
/// let importer = stack.newImportContext()
/// ... insert in importer ...
/// try await stack.save(importer)               // durable when it returns
/// let editor = await stack.newEditorContext()
/// ... edit; drop `editor` to discard, or:
/// try await stack.save(editor)                 // into the view context, then on to the store
/// await stack.close()                          // waits for the writer's saves, closes the store
/// ```
///
/// Every preset is a composition of coordinators, contexts and merge subscriptions; the
/// presets differ only in where contexts hang and which ones merge automatically.
public final class Stack: Sendable {
    /// The preset.
    public let preset: StackPreset
    /// The store underneath.
    public let store: Store
    /// The coordinator of the view context's tree.
    public let coordinator: Coordinator
    /// The coordinator imports run through (the same one except for
    /// ``StackPreset/separateCoordinators`` and ``StackPreset/hybrid``).
    public let importCoordinator: Coordinator
    /// The writer context (``StackPreset/nested`` and ``StackPreset/hybrid``), parent of
    /// the view context, which alone talks to the coordinator.
    public let writerContext: ObjectContext?
    /// The UI context, on the main actor.
    public let viewContext: ObjectContext
    /// The outcomes of the writer's asynchronous saves.
    private let writes = Broadcast<WriterSaveOutcome>()
    /// The asynchronous writer's saves in flight (each waits for the one before), the store
    /// failure that ended them, and whether the stack is closed.
    private let writer = Locked(WriterState())
    /// The store's hook that ends ``writerSaves()`` when the store closes, removed when the
    /// stack goes away first.
    private let closeHook: Int?

    private struct WriterState {
        var last: Task<Void, Never>?
        var failure: StoreError?
        var isClosed = false
        /// Saves through the view context accepted and not yet handed to the writer (the
        /// view's save into the writer is running): ``close()`` waits for them too.
        var accepted = 0
        /// A ``close()`` (or the end of ``writerSaves()``) waiting for ``accepted`` to reach 0.
        var closing: [CheckedContinuation<Void, Never>] = []
    }

    /// What became of one asynchronous writer save.
    public struct WriterSaveOutcome: Sendable {
        /// The store transaction the writer committed (`nil` if an earlier writer save had
        /// already written these changes, or nothing could be written).
        public var transaction: UInt64?
        /// The failure, when it failed. A `conflict` — keys another commit changed while the
        /// changes were on their way to the store — leaves those keys with that commit's
        /// values, which the view context shows once the outcome is reported (except keys it
        /// changed again since it saved them: those stay pending, for its next save);
        /// everything else is written in ``transaction``, and the error lists each
        /// conflicting key. Any other refusal (a unique value taken meanwhile, a delete rule,
        /// a validation) drops the changes the writer held — listed in ``droppedObjects`` —
        /// and the view context shows the store's state for them again. A failure of the
        /// store itself (`poisoned`, `io`, `closed`, `readOnly`) ends the stack's saving:
        /// every later ``Stack/save(_:)`` through the writer throws it.
        public var error: StoreError?
        /// The objects whose unsaved changes a refused save dropped (see ``error``).
        public var droppedObjects: [ObjectID] = []
    }

    /// Builds a preset over a store.
    public init(_ preset: StackPreset, store: Store, modelClasses: [ManagedObject.Type] = [],
                validationRules: [ValidationRule] = [], observer: ContextObserver? = nil) {
        self.preset = preset
        self.store = store
        let main = Coordinator(store: store, name: "main", modelClasses: modelClasses, validationRules: validationRules, observer: observer)
        coordinator = main
        switch preset {
        case .separateCoordinators, .hybrid:
            importCoordinator = Coordinator(store: store, name: "import", modelClasses: modelClasses,
                                            validationRules: validationRules, observer: observer)
        case .mainParent, .nested, .sharedCoordinator:
            importCoordinator = main
        }
        // The writer's outcomes end when the store closes, once the writer saves started
        // before have reported (a save the store's close cut short ends with `closed`).
        closeHook = store.whenClosed { [writer, writes] in Self.endWriterSaves(writer, writes) }
        switch preset {
        case .nested, .hybrid:
            // Its saves wait for the disk without holding its queue: the view context hands
            // it the next changes meanwhile.
            let writer = ObjectContext(coordinator: main, executor: .privateQueue("strata.stack.writer", priority: .utility), name: "writer",
                                       mayBlockQueueOnCommit: false)
            writerContext = writer
            viewContext = ObjectContext(parent: writer, executor: .main, name: "view")
        case .mainParent, .sharedCoordinator, .separateCoordinators:
            writerContext = nil
            viewContext = ObjectContext(coordinator: main, executor: .main, name: "view")
        }
    }

    // Nothing can save through a stack that is gone: the writer's outcomes end once the
    // saves it accepted have reported, and the store has nothing to do for it when it closes.
    deinit {
        if let closeHook { store.removeCloseHook(closeHook) }
        Self.endWriterSaves(writer, writes)
    }

    /// Ends ``writerSaves()`` once every accepted save has reported: those being handed to
    /// the writer too (their writer saves are scheduled when the hand-over ends; a store
    /// closed meanwhile makes them end with `closed`). Ending after the writer's last save
    /// alone lost such a save's outcome — its ``save(_:)`` had returned, and nothing said it
    /// was never written.
    private static func endWriterSaves(_ writer: Locked<WriterState>, _ writes: Broadcast<WriterSaveOutcome>) {
        guard writer.withLock({ $0.last != nil || $0.accepted > 0 }) else {
            writes.finish()
            return
        }
        Task {
            await withCheckedContinuation { (handedOver: CheckedContinuation<Void, Never>) in
                let ready = writer.withLock { state -> Bool in
                    guard state.accepted > 0 else { return true }
                    state.closing.append(handedOver)
                    return false
                }
                if ready { handedOver.resume() }
            }
            await writer.withLock({ $0.last })?.value
            writes.finish()
        }
    }

    /// Starts the preset's automatic merging. Call once, before use.
    public func start() async {
        switch preset {
        case .sharedCoordinator, .separateCoordinators:
            // The view context follows every commit it did not make.
            await viewContext.perform { context in context.automaticallyMergesChanges = true }
        case .hybrid:
            // The writer follows the imports' commits (and so does the view, through it);
            // the view merges them too, so that the objects it holds show them.
            await writerContext!.perform { context in context.automaticallyMergesChanges = true }
            await viewContext.perform { context in context.automaticallyMergesChanges = true }
        case .mainParent, .nested:
            break  // everything reaches the store through the view context
        }
    }

    /// A context for background work: where its saves go depends on the preset (the view
    /// context for ``StackPreset/mainParent`` and ``StackPreset/nested``, the store for the others).
    /// It runs at ``ContextPriority/utility``, yielding processors to the main actor.
    public func newBackgroundContext(name: String = "background") -> ObjectContext {
        switch preset {
        case .mainParent, .nested:
            ObjectContext(parent: viewContext, executor: .privateQueue("strata.stack.\(name)", priority: .utility), name: name)
        case .sharedCoordinator, .separateCoordinators, .hybrid:
            ObjectContext(coordinator: coordinator, executor: .privateQueue("strata.stack.\(name)", priority: .utility), name: name)
        }
    }

    /// A context for imports: on the import coordinator where the preset has one, at
    /// ``ContextPriority/utility``.
    public func newImportContext(name: String = "import") -> ObjectContext {
        switch preset {
        case .mainParent, .nested, .sharedCoordinator:
            newBackgroundContext(name: name)
        case .separateCoordinators, .hybrid:
            ObjectContext(coordinator: importCoordinator, executor: .privateQueue("strata.stack.\(name)", priority: .utility), name: name)
        }
    }

    /// A disposable scratch context, a child of the view context (at
    /// ``ContextPriority/userInitiated``: someone is waiting for it): drop it to discard its
    /// edits, or ``save(_:)`` it. Under ``StackPreset/hybrid`` it follows the imports' commits
    /// while open (keys it also changed are conflicts, resolved by its merge policy).
    public func newEditorContext(name: String = "editor") async -> ObjectContext {
        let editor = ObjectContext(parent: viewContext, executor: .privateQueue("strata.stack.\(name)"), name: name)
        if preset == .hybrid {
            await editor.perform { context in context.automaticallyMergesChanges = true }
        }
        return editor
    }

    /// Saves a context and every ancestor its changes must pass through to reach the store.
    /// Returns once they are durable — except when the path goes through the view context
    /// under ``StackPreset/nested`` and ``StackPreset/hybrid``: then it returns once the
    /// writer has the changes, and the writer's save to the store is reported on
    /// ``writerSaves()`` (successes and failures alike; see ``WriterSaveOutcome/error``).
    /// ``close()`` waits for every writer save the stack accepted.
    /// - Throws: the context's save errors; for a path through the writer, the store failure
    ///   that ended an earlier writer save (`poisoned`, `io`), or `closed` once the stack or
    ///   the store is closed.
    public func save(_ context: ObjectContext) async throws(StoreError) {
        // Refused before anything is saved on the way, and again when the writer's turn comes
        // (a failure may have ended saving meanwhile).
        if savesAsynchronously(context) { try checkWriterAccepts() }
        var current: ObjectContext? = context
        while let next = current {
            if next === viewContext, let writerContext {
                // Accepted under the writer's lock, so that a `close()` from now on waits for
                // this save to be handed to the writer and written (it once closed the store
                // while the view's save ran, and the save, reported done, was lost).
                try checkWriterAccepts(counting: true)
                do throws(StoreError) {
                    try await viewContext.save()  // into the writer
                } catch {
                    endAcceptedSave(handingTo: nil)
                    throw error
                }
                endAcceptedSave(handingTo: writerContext)
                return
            }
            try await next.save()
            current = next.parentContext
        }
    }

    /// Waits for every writer save the stack accepted to end, ends ``writerSaves()``, and
    /// closes the store. Saves through the writer afterwards throw `closed`. Closing the
    /// store alone instead can leave accepted writer saves unwritten (they end with
    /// `closed` on ``writerSaves()``).
    public func close() async {
        await withCheckedContinuation { (closing: CheckedContinuation<Void, Never>) in
            let ready = writer.withLock { state -> Bool in
                state.isClosed = true
                guard state.accepted > 0 else { return true }
                state.closing.append(closing)
                return false
            }
            if ready { closing.resume() }
        }
        let last = writer.withLock { $0.last }
        await last?.value
        writes.finish()
        await store.close()
    }

    /// Refuses a save through the writer: with the store failure that ended writer saves,
    /// `closed` once the stack is closed, or the journal's refusal. `counting`: the save is
    /// accepted, and counted until ``endAcceptedSave(handingTo:)`` (a ``close()`` from then
    /// on waits for it).
    private func checkWriterAccepts(counting: Bool = false) throws(StoreError) {
        try writer.withLock { (state) throws(StoreError) in
            if let failure = state.failure { throw failure }
            if state.isClosed { throw StoreError(.closed, "the stack was closed; open the store again and build a new stack") }
            if counting { state.accepted += 1 }
        }
        do throws(StoreError) { try store.journal.checkAccepting() } catch {
            if counting { endAcceptedSave(handingTo: nil) }
            throw error
        }
    }

    /// Ends an accepted save: starts the writer's save of what the view context handed it
    /// (when it did), after the saves before it, and lets a waiting ``close()`` go on once no
    /// accepted save is left.
    private func endAcceptedSave(handingTo writerContext: ObjectContext?) {
        let closing = writer.withLock { state -> [CheckedContinuation<Void, Never>] in
            if let writerContext { scheduleWriterSave(writerContext, in: &state) }
            state.accepted -= 1
            guard state.accepted == 0 else { return [] }
            defer { state.closing = [] }
            return state.closing
        }
        for waiter in closing { waiter.resume() }
    }

    /// Starts the writer's save of what the view context has handed it, after the saves
    /// before it (under the writer's lock).
    private func scheduleWriterSave(_ writerContext: ObjectContext, in state: inout WriterState) {
        let previous = state.last
        state.last = Task { [writes, writer, viewContext] in
            await previous?.value
            let outcome = await Self.writerSave(writerContext, view: viewContext)
            if let error = outcome.error, Self.endsSaving(error) {
                writer.withLock { $0.failure = $0.failure ?? error }
            }
            writes.yield(outcome)
        }
    }

    /// Whether a writer save's failure is the store's own, for good.
    private static func endsSaving(_ error: StoreError) -> Bool {
        [.poisoned, .io, .closed, .readOnly].contains(error.code)
    }

    /// One asynchronous writer save, and what became of it.
    private static func writerSave(_ writerContext: ObjectContext, view: ObjectContext) async -> WriterSaveOutcome {
        do throws(StoreError) {
            return WriterSaveOutcome(transaction: try await writerContext.save(), error: nil)
        } catch where error.code == .conflict {
            // Keys another commit changed while the changes were on their way keep that
            // commit's values; the rest is written and the conflict reported. (Left pending,
            // they would refuse every later save.) The view handed the writer its own values
            // for those keys and shows them still: it may never merge that commit (under
            // `nested` it merges nothing), or merge it only later. So it reads the objects
            // again from the writer, which holds the store's values now, with the objects on
            // the other side of their relationships. The keys it had handed the writer (those
            // the writer holds changed) take those values, a newer edit of them kept on top for
            // its next save; other keys it changed since keep their conflicts with the store.
            let handed = await writerContext.perform { context in context.graph.pendingKeys() }
            do throws(StoreError) {
                let retry = try await writerContext.saveResolvingConflicts(mergePolicy: .storeWins)
                await view.perform { context in context.parentChanged { $0.parentKept(error.conflicts + retry.resolved, handed: handed) } }
                return WriterSaveOutcome(transaction: retry.transaction, error: Self.conflictKept(error, retried: retry.resolved))
            } catch let retry {
                return await refused(retry, writerContext, view: view)
            }
        } catch {
            return await refused(error, writerContext, view: view)
        }
    }

    /// The outcome's error for a conflicting writer save saved again keeping the store's
    /// values: every conflicting key of both attempts — the retry meets the first attempt's
    /// conflicts again, with the store's newest values, and those of commits that landed
    /// in between (before, only the first attempt's were listed, so a key the retry gave
    /// up went unreported) — and a message saying what the writer did (the store's advice
    /// to refresh and save again was for a save that had not been resolved).
    static func conflictKept(_ error: StoreError, retried: [Conflict]) -> StoreError {
        struct Place: Hashable { var object: ObjectID; var key: String? }
        let newest = Dictionary(retried.map { (Place(object: $0.object, key: $0.key), $0) }, uniquingKeysWith: { _, last in last })
        var listed = Set<Place>()
        var conflicts: [Conflict] = []
        for conflict in error.conflicts + retried {
            let place = Place(object: conflict.object, key: conflict.key)
            guard listed.insert(place).inserted else { continue }
            conflicts.append(newest[place] ?? conflict)
        }
        return .conflicting(conflicts, with: "transactions committed while the changes were on their way to the store",
                            advice: "The writer saved the rest, keeping the store's values for these keys")
    }

    /// A writer save the store refused. Its changes can never be written as they are (a
    /// store failure is for good; a refusal would meet the same check again), and left
    /// pending they would refuse every later save: the writer drops them and the view shows
    /// the store's state for them again.
    private static func refused(_ error: StoreError, _ writerContext: ObjectContext, view: ObjectContext) async -> WriterSaveOutcome {
        guard !endsSaving(error) else { return WriterSaveOutcome(transaction: nil, error: error) }
        let (dropped, handed) = await writerContext.perform { context in
            let ids = (context.insertedObjects + context.updatedObjects + context.deletedObjects).map(\.objectID).sorted()
            let handed = context.graph.pendingKeys()
            context.rollback()
            return (ids, handed)
        }
        await view.perform { context in context.parentChanged { $0.parentDropped(dropped, handed: handed) } }
        return WriterSaveOutcome(transaction: nil, error: error, droppedObjects: dropped)
    }

    /// Whether ``save(_:)`` of this context returns before its changes are durable: when
    /// they pass through the view context on their way to the store under
    /// ``StackPreset/nested`` and ``StackPreset/hybrid`` (then ``writerSaves()`` reports the
    /// writer's save).
    public func savesAsynchronously(_ context: ObjectContext) -> Bool {
        guard writerContext != nil else { return false }
        var current: ObjectContext? = context
        while let next = current {
            if next === viewContext { return true }
            current = next.parentContext
        }
        return false
    }

    /// The outcome of every asynchronous writer save from now on (``StackPreset/nested``,
    /// ``StackPreset/hybrid``). The stream ends when the stack or the store closes, or the
    /// stack goes away, once the saves accepted before have reported.
    public func writerSaves() -> AsyncStream<WriterSaveOutcome> { writes.subscribe() }
}
