
/// A scratch pad of objects: where objects are read, changed, inserted and deleted, then
/// saved to a parent (a ``Coordinator``, or another context) or thrown away.
///
/// A context is an actor. Its executor is either the main actor's (`.main`, for UI code) or
/// its own serial queue (`.privateQueue(label)`, at a ``ContextPriority``); its objects live
/// in its isolation and the compiler keeps them there. Work goes through ``perform(_:)`` from anywhere, or
/// ``performAndWait(_:)`` synchronously from `@MainActor` code for a `.main` context:
///
/// ```swift
/// let viewContext = ObjectContext(coordinator: coordinator, executor: .main, name: "view")
/// let id = await viewContext.perform { context in
///     let artist = context.insert(Artist.self)
///     artist.name = "AC/DC"
///     return artist.objectID
/// }
/// try await viewContext.save()
///
/// let editor = ObjectContext(parent: viewContext, executor: .privateQueue("editor"), name: "editor")
/// await editor.perform { context in
///     context.object(with: id, as: Artist.self).name = "AC⚡︎DC"
/// }
/// // Drop `editor` to discard the edit, or save it into the view context:
/// try await editor.save()
/// ```
///
/// Children read their parent's pending changes as of the parent's last turn of work (the
/// end of each `perform`, save, merge or rollback). A save validates everything first
/// (required values, limits, custom rules, `deny` rules and unique attributes, in every
/// tier) and changes nothing if anything fails.
public actor ObjectContext {
    nonisolated let link: ContextLink
    /// The parent context, for a child context.
    public nonisolated let parentContext: ObjectContext?
    private nonisolated let queueExecutor: DispatchQueueExecutor?
    let graph: ObjectGraph

    /// How a save resolves conflicts with what others committed (or saved into the parent)
    /// since the objects were read, and how merges treat keys both sides changed
    /// (``MergePolicy/overwrite``: every attribute of an object with changes here). Default
    /// ``MergePolicy/error``.
    public var mergePolicy: MergePolicy = .error
    /// Whether the context keeps every object it registered until ``reset()``, as Core Data's
    /// `retainsRegisteredObjects` does. Default `false`: objects without pending changes
    /// that nothing outside the context refers to are let go from time to time (see
    /// ``registeredObjects``) and made again, loaded from the parent, when asked for; so are
    /// tombstones and objects inserted and deleted before any save.
    public var retainsRegisteredObjects = false
    /// Whether the context merges other contexts' saves as they happen: for a context on a
    /// coordinator, every commit to the store by anyone else (other contexts, other
    /// coordinators); for a child, what its parent merges and its siblings save into it.
    public var automaticallyMergesChanges = false {
        didSet { updateMergeSubscription() }
    }

    private var mergeTask: Task<Void, Never>?
    /// The store's close hook that ends this context's streams.
    private var storeCloseHook: Int?
    private var isSaving = false
    private var saveWaiters: [CheckedContinuation<Void, Never>] = []
    private nonisolated let saves = Broadcast<DidSave>()
    private nonisolated let changes = Broadcast<ObjectsDidChange>()
    private nonisolated let conflicts = Broadcast<[Conflict]>()

    /// Creates a context whose parent is a coordinator.
    public init(coordinator: Coordinator, executor: ContextExecutor = .privateQueue("strata.context"), name: String = "context") {
        self.init(link: ContextLink(parent: .coordinator(coordinator), name: name, executor: executor), parent: nil)
    }

    /// A root context whose saves never block its queue while they wait for the disk, so
    /// that children can save into it meanwhile (a stack's asynchronous writer).
    init(coordinator: Coordinator, executor: ContextExecutor, name: String, mayBlockQueueOnCommit: Bool) {
        self.init(link: ContextLink(parent: .coordinator(coordinator), name: name, executor: executor,
                                    mayBlockQueueOnCommit: mayBlockQueueOnCommit), parent: nil)
    }

    /// Creates a child context: it reads through `parent` (including the parent's unsaved
    /// changes) and saves into it.
    public init(parent: ObjectContext, executor: ContextExecutor = .privateQueue("strata.context"), name: String = "child") {
        self.init(link: ContextLink(parent: .context(parent.link), name: name, executor: executor), parent: parent)
    }

    private init(link: ContextLink, parent: ObjectContext?) {
        self.link = link
        self.parentContext = parent
        queueExecutor = link.executor.makeSerialExecutor()
        graph = ObjectGraph(link: link)
        // The context's streams end when its store closes, as the store's own do: a task
        // reading one (which keeps the context alive) would otherwise wait for ever.
        storeCloseHook = link.coordinator.store.whenClosed { [saves, changes, conflicts] in
            saves.finish()
            changes.finish()
            conflicts.finish()
        }
        if link.executor == .main {
            // Objects of a `.main` context are main-actor objects that UI code changes
            // directly, outside any turn of work: their changes are processed once the
            // main-actor job that made them ends, as Core Data's view context processes them
            // at the end of the run loop's turn.
            graph.scheduleProcessing = { [weak self] in
                Task { @MainActor in await self?.processPendingChanges() }
            }
        }
    }

    isolated deinit {
        if let storeCloseHook { link.coordinator.store.removeCloseHook(storeCloseHook) }
        mergeTask?.cancel()
        graph.tearDown()
        saves.finish()
        changes.finish()
        conflicts.finish()
        link.changes.finish()
    }

    /// The executor the context's work runs on: its own queue's, or the main actor's for a
    /// `.main` context.
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        queueExecutor?.asUnownedSerialExecutor() ?? MainActor.sharedUnownedExecutor
    }

    /// The context's name: the author of its saves, and its name in instrumentation.
    public nonisolated var name: String { link.name }
    /// Where the context runs.
    public nonisolated var executor: ContextExecutor { link.executor }
    /// The coordinator at the root of the context's tree.
    public nonisolated var coordinator: Coordinator { link.coordinator }
    /// The schema of the objects.
    public nonisolated var schema: Schema { link.schema }

    // MARK: - Doing work

    /// Runs `body` in the context, then processes pending changes (posting
    /// objects-did-change and publishing them to child contexts).
    ///
    /// The context is an actor, and like any actor it does other work while `body` is
    /// suspended at an `await`: a save, a merge or another `perform` may run in between and
    /// see the changes made so far. (Core Data's `perform` blocks never interleave; they
    /// cannot await.) Keep each set of changes that must be seen whole free of `await`s, or
    /// save from within `body` once they are made.
    public func perform<T: Sendable>(_ body: @Sendable (isolated ObjectContext) async throws -> T) async rethrows -> T {
        graph.turnDepth += 1
        defer {
            graph.turnDepth -= 1
            processPendingChanges()
        }
        return try await body(self)
    }

    /// Runs `body` synchronously in a `.main` context from `@MainActor` code, then processes
    /// pending changes, and returns what it made — objects, live results, anything — to the
    /// main actor, where UI code may keep and use it: the context's isolation *is* the main
    /// actor's, so its objects are main-actor objects, as a Core Data view context's are.
    ///
    /// ```swift
    /// @MainActor final class SongList {
    ///     let results: FetchedResults<Song>
    ///     init(view: ObjectContext) throws {
    ///         results = try view.performAndWait { context in
    ///             try context.fetchedResults(Song.self, request: FetchRequest(entity: "Song", sortBy: [SortKey("title")]))
    ///         }
    ///     }
    /// }
    /// ```
    /// Objects kept so may be read and changed directly on the main actor; changes made
    /// outside any turn of work are processed once the main actor's current job ends (as
    /// Core Data's view context processes them at the end of the run loop's turn), or at
    /// the next `performAndWait`, whichever comes first. The compiler treats `body` as the
    /// context's isolation, not the main actor's, and refuses to let it capture a kept
    /// object: pass the object's ``ManagedObject/objectID`` instead and look it up with
    /// ``object(with:)``.
    ///
    /// Traps for a private-queue context (use ``perform(_:)``), and (in `assumeIsolated`)
    /// when called off the main actor.
    public nonisolated func performAndWait<T>(_ body: (isolated ObjectContext) throws -> T) rethrows -> sending T {
        precondition(link.executor == .main, "performAndWait: context \"\(link.name)\" runs on a private queue; use `await perform { }`")
        // The context's executor is the main actor's and this runs on it, so the caller's
        // closure and the context's isolation are one and the same thread of work.
        let made = try withoutActuallyEscaping(body) { body throws -> MainActorValue<T> in
            nonisolated(unsafe) let body = body
            return try assumeIsolated { context in
                context.graph.turnDepth += 1
                defer {
                    context.graph.turnDepth -= 1
                    context.processPendingChanges()
                }
                return MainActorValue(value: try body(context))
            }
        }
        nonisolated(unsafe) let value = made.value
        return value
    }

    /// Posts objects-did-change for the changes since the last call, brings live results up
    /// to date, and publishes the pending changes to child contexts. Called at the end of
    /// every turn of work (``perform(_:)``, ``performAndWait(_:)``, a save, a merge, a
    /// rollback), and, for a `.main` context's objects changed directly on the main actor,
    /// once the main actor's job that changed them ends.
    public func processPendingChanges() {
        if let took = graph.bringBackTombstonesShownAgain(), !took.isEmpty { link.changes.yield(took) }
        let notification = graph.takePendingNotification()
        link.measure(.processPendingChanges, objects: { (_: Void) in notification.updated.count + notification.inserted.count }) {
            let layer = graph.updateLayer()
            link.published.withLock { $0 = layer }
        }
        if !notification.isEmpty {
            _ = link.measure(.updateResults, objects: { $0 }) { graph.notifyResultsObservers(notification) }
            changes.yield(notification)
        }
        if !retainsRegisteredObjects { graph.releaseUnreferencedObjects() }
    }

    // MARK: - Objects

    /// Inserts a new object of a model class (registering the class for its entity in this context).
    public func insert<T: ManagedObject>(_ type: T.Type) -> T {
        let entity = graph.register(type)
        return graph.insert(entity: entity) as! T
    }

    /// Inserts a new object of an entity.
    public func insert(entity name: String) -> ManagedObject {
        graph.insert(entity: graph.entityIndex(named: name))
    }

    /// Deletes an object, applying its relationships' delete rules (`deny` is checked when saving).
    public func delete(_ object: ManagedObject) {
        precondition(object.graph === graph, "delete: \(object.objectID) belongs to another context; pass its objectID and use object(with:)")
        graph.delete(object)
    }

    /// The context's instance of an object: the one registered, or a fault that loads
    /// when first read. No check that the object exists is made (see ``existingObject(with:)``):
    /// for an object the context's view does not hold — never saved where the context can
    /// see it, or deleted, its tombstone let go — the fault loads as missing (its properties
    /// read empty, ``ManagedObject/value(forKey:)`` throws `objectNotFound`), as Core Data's
    /// fault for a deleted object fails to fire.
    public func object(with id: ObjectID) -> ManagedObject { graph.object(with: id) }

    /// The context's instance of an object, as a model class. Traps if the entity's
    /// objects are made by another class.
    public func object<T: ManagedObject>(with id: ObjectID, as type: T.Type) -> T {
        _ = graph.register(type)
        return graph.object(with: id, as: type)
    }

    /// The context's instance of an object that exists (loaded). An object asked for before
    /// it was saved where this context can see it is found once it is.
    /// - Throws: ``StoreError`` `objectNotFound` if it does not exist in this context's view:
    ///   never saved where the context can see it, deleted elsewhere, or deleted in this
    ///   context (pending save; unlike Core Data, which returns such an object).
    public func existingObject(with id: ObjectID) throws(StoreError) -> ManagedObject {
        guard schema.entityIndex(of: id) != nil else {
            throw StoreError(.objectNotFound, "\(id): schema \"\(schema.name)\" has no entity \"\(id.entity)\"", object: id)
        }
        let object = graph.object(with: id)
        graph.load(object)
        guard !object.isDeleted else {
            throw StoreError(.objectNotFound, "\(id) does not exist in context \"\(name)\" (deleted, or never saved where this context can see it)", object: id)
        }
        return object
    }

    /// The object registered for an ID in this context, if any (no fault is made).
    public func registeredObject(for id: ObjectID) -> ManagedObject? { graph.registeredObject(for: id) }

    /// Every object registered in this context. Objects without pending changes that
    /// nothing outside the context refers to any more are let go from time to time (at the
    /// end of a turn of work, once the context holds twice as many as after the last
    /// pass), as Core Data holds unchanged objects weakly. So are objects that no longer
    /// exist — tombstones (deleted by a save or a merge) and objects inserted and deleted
    /// before any save — once the context's view does not hold them either, no pending
    /// change refers to them and no live results whose updates are suspended list them:
    /// asked for again by ID, such an object is missing, as any ID the view does not hold
    /// (`objectNotFound` rather than a tombstone's `objectDeleted`, empty values rather than
    /// the last ones). A tombstone someone holds stays registered,
    /// the same instance with its last values.
    public var registeredObjects: [ManagedObject] { graph.registeredObjects }
    /// Whether there is anything to save.
    public var hasChanges: Bool { graph.hasChanges }
    /// Objects inserted and not yet saved.
    public var insertedObjects: [ManagedObject] { graph.inserted.compactMap { graph.registeredObject(for: $0) } }
    /// Objects with unsaved changes.
    public var updatedObjects: [ManagedObject] { graph.updated.compactMap { graph.registeredObject(for: $0) } }
    /// Objects deleted and not yet saved.
    public var deletedObjects: [ManagedObject] { graph.deleted.compactMap { graph.registeredObject(for: $0) } }

    /// Every object of an entity as this context sees it: its parent's objects (through the
    /// whole chain, pending changes included) with this context's own inserts and deletes,
    /// in object-ID order.
    public func objects(ofEntity name: String) -> [ManagedObject] {
        _ = graph.entityIndex(named: name)  // traps, naming the entities, for an unknown one
        do throws(StoreError) {
            return try fetch(FetchRequest(entity: name, sortBy: []))
        } catch {
            preconditionFailure("objects(ofEntity: \(name)): \(error)")
        }
    }

    /// Every object of a model class's entity (see ``objects(ofEntity:)``).
    public func objects<T: ManagedObject>(of type: T.Type) -> [T] {
        _ = graph.register(type)
        return objects(ofEntity: type.entityName).map { $0 as! T }
    }

    /// The object whose unique attribute has `value`, looking at this context's pending
    /// changes and then its parent chain; `nil` if there is none.
    public func find<T: ManagedObject>(_ type: T.Type, uniqueKey value: Value) -> T? {
        let entity = graph.register(type)
        precondition(schema.entities[entity].uniqueAttribute != nil, "find(uniqueKey:): \(type.entityName) declares no unique attribute")
        return graph.uniqueHolder(entity: entity, value: value).map { graph.object(with: $0, as: type) }
    }

    /// The object whose unique attribute has `value`, or a new one inserted with it.
    public func findOrCreate<T: ManagedObject>(_ type: T.Type, uniqueKey value: Value) -> T {
        if let found = find(type, uniqueKey: value) { return found }
        let entity = graph.register(type)
        let object = graph.insert(entity: entity)
        graph.writeOrTrap(object, index: schema.entities[entity].attributes.firstIndex(where: \.isUnique)!, value: value)
        return object as! T
    }

    // MARK: - Undoing

    /// Drops every unsaved change: changed and deleted objects get back the values they
    /// were read with; inserted objects are removed (they become tombstones). Child contexts
    /// that follow this one's changes take what the rollback undid of their saves.
    public func rollback() {
        let pendingBefore = link.changes.hasSubscribers ? graph.pendingValues() : [:]
        graph.rollback()
        let undone = pendingBefore.isEmpty ? nil : graph.pendingChanged(since: pendingBefore, author: name)
        processPendingChanges()
        if let undone { link.changes.yield(undone) }
    }

    /// Forgets every object: registered instances become tombstones (their last values
    /// stay readable), and later requests give fresh instances read from the parent.
    ///
    /// Children that follow this context's changes (``automaticallyMergesChanges``) take
    /// what the reset dropped of what they read through it — the changes they saved into
    /// it among them: those objects show this context's parent's values again.
    public func reset() {
        let pendingBefore = link.changes.hasSubscribers ? graph.pendingValues() : [:]
        graph.forgetAll()
        var dropped: DidSave?
        if !pendingBefore.isEmpty {
            // The context holds none of them now: they are as its parent shows them.
            let view = link.sourceView()
            dropped = graph.pendingChanged(since: pendingBefore, author: name) { view.row($0)?.values }
        }
        processPendingChanges()
        if let dropped { link.changes.yield(dropped) }
    }

    /// Reloads an object from the parent: with `mergeChanges`, its unsaved changes stay on
    /// top, based on the values read now (a key another save changed since the object was
    /// read is no longer a conflict for the next save: the change is made on the newer
    /// value, as in Core Data); without, they are dropped and the object becomes a fault.
    /// Dropping a relationship change takes back what it did on the other side too, as
    /// setting the relationship back would: the objects the object left get it back, those
    /// it joined lose it (an object that moved over from a third one is left without it; the
    /// third has let it go). An object deleted here stays deleted either way (its delete
    /// rules changed other objects: ``rollback()`` takes a deletion back); it takes the
    /// parent's current values.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        precondition(object.graph === graph, "refresh: \(object.objectID) belongs to another context")
        graph.refresh(object, mergeChanges: mergeChanges)
        processPendingChanges()
    }

    // MARK: - Notifications

    /// Every save of this context from now on (to the store or to its parent). Like
    /// ``objectsDidChange()`` and ``mergeConflicts()``, the stream ends when the store
    /// closes or the context goes away, and keeps what it has not delivered — a save to the
    /// store, the generation it made: read it, or let it go.
    public nonisolated func didSave() -> AsyncStream<DidSave> { saves.subscribe() }

    /// Objects-did-change notifications of this context from now on.
    public nonisolated func objectsDidChange() -> AsyncStream<ObjectsDidChange> { changes.subscribe() }

    /// The conflicts found from now on by every merge into this context (keys both this
    /// context and the merged save changed) and by every save of it (keys changed in the
    /// parent or the store since this context read them), after ``mergePolicy`` resolved
    /// them. A save under ``MergePolicy/error`` throws its conflicts instead.
    public nonisolated func mergeConflicts() -> AsyncStream<[Conflict]> { conflicts.subscribe() }

    // MARK: - Query generations

    /// Pins the context to the store's current generation: faults and fetches read it until
    /// the context saves, merges or unpins. Only for contexts whose parent is a coordinator.
    @discardableResult
    public func pinQueryGeneration() -> UInt64 {
        precondition(link.isRoot, "pinQueryGeneration: context \"\(name)\" is a child; pin its root context instead")
        let generation = link.coordinator.currentGeneration
        link.pinned.withLock { $0 = generation }
        return generation.transaction
    }

    /// Follows the store's newest generation again.
    public func unpinQueryGeneration() {
        link.pinned.withLock { $0 = nil }
    }

    /// The transaction of the pinned generation, or `nil` when following the newest.
    public var queryGeneration: UInt64? { link.pinned.withLock { $0?.transaction } }

    /// Moves a pinned generation forward to `generation` (never back).
    func advancePin(to generation: Generation) {
        link.pinned.withLock { pinned in
            guard let current = pinned else { return }
            if generation.transaction > current.transaction { pinned = generation }
        }
    }
}

// MARK: - Saving

extension ObjectContext {
    /// Saves every pending change to the parent: into the parent context's pending changes,
    /// or to the store through the coordinator (returning once durable under the store's
    /// durability policy). Everything is validated first; a save that throws changes
    /// nothing here, in the parent, or on disk.
    /// - Throws: ``StoreError``: `missingValue`, `invalidValue`, `validationFailed`,
    ///   `uniqueViolation`, `deleteRule`, `danglingReference` naming the object and key
    ///   (the first problem found; with more, every one is in
    ///   ``StoreError/validationProblems``);
    ///   `conflict` with every conflicting key under ``MergePolicy/error``; the store's errors.
    ///   First, `objectNotFound`, `objectDeleted` or `danglingReference` for a property set
    ///   since the last save that could not be changed because another context deleted its
    ///   object or the object it was set to (a setter cannot throw): nothing is saved, and
    ///   the next save saves the other pending changes.
    /// - Returns: the store transaction the save committed, or `nil` for a save into a parent
    ///   context or when there was nothing to save.
    @discardableResult
    public func save() async throws(StoreError) -> UInt64? {
        try await save(mergePolicy: mergePolicy)
    }

    /// ``save()`` with conflicts resolved by `policy` instead of ``mergePolicy``.
    @discardableResult
    func save(mergePolicy policy: MergePolicy) async throws(StoreError) -> UInt64? {
        try await saveResolvingConflicts(mergePolicy: policy).transaction
    }

    /// ``save(mergePolicy:)``, also returning the conflicts `policy` resolved.
    func saveResolvingConflicts(mergePolicy policy: MergePolicy) async throws(StoreError) -> (transaction: UInt64?, resolved: [Conflict]) {
        await acquireSaveTurn()
        defer { releaseSaveTurn() }
        processPendingChanges()
        if let unapplied = graph.takeUnappliedWrites() { throw unapplied }
        guard graph.hasChanges else { return (nil, []) }
        let capture = try link.measure(.save, objects: { $0.objectCount }) { () throws(StoreError) -> SaveCapture in
            try graph.validateForSave()
            return graph.captureSave()
        }
        // A save that throws leaves its objects as they were, not "part of a save in flight".
        var finished = false
        defer { if !finished { graph.abandonSave(capture) } }
        let origin = ObjectIdentifier(self)
        let didSave: DidSave
        var resolved: [Conflict] = []
        var kept: (deletions: [ObjectID], values: [ObjectID: [Int]]) = ([], [:])
        if let parentContext {
            let applied = try await parentContext.applyChildSave(capture.childSave(author: name, origin: origin, mergePolicy: policy))
            resolved = applied.resolved
            didSave = link.measure(.save, objects: { _ in capture.objectCount }) {
                // The saved objects take what the parent holds, and the did-save says what
                // it applied: its merge policy may have kept its own values.
                kept = graph.finishSave(capture, committed: nil, held: applied.held)
                graph.adoptParentValues(of: applied.didSave, beyond: capture)
                // (Not the objects whose deletion the parent's merge policy dropped.)
                graph.markDeletedElsewhere(resolved.filter { $0.key == nil && $0.theirVersion == nil }.map(\.object) + applied.alsoDeleted)
                // Tombstones the saved objects name again come back as the parent shows them
                // (at the end of the turn, below).
                graph.noteTombstones(namedBy: capture)
                return applied.didSave
            }
        } else {
            let changes = capture.changeSet(author: name, mergePolicy: policy, origin: origin)
            // A private-queue context commits on its own queue, at its priority, and may block
            // it to write its transaction itself; a main-actor context leaves the work to the
            // global executor, off the main actor.
            let result = link.executor == .main
                ? try await link.coordinator.commit(changes)
                : try await link.coordinator.commitOnCallersExecutor(changes, mayBlock: link.mayBlockQueueOnCommit)
            resolved = result.resolvedConflicts
            didSave = link.measure(.save, objects: { _ in capture.objectCount }) {
                kept = graph.finishSave(capture, committed: result.generation)
                // (Only a resolved conflict makes the store change objects a save did not send.)
                if !resolved.isEmpty, let notification = result.notification {
                    let beyond = graph.takeChangesBeyondSave(notification, capture: capture, policy: policy)
                    for (id, keys) in beyond { kept.values[id, default: []] += keys }
                }
                guard var save = result.notification.map(DidSave.init) else {
                    // The merge policy dropped every change: nothing was written, and the
                    // generation's transaction is another context's.
                    var save = DidSave(transaction: nil, author: name)
                    save.origin = origin
                    return save
                }
                save.origin = origin
                return save
            }
            advancePin(to: result.generation)
        }
        finished = true
        processPendingChanges()
        if !resolved.isEmpty { conflicts.yield(resolved) }
        saves.yield(didSave)
        link.changes.yield(didSave)
        if !kept.deletions.isEmpty || !kept.values.isEmpty {
            // Children skip this context's own saves (they saw its changes through it), but
            // what the save kept instead of what it sent they have not seen: a deletion it
            // dropped (one of them made it, and holds the object as deleted), values of the
            // store's it kept for conflicting keys. Those following this context's changes
            // take them, as they are here.
            link.changes.yield(graph.announcement(author: name, inserted: kept.deletions, updated: kept.values))
        }
        return (didSave.transaction, resolved)
    }

    /// Applies a child's save as this context's pending changes; returns what was applied,
    /// the conflicts the child's merge policy resolved, the objects the save's deletions took
    /// with them here beyond those the child deleted (this context's delete rules, over what
    /// it holds), and this context's values of the objects the child updated.
    func applyChildSave(_ save: ChildSave) throws(StoreError)
        -> (didSave: DidSave, resolved: [Conflict], alsoDeleted: [ObjectID], held: [ObjectID: [Value]])
    {
        let applied = try link.measure(.applyChildSave, objects: { $0.didSave.inserted.count + $0.didSave.updated.count + $0.didSave.deleted.count }) {
            () throws(StoreError) -> (didSave: DidSave, resolved: [Conflict], alsoDeleted: [ObjectID], held: [ObjectID: [Value]]) in
            try graph.applyChildSave(save)
        }
        processPendingChanges()
        link.changes.yield(applied.didSave)
        return applied
    }

    private func acquireSaveTurn() async {
        if isSaving {
            await withCheckedContinuation { saveWaiters.append($0) }
        }
        isSaving = true
    }

    private func releaseSaveTurn() {
        if saveWaiters.isEmpty {
            isSaving = false
        } else {
            saveWaiters.removeFirst().resume()  // hand the turn over directly
        }
    }
}

// MARK: - Merging

extension ObjectContext {
    /// Merges another context's save into this context: registered objects without
    /// pending changes take the new values; objects with pending changes keep them on top,
    /// keys both sides changed being resolved by ``mergePolicy`` (``MergePolicy/error``
    /// keeps ours and lets the next save report the conflict); deleted objects become
    /// tombstones. Objects not registered here are not touched, except those the save related
    /// to an object pending deletion here, which follow its delete rules (a new album of an
    /// artist deleted here is deleted by the artist's cascade).
    /// - Returns: the conflicting keys found.
    @discardableResult
    public func merge(_ save: DidSave) -> [Conflict] {
        // First: what the merge loads (objects related to one deleted here, which its delete
        // rules reach) is read as of the save.
        if let generation = save.generation { advancePin(to: generation) }
        // Children following this context's merges take the save themselves; what the merge
        // does here beyond it, to objects holding changes of their own, they are told apart.
        let pendingBefore = link.changes.hasSubscribers ? graph.pendingValues() : [:]
        let found = link.measure(.merge, objects: { $0.touched }) {
            let merged = graph.merge(save, policy: mergePolicy)
            // Every object the save touched, for those who follow this context's changes
            // (live results may gain objects it does not hold); nobody following, no cost.
            if !graph.resultsObservers.isEmpty || changes.hasSubscribers {
                // Grown once, not rehashed as it doubles.
                graph.pendingNotification.merged.reserveCapacity(
                    graph.pendingNotification.merged.count + save.inserted.count + save.updated.count + save.deleted.count)
                graph.pendingNotification.merged.formUnion(save.inserted)
                graph.pendingNotification.merged.formUnion(save.updated)
                graph.pendingNotification.merged.formUnion(save.deleted)
                if !link.isRoot { graph.pendingNotification.mergedUnchanged.formUnion(graph.updatesKeptFromView(of: save)) }
            }
            return merged
        }.conflicts
        let beyond = pendingBefore.isEmpty ? nil : graph.pendingChanged(since: graph.addingNewlyDeleted(to: pendingBefore), author: name)
        processPendingChanges()
        if !found.isEmpty { conflicts.yield(found) }
        link.changes.yield(save)
        if let beyond { link.changes.yield(beyond) }
        return found
    }

    /// The parent (a stack's writer) dropped changes this context had saved into it, or kept
    /// other values than it saved for conflicting keys: the objects show the parent's state
    /// again (``ObjectGraph/parentDropped(_:)``, ``ObjectGraph/parentKept(_:)``), and the
    /// children that follow this context's merges take what they took.
    func parentChanged(_ reload: (ObjectGraph) -> DidSave) {
        let took = reload(graph)
        processPendingChanges()
        if !took.isEmpty { link.changes.yield(took) }
    }

    /// Merges a committed transaction (see ``merge(_:)-(DidSave)``).
    @discardableResult
    public func merge(_ commit: CommitNotification) -> [Conflict] {
        merge(DidSave(commit))
    }

    private func updateMergeSubscription() {
        mergeTask?.cancel()
        mergeTask = nil
        guard automaticallyMergesChanges else { return }
        let me = ObjectIdentifier(self)
        // A child skips its parent's own saves: what they hold came from the parent's
        // children (this one included, possibly in a newer state since) or was already
        // visible through the parent. It takes the parent's merges and its siblings' saves.
        let parent = parentContext.map(ObjectIdentifier.init)
        let stream: AsyncStream<DidSave>
        if parentContext != nil, case .context(let parentLink) = link.parent {
            stream = parentLink.changes.subscribe()
        } else {
            let commits = link.coordinator.store.commits()
            let (mapped, continuation) = AsyncStream.makeStream(of: DidSave.self)
            let relay = Task {
                for await commit in commits { continuation.yield(DidSave(commit)) }
                continuation.finish()
            }
            continuation.onTermination = { _ in relay.cancel() }
            stream = mapped
        }
        mergeTask = Task { [weak self] in
            for await save in stream {
                guard save.origin != me, save.origin == nil || save.origin != parent else { continue }
                guard let self else { return }
                // Here, off the context's executor (the main actor for a view context).
                save.changes.build()
                await self.mergeIfStillFollowing(save)
            }
        }
    }

    private func mergeIfStillFollowing(_ save: DidSave) {
        guard automaticallyMergesChanges else { return }
        merge(save)
    }
}

/// A value made in a `.main` context's isolation, on its way to the main actor.
// @unchecked Sendable: it is made on the main actor's executor (a `.main` context's) and
// handed straight to the @MainActor caller of `performAndWait`; it never reaches another thread.
struct MainActorValue<T>: @unchecked Sendable {
    let value: T
}
