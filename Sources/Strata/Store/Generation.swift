/// An immutable version of a store's contents: every object as of one transaction.
///
/// Generations share structure (see ``PersistentMap``), so holding one is cheap and never
/// blocks a commit; a reader that pins a generation sees exactly that transaction's state
/// however many commits follow. A generation is freed when no one holds it.
///
/// ```swift
/// let generation = store.currentGeneration
/// for object in generation.objects(of: "Artist") { print(object.id, object.values) }
/// ```
public struct Generation: Sendable {
    /// The schema of the objects.
    public var schema: Schema { shared.schema }
    /// What every generation of a store shares, in one box: copying a generation (as every
    /// commit does several times) then retains one object for them instead of each of the
    /// schema's.
    private let shared: Shared
    /// The last transaction included.
    public internal(set) var transaction: UInt64
    /// One table per entity (by storage index), keyed by object number.
    var tables: [PersistentTable<StoredRow>]
    /// Unique indexes: for each entity with a unique attribute, value → object number.
    var uniqueIndexes: [UniqueIndex?]
    /// Ordered indexes: for each entity, attribute storage index → the index, for every
    /// attribute declared `indexed` or `unique`. Built on first use (from the table) and
    /// maintained by the commits that follow; a generation never built one pays nothing for
    /// it — replay and cold opens stay as fast as without indexes. A box is shared by
    /// consecutive generations in which its entity's rows did not change, and replaced by
    /// the commit that changes them (see ``detachIndexes(touchedBy:)``); its lock guards the
    /// one-time build.
    private(set) var sortedIndexes: [[Int: Locked<SortedIndex?>]]
    /// The ordered indexes readers have used, shared by every generation of a store: once
    /// one is built, each commit builds it for its generation if its base had none, so that
    /// a reader of a store under steady commits does not rebuild it for every generation.
    private var indexDemand: IndexDemand { shared.indexDemand }
    /// The highest object number committed per entity (deleted objects included).
    var highestNumbers: [UInt64]
    /// Unique values of checkpoint rows, collected while a checkpoint loads and indexed in
    /// bulk (much faster than one insertion per row), mostly while later rows load.
    private var checkpointIndexing: CheckpointIndexing?

    /// The schema and the index demand, shared by a generation and every one made from it.
    private final class Shared: Sendable {
        let schema: Schema
        let indexDemand = IndexDemand()
        init(schema: Schema) { self.schema = schema }
    }

    /// A schema with no entities, for a generation that is replaced before use.
    static let placeholderSchema = try! Schema("placeholder", entities: [])

    /// An empty generation (transaction 0).
    init(schema: Schema) {
        shared = Shared(schema: schema)
        transaction = 0
        tables = schema.entities.map { _ in PersistentTable() }
        uniqueIndexes = schema.entities.map { $0.uniqueAttribute == nil ? nil : UniqueIndex() }
        sortedIndexes = schema.layout.entities.map { layout in
            Dictionary(uniqueKeysWithValues: layout.orderedIndexAttributes.map { ($0, Locked<SortedIndex?>(nil)) })
        }
        highestNumbers = schema.entities.map { _ in 0 }
    }

    // MARK: - Reading

    /// The object with this ID, or `nil` if it does not exist in this generation.
    public func object(_ id: ObjectID) -> StoredObject? {
        guard let entity = schema.entityIndex(of: id), let row = tables[entity][id.number] else { return nil }
        return StoredObject(id: id, values: row.values, version: row.version)
    }

    /// The stored row of an object, if it exists (no ``StoredObject`` is made).
    func row(_ id: ObjectID) -> StoredRow? {
        guard let entity = schema.entityIndex(of: id) else { return nil }
        return tables[entity][id.number]
    }

    /// The number of objects of an entity.
    public func count(of entity: String) -> Int {
        schema.entityIndex(named: entity).map { tables[$0].count } ?? 0
    }

    /// The number of objects of every entity.
    public var totalCount: Int { tables.reduce(0) { $0 + $1.count } }

    /// Every object of an entity, in object-number order.
    public func objects(of entity: String) -> [StoredObject] {
        guard let index = schema.entityIndex(named: entity) else { return [] }
        let name = schema.layout.entityNames[index]
        return tables[index].map { StoredObject(id: ObjectID(entityName: name, number: $0.key), values: $0.element.values, version: $0.element.version) }
    }

    /// The object whose unique attribute has this value, if the entity declares one.
    public func object(of entity: String, uniqueValue: Value) -> StoredObject? {
        guard let index = schema.entityIndex(named: entity), let unique = uniqueIndexes[index],
            let number = unique[uniqueValue]
        else { return nil }
        return object(ObjectID(entityName: schema.layout.entityNames[index], number: number))
    }

    /// The highest object number committed for an entity (deleted objects included).
    public func highestObjectNumber(of entity: String) -> UInt64 {
        schema.entityIndex(named: entity).map { highestNumbers[$0] } ?? 0
    }

    // MARK: - Changing (while building the next generation)

    mutating func insertRow(_ id: ObjectID, entity: Int, values: [Value], version: UInt64) {
        insertRow(id.number, entity: entity, values: values, version: version,
                  unique: schema.layout.entities[entity].uniqueAttribute, ordered: builtOrderedIndexes(of: entity))
    }

    /// Adds a new row to its table, to the unique index when `unique` names its attribute,
    /// to the ordered indexes `ordered` (attribute and box), and to the highest-number
    /// bookkeeping.
    private mutating func insertRow(
        _ number: UInt64, entity: Int, values: [Value], version: UInt64, unique: Int?, ordered: [(attribute: Int, box: Locked<SortedIndex?>)]
    ) {
        tables[entity][number] = StoredRow(values: values, version: version)
        if let unique, !values[unique].isNull { uniqueIndexes[entity]![values[unique]] = number }
        for (attribute, box) in ordered {
            box.withLock { $0?.insert(values[attribute], number: number) }
        }
        if number > highestNumbers[entity] { highestNumbers[entity] = number }
    }

    /// The ordered indexes of `entity` this generation has built (an index not built yet is
    /// built from the rows when first used, so an insert has nothing to add to it). Called
    /// while the generation is being made, before anything else can see it: the boxes of
    /// the entities it inserts into are its own (``detachIndexes(touchedBy:)``), so none of
    /// theirs is built meanwhile. A bulk insert looks them up once, not once per row.
    private func builtOrderedIndexes(of entity: Int) -> [(attribute: Int, box: Locked<SortedIndex?>)] {
        schema.layout.entities[entity].orderedIndexAttributes.compactMap { attribute in
            let box = sortedIndexes[entity][attribute]!
            return box.withLock { $0 != nil } ? (attribute, box) : nil
        }
    }

    /// The positions of the rows `record` inserts, per entity (by storage index), in the
    /// record's order. What each entity needs is looked up once per run of rows of the same
    /// entity.
    func insertedRowsByEntity(_ record: TransactionRecord) -> [[Int]] {
        var rowsOf = [[Int]](repeating: [], count: tables.count)
        var last: (name: EntityKey, entity: Int)?
        record.inserted.withUnsafeBufferPointer { rows in
            for i in rows.indices {
                let key = rows[i].id.entityKey
                if last?.name != key { last = (key, schema.entityIndex(of: rows[i].id)!) }
                rowsOf[last!.entity].append(i)
            }
        }
        return rowsOf
    }

    /// Adds the rows `record` inserts (at the positions `rowsOf` gives per entity),
    /// entity by entity: each entity's rows go into its table in one batch (see
    /// ``PersistentTable/updateValues(count:_:)``), and into its indexes — the unique one
    /// only when `indexingUniques`.
    private mutating func insertRows(of record: TransactionRecord, at rowsOf: [[Int]], indexingUniques: Bool) {
        let version = record.number
        for entity in rowsOf.indices where !rowsOf[entity].isEmpty {
            let rows = rowsOf[entity]
            record.inserted.withUnsafeBufferPointer { inserted in
                tables[entity].updateValues(count: rows.count) { i in
                    let row = inserted[rows[i]]
                    return (row.id.number, StoredRow(values: row.values, version: version))
                }
                let unique = indexingUniques ? schema.layout.entities[entity].uniqueAttribute : nil
                let ordered = builtOrderedIndexes(of: entity)
                var highest = highestNumbers[entity]
                for i in rows {
                    let number = inserted[i].id.number
                    if let unique, !inserted[i].values[unique].isNull { uniqueIndexes[entity]![inserted[i].values[unique]] = number }
                    for (attribute, box) in ordered {
                        box.withLock { $0?.insert(inserted[i].values[attribute], number: number) }
                    }
                    if number > highest { highest = number }
                }
                highestNumbers[entity] = highest
            }
        }
    }

    mutating func updateRow(_ id: ObjectID, entity: Int, changes: [PropertyChange], version: UInt64) {
        guard var row = tables[entity][id.number] else { preconditionFailure("update of \(id), which this generation lacks") }
        let unique = uniqueAttributeIndex(entity)
        for change in changes {
            if let box = sortedIndexes[entity][change.index], row.values[change.index] != change.value {
                let old = row.values[change.index]
                box.withLock { index in
                    index?.remove(old, number: id.number)
                    index?.insert(change.value, number: id.number)
                }
            }
            if change.index == unique {
                let old = row.values[change.index]
                if !old.isNull, uniqueIndexes[entity]![old] == id.number { uniqueIndexes[entity]![old] = nil }
                if !change.value.isNull { uniqueIndexes[entity]![change.value] = id.number }
            }
            row.values[change.index] = change.value
        }
        row.version = version
        tables[entity][id.number] = row
    }

    mutating func deleteRow(_ id: ObjectID, entity: Int) {
        guard let row = tables[entity].removeValue(forKey: id.number) else { return }
        for attribute in schema.layout.entities[entity].orderedIndexAttributes {
            sortedIndexes[entity][attribute]!.withLock { _ = $0?.remove(row.values[attribute], number: id.number) }
        }
        if let attribute = uniqueAttributeIndex(entity) {
            let value = row.values[attribute]
            if !value.isNull, uniqueIndexes[entity]![value] == id.number { uniqueIndexes[entity]![value] = nil }
        }
    }

    func uniqueAttributeIndex(_ entity: Int) -> Int? {
        schema.layout.entities[entity].uniqueAttribute
    }

    /// Whether the object exists in this generation.
    public func contains(_ id: ObjectID) -> Bool {
        guard let entity = schema.entityIndex(of: id) else { return false }
        return tables[entity][id.number] != nil
    }

    /// Gives this generation its own index boxes for the entities `record` changes (copies
    /// of the built indexes, sharing their leaves), so that changing them leaves every
    /// earlier generation's alone. The other entities keep sharing their boxes with the
    /// generation before: their rows are the same, so an index built in either serves both.
    mutating func detachIndexes(touchedBy record: TransactionRecord) {
        guard sortedIndexes.contains(where: { !$0.isEmpty }) else { return }
        var touched = [Bool](repeating: false, count: sortedIndexes.count)
        func mark(_ id: ObjectID) { touched[schema.entityIndex(of: id)!] = true }
        // Reads only each row's ID (copying a row retains its values).
        record.inserted.withUnsafeBufferPointer { rows in for i in rows.indices { mark(rows[i].id) } }
        for update in record.updated { mark(update.id) }
        for id in record.deleted { mark(id) }
        let demand = indexDemand.current
        for entity in touched.indices where touched[entity] && !sortedIndexes[entity].isEmpty {
            sortedIndexes[entity] = Dictionary(uniqueKeysWithValues: sortedIndexes[entity].map { attribute, box in
                var index = box.withLock { $0 }
                if index == nil, demand.contains(IndexDemand.key(entity: entity, attribute: attribute)) {
                    index = buildOrderedIndex(entity: entity, attribute: attribute)
                }
                return (attribute, Locked(index))
            })
        }
    }

    /// The ordered index of an attribute, built now if this generation has none yet.
    func orderedIndex(entity: Int, attribute: Int) -> SortedIndex? {
        guard let box = sortedIndexes[entity][attribute] else { return nil }
        return box.withLock { index in
            if let index { return index }
            let built = buildOrderedIndex(entity: entity, attribute: attribute)
            index = built
            indexDemand.insert(entity: entity, attribute: attribute)
            return built
        }
    }

    private func buildOrderedIndex(entity: Int, attribute: Int) -> SortedIndex {
        var entries: [SortedIndex.Entry] = []
        entries.reserveCapacity(tables[entity].count)
        tables[entity].forEach { number, row in entries.append(SortedIndex.Entry(value: row.values[attribute], number: number)) }
        return SortedIndex(bulk: entries)
    }

    /// Whether an attribute has an ordered index (built or not).
    func hasOrderedIndex(entity: Int, attribute: Int) -> Bool { sortedIndexes[entity][attribute] != nil }

    /// Applies a transaction the journal accepted (already validated).
    mutating func applyValidated(_ record: TransactionRecord) {
        applyValidated(record, indexingUniqueInserts: true)
    }

    /// ``applyValidated(_:)``, leaving the unique indexes without the inserted rows'
    /// values when not `indexingUniqueInserts` (the caller indexes them).
    /// `rowsByEntity` is ``insertedRowsByEntity(_:)`` for `record`, when the caller has it.
    mutating func applyValidated(_ record: TransactionRecord, indexingUniqueInserts: Bool, rowsByEntity: [[Int]]? = nil) {
        detachIndexes(touchedBy: record)
        if !record.inserted.isEmpty {
            insertRows(of: record, at: rowsByEntity ?? insertedRowsByEntity(record), indexingUniques: indexingUniqueInserts)
        }
        for update in record.updated {
            updateRow(update.id, entity: schema.entityIndex(of: update.id)!, changes: update.changes, version: record.number)
        }
        for id in record.deleted { deleteRow(id, entity: schema.entityIndex(of: id)!) }
        transaction = record.number
    }
}

// MARK: - Replay and checkpoints

extension Generation: JournalReplayTarget, CheckpointSource {
    public mutating func beginCheckpoint(through transaction: UInt64) throws(ReplayError) {
        self.transaction = transaction
    }

    public mutating func loadCheckpointRow(_ row: RowImage) throws(ReplayError) {
        guard let entity = schema.entityIndex(of: row.id) else { throw ReplayError("unknown entity of \(row.id)") }
        // A checkpoint keeps no row's own version: its rows take the checkpoint's transaction
        // (set by `beginCheckpoint`), never 0, which a change set's base version uses for
        // "not read from the store" — a row read from a checkpoint and changed since must
        // conflict like any other.
        let version = max(transaction, 1)
        guard tables[entity].updateValue(StoredRow(values: row.values, version: version), forKey: row.id.number) == nil else {
            throw ReplayError("the checkpoint holds \(row.id) twice")
        }
        if checkpointIndexing == nil { checkpointIndexing = CheckpointIndexing(entities: tables.count) }
        let unique = uniqueAttributeIndex(entity).map { row.values[$0] }
        checkpointIndexing!.loaded(entity: entity, number: row.id.number, uniqueValue: unique?.isNull == false ? unique : nil)
        if row.id.number > highestNumbers[entity] { highestNumbers[entity] = row.id.number }
    }

    public mutating func finishCheckpoint(through transaction: UInt64, highestObjectNumbers: [String: UInt64]) throws(ReplayError) {
        self.transaction = transaction
        for (entity, index) in checkpointIndexing?.finish() ?? [:] { uniqueIndexes[entity] = index }
        checkpointIndexing = nil
        // Ordered indexes are built when first used.
        sortedIndexes = sortedIndexes.map { boxes in boxes.mapValues { _ in Locked<SortedIndex?>(nil) } }
        for (name, number) in highestObjectNumbers {
            if let entity = schema.entityIndex(named: name), number > highestNumbers[entity] { highestNumbers[entity] = number }
        }
    }

    public mutating func apply(_ transaction: TransactionRecord) throws(ReplayError) {
        for row in transaction.inserted where contains(row.id) {
            throw ReplayError("transaction \(transaction.number) inserts \(row.id), which already exists")
        }
        for update in transaction.updated where !contains(update.id) {
            throw ReplayError("transaction \(transaction.number) updates \(update.id), which does not exist")
        }
        for id in transaction.deleted where !contains(id) {
            throw ReplayError("transaction \(transaction.number) deletes \(id), which does not exist")
        }
        applyValidated(transaction)
    }

    /// The transaction this generation is the state after (0 for an empty store).
    public var lastTransaction: UInt64 { transaction }

    /// The highest object number allocated so far per entity (entities with none left out):
    /// numbers are never reused, deleted objects' included.
    public var highestObjectNumbers: [String: UInt64] {
        var result: [String: UInt64] = [:]
        for (i, entity) in schema.entities.enumerated() where highestNumbers[i] > 0 { result[entity.name] = highestNumbers[i] }
        return result
    }

    /// Calls `body` with every object's row, entity by entity, in object-number order.
    public func forEachRow(_ body: (RowImage) throws -> Void) rethrows {
        for (i, interned) in schema.layout.entityNames.enumerated() {
            try tables[i].forEach { number, row in try body(RowImage(id: ObjectID(entityName: interned, number: number), values: row.values)) }
        }
    }
}
