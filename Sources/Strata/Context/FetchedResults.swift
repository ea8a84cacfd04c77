/// A live, sorted, optionally sectioned result set in one context — the
/// `NSFetchedResultsController` analogue, as a table view's data source uses it.
///
/// After every turn of work in its context that touches its entity (its own changes,
/// saves from children, merges), it fetches again and hands ``onChange`` a
/// ``ResultsDiff`` from the previous snapshot to the new one: section and row deletes
/// (old positions), inserts (new positions), moves and updates, such that applying them in
/// order (``ResultsSnapshot/applying(_:)``) to the old snapshot gives the new one.
///
/// ```swift
/// let results = try context.fetchedResults(Song.self, request: FetchRequest(entity: "Song", sortBy: [SortKey("title")]),
///                                          sectionedBy: "album.title")
/// results.onChange = { diff in tableView.performBatchUpdates { apply(diff) } }
/// results.searchPredicate = try ObjectPredicate(format: "title CONTAINS[c] 'love'")
/// ```
///
/// While the user reorders rows by hand, ``suspendUpdates()``: the results keep their
/// snapshot, and ``resumeUpdates()`` takes the current state as the new snapshot without a
/// diff (the screen already shows it).
public final class FetchedResults<Object: ManagedObject> {
    /// One section: the section key's value and its objects in order.
    public struct Section {
        /// The section key's value (`.null` without sections).
        public let key: Value
        /// The objects, in order.
        public let objects: [Object]
    }

    private let graph: ObjectGraph
    /// The request, without the search predicate.
    public let request: FetchRequest
    /// The key path whose value groups objects into sections, if any.
    public let sectionKey: String?
    private(set) var bound: BoundRequest
    /// Narrows the results (combined with the request's predicate); setting it delivers a
    /// diff — or, while updates are suspended, takes effect when they resume (without one,
    /// as everything that changed meanwhile).
    public var searchPredicate: ObjectPredicate? {
        didSet {
            guard !isSuspended else { return }
            refresh(reportingDiff: true)
        }
    }
    /// Called with every diff, in the context, in version order.
    public var onChange: ((ResultsDiff) -> Void)?
    /// The current snapshot (IDs), for data sources and tests.
    public private(set) var snapshot: ResultsSnapshot {
        didSet { positions = nil }
    }
    /// Each object's position in the snapshot, built when first asked for after a change.
    private var positions: [ObjectID: ResultsIndexPath]?
    /// Incremented with every diff delivered.
    public private(set) var version = 0
    private var isSuspended = false
    /// The last refresh's error (an invalid search predicate), if any.
    public private(set) var lastError: StoreError?

    init(context: isolated ObjectContext, request: FetchRequest, sectionKey: String?) throws(StoreError) {
        // A context tells its results what changed in it, not what its saves or its
        // ancestors' do to the store: results of the store's rows alone would miss what it
        // saves, and would read their section keys through its unsaved values.
        guard request.includesPendingChanges else {
            throw StoreError(.invalidQuery, "live results of \"\(request.entity)\" follow the context's objects, unsaved changes included, "
                             + "so their request must have includesPendingChanges set; fetch with fetch(_:) to read what the store holds")
        }
        self.graph = context.graph
        self.request = request
        self.sectionKey = sectionKey
        var sorted = request
        if let sectionKey {
            // Sections follow the section key in the direction the request sorts it by
            // (ascending if it does not), as NSFetchedResultsController's do.
            let requested = request.sortBy ?? context.schema.entity(named: request.entity)?.defaultSort ?? []
            let ascending = requested.first { $0.key == sectionKey }?.ascending ?? true
            sorted.sortBy = [SortKey(sectionKey, ascending: ascending)] + requested.filter { $0.key != sectionKey }
        }
        bound = try BoundRequest(sorted, schema: context.schema)
        snapshot = ResultsSnapshot(sections: [])
        snapshot = try fetchSnapshot()
        graph.addResultsObserver(self)
    }

    // The context holds its results weakly: they stop observing it as soon as nobody holds
    // them, not at its next change. (Not `Sendable`, the results go away in their context's
    // isolation, where the graph is used.)
    deinit { graph.removeResultsObserver(ObjectIdentifier(self)) }

    /// The sections, with their objects.
    public var sections: [Section] {
        snapshot.sections.map { section in Section(key: section.key, objects: section.ids.map { graph.object(with: $0, as: Object.self) }) }
    }

    /// Every object, in order.
    public var objects: [Object] { snapshot.sections.flatMap { $0.ids.map { graph.object(with: $0, as: Object.self) } } }

    /// The object at a position.
    public func object(at path: ResultsIndexPath) -> Object {
        graph.object(with: snapshot.sections[path.section].ids[path.row], as: Object.self)
    }

    /// The position of an object in the results, or `nil` if they do not show it.
    public func indexPath(for object: Object) -> ResultsIndexPath? { indexPath(for: object.objectID) }

    /// The position of the object with this ID in the results, or `nil` if they do not
    /// show it (`NSFetchedResultsController.indexPath(forObject:)`).
    public func indexPath(for id: ObjectID) -> ResultsIndexPath? {
        if let positions { return positions[id] }
        var built: [ObjectID: ResultsIndexPath] = [:]
        built.reserveCapacity(snapshot.sections.reduce(0) { $0 + $1.ids.count })
        for (section, rows) in snapshot.sections.enumerated() {
            for (row, id) in rows.ids.enumerated() { built[id] = ResultsIndexPath(section: section, row: row) }
        }
        positions = built
        return built[id]
    }

    /// Stops delivering diffs (while the user reorders rows by hand).
    public func suspendUpdates() { isSuspended = true }

    /// The objects of a snapshot not kept current — updates suspended, or the last refresh
    /// failed — which may include objects deleted since: their context keeps their
    /// tombstones, so that the results show their last values until they are current again.
    var staleIDs: [ObjectID] { isSuspended || lastError != nil ? snapshot.sections.flatMap(\.ids) : [] }

    /// Delivers diffs again, starting from the current state, without a diff for what
    /// changed while suspended.
    public func resumeUpdates() {
        isSuspended = false
        refresh(reportingDiff: false)
    }

    private func fetchSnapshot(pending: PendingRows.Cache? = nil) throws(StoreError) -> ResultsSnapshot {
        var request = self.request
        request.sortBy = bound.sort.map { SortKey($0.path.text, ascending: $0.ascending) }
        if let search = searchPredicate {
            request.predicate = request.predicate.map { $0 && search } ?? search
        }
        let (bound, rows) = try graph.matches(request, pending: pending)
        let reader = ContextReader(graph: graph, view: pending?.view ?? graph.link.sourceView())
        let name = graph.schema.layout.entityNames[bound.entity]
        var sections: [ResultsSnapshot.Section] = []
        let sectionPath = sectionKey == nil ? nil : bound.sort.first?.path
        for row in rows {
            let key = sectionPath.map { $0.resolve(row.values, reader: reader).first ?? .null } ?? .null
            let id = ObjectID(entityName: name, number: row.number)
            if !sections.isEmpty, sections[sections.count - 1].key == key {
                sections[sections.count - 1].ids.append(id)  // in place (no copy of the section held)
            } else {
                sections.append(ResultsSnapshot.Section(key: key, ids: [id]))
            }
        }
        if sectionKey == nil && sections.isEmpty { sections = [ResultsSnapshot.Section(key: .null, ids: [])] }
        return ResultsSnapshot(sections: sections)
    }

    /// Called by the context after each turn of work that changed something.
    func contextDidChange(_ change: ResultsChange) {
        guard !isSuspended else { return }
        let touches = change.notification.invalidatedAll || searchTouches(change.notification)
        guard touches else { return }
        refresh(reportingDiff: true, updated: change.changedObjects, pending: change.pendingRows)
    }

    private func searchTouches(_ change: ObjectsDidChange) -> Bool {
        // Key paths may reach other entities, so any change can matter unless the request
        // reads only its own entity's attributes.
        let ownOnly = bound.sort.allSatisfy { $0.path.steps.count == 1 } && (bound.predicate?.readsOwnAttributesOnly ?? true)
            && searchPredicate == nil
        if !ownOnly { return true }
        let key = graph.schema.layout.entityKeys[bound.entity]
        func mine(_ id: ObjectID) -> Bool { id.entityKey == key }
        return change.inserted.contains(where: mine) || change.deleted.contains(where: mine) || change.updated.keys.contains(where: mine)
            || change.refreshed.contains(where: mine) || change.invalidated.contains(where: mine)
            || change.merged.contains(where: mine)
    }

    private func refresh(reportingDiff: Bool, updated: Set<ObjectID> = [], pending: PendingRows.Cache? = nil) {
        let new: ResultsSnapshot
        do throws(StoreError) {
            new = try fetchSnapshot(pending: pending)
            lastError = nil
        } catch {
            lastError = error
            return
        }
        let old = snapshot
        snapshot = new
        guard reportingDiff else { return }
        var diff = ResultsDiff(from: old, to: new, updated: updated)
        guard !diff.isEmpty else { return }
        version += 1
        diff.version = version
        onChange?(diff)
    }
}

extension ObjectContext {
    /// Live results of a request in this context, optionally in sections by a key path
    /// (which becomes the first sort key, in the direction the request sorts it by, else
    /// ascending).
    /// - Throws: ``StoreError/Code/invalidQuery`` naming an unknown entity or key, or a
    ///   request without ``FetchRequest/includesPendingChanges`` (live results show the
    ///   context's objects as it has them).
    ///
    /// Traps when `type` models another entity than the request's (the results could not
    /// hand out their objects as `type`).
    public func fetchedResults<T: ManagedObject>(_ type: T.Type, request: FetchRequest, sectionedBy sectionKey: String? = nil) throws(StoreError) -> FetchedResults<T> {
        let modelled = graph.register(type)
        if let fetched = schema.entityIndex(named: request.entity), fetched != modelled {
            preconditionFailure("fetchedResults(\(T.self).self, …): the request fetches \"\(request.entity)\" objects, but \(T.self) models "
                                + "\"\(schema.entities[modelled].name)\"; pass the class of \"\(request.entity)\", or request \"\(schema.entities[modelled].name)\"")
        }
        return try FetchedResults(context: self, request: request, sectionKey: sectionKey)
    }
}

extension ObjectGraph {
    func addResultsObserver<T: ManagedObject>(_ results: FetchedResults<T>) {
        resultsObservers.append(WeakResults(results))
    }

    /// Forgets a result set that is going away.
    func removeResultsObserver(_ results: ObjectIdentifier) {
        resultsObservers.removeAll { $0.results == results }
    }

    /// Brings every live result set up to date; returns how many there are.
    func notifyResultsObservers(_ notification: ObjectsDidChange) -> Int {
        guard !resultsObservers.isEmpty else { return 0 }
        let change = ResultsChange(notification, view: link.sourceView(), graph: self)
        // A copy: an `onChange` may make or drop result sets.
        let observers = resultsObservers
        for observer in observers { observer.notify(change) }
        return observers.count
    }
}

/// One change as the live result sets of a context see it: the objects whose values may
/// have changed, and the context's changed rows that their fetches evaluate, are collected
/// once, for all of them.
///
/// Every result set refreshed by the change sees the context as the change left it: if a
/// result set's `onChange` changes objects, the change after this one brings those
/// changes to every result set.
final class ResultsChange {
    let notification: ObjectsDidChange
    // Merged objects held here that took new values are among the refreshed ones; the
    // others (not held) changed where this context reads them — unless its parent kept
    // its own values of them.
    private(set) lazy var changedObjects: Set<ObjectID> = Set(notification.updated.keys).union(notification.refreshed)
        .union(notification.shownChangedBeforeReset)
        .union(notification.merged.filter { graph?.registeredObject(for: $0) == nil && !notification.mergedUnchanged.contains($0) })
    let pendingRows: PendingRows.Cache
    private weak var graph: ObjectGraph?

    init(_ notification: ObjectsDidChange, view: ContextView, graph: ObjectGraph? = nil) {
        self.notification = notification
        self.pendingRows = PendingRows.Cache(view: view)
        self.graph = graph
    }
}

/// A results controller held weakly by its context, until it goes away (its deinit
/// removes it).
struct WeakResults {
    /// The result set's identity.
    let results: ObjectIdentifier
    let notify: (ResultsChange) -> Void
    /// See ``FetchedResults/staleIDs``.
    let staleIDs: () -> [ObjectID]

    init<T: ManagedObject>(_ results: FetchedResults<T>) {
        self.results = ObjectIdentifier(results)
        notify = { [weak results] change in results?.contextDidChange(change) }
        staleIDs = { [weak results] in results?.staleIDs ?? [] }
    }
}
