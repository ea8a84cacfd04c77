import Foundation
import Testing
@testable import Strata

/// A store written by format version 1 and checked in, with its contents recorded as JSON:
/// every later version of the library must open it to exactly those contents.
///
/// To regenerate (only when the format version changes, as golden-v2 and so on — never to
/// make a failing test pass): `STRATA_REGENERATE_GOLDEN=1 swift test --filter GoldenJournalTests`.
@Suite struct GoldenJournalTests {
    static let fixtureName = "golden-v1"

    static func fixture() throws -> URL {
        let fixtures = try #require(Bundle.module.url(forResource: "Fixtures", withExtension: nil), "the Fixtures resource is missing")
        return fixtures.appendingPathComponent(fixtureName)
    }

    /// Copies the golden store into a temporary directory; returns the copy's path.
    static func copyStore(into directory: TemporaryDirectory) throws -> String {
        let copy = directory.appending("store")
        try FileManager.default.copyItem(atPath: try fixture().appendingPathComponent("store").path, toPath: copy)
        return copy
    }

    static func expected() throws -> GoldenDump {
        let data = try Data(contentsOf: try fixture().appendingPathComponent("expected.json"))
        return try JSONDecoder().decode(GoldenDump.self, from: data)
    }

    @Test func goldenStoreReplaysToItsRecordedContents() throws {
        let directory = TemporaryDirectory("strata-golden")
        defer { directory.remove() }
        let path = try Self.copyStore(into: directory)
        let names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        #expect(names == ["checkpoint-00000000000000000012.strata", "journal-00000000000000000013.strata", "lock"])
        let before = try StoreSnapshot.read(path)
        // With no schema given, the one the store records is used: the test does not depend
        // on today's fixture schema.
        let (journal, state) = try openStore(path, readOnly: true, schema: nil)
        let expected = try Self.expected()
        let actual = GoldenDump(state, schema: journal.schema)
        #expect(actual == expected)
        if actual != expected {
            for (a, e) in zip(actual.objects, expected.objects) where a != e {
                Issue.record("first differing object: \(a) expected \(e)")
                break
            }
        }
        #expect(journal.recovery.checkpoint == 12)
        #expect(journal.recovery.replayedTransactions == 8)
        #expect(journal.recovery.tornTail == nil)
        #expect(journal.schema.fingerprint == Fixtures.songbook.fingerprint)
        #expect(try StoreSnapshot.read(path) == before)
    }

    /// The golden store also opens for writing (its lock file is part of the fixture) and
    /// takes new transactions.
    @Test func goldenStoreOpensForWritingAndTakesAppends() async throws {
        let directory = TemporaryDirectory("strata-golden")
        defer { directory.remove() }
        let path = try Self.copyStore(into: directory)
        let expected = try Self.expected()
        let (journal, state) = try openStore(path, schema: Fixtures.songbook)
        #expect(GoldenDump(state, schema: journal.schema) == expected)
        var model = state
        var generator = TransactionGenerator(seed: 0x601D)
        for _ in 0..<3 {
            let record = generator.next(after: model)
            try model.apply(record)
            try await journal.append(record)
        }
        try await journal.compact(from: model)
        await journal.close()
        let (reopened, reread) = try openStore(path, readOnly: true)
        #expect(reread == model, "seed \(0x601D)")
        #expect(reopened.recovery.checkpoint == expected.lastTransaction + 3)
    }

    // MARK: - Regenerating

    @Test(.enabled(if: ProcessInfo.processInfo.environment["STRATA_REGENERATE_GOLDEN"] != nil))
    func regenerateGoldenStore() async throws {
        let destination = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures").appendingPathComponent(Self.fixtureName)
        try? FileManager.default.removeItem(at: destination)
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
        let path = destination.appendingPathComponent("store").path
        var history = ModelHistory()
        for record in Self.goldenTransactions() { try history.append(record) }
        #expect(history.count == 20)
        let built = try await StoreBuilder.build(at: path, history: history, compactAfter: [12])
        // The lock file holds the PID of the last writer; keep the fixture free of it.
        try Data().write(to: URL(fileURLWithPath: built.path(StoreLayout.lockFile)))
        let (journal, state) = try openStore(path, readOnly: true)
        #expect(state == history.final)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var json = try encoder.encode(GoldenDump(state, schema: journal.schema))
        json.append(0x0A)
        try json.write(to: destination.appendingPathComponent("expected.json"))
    }

    /// Twenty transactions that between them use every value type, extreme and empty values,
    /// unicode, updates (including to nil), deletes and large to-many lists. The first twelve
    /// go into the checkpoint, the rest into the segment after it.
    static func goldenTransactions() -> [TransactionRecord] {
        func artist(_ n: UInt64) -> ObjectID { ObjectID(entity: "Artist", number: n) }
        func album(_ n: UInt64) -> ObjectID { ObjectID(entity: "Album", number: n) }
        func song(_ n: UInt64) -> ObjectID { ObjectID(entity: "Song", number: n) }
        func date(_ t: Double) -> Value { .date(Date(timeIntervalSinceReferenceDate: t)) }
        func uuid(_ text: String) -> Value { .uuid(UUID(uuidString: text)!) }
        func tx(_ n: UInt64, inserted: [RowImage] = [], updated: [RowUpdate] = [], deleted: [ObjectID] = []) -> TransactionRecord {
            TransactionRecord(number: n, timestamp: Date(timeIntervalSinceReferenceDate: 700_000_000 + Double(n) * 61.5),
                              author: ["importer", "", "editor-ä", "sync 🔄"][Int(n % 4)],
                              inserted: inserted, updated: updated, deleted: deleted)
        }
        // Artist: artistID, name?, createdAt, albums*
        // Album: albumID, title, rating?, explicit, artist, songs*
        // Song: songID, title, artwork?, milliseconds, album
        var records: [TransactionRecord] = [
            tx(1, inserted: [
                RowImage(id: artist(1), values: [.int(1), .string("AC/DC"), date(0), .objects([])]),
                RowImage(id: artist(2), values: [.int(Int64.max), .string("Motörhead"), date(-978_307_200), .objects([])]),
                RowImage(id: artist(3), values: [.int(Int64.min), .null, date(1e9 + 0.25), .objects([])]),
            ]),
            tx(2, inserted: [
                RowImage(id: album(1), values: [.int(10), .string("Back in Black"), .double(4.5), .bool(false), .object(artist(1)), .objects([])]),
                RowImage(id: album(2), values: [.int(11), .string(""), .null, .bool(true), .null, .objects([])]),
            ]),
            tx(3, inserted: [
                RowImage(id: song(1), values: [uuid("00000000-0000-0000-0000-000000000000"), .string("Hells Bells"),
                                               .data(Data()), .int(312_000), .object(album(1))]),
                RowImage(id: song(2), values: [uuid("FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"), .string("日本語のタイトル"),
                                               .data(Data([0, 1, 2, 254, 255])), .int(0), .null]),
            ]),
            tx(4, updated: [RowUpdate(id: artist(1), changes: [PropertyChange(index: 3, value: .objects([album(1), album(2)]))])]),
            tx(5, inserted: [
                RowImage(id: album(3), values: [.int(-1), .string("emoji 🎸🥁 and \"quotes\" \\ and\nnewline"), .double(.infinity),
                                                .bool(true), .object(artist(2)), .objects([song(1), song(2)])]),
            ]),
            tx(6, inserted: [
                RowImage(id: album(4), values: [.int(0), .string("e\u{301} decomposed, \u{E9} composed"), .double(-.infinity),
                                                .bool(false), .object(artist(3)), .objects([])]),
            ]),
            tx(7, inserted: [
                RowImage(id: song(3), values: [uuid("6BA7B810-9DAD-11D1-80B4-00C04FD430C8"), .string("\u{0}nul inside"),
                                               .data(Data((0..<1_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })), .int(Int64.max),
                                               .object(album(3))]),
            ]),
            tx(8, updated: [RowUpdate(id: album(1), changes: [PropertyChange(index: 2, value: .double(-0.0)),
                                                               PropertyChange(index: 3, value: .bool(true))])]),
            tx(9, deleted: [song(2)]),
            tx(10, inserted: [
                RowImage(id: artist(4), values: [.int(4), .string(String(repeating: "long name ", count: 40)), date(-1e10), .objects([])]),
            ], updated: [RowUpdate(id: artist(2), changes: [PropertyChange(index: 1, value: .null)])]),
            tx(11, updated: [RowUpdate(id: album(2), changes: [PropertyChange(index: 2, value: .double(.leastNonzeroMagnitude)),
                                                                PropertyChange(index: 4, value: .object(artist(4)))])]),
            tx(12, inserted: [
                RowImage(id: song(4), values: [uuid("123E4567-E89B-12D3-A456-426614174000"), .string("checkpointed"),
                                               .null, .int(1), .object(album(2))]),
            ], deleted: [album(4)]),
        ]
        // After the checkpoint: many songs, a large to-many list, updates and deletes.
        let many = (5...44).map { song(UInt64($0)) }
        records.append(tx(13, inserted: many.map { id in
            RowImage(id: id, values: [uuid(String(format: "00000000-0000-4000-8000-%012llX", id.number)), .string("track \(id.number)"),
                                      id.number % 3 == 0 ? .null : .data(Data([UInt8(id.number)])), .int(Int64(id.number) * 1_000),
                                      .object(album(3))])
        }))
        records += [
            tx(14, updated: [RowUpdate(id: album(3), changes: [PropertyChange(index: 5, value: .objects([song(1), song(2)] + many))])]),
            tx(15, updated: [RowUpdate(id: album(3), changes: [PropertyChange(index: 2, value: .double(.greatestFiniteMagnitude))])]),
            tx(16, deleted: [song(5), song(6), song(44)]),
            tx(17, inserted: [
                RowImage(id: artist(5), values: [.int(5), .string("עברית ومرحبا"), date(.greatestFiniteMagnitude), .objects([album(3)])]),
            ]),
            tx(18, updated: [RowUpdate(id: song(3), changes: [PropertyChange(index: 1, value: .string("")),
                                                               PropertyChange(index: 2, value: .data(Data())),
                                                               PropertyChange(index: 4, value: .null)])]),
            tx(19),
            tx(20, inserted: [
                RowImage(id: album(5), values: [.int(20), .string("last"), .double(1.0 / 3.0), .bool(false), .null, .objects([])]),
            ], updated: [RowUpdate(id: artist(1), changes: [PropertyChange(index: 2, value: date(-0.0))])], deleted: [artist(3)]),
        ]
        return records
    }
}

/// A store's contents in a stable JSON form: objects sorted by ID, values by property name,
/// each value tagged with its kind; numbers as text in Swift's shortest round-tripping form
/// (so `inf`, `-0.0` and the full 64 bits of an integer survive JSON), data as base64.
struct GoldenDump: Codable, Equatable, Sendable {
    struct Object: Codable, Equatable, Sendable {
        var id: String
        var values: [String: GoldenValue]
    }

    var lastTransaction: UInt64
    var highestObjectNumbers: [String: UInt64]
    var objects: [Object]

    init(_ state: ReplayedState, schema: Schema) {
        lastTransaction = state.lastTransaction
        highestObjectNumbers = state.highestObjectNumbers
        objects = state.rows.keys.sorted().map { id in
            let entity = schema.entity(named: id.entity)!
            var values: [String: GoldenValue] = [:]
            for (i, value) in state.rows[id]!.enumerated() { values[entity.property(at: i).name] = GoldenValue(value) }
            return Object(id: id.description, values: values)
        }
    }
}

struct GoldenValue: Codable, Equatable, Sendable {
    var type: String
    var value: String?
    var items: [String]?

    /// Strings compare by their UTF-8 bytes, so a change of normalization counts.
    static func == (a: GoldenValue, b: GoldenValue) -> Bool {
        a.type == b.type && a.items == b.items && a.value.map { Array($0.utf8) } == b.value.map { Array($0.utf8) }
    }

    init(_ value: Value) {
        switch value {
        case .null: type = "null"
        case .string(let s): type = "string"; self.value = s
        case .int(let i): type = "int"; self.value = String(i)
        case .double(let d): type = "double"; self.value = String(d)
        case .bool(let b): type = "bool"; self.value = String(b)
        case .date(let d): type = "date"; self.value = String(d.timeIntervalSinceReferenceDate)
        case .data(let d): type = "data"; self.value = d.base64EncodedString()
        case .uuid(let u): type = "uuid"; self.value = u.uuidString
        case .object(let id): type = "object"; self.value = id.description
        case .objects(let ids): type = "objects"; items = ids.map(\.description)
        }
    }
}
