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
        let name = graph.schema.entities[entity].name
        for set in [graph.inserted, graph.updated, graph.deleted] {
            for id in set where id.entity == name { changed.insert(id.number) }
        }
        guard !changed.isEmpty else { return }
        let reader = ContextReader(graph: graph, view: view)
        rows.reserveCapacity(changed.count)
        for number in changed { rows.append((number, reader.values(of: ObjectID(entity: name, number: number)))) }
    }

    /// Changed rows per entity, worked out on first use, for fetches that all see the
    /// context in one state (the live result sets refreshed by one change). Nothing may
    /// change the context's objects while it is in use.
    final class Cache {
        /// The view of the context's parents every fetch through the cache reads.
        let view: ContextView
        private var entities: [Int: PendingRows] = [:]

        init(view: ContextView) { self.view = view }

        func rows(of entity: Int, in graph: ObjectGraph) -> PendingRows {
            if let rows = entities[entity] { return rows }
            let rows = PendingRows(entity: entity, graph: graph, view: view)
            entities[entity] = rows
            return rows
        }
    }
}
