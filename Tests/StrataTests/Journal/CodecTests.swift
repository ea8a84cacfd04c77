import Foundation
import Testing
@testable import Strata

/// Round trips of transaction records through the codec and the frame format, compared
/// bit for bit.
@Suite struct CodecTests {
    static let schema = Fixtures.songbook

    @Test(arguments: [0xC0DE_0001, 0xC0DE_0002] as [UInt64])
    func randomTransactionsRoundTrip(seed: UInt64) throws {
        var generator = CodecRecordGenerator(schema: Self.schema, seed: seed)
        let codec = RecordCodec(schema: Self.schema, storeID: generator.uuid())
        let total = 5_000
        let perBuffer = 100
        var checked = 0
        var coverage = ValueCoverage()
        for batch in 0..<(total / perBuffer) {
            let records = (0..<perBuffer).map { generator.record(index: batch * perBuffer + $0) }
            var writer = ByteWriter()
            for record in records {
                do throws(StoreError) { try codec.validate(record) } catch {
                    Issue.record("seed \(seed): generated transaction \(record.number) is invalid: \(error)")
                    return
                }
                coverage.note(record)
                codec.encodeFrame(record, into: &writer)
            }
            let bytes = writer.bytes
            try bytes.withUnsafeBytes { buffer in
                var offset = 0
                for record in records {
                    let frame = try RecordFormat.frame(in: buffer, at: offset, seed: codec.seed).get()
                    #expect(frame.type == RecordFormat.RecordType.transaction.rawValue, "seed \(seed), transaction \(record.number)")
                    let decoded = try codec.decodeTransaction(frame.payload)
                    #expect(identical(decoded, record), "seed \(seed): transaction \(record.number) did not round-trip")
                    offset = frame.end
                    checked += 1
                }
                #expect(offset == buffer.count, "seed \(seed): frames do not fill the buffer")
            }
        }
        #expect(checked == total)
        #expect(coverage.missing.isEmpty, "seed \(seed): value kinds never generated: \(coverage.missing.sorted())")
    }

    @Test func rowsRoundTrip() throws {
        let seed: UInt64 = 0xC0DE_0003
        var generator = CodecRecordGenerator(schema: Self.schema, seed: seed)
        let codec = RecordCodec(schema: Self.schema, storeID: generator.uuid())
        let rows = (0..<1_000).map { _ in generator.row() }
        var writer = ByteWriter()
        for row in rows { codec.writeRow(row, into: &writer) }
        let bytes = writer.bytes
        bytes.withUnsafeBytes { buffer in
            var reader = ByteReader(buffer)
            for (i, row) in rows.enumerated() {
                do throws(DecodeFailure) {
                    let decoded = try codec.readRow(&reader)
                    #expect(identical(decoded, row), "seed \(seed): row \(i) did not round-trip")
                } catch {
                    Issue.record("seed \(seed): row \(i) failed to decode: \(error)")
                    return
                }
            }
            let atEnd = reader.isAtEnd
            #expect(atEnd, "seed \(seed): bytes left after the rows")
        }
    }

    @Test func frameFromAnotherStoreFailsItsChecksum() throws {
        var generator = CodecRecordGenerator(schema: Self.schema, seed: 0xC0DE_0004)
        let mine = RecordCodec(schema: Self.schema, storeID: generator.uuid())
        let theirs = RecordCodec(schema: Self.schema, storeID: generator.uuid())
        var writer = ByteWriter()
        theirs.encodeFrame(generator.record(index: 0), into: &writer)
        let bytes = writer.bytes
        let result = bytes.withUnsafeBytes { RecordFormat.frame(in: $0, at: 0, seed: mine.seed).map(\.end) }
        #expect(result == .failure(.checksumMismatch))
    }

    /// A transaction larger than one record may hold is refused before anything is queued.
    @Test func oversizedTransactionIsRefused() async throws {
        let directory = TemporaryDirectory("strata-codec")
        defer { directory.remove() }
        let path = directory.appending("store")
        let journal = try Journal.create(at: path, schema: Self.schema)
        let small = TransactionRecord(number: 1, inserted: [RowImage(
            id: ObjectID(entity: "Artist", number: 1), values: [.int(1), .string("a"), .date(Date(timeIntervalSinceReferenceDate: 0)), .objects([])])])
        try await journal.append(small)
        await journal.flush()  // the zeros the writer writes ahead of appends are in place
        let before = try StoreSnapshot.read(path)
        // One data value as large as the largest payload: with the rest of the record it is over.
        let huge = TransactionRecord(number: 2, inserted: [RowImage(
            id: ObjectID(entity: "Song", number: 1),
            values: [.uuid(UUID()), .string(""), .data(Data(count: RecordFormat.maximumPayload)), .int(1), .null])])
        let error = #expect(throws: StoreError.self) { try journal.enqueue(huge) }
        #expect(error?.code == .invalidTransaction)
        #expect(error?.transaction == 2)
        #expect(journal.lastTransaction == 1)
        #expect(try StoreSnapshot.read(path) == before)
        // The journal is still usable, and the refused number is still the next one.
        let next = TransactionRecord(number: 2, deleted: [ObjectID(entity: "Artist", number: 1)])
        try await journal.append(next)
        await journal.close()
        let (reopened, state) = try openStore(path, readOnly: true)
        #expect(state.lastTransaction == 2)
        #expect(state.rows.isEmpty)
        await reopened.close()
    }
}

// MARK: - Exact comparison

/// Whether two values are the same bit for bit (doubles and dates by bit pattern, strings
/// by their UTF-8 bytes), so that NaN payloads, -0.0 and unnormalized strings count.
func identical(_ a: Value, _ b: Value) -> Bool {
    switch (a, b) {
    case (.double(let x), .double(let y)): x.bitPattern == y.bitPattern
    case (.date(let x), .date(let y)): x.timeIntervalSinceReferenceDate.bitPattern == y.timeIntervalSinceReferenceDate.bitPattern
    case (.string(let x), .string(let y)): sameUTF8(x, y)
    default: a == b
    }
}

/// Whether two strings have the same UTF-8 bytes (not just canonically equivalent).
func sameUTF8(_ a: String, _ b: String) -> Bool {
    var a = a, b = b
    return a.withUTF8 { x in
        b.withUTF8 { y in x.count == y.count && (x.isEmpty || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0) }
    }
}

func identical(_ a: RowImage, _ b: RowImage) -> Bool {
    a.id == b.id && a.values.count == b.values.count && zip(a.values, b.values).allSatisfy { identical($0, $1) }
}

func identical(_ a: TransactionRecord, _ b: TransactionRecord) -> Bool {
    a.number == b.number
        && a.timestamp.timeIntervalSinceReferenceDate.bitPattern == b.timestamp.timeIntervalSinceReferenceDate.bitPattern
        && sameUTF8(a.author, b.author)
        && a.inserted.count == b.inserted.count && zip(a.inserted, b.inserted).allSatisfy { identical($0, $1) }
        && a.updated.count == b.updated.count
        && zip(a.updated, b.updated).allSatisfy { x, y in
            x.id == y.id && x.changes.count == y.changes.count
                && zip(x.changes, y.changes).allSatisfy { $0.index == $1.index && identical($0.value, $1.value) }
        }
        && a.deleted == b.deleted
}

// MARK: - Generating records

/// Which kinds of values a run produced, so a test can show it covered all of them.
struct ValueCoverage {
    private(set) var seen = Set<String>()
    static let all: Set<String> = [
        "null", "string", "empty string", "int", "Int64.min", "Int64.max", "double", "+infinity", "-infinity", "NaN",
        "-0.0", "bool", "date", "data", "empty data", "uuid", "object", "objects", "empty objects", "large objects",
        "update", "delete",
    ]
    var missing: Set<String> { Self.all.subtracting(seen) }

    mutating func note(_ record: TransactionRecord) {
        for row in record.inserted { row.values.forEach { note($0) } }
        for update in record.updated { update.changes.forEach { note($0.value) } }
        if !record.updated.isEmpty { seen.insert("update") }
        if !record.deleted.isEmpty { seen.insert("delete") }
    }

    mutating func note(_ value: Value) {
        switch value {
        case .null: seen.insert("null")
        case .string(let s): seen.insert(s.isEmpty ? "empty string" : "string")
        case .int(let i): seen.insert(i == .min ? "Int64.min" : i == .max ? "Int64.max" : "int")
        case .double(let d):
            seen.insert(d.isNaN ? "NaN" : d == .infinity ? "+infinity" : d == -.infinity ? "-infinity"
                        : d == 0 && d.sign == .minus ? "-0.0" : "double")
        case .bool: seen.insert("bool")
        case .date: seen.insert("date")
        case .data(let d): seen.insert(d.isEmpty ? "empty data" : "data")
        case .uuid: seen.insert("uuid")
        case .object: seen.insert("object")
        case .objects(let ids): seen.insert(ids.isEmpty ? "empty objects" : ids.count >= 1_000 ? "large objects" : "objects")
        }
    }
}

/// Random transactions that fit the schema (not any particular state: the codec does not
/// need one), with extreme values mixed in.
struct CodecRecordGenerator {
    let schema: Schema
    var rng: SeededGenerator

    init(schema: Schema, seed: UInt64) {
        self.schema = schema
        self.rng = SeededGenerator(seed: seed)
    }

    mutating func chance(_ oneIn: Int) -> Bool { Int.random(in: 0..<oneIn, using: &rng) == 0 }
    mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &rng)] }

    mutating func uuid() -> UUID {
        let bytes = bytes(16)
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    static let strings = [
        "", "\u{0}", "a\u{0}b", "e\u{301}", "\u{E9}", "Motörhead", "日本語のタイトル", "👩‍👩‍👧‍👦🎸", "עברית ومرحبا",
        "\u{FEFF}bom", "\u{10FFFF}", "tab\tquote\"backslash\\", "line\r\nbreak", String(repeating: "ß", count: 5_000),
    ]

    mutating func double() -> Double {
        pick([0.0, -0.0, 1.5, .infinity, -.infinity, .nan, Double(nan: 0x1234, signaling: false), -.nan,
              .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNonzeroMagnitude, .leastNormalMagnitude,
              Double.random(in: -1e300...1e300, using: &rng), Double(bitPattern: rng.next())])
    }

    mutating func attributeValue(_ attribute: Attribute) -> Value {
        if attribute.isOptional && chance(6) { return .null }
        switch attribute.type {
        case .string:
            return chance(3) ? .string(pick(Self.strings)) : Fixtures.randomValue(.string, optional: false, using: &rng)
        case .int:
            return .int(pick([Int64.min, .max, 0, -1, 1, Int64.random(in: .min ... .max, using: &rng)]))
        case .double:
            return .double(double())
        case .bool:
            return .bool(Bool.random(using: &rng))
        case .date:
            return .date(Date(timeIntervalSinceReferenceDate: chance(4) ? double() : Double.random(in: -1e10...1e10, using: &rng)))
        case .data:
            return .data(Data(bytes(pick([0, 0, 1, 16, 255, 1_000, chance(20) ? 70_000 : 3]))))
        case .uuid:
            return .uuid(pick([uuid(), UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), uuid()]))
        }
    }

    /// `count` random bytes, eight from each draw (byte-at-a-time is slow in a debug build).
    mutating func bytes(_ count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 8)
        while bytes.count < count { withUnsafeBytes(of: rng.next()) { bytes.append(contentsOf: $0) } }
        return Array(bytes.prefix(count))
    }

    /// An object a value refers to: any number, the largest `UInt64`s included.
    mutating func objectID(_ entity: String) -> ObjectID {
        let draw = rng.next()
        return ObjectID(entity: entity, number: draw % 10 == 0 ? UInt64.max - (draw >> 8) % 6 : (draw >> 8) % 100_000 + 1)
    }

    /// An object a row, an update or a deletion names: up to the largest number a record
    /// may hold for one.
    mutating func rowID(_ entity: String) -> ObjectID {
        let draw = rng.next()
        return ObjectID(entity: entity, number: draw % 10 == 0 ? RecordFormat.largestObjectNumber - (draw >> 8) % 6 : (draw >> 8) % 100_000 + 1)
    }

    mutating func value(for property: Entity.Property) -> Value {
        switch property {
        case .attribute(let a): return attributeValue(a)
        case .relationship(let r) where r.isToMany:
            let count = chance(40) ? Int.random(in: 1_000...5_000, using: &rng) : pick([0, 0, 1, 2, 7, 30])
            return .objects((0..<count).map { _ in objectID(r.destination) })
        case .relationship(let r):
            return chance(3) ? .null : .object(objectID(r.destination))
        }
    }

    mutating func entity() -> Entity { pick(schema.entities) }

    mutating func row() -> RowImage {
        let entity = entity()
        let id = rowID(entity.name)
        return RowImage(id: id, values: (0..<entity.propertyCount).map { value(for: entity.property(at: $0)) })
    }

    mutating func record(index: Int) -> TransactionRecord {
        let number = chance(50) ? UInt64.max - UInt64(index) : UInt64(index + 1)
        var record = TransactionRecord(
            number: number, timestamp: Date(timeIntervalSinceReferenceDate: chance(5) ? double() : Double(index) * 0.75),
            author: chance(2) ? pick(Self.strings) : "")
        for _ in 0..<pick([0, 1, 1, 2, 4]) { record.inserted.append(row()) }
        for _ in 0..<pick([0, 0, 1, 3]) {
            let entity = entity()
            let indexes = (0..<entity.propertyCount).filter { _ in chance(2) }
            record.updated.append(RowUpdate(id: rowID(entity.name),
                                            changes: indexes.map { PropertyChange(index: $0, value: value(for: entity.property(at: $0))) }))
        }
        for _ in 0..<pick([0, 0, 1, 5]) { record.deleted.append(rowID(entity().name)) }
        return record
    }
}
