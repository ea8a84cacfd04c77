import Dispatch
import Foundation
import Synchronization

/// Encodes and decodes the payloads of transaction and checkpoint records for one schema,
/// checking every value against its property: what is written is valid, and what is read
/// is either valid or a ``DecodeFailure`` — never a crash, never an unbounded allocation.
final class RecordCodec: Sendable {
    let schema: Schema
    let seed: UInt32
    private let layout: SchemaLayout
    private let entityNames: [String]

    /// Per entity, per property: what its value may be, as the encoder checks it. One
    /// array for every entity, so that the encoder reads it without a retain per row:
    /// entity `e`'s properties are at `slotStarts[e]..<slotStarts[e + 1]`.
    private let slots: [Slot]
    private let slotStarts: [Int]
    /// Buffers for the second half of large transactions (see ``RowsInHalves``).
    private let halfBuffers = Locked<[ByteWriter]>([])

    /// What a property's value may be, in one byte: the encoder compares it with the
    /// value's case instead of matching the property's ``SchemaLayout/Kind``.
    enum Slot: UInt8 {
        case string, int, double, bool, date, data, uuid, toOne, toMany

        init(_ kind: SchemaLayout.Kind) {
            switch kind {
            case .attribute(.string): self = .string
            case .attribute(.int): self = .int
            case .attribute(.double): self = .double
            case .attribute(.bool): self = .bool
            case .attribute(.date): self = .date
            case .attribute(.data): self = .data
            case .attribute(.uuid): self = .uuid
            case .toOne: self = .toOne
            case .toMany: self = .toMany
            }
        }
    }

    init(schema: Schema, storeID: UUID) {
        self.schema = schema
        self.seed = RecordFormat.seed(for: storeID)
        self.layout = schema.layout
        self.entityNames = schema.entities.map(\.name)
        let kinds = schema.layout.entities.map(\.kinds)
        self.slots = kinds.flatMap { $0.map(Slot.init) }
        self.slotStarts = kinds.reduce(into: [0]) { starts, kinds in starts.append(starts.last! + kinds.count) }
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
                return id.entityKey == layout.entityKeys[destination] ? nil : "\(id) is not an object of \(layout.entities[destination].name)"
            default: return "a to-one relationship holds an object ID or nil, not \(value)"
            }
        case .toMany(let destination):
            guard case .objects(let ids) = value else { return "a to-many relationship holds a list of object IDs, not \(value)" }
            let key = layout.entityKeys[destination]
            if let wrong = ids.first(where: { $0.entityKey != key }) { return "\(wrong) is not an object of \(layout.entities[destination].name)" }
            return nil
        }
    }

    /// Whether a decoded value fits a property of this kind (the fast check replay uses).
    @inline(__always)
    private func fits(_ value: Value, _ kind: SchemaLayout.Kind) -> Bool {
        switch (kind, value) {
        case (.attribute, .null), (.toOne, .null): return true
        case (.attribute(let type), _): return value.attributeType == type
        case (.toOne(let destination), .object(let id)): return id.entityKey == layout.entityKeys[destination]
        case (.toMany(let destination), .objects(let ids)):
            let key = layout.entityKeys[destination]
            return ids.allSatisfy { $0.entityKey == key }
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
        guard RecordFormat.isObjectNumber(id.number) else {
            throw invalid("\(id): object numbers run from 1 to \(RecordFormat.largestObjectNumber)", transaction)
        }
        return layout.entities[index]
    }

    /// Remembers the last entity looked up: the rows of a transaction mostly share one.
    /// Keyed by the interned name's address (``ObjectID/entityKey``), not the name: reading an
    /// ID's name as a `String` retains the one storage every ID of the entity shares, and the
    /// threads encoding a transaction's halves then contend for its reference count.
    private struct EntityCache {
        var key: EntityKey?
        var index = -1
    }

    /// The storage index of an ID's entity, through the cache.
    @inline(__always)
    private func index(of id: ObjectID, cache: inout EntityCache) -> Int? {
        let key = id.entityKey
        if cache.index >= 0 && key == cache.key { return cache.index }
        guard let index = layout.entityIndex(of: id) else { return nil }
        cache = EntityCache(key: key, index: index)
        return index
    }

    /// Checks a row against the schema.
    func validate(_ row: RowImage, transaction: UInt64?) throws(StoreError) {
        var cache = EntityCache()
        try validate(row, transaction: transaction, cache: &cache)
    }

    private func validate(_ row: RowImage, transaction: UInt64?, cache: inout EntityCache) throws(StoreError) {
        guard let index = index(of: row.id, cache: &cache), RecordFormat.isObjectNumber(row.id.number) else {
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

    /// Appends a row (entity index, number, values) of a validated record.
    func writeRow(_ row: RowImage, into w: inout ByteWriter) {
        var cache = EntityCache()
        w.withCursor { c in writeRow(row, into: &c, cache: &cache) }
    }

    private func writeRow(_ row: RowImage, into c: inout ByteCursor, cache: inout EntityCache) {
        guard let index = index(of: row.id, cache: &cache) else {
            preconditionFailure("entity \"\(row.id.entity)\" is not in schema \"\(schema.name)\"; validate records before encoding")
        }
        let fits = slots.withUnsafeBufferPointer { slots in
            row.values.withUnsafeBufferPointer { values in
                writeValues(values, number: row.id.number, entity: index, slots: slots, into: &c) == nil
            }
        }
        guard fits else {
            preconditionFailure("\(row.id) does not fit schema \"\(schema.name)\"; validate records before encoding")
        }
    }

    /// The most bytes a value's encoding takes beyond ``fixedValueBound``: the length of
    /// a string or data, the IDs of a to-many list.
    @inline(__always)
    private static func variableBound(_ value: Value) -> Int {
        switch value {
        case .string(let s): s.utf8.count
        case .data(let d): d.count
        case .objects(let ids): ids.count * 2 * ByteCursor.maxVarint
        default: 0
        }
    }

    /// The most bytes any value's encoding takes besides its variable part: a tag and two
    /// varints (a to-one ID; a count or a length is one varint).
    private static let fixedValueBound = 1 + 2 * ByteCursor.maxVarint

    /// Writes a row's entity index, number and values, checking each value against its
    /// property as it goes (one switch does both jobs). Returns the position of the first
    /// value that does not fit (the writer then holds a partial row), or `nil`.
    ///
    /// Room for the whole row is reserved first, so that writing calls nothing that could
    /// release a value, and the values are borrowed through a buffer pointer: they are
    /// read in place, without a retain and a release each (the row's array, each string,
    /// each data), which had cost about a third of encoding.
    @inline(__always)
    private func writeValues(
        _ values: UnsafeBufferPointer<Value>, number: UInt64, entity index: Int, slots allSlots: UnsafeBufferPointer<Slot>,
        into cursor: inout ByteCursor
    ) -> Int? {
        let slots = UnsafeBufferPointer(rebasing: allSlots[slotStarts[index]..<slotStarts[index + 1]])
        precondition(values.count == slots.count, "object \(number): \(values.count) values for \(slots.count) properties")
        // A local cursor, and no closures: a cursor a closure captures by reference lives
        // in memory, and every write through it might (for all the optimizer knows) change
        // the values, which it then copies before reading.
        var c = cursor
        defer { cursor = c }
        var bound = 2 * ByteCursor.maxVarint + values.count * Self.fixedValueBound
        for i in 0..<values.count { bound += Self.variableBound(values[i]) }
        c.reserve(bound)
        c.putVarint(UInt64(index))
        c.putVarint(number)
        for i in 0..<values.count {
            // Compared as raw values: comparing the enums (`==`) made the optimizer copy
            // (retain and release) every string and data value it switched over.
            let slot = slots[i].rawValue
            var nonContiguousString = false
            switch values[i] {
            case .null:
                guard slot != Slot.toMany.rawValue else { return i }
                c.putByte(ValueTag.null.rawValue)
            case .string(let s):
                guard slot == Slot.string.rawValue else { return i }
                c.putByte(ValueTag.string.rawValue)
                nonContiguousString = !c.putContiguousString(s)
            case .int(let v):
                guard slot == Slot.int.rawValue else { return i }
                c.putByte(ValueTag.int.rawValue)
                c.putSignedVarint(v)
            case .double(let d):
                guard slot == Slot.double.rawValue else { return i }
                c.putByte(ValueTag.double.rawValue)
                c.putUInt64(d.bitPattern)
            case .bool(let b):
                guard slot == Slot.bool.rawValue else { return i }
                c.putByte(b ? ValueTag.boolTrue.rawValue : ValueTag.boolFalse.rawValue)
            case .date(let d):
                guard slot == Slot.date.rawValue else { return i }
                c.putByte(ValueTag.date.rawValue)
                c.putUInt64(d.timeIntervalSinceReferenceDate.bitPattern)
            case .data(let d):
                guard slot == Slot.data.rawValue else { return i }
                c.putByte(ValueTag.data.rawValue)
                c.putData(d)
            case .uuid(let u):
                guard slot == Slot.uuid.rawValue else { return i }
                c.putByte(ValueTag.uuid.rawValue)
                c.putUUID(u)
            case .object, .objects:
                // Out of line, reading the value again: a branch here that holds
                // the value across calls would make the switch copy every value.
                guard writeRelationship(values, i, slot: Slot(rawValue: slot)!, entity: index, into: &c) else { return i }
            }
            if nonContiguousString, case .string(let s) = values[i] { c.putNonContiguousString(s) }
        }
        return nil
    }

    /// Writes the relationship value `values[i]` if it fits its property; returns `false`
    /// (writing nothing) if it does not. Room for it is reserved.
    @inline(never)
    private func writeRelationship(_ values: UnsafeBufferPointer<Value>, _ i: Int, slot: Slot, entity index: Int, into c: inout ByteCursor) -> Bool {
        switch (slot, layout.entities[index].kinds[i], values[i]) {
        case (.toOne, .toOne(let destination), .object(let id)):
            guard id.entityKey == layout.entityKeys[destination] else { return false }
            c.putByte(ValueTag.object.rawValue)
            c.putVarint(UInt64(destination))
            c.putVarint(id.number)
        case (.toMany, .toMany(let destination), .objects(let ids)):
            let key = layout.entityKeys[destination]
            guard ids.allSatisfy({ $0.entityKey == key }) else { return false }
            c.putByte(ValueTag.objects.rawValue)
            c.putVarint(UInt64(ids.count))
            for id in ids {
                c.putVarint(UInt64(destination))
                c.putVarint(id.number)
            }
        default:
            return false
        }
        return true
    }

    /// Writes the transaction's header fields: its number, time, author and row count.
    private func writeHeader(_ record: TransactionRecord, into w: inout ByteWriter) {
        w.writeVarint(record.number)
        w.writeDouble(record.timestamp.timeIntervalSinceReferenceDate)
        w.writeString(record.author)
        w.writeVarint(record.inserted.count)
    }

    /// The error for the first row of `record` that does not fit the schema: `failure` is
    /// that row and its first value that does not fit (`nil` when the row's ID or value
    /// count is wrong), as ``writeRows(_:_:into:)`` reports it.
    fileprivate func refusal(of record: TransactionRecord, _ failure: (row: Int, value: Int?)) -> StoreError {
        let row = record.inserted[failure.row]
        let entity: SchemaLayout.EntityLayout
        do throws(StoreError) { entity = try self.entity(of: row.id, record.number) } catch { return error }
        guard let i = failure.value else {
            return invalid("\(row.id): \(row.values.count) values given, \(entity.name) has \(entity.propertyCount) properties \(entity.propertyNames)", record.number)
        }
        let problem = Self.mismatch(row.values[i], for: entity.kinds[i], in: layout) ?? "does not fit"
        return invalid("\(row.id), key \"\(entity.propertyNames[i])\": \(problem)", record.number)
    }

    /// Transactions inserting at least this many rows are encoded in two halves at once
    /// (``RowsInHalves``): below it, handing half to another thread costs more than it saves.
    static var rowsEncodedInHalves: Int { 512 }
    private static let processors = ProcessInfo.processInfo.activeProcessorCount

    /// Whether ``beginFrame(_:validating:into:)`` leaves `record`'s rows to be written in
    /// two halves at once.
    static func encodesInHalves(_ record: TransactionRecord) -> Bool {
        record.inserted.count >= rowsEncodedInHalves && processors > 1
    }

    /// Writes rows `range`, checking each against the schema; returns the first that does
    /// not fit (see ``refusal(of:_:)``).
    private func writeRows(_ rows: UnsafeBufferPointer<RowImage>, _ range: Range<Int>, into w: inout ByteWriter) -> (row: Int, value: Int?)? {
        var cache = EntityCache()
        return w.withCursor { c in
            slots.withUnsafeBufferPointer { slots in
                for r in range {
                    guard let index = index(of: rows[r].id, cache: &cache), RecordFormat.isObjectNumber(rows[r].id.number),
                        rows[r].values.count == slotStarts[index + 1] - slotStarts[index]
                    else { return (r, nil) }
                    let failed = rows[r].values.withUnsafeBufferPointer { values in
                        writeValues(values, number: rows[r].id.number, entity: index, slots: slots, into: &c)
                    }
                    if let i = failed { return (r, i) }
                }
                return nil
            }
        }
    }

    /// A transaction's inserted rows written in two halves at once: the first half into the
    /// frame's own writer, the second into a spare one, each checksummed by the thread that
    /// wrote it while its bytes are in that processor's cache; ``append(into:payloadStart:)``
    /// then joins them. The bytes are those ``writeRows(_:_:into:)`` writes over all rows.
    ///
    /// Two threads call ``write()`` (or one does, writing both halves in turn); a commit's
    /// checking threads do it first thing (see ``Journal/EncodingInHalves``), so that
    /// encoding and checking a large transaction take one parallel step, not two.
    final class RowsInHalves: @unchecked Sendable {
        // @unchecked: each half's writer is written only by the thread that took that half
        // (`taken`), and read only after that thread reported it done under `outcome`'s
        // lock, which orders its bytes before the reader's reads. The rest is immutable.
        private let codec: RecordCodec
        private let record: TransactionRecord
        private let split: Int
        /// Where the rows start in the first half's writer.
        private let rowsStart: Int
        /// Copies of a writer share its storage: writing through `first` fills the frame's
        /// writer; `second` is the codec's spare buffer, given back when this is freed.
        private let first: ByteWriter
        private let second: ByteWriter
        private let taken = Atomic<Int>(0)
        private let outcome = Locked<Outcome>(Outcome())

        private struct Outcome {
            var written = 0
            var failures: [(row: Int, value: Int?)?] = [nil, nil]
            var checksums: [UInt32] = [0, 0]
        }

        fileprivate init(codec: RecordCodec, record: TransactionRecord, frame: ByteWriter) {
            self.codec = codec
            self.record = record
            split = record.inserted.count / 2
            rowsStart = frame.count
            first = frame
            second = codec.halfBuffers.withLock { $0.popLast() } ?? ByteWriter(capacity: 64 << 10)
        }

        deinit {
            var spent = second
            spent.removeAll()
            if spent.capacity <= 16 << 20 { codec.halfBuffers.withLock { pool in if pool.count < 2 { pool.append(spent) } } }
        }

        /// Writes the halves no thread has taken yet, then waits until the one another
        /// thread took is written (that thread is writing it: it took it to do so).
        func write() {
            while true {
                let half = taken.wrappingAdd(1, ordering: .relaxed).oldValue
                guard half < 2 else { break }
                write(half: half)
            }
            while outcome.withLock({ $0.written }) < 2 { sched_yield() }
        }

        private func write(half: Int) {
            var writer = half == 0 ? first : second
            let start = half == 0 ? rowsStart : 0
            let failure = record.inserted.withUnsafeBufferPointer { rows in
                codec.writeRows(rows, half == 0 ? 0..<split : split..<rows.count, into: &writer)
            }
            let checksum = failure != nil ? 0 : writer.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[start...])) }
            outcome.withLock {
                $0.written += 1
                $0.failures[half] = failure
                $0.checksums[half] = checksum
            }
        }

        /// The refusal of the first row that does not fit the schema, once both halves are
        /// written; `nil` when every row fits.
        var refusal: StoreError? {
            let failure = outcome.withLock { $0.failures[0] ?? $0.failures[1] }
            return failure.map { codec.refusal(of: record, $0) }
        }

        /// Whether a row does not fit (once both halves are written).
        var failed: Bool { outcome.withLock { $0.failures[0] != nil || $0.failures[1] != nil } }

        /// Appends the second half after the first in `w` (the frame's writer, which holds
        /// the first) once both are written without a failure; returns the checksum (from 0)
        /// of `w`'s bytes from `payloadStart` through the rows: that of the bytes before the
        /// rows, joined to the halves' own.
        fileprivate func append(into w: inout ByteWriter, payloadStart: Int) -> UInt32 {
            let checksums = outcome.withLock { $0.checksums }
            let header = w.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[payloadStart..<rowsStart])) }
            let firstLength = w.count - rowsStart
            let secondLength = second.count
            second.withUnsafeBytes { w.write($0) }
            return CRC32C.combine(CRC32C.combine(header, checksums[0], length: firstLength), checksums[1], length: secondLength)
        }

        /// Writes both halves on this thread and one other.
        fileprivate func writeOnTwoThreads() {
            DispatchQueue.concurrentPerform(iterations: 2) { _ in write() }
        }
    }

    /// A transaction frame begun in a writer: its header written, its rows written or —
    /// for a large transaction — to be written in halves by two threads.
    struct Frame: Sendable {
        fileprivate let start: Int
        /// The rows still to write, or `nil` when they are written.
        let rows: RowsInHalves?
    }

    /// Begins `record`'s frame in `w`: checks its shape (its updates and deletions) when
    /// `validating`, writes its header, and writes its rows unless it is large enough to
    /// be written in halves (``encodesInHalves(_:)``). Throws for the first row that does
    /// not fit; the writer then holds a partial frame: discard it.
    func beginFrame(_ record: TransactionRecord, validating: Bool, into w: inout ByteWriter) throws(StoreError) -> Frame {
        if validating {
            var shapeOnly = record
            shapeOnly.inserted = []
            try validate(shapeOnly)
        }
        let start = w.beginFrame(.transaction)
        writeHeader(record, into: &w)
        if Self.encodesInHalves(record) { return Frame(start: start, rows: RowsInHalves(codec: self, record: record, frame: w)) }
        if let failure = record.inserted.withUnsafeBufferPointer({ writeRows($0, 0..<$0.count, into: &w) }) {
            throw refusal(of: record, failure)
        }
        return Frame(start: start, rows: nil)
    }

    /// Ends a frame ``beginFrame(_:validating:into:)`` began for `record` in `w`, once its
    /// rows are written: throws the refusal of the first row that does not fit, or writes
    /// the updates and deletions and fills in the frame's length and checksum.
    func finishFrame(_ frame: Frame, of record: TransactionRecord, into w: inout ByteWriter) throws(StoreError) {
        guard let rows = frame.rows else {
            encodeChanges(record, into: &w)
            w.finishFrame(at: frame.start, seed: seed)
            return
        }
        if let refusal = rows.refusal { throw refusal }
        // The halves' checksums, joined to those of the bytes around them.
        let throughRows = rows.append(into: &w, payloadStart: frame.start + RecordFormat.frameHeaderSize)
        let changesStart = w.count
        encodeChanges(record, into: &w)
        let payload = w.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[changesStart...]), continuing: throughRows) }
        w.finishFrame(at: frame.start, seed: seed, payloadChecksum: payload)
    }

    /// Checks a transaction against the schema and appends it as a framed record, in one
    /// pass over the inserted rows' values (the bulk of any large transaction). On a
    /// failure the writer holds a partial record: discard it.
    func encodeValidating(_ record: TransactionRecord, into w: inout ByteWriter) throws(StoreError) {
        let frame = try beginFrame(record, validating: true, into: &w)
        frame.rows?.writeOnTwoThreads()
        try finishFrame(frame, of: record, into: &w)
    }

    /// Appends a validated transaction as a framed record.
    func encodeFrame(_ record: TransactionRecord, into w: inout ByteWriter) {
        do throws(StoreError) {
            let frame = try beginFrame(record, validating: false, into: &w)
            frame.rows?.writeOnTwoThreads()
            try finishFrame(frame, of: record, into: &w)
        } catch {
            preconditionFailure("\(error.message); validate records before encoding")
        }
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
        guard RecordFormat.isObjectNumber(number) else {
            throw DecodeFailure(offset: numberAt, reason: number == 0 ? "object number 0" : "object number \(number), past the largest (\(RecordFormat.largestObjectNumber))")
        }
        return (ObjectID(entityName: layout.entityNames[index], number: number), index)
    }

    private func readValue(_ r: inout ByteReader, entity: Int, property: Int, of id: ObjectID) throws(DecodeFailure) -> Value {
        let start = r.offset
        let value = try r.readValue(names: layout.entityNames)
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
