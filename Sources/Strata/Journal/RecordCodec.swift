import Foundation

/// Encodes and decodes the payloads of transaction and checkpoint records for one schema,
/// checking every value against its property: what is written is valid, and what is read
/// is either valid or a ``DecodeFailure`` — never a crash, never an unbounded allocation.
final class RecordCodec: Sendable {
    let schema: Schema
    let seed: UInt32
    private let layout: SchemaLayout
    private let entityNames: [String]

    init(schema: Schema, storeID: UUID) {
        self.schema = schema
        self.seed = RecordFormat.seed(for: storeID)
        self.layout = schema.layout
        self.entityNames = schema.entities.map(\.name)
    }

    // MARK: - Checking values

    /// What is wrong with `value` as the value of a property of this kind, or `nil` when it fits.
    static func mismatch(_ value: Value, for kind: SchemaLayout.Kind, in layout: SchemaLayout) -> String? {
        switch kind {
        case .attribute(let type):
            if value.isNull || value.attributeType == type { return nil }
            return "\(value) is not \(type.article) \(type.rawValue)"
        case .toOne(let destination):
            switch value {
            case .null: return nil
            case .object(let id):
                return id.entity == layout.entities[destination].name ? nil : "\(id) is not an object of \(layout.entities[destination].name)"
            default: return "a to-one relationship holds an object ID or nil, not \(value)"
            }
        case .toMany(let destination):
            guard case .objects(let ids) = value else { return "a to-many relationship holds a list of object IDs, not \(value)" }
            let name = layout.entities[destination].name
            if let wrong = ids.first(where: { $0.entity != name }) { return "\(wrong) is not an object of \(name)" }
            return nil
        }
    }

    /// Whether a decoded value fits a property of this kind (the fast check replay uses).
    @inline(__always)
    private func fits(_ value: Value, _ kind: SchemaLayout.Kind) -> Bool {
        switch (kind, value) {
        case (.attribute, .null), (.toOne, .null): return true
        case (.attribute(let type), _): return value.attributeType == type
        case (.toOne(let destination), .object(let id)): return id.entity == layout.entities[destination].name
        case (.toMany(let destination), .objects(let ids)):
            let name = layout.entities[destination].name
            return ids.allSatisfy { $0.entity == name }
        default: return false
        }
    }

    private func invalid(_ message: String, _ transaction: UInt64?) -> StoreError {
        StoreError(.invalidTransaction, message, transaction: transaction)
    }

    private func entity(of id: ObjectID, _ transaction: UInt64?) throws(StoreError) -> SchemaLayout.EntityLayout {
        guard let index = layout.entityIndexes[id.entity] else {
            throw invalid("\(id): the schema has no entity \"\(id.entity)\"; its entities are \(entityNames)", transaction)
        }
        guard id.number > 0 else { throw invalid("\(id): object numbers start at 1", transaction) }
        return layout.entities[index]
    }

    /// Remembers the last entity looked up: the rows of a transaction mostly share one, and
    /// comparing a short name is cheaper than hashing it.
    private struct EntityCache {
        var name = ""
        var index = -1
    }

    /// The storage index of an entity, through the cache.
    @inline(__always)
    private func index(of name: String, cache: inout EntityCache) -> Int? {
        if cache.index >= 0 && name == cache.name { return cache.index }
        guard let index = layout.entityIndexes[name] else { return nil }
        cache = EntityCache(name: name, index: index)
        return index
    }

    /// Checks a row against the schema.
    func validate(_ row: RowImage, transaction: UInt64?) throws(StoreError) {
        var cache = EntityCache()
        try validate(row, transaction: transaction, cache: &cache)
    }

    private func validate(_ row: RowImage, transaction: UInt64?, cache: inout EntityCache) throws(StoreError) {
        guard let index = index(of: row.id.entity, cache: &cache), row.id.number > 0 else {
            _ = try entity(of: row.id, transaction)  // throws the right message
            return
        }
        let entity = layout.entities[index]
        guard row.values.count == entity.propertyCount else {
            throw invalid("\(row.id): \(row.values.count) values given, \(entity.name) has \(entity.propertyCount) properties \(entity.propertyNames)", transaction)
        }
        for (i, value) in row.values.enumerated() where !fits(value, entity.kinds[i]) {
            let problem = Self.mismatch(value, for: entity.kinds[i], in: layout) ?? "does not fit"
            throw invalid("\(row.id), key \"\(entity.propertyNames[i])\": \(problem)", transaction)
        }
    }

    /// Checks a whole transaction against the schema.
    func validate(_ record: TransactionRecord) throws(StoreError) {
        var cache = EntityCache()
        for row in record.inserted { try validate(row, transaction: record.number, cache: &cache) }
        for update in record.updated {
            let entity = try entity(of: update.id, record.number)
            var previous = -1
            for change in update.changes {
                guard change.index > previous, change.index < entity.propertyCount else {
                    throw invalid("\(update.id): property index \(change.index) is out of range or out of order (\(entity.name) has \(entity.propertyCount) properties)", record.number)
                }
                previous = change.index
                if !fits(change.value, entity.kinds[change.index]) {
                    let problem = Self.mismatch(change.value, for: entity.kinds[change.index], in: layout) ?? "does not fit"
                    throw invalid("\(update.id), key \"\(entity.propertyNames[change.index])\": \(problem)", record.number)
                }
            }
        }
        for id in record.deleted { _ = try entity(of: id, record.number) }
    }

    // MARK: - Encoding

    private func entityIndex(_ name: String) -> Int {
        guard let index = layout.entityIndexes[name] else {
            preconditionFailure("entity \"\(name)\" is not in schema \"\(schema.name)\"; validate records before encoding")
        }
        return index
    }

    func writeRow(_ row: RowImage, into w: inout ByteWriter) {
        var cache = EntityCache()
        writeRow(row, into: &w, cache: &cache)
    }

    private func writeRow(_ row: RowImage, into w: inout ByteWriter, cache: inout EntityCache) {
        guard let index = index(of: row.id.entity, cache: &cache) else {
            preconditionFailure("entity \"\(row.id.entity)\" is not in schema \"\(schema.name)\"; validate records before encoding")
        }
        w.writeVarint(index)
        w.writeVarint(row.id.number)
        let indexes = layout.entityIndexes
        for value in row.values { w.writeValue(value, entityIndexes: indexes) }
    }

    /// Checks a transaction against the schema and appends it as a framed record, in one
    /// pass over the inserted rows' values (the bulk of any large transaction). On a
    /// failure the writer holds a partial record: discard it.
    func encodeValidating(_ record: TransactionRecord, into w: inout ByteWriter) throws(StoreError) {
        var shapeOnly = record
        shapeOnly.inserted = []
        try validate(shapeOnly)
        let start = w.beginFrame(.transaction)
        w.writeVarint(record.number)
        w.writeDouble(record.timestamp.timeIntervalSinceReferenceDate)
        w.writeString(record.author)
        w.writeVarint(record.inserted.count)
        var cache = EntityCache()
        let indexes = layout.entityIndexes
        for row in record.inserted {
            guard let index = index(of: row.id.entity, cache: &cache), row.id.number > 0 else {
                _ = try entity(of: row.id, record.number)  // throws the right message
                continue
            }
            let entity = layout.entities[index]
            guard row.values.count == entity.propertyCount else {
                throw invalid("\(row.id): \(row.values.count) values given, \(entity.name) has \(entity.propertyCount) properties \(entity.propertyNames)", record.number)
            }
            w.writeVarint(index)
            w.writeVarint(row.id.number)
            for (i, value) in row.values.enumerated() where !writeChecked(value, entity.kinds[i], indexes: indexes, into: &w) {
                let problem = Self.mismatch(value, for: entity.kinds[i], in: layout) ?? "does not fit"
                throw invalid("\(row.id), key \"\(entity.propertyNames[i])\": \(problem)", record.number)
            }
        }
        encodeChanges(record, into: &w)
        w.finishFrame(at: start, seed: seed)
    }

    /// Writes a value if it fits a property of this kind; returns `false` (writing nothing
    /// useful) if it does not. One switch does both jobs.
    @inline(__always)
    private func writeChecked(_ value: Value, _ kind: SchemaLayout.Kind, indexes: [String: Int], into w: inout ByteWriter) -> Bool {
        switch (kind, value) {
        case (.attribute, .null), (.toOne, .null):
            w.write(ValueTag.null.rawValue)
        case (.attribute(.string), .string), (.attribute(.int), .int), (.attribute(.double), .double),
            (.attribute(.bool), .bool), (.attribute(.date), .date), (.attribute(.data), .data), (.attribute(.uuid), .uuid):
            w.writeValue(value)
        case (.toOne(let destination), .object(let id)):
            guard id.entity == layout.entities[destination].name else { return false }
            w.write(ValueTag.object.rawValue)
            w.writeVarint(destination)
            w.writeVarint(id.number)
        case (.toMany(let destination), .objects(let ids)):
            let name = layout.entities[destination].name
            guard ids.allSatisfy({ $0.entity == name }) else { return false }
            w.write(ValueTag.objects.rawValue)
            w.writeVarint(ids.count)
            for id in ids {
                w.writeVarint(destination)
                w.writeVarint(id.number)
            }
        default:
            return false
        }
        return true
    }

    /// Appends a validated transaction as a framed record.
    func encodeFrame(_ record: TransactionRecord, into w: inout ByteWriter) {
        let start = w.beginFrame(.transaction)
        w.writeVarint(record.number)
        w.writeDouble(record.timestamp.timeIntervalSinceReferenceDate)
        w.writeString(record.author)
        w.writeVarint(record.inserted.count)
        var cache = EntityCache()
        for row in record.inserted { writeRow(row, into: &w, cache: &cache) }
        encodeChanges(record, into: &w)
        w.finishFrame(at: start, seed: seed)
    }

    /// Writes a transaction's updates and deletions (after its inserted rows).
    private func encodeChanges(_ record: TransactionRecord, into w: inout ByteWriter) {
        w.writeVarint(record.updated.count)
        for update in record.updated {
            w.writeVarint(entityIndex(update.id.entity))
            w.writeVarint(update.id.number)
            w.writeVarint(update.changes.count)
            for change in update.changes {
                w.writeVarint(change.index)
                w.writeValue(change.value, entityIndexes: layout.entityIndexes)
            }
        }
        w.writeVarint(record.deleted.count)
        for id in record.deleted { w.writeObjectID(id, entityIndexes: layout.entityIndexes) }
    }

    // MARK: - Decoding

    private func readID(_ r: inout ByteReader) throws(DecodeFailure) -> (ObjectID, Int) {
        let start = r.offset
        let index = try r.readCount("an entity index", limit: Int(Int32.max))
        guard index < entityNames.count else {
            throw DecodeFailure(offset: start, reason: "unknown entity index \(index) (the schema has \(entityNames.count) entities)")
        }
        let numberAt = r.offset
        let number = try r.readVarint()
        guard number > 0 else { throw DecodeFailure(offset: numberAt, reason: "object number 0") }
        return (ObjectID(entity: entityNames[index], number: number), index)
    }

    private func readValue(_ r: inout ByteReader, entity: Int, property: Int, of id: ObjectID) throws(DecodeFailure) -> Value {
        let start = r.offset
        let value = try r.readValue(names: entityNames)
        let kind = layout.entities[entity].kinds[property]
        guard fits(value, kind) else {
            let problem = Self.mismatch(value, for: kind, in: layout) ?? "does not fit"
            throw DecodeFailure(offset: start, reason: "\(id), key \"\(layout.entities[entity].propertyNames[property])\": \(problem)")
        }
        return value
    }

    func readRow(_ r: inout ByteReader) throws(DecodeFailure) -> RowImage {
        let (id, entity) = try readID(&r)
        let count = layout.entities[entity].propertyCount
        var values: [Value] = []
        values.reserveCapacity(count)
        for i in 0..<count { values.append(try readValue(&r, entity: entity, property: i, of: id)) }
        return RowImage(id: id, values: values)
    }

    func decodeTransaction(_ payload: UnsafeRawBufferPointer) throws(DecodeFailure) -> TransactionRecord {
        var r = ByteReader(payload)
        let number = try r.readVarint()
        let timestamp = Date(timeIntervalSinceReferenceDate: try r.readDouble())
        let author = try r.readString()
        // Every element takes at least two bytes, which bounds each count before allocating.
        let insertedCount = try r.readCount("an inserted-object count", limit: r.remaining / 2)
        var inserted: [RowImage] = []
        inserted.reserveCapacity(insertedCount)
        for _ in 0..<insertedCount { inserted.append(try readRow(&r)) }
        let updatedCount = try r.readCount("an updated-object count", limit: r.remaining / 2)
        var updated: [RowUpdate] = []
        updated.reserveCapacity(updatedCount)
        for _ in 0..<updatedCount {
            let (id, entity) = try readID(&r)
            let propertyCount = layout.entities[entity].propertyCount
            let changeCount = try r.readCount("a change count", limit: min(propertyCount, r.remaining / 2))
            var changes: [PropertyChange] = []
            changes.reserveCapacity(changeCount)
            var previous = -1
            for _ in 0..<changeCount {
                let at = r.offset
                let index = try r.readCount("a property index", limit: propertyCount - 1)
                guard index > previous else { throw DecodeFailure(offset: at, reason: "\(id): property indexes out of order") }
                previous = index
                changes.append(PropertyChange(index: index, value: try readValue(&r, entity: entity, property: index, of: id)))
            }
            updated.append(RowUpdate(id: id, changes: changes))
        }
        let deletedCount = try r.readCount("a deleted-object count", limit: r.remaining / 2)
        var deleted: [ObjectID] = []
        deleted.reserveCapacity(deletedCount)
        for _ in 0..<deletedCount { deleted.append(try readID(&r).0) }
        guard r.isAtEnd else { throw r.failure("\(r.remaining) unexpected bytes after the transaction") }
        return TransactionRecord(number: number, timestamp: timestamp, author: author, inserted: inserted, updated: updated, deleted: deleted)
    }

    /// Reads just the transaction number at the start of a transaction payload.
    static func transactionNumber(_ payload: UnsafeRawBufferPointer) -> UInt64? {
        var r = ByteReader(payload)
        return try? r.readVarint()
    }
}
