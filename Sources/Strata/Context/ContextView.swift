/// One context's unsaved changes as its child contexts see them: per entity, the rows it
/// changed, inserted or deleted, with the unique values it claims.
///
/// A layer is immutable and shares structure with the previous one (``PersistentTable``,
/// ``PersistentMap``): a context republishes it after each turn of work at a cost that
/// follows what changed in that turn, and children read it without waiting for the parent.
struct PendingLayer: Sendable {
    /// A changed row: its values as the context has them, or `nil` if the context deleted it.
    struct Row: Sendable {
        var values: [Value]?
        /// The store version the context's change is based on (0 for an object it inserted).
        var version: UInt64
    }

    /// Per entity (storage index), object number → row.
    var rows: [PersistentTable<Row>]
    /// Per entity with a unique attribute: value → object number of rows in this layer that
    /// held the value when published. Entries may be stale; readers check the row.
    var uniques: [UniqueIndex?]
    /// The context's latest merges of committed transactions (the last few, oldest first),
    /// each with the objects that held changes here whose values the merge left as they were
    /// — their changes kept over the transaction's, or equal to its values and so no longer
    /// changes (then they have no row here any more): a child reading them through this
    /// context and merging the same transaction has nothing new to show of them.
    var mergesLeftUnchanged: [(transaction: UInt64, objects: Set<ObjectID>)] = []
    /// How many merges ``mergesLeftUnchanged`` keeps.
    static let mergesKept = 8

    init(schema: Schema) {
        rows = schema.entities.map { _ in PersistentTable() }
        uniques = schema.entities.map { $0.uniqueAttribute == nil ? nil : UniqueIndex() }
    }

    var isEmpty: Bool { rows.allSatisfy(\.isEmpty) }
}

/// What a context reads through: a store generation overlaid with the unsaved changes of
/// every ancestor context, nearest first. Immutable and `Sendable`; capturing one costs a
/// lock per ancestor and no copying.
struct ContextView: Sendable {
    /// A row as the view sees it.
    struct Row: Sendable {
        var values: [Value]
        var version: UInt64
    }

    let generation: Generation
    /// The ancestors' pending changes, nearest ancestor first.
    var layers: [PendingLayer]

    var schema: Schema { generation.schema }

    /// The object's row, or `nil` if it does not exist in this view.
    func row(_ id: ObjectID) -> Row? {
        guard let entity = schema.entityIndex(of: id) else { return nil }
        return row(entity: entity, number: id.number)
    }

    func row(entity: Int, number: UInt64) -> Row? {
        for layer in layers {
            if let row = layer.rows[entity][number] {
                guard let values = row.values else { return nil }
                return Row(values: values, version: row.version)
            }
        }
        guard let stored = generation.tables[entity][number] else { return nil }
        return Row(values: stored.values, version: stored.version)
    }

    /// The object of an entity whose unique attribute holds `value` in this view.
    func holder(entity: Int, uniqueValue value: Value) -> ObjectID? {
        guard let attribute = schema.layout.entities[entity].uniqueAttribute, !value.isNull else { return nil }
        let name = schema.layout.entityNames[entity]
        var candidates: [UInt64] = []
        for layer in layers {
            if let number = layer.uniques[entity]?[value] { candidates.append(number) }
        }
        if let number = generation.uniqueIndexes[entity]?[value] { candidates.append(number) }
        for number in candidates {
            if let row = row(entity: entity, number: number), row.values[attribute] == value {
                return ObjectID(entityName: name, number: number)
            }
        }
        return nil
    }
}
