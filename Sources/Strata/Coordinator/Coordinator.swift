/// Connects contexts to a store: they read through it and save through it.
///
/// A coordinator serves any number of root contexts (contexts whose parent is the
/// coordinator, not another context). Several coordinators may share one store: each has
/// its own did-save stream, and contexts on one see the others' commits through
/// ``Store/commits()`` (``ObjectContext/automaticallyMergesChanges``). Commits do not queue
/// behind each other in the coordinator: concurrent saves reach the store together and
/// share its group commit.
///
/// ```swift
/// let store = try Store.open(at: path, schema: schema)
/// let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Song.self])
/// let viewContext = ObjectContext(coordinator: coordinator, executor: .main, name: "view")
/// ```
public actor Coordinator {
    /// The store underneath.
    public nonisolated let store: Store
    /// The coordinator's name (for instrumentation and transaction authors).
    public nonisolated let name: String
    nonisolated let models: ModelRegistry
    nonisolated let observer: ContextObserver?
    /// Custom validation rules by entity name.
    nonisolated let validationRules: [String: [ValidationRule]]
    private nonisolated let saves: Broadcast<CommitNotification>
    /// The store's hook that ends ``didSave()`` when the store closes, removed when the
    /// coordinator goes away first.
    private nonisolated let closeHook: Int?
    /// The generation fetches run against when pinned.
    private var pinned: Generation?

    /// Creates a coordinator.
    /// - Parameters:
    ///   - modelClasses: the classes that make each entity's objects (objects of entities
    ///     not listed are plain ``ManagedObject``s).
    ///   - validationRules: custom rules checked for every saved object of their entity, by
    ///     every context on this coordinator and their children.
    ///   - observer: receives a ``ContextEvent`` for every operation of every context on
    ///     this coordinator.
    public init(
        store: Store, name: String = "coordinator", modelClasses: [ManagedObject.Type] = [],
        validationRules: [ValidationRule] = [], observer: ContextObserver? = nil
    ) {
        self.store = store
        self.name = name
        self.models = ModelRegistry(modelClasses, schema: store.schema)
        self.observer = observer
        for rule in validationRules where store.schema.entity(named: rule.entity) == nil {
            preconditionFailure("validation rule for entity \"\(rule.entity)\": schema \"\(store.schema.name)\" has no such entity; its entities are \(store.schema.entities.map(\.name))")
        }
        self.validationRules = Dictionary(grouping: validationRules, by: \.entity)
        // Its did-save stream ends when the store closes, as the store's own does.
        let saves = Broadcast<CommitNotification>()
        self.saves = saves
        closeHook = store.whenClosed { [weak saves] in saves?.finish() }
    }

    // Nothing can commit through a coordinator that is gone: its subscribers must not wait
    // for the store to close, and the store has nothing to do for it when it does.
    deinit {
        saves.finish()
        if let closeHook { store.removeCloseHook(closeHook) }
    }

    /// The schema of the store.
    public nonisolated var schema: Schema { store.schema }

    /// The newest generation of the store.
    public nonisolated var currentGeneration: Generation { store.currentGeneration }

    /// Commits a change set to the store (see ``Store/commit(_:)``) and posts it on ``didSave()``.
    @discardableResult
    public nonisolated func commit(_ changes: ChangeSet) async throws(StoreError) -> CommitResult {
        try await commitOnCallersExecutor(changes, mayBlock: false)
    }

    /// ``commit(_:)`` with its processor work done on the caller's executor (see
    /// ``Store/commitOnCallersExecutor(_:mayBlock:)``).
    nonisolated(nonsending) func commitOnCallersExecutor(_ changes: ChangeSet, mayBlock: Bool) async throws(StoreError) -> CommitResult {
        var changes = changes
        // Posted by the store as it publishes, in transaction order: committers returning
        // in another order must not reorder the stream.
        changes.announcer = saves
        return try await store.commitOnCallersExecutor(changes, mayBlock: mayBlock)
    }

    /// Every transaction committed through this coordinator from now on, in order; the
    /// stream ends when the store closes or the coordinator goes away. Like
    /// ``Store/commits()``, it keeps what it has not delivered, generations included: read
    /// it, or let it go.
    public nonisolated func didSave() -> AsyncStream<CommitNotification> { saves.subscribe() }

    // MARK: - Fetching against a pinned generation

    /// Pins fetches to the current generation (Core Data's query generations): later
    /// commits are not seen until ``unpinQueryGeneration()``.
    @discardableResult
    public func pinQueryGeneration() -> UInt64 {
        let generation = store.currentGeneration
        pinned = generation
        return generation.transaction
    }

    /// Follows the store's newest generation again.
    public func unpinQueryGeneration() { pinned = nil }

    /// The generation fetches run against: the pinned one, or the newest.
    public var queryGeneration: Generation { pinned ?? store.currentGeneration }

    /// Every stored object of an entity in the query generation, in object-number order.
    public func objects(of entity: String) -> [StoredObject] {
        queryGeneration.objects(of: entity)
    }

    /// The stored object with this ID in the query generation.
    public func object(_ id: ObjectID) -> StoredObject? {
        queryGeneration.object(id)
    }
}
