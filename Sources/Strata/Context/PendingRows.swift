/// The objects of one entity whose values a context sees differently from the store's
/// generation (its own unsaved changes and its ancestors'), with those values.
///
/// A fetch that includes pending changes takes the generation's verdict for every other
/// object and evaluates these itself. Live result sets refreshed by one change share one
/// ``Cache``, so a context with many unsaved changes and many result sets works out the
/// changed rows once per change, not once per result set.
struct PendingRows {
    /// Object numbers of the entity whose rows differ from the generation's.
    var changed: Set<UInt64> = []
    /// Each changed object's values as the context sees them (`nil`: deleted here).
    var rows: [(number: UInt64, values: [Value]?)] = []

    /// The changed rows of one entity in a context, as `view` and the graph show them.
    init(entity: Int, graph: ObjectGraph, view: ContextView) {
        for layer in view.layers { layer.rows[entity].forEach { number, _ in changed.insert(number) } }
        let name = graph.schema.layout.entityNames[entity]
        let key = name.key
        // Each set in turn, without gathering them (this runs for every fetch that includes
        // pending changes).
        for id in graph.inserted where id.entityKey == key { changed.insert(id.number) }
        for id in graph.updated where id.entityKey == key { changed.insert(id.number) }
        for id in graph.deleted where id.entityKey == key { changed.insert(id.number) }
        guard !changed.isEmpty else { return }
        let reader = ContextReader(graph: graph, view: view)
        rows.reserveCapacity(changed.count)
        for number in changed { rows.append((number, reader.values(of: ObjectID(entityName: name, number: number)))) }
    }

    /// Changed rows per entity, and indexes of them per attribute, worked out on first use
    /// for fetches that all see the context in one state (the live result sets refreshed by
    /// one change). Nothing may change the context's objects while it is in use.
    final class Cache {
        /// The view of the context's parents every fetch through the cache reads.
        let view: ContextView
        private var entities: [Int: PendingRows] = [:]
        private var indexes: [IndexKey: SortedIndex] = [:]

        private struct IndexKey: Hashable {
            var entity: Int
            var attribute: Int
        }

        init(view: ContextView) { self.view = view }

        func rows(of entity: Int, in graph: ObjectGraph) -> PendingRows {
            if let rows = entities[entity] { return rows }
            let rows = PendingRows(entity: entity, graph: graph, view: view)
            entities[entity] = rows
            return rows
        }

        /// The changed rows of the request's entity that its most selective index condition
        /// lets through (every changed row if it has none), by their position in
        /// ``PendingRows/rows``.
        func candidates(_ bound: BoundRequest, in graph: ObjectGraph) -> [Int] {
            let pending = rows(of: bound.entity, in: graph)
            guard pending.rows.count > 64, let plan = Generation.indexPlan(bound, indexed: { _ in true }) else {
                return Array(pending.rows.indices)
            }
            let key = IndexKey(entity: bound.entity, attribute: plan.attribute)
            let index: SortedIndex
            if let built = indexes[key] {
                index = built
            } else {
                // Keyed by position in `rows` (deleted rows, which match nothing, left out).
                index = SortedIndex(bulk: pending.rows.indices.compactMap { position in
                    pending.rows[position].values.map { SortedIndex.Entry(value: $0[plan.attribute], number: UInt64(position)) }
                })
                indexes[key] = index
            }
            return plan.numbers(in: index).map { Int($0) }
        }
    }
}
