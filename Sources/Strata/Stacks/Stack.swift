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

    /// What became of one asynchronous writer save.
    public struct WriterSaveOutcome: Sendable {
        /// The store transaction the writer committed (`nil` if an earlier writer save had
        /// already written these changes, or nothing could be written).
        public var transaction: UInt64?
        /// The failure, when it failed (the changes stay pending in the writer, for the next
        /// save). A `conflict` — keys another commit changed while the changes were on their
        /// way to the store — is the exception: those keys keep that commit's values (which
        /// the view context shows already), everything else is written in ``transaction``,
        /// and the error lists each conflicting key.
        public var error: StoreError?
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
        switch preset {
        case .nested, .hybrid:
            let writer = ObjectContext(coordinator: main, executor: .privateQueue("strata.stack.writer", priority: .utility), name: "writer")
            writerContext = writer
            viewContext = ObjectContext(parent: writer, executor: .main, name: "view")
        case .mainParent, .sharedCoordinator, .separateCoordinators:
            writerContext = nil
            viewContext = ObjectContext(coordinator: main, executor: .main, name: "view")
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
    /// ``writerSaves()`` (successes and failures alike; a failure leaves the changes pending
    /// in the writer, to be written by the next save, except a conflict: see
    /// ``WriterSaveOutcome/error``).
    public func save(_ context: ObjectContext) async throws(StoreError) {
        var current: ObjectContext? = context
        while let next = current {
            if next === viewContext, let writerContext {
                try await viewContext.save()  // into the writer
                Task { [writes] in
                    do throws(StoreError) {
                        let transaction = try await writerContext.save()
                        writes.yield(WriterSaveOutcome(transaction: transaction, error: nil))
                    } catch where error.code == .conflict {
                        // Keys another commit changed while the changes were on their way: the
                        // view shows that commit's values already (it merges the store's commits
                        // or saves through here), so they stay; the rest is written and the
                        // conflict reported. Left pending, they would refuse every later save.
                        do throws(StoreError) {
                            let transaction = try await writerContext.save(mergePolicy: .storeWins)
                            writes.yield(WriterSaveOutcome(transaction: transaction, error: error))
                        } catch let retry {
                            writes.yield(WriterSaveOutcome(transaction: nil, error: error))
                            writes.yield(WriterSaveOutcome(transaction: nil, error: retry))
                        }
                    } catch {
                        writes.yield(WriterSaveOutcome(transaction: nil, error: error))
                    }
                }
                return
            }
            try await next.save()
            current = next.parentContext
        }
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
    /// ``StackPreset/hybrid``).
    public func writerSaves() -> AsyncStream<WriterSaveOutcome> { writes.subscribe() }
}
