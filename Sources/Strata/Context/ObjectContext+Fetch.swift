/// Reads objects as a context sees them: its own loaded objects (pending changes included,
/// deleted ones gone), then its view of its parents.
struct ContextReader: RowReader {
    let graph: ObjectGraph
    let view: ContextView

    func values(of id: ObjectID) -> [Value]? {
        if let object = graph.registeredObject(for: id), object.isLoaded {
            switch object.lifecycle {
            case .inserted, .persistent: return object.storage
            // A tombstone that comes back when met again (see `ObjectGraph.reviveIfPresent`):
            // as the view has it, as a fetch finds it.
            case .deletedElsewhere where object.mayReappear: return view.values(of: id)
            case .deleted, .discarded, .deletedElsewhere: return nil
            }
        }
        return view.values(of: id)
    }
}

extension ObjectContext {
    /// The objects a request matches, as this context sees them: with its own and its
    /// ancestors' unsaved changes unless the request says otherwise, in the request's order.
    /// - Throws: ``StoreError/Code/invalidQuery`` naming the unknown entity or key.
    public func fetch(_ request: FetchRequest) throws(StoreError) -> [ManagedObject] {
        try fetchIDs(request).map { graph.object(with: $0) }
    }

    /// The IDs of the objects a request matches (see ``fetch(_:)-(FetchRequest)``).
    public func fetchIDs(_ request: FetchRequest) throws(StoreError) -> [ObjectID] {
        try link.measure(.fetch, objects: { $0.count }) { () throws(StoreError) -> [ObjectID] in
            let (bound, rows) = try graph.matches(request, values: false)
            let name = schema.layout.entityNames[bound.entity]
            return rows.map { ObjectID(entityName: name, number: $0.number) }
        }
    }

    /// The number of objects a request matches (offset and limit applied).
    public func count(for request: FetchRequest) throws(StoreError) -> Int {
        try matches(request, ordered: false).rows.count
    }

    /// The objects of a model class that match a predicate, in the given order (default:
    /// the entity's declared default sort).
    public func fetch<T: ManagedObject>(_ type: T.Type, where predicate: ObjectPredicate? = nil, sortedBy sort: [SortKey]? = nil, limit: Int? = nil) throws(StoreError) -> [T] {
        _ = graph.register(type)
        return try fetch(FetchRequest(entity: type.entityName, predicate: predicate, sortBy: sort, limit: limit)).map { $0 as! T }
    }

    /// An aggregate over the objects of an entity that match a predicate, as this context
    /// sees them (pending changes included), optionally per group.
    public func aggregate(
        _ function: AggregateFunction, of key: String? = nil, entity: String, where predicate: ObjectPredicate? = nil,
        groupBy: String? = nil
    ) throws(StoreError) -> [AggregateRow] {
        let request = FetchRequest(entity: entity, predicate: predicate, sortBy: [])
        let (bound, rows) = try matches(request, ordered: false)
        let aggregation = try Aggregation(function, key: key, groupBy: groupBy, entity: bound.entity, schema: schema)
        return aggregation.compute(rows.map(\.values), reader: ContextReader(graph: graph, view: link.sourceView()))
    }

    func matches(_ request: FetchRequest, ordered: Bool = true) throws(StoreError) -> (bound: BoundRequest, rows: [(number: UInt64, values: [Value])]) {
        try graph.matches(request, ordered: ordered)
    }

    // MARK: - Finders

    /// Every object of a model class matching a predicate (format string), in the given
    /// order or the entity's default sort.
    public func findAll<T: ManagedObject>(_ type: T.Type, where format: String? = nil, sortedBy sort: [SortKey]? = nil) throws(StoreError) -> [T] {
        try fetch(type, where: try Self.predicate(format), sortedBy: sort)
    }

    /// The first object of a model class matching a predicate (format string), in the given
    /// order or the entity's default sort.
    public func findFirst<T: ManagedObject>(_ type: T.Type, where format: String? = nil, sortedBy sort: [SortKey]? = nil) throws(StoreError) -> T? {
        try fetch(type, where: try Self.predicate(format), sortedBy: sort, limit: 1).first
    }

    /// How many objects of a model class match a predicate (format string).
    public func count<T: ManagedObject>(_ type: T.Type, where format: String? = nil) throws(StoreError) -> Int {
        _ = graph.register(type)
        return try count(for: FetchRequest(entity: type.entityName, predicate: try Self.predicate(format), sortBy: []))
    }

    static func predicate(_ format: String?) throws(StoreError) -> ObjectPredicate? {
        guard let format else { return nil }
        do throws(PredicateSyntaxError) {
            return try ObjectPredicate(format: format)
        } catch {
            throw StoreError(.invalidQuery, error.description)
        }
    }
}

extension ObjectGraph {
    /// Matching rows as this context sees them.
    /// - Parameter values: `false` when the caller needs only the object numbers (see
    ///   ``Generation/matches(_:values:)``); rows may then come without values.
    /// - Parameter pending: changed rows shared by fetches that see the context in one
    ///   state (live results refreshed by one change); worked out here when absent.
    func matches(
        _ request: FetchRequest, ordered: Bool = true, values: Bool = true, pending: PendingRows.Cache? = nil
    ) throws(StoreError) -> (bound: BoundRequest, rows: [(number: UInt64, values: [Value])]) {
        let bound = try BoundRequest(request, schema: schema)
        let view = pending?.view ?? link.sourceView()
        guard request.includesPendingChanges else {
            // What the store holds: the generation under every pending layer.
            return (bound, view.generation.matches(bound, values: values || !ordered))
        }
        // Objects whose values here may differ from the generation's.
        let changed = pending?.rows(of: bound.entity, in: self) ?? PendingRows(entity: bound.entity, graph: self, view: view)
        let readsOwnOnly = (bound.predicate?.readsOwnAttributesOnly ?? true) && bound.sort.allSatisfy { $0.path.steps.count == 1 }
        if changed.changed.isEmpty, readsOwnOnly {
            return (bound, view.generation.matches(bound, values: values || !ordered))
        }
        let reader = ContextReader(graph: self, view: view)
        var rows: [(number: UInt64, values: [Value])] = []
        func consider(_ number: UInt64, _ values: [Value]?) {
            guard let values, bound.matches(values, reader: reader) else { return }
            rows.append((number, values))
        }
        if ordered, bound.predicate?.readsOwnAttributesOnly ?? true,
            let walked = view.generation.orderedByIndex(bound, skipping: changed.changed, windowed: false)
        {
            // A sorted fetch with a limit: the first rows of the index that this context has
            // not changed (their verdict is the store's), plus every changed row that matches.
            rows = walked
        } else {
            view.generation.forEachCandidate(bound) { number, values in
                if changed.changed.contains(number) { return }
                consider(number, values)
            }
        }
        if let pending {
            for position in pending.candidates(bound, in: self) { consider(changed.rows[position].number, changed.rows[position].values) }
        } else {
            for row in changed.rows { consider(row.number, row.values) }
        }
        return (bound, ordered ? bound.order(rows, reader: reader) : bound.window(rows))
    }

}
