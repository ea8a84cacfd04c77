import Foundation
import Testing
@testable import Strata

/// Dates in a schema (defaults, limits) are kept to the millisecond, as the model file
/// writes them, so that a schema written out and read back — as every store does when it
/// opens — has the same values and fingerprint; NaN limits and schemas that are equal but
/// fingerprint differently are refused or told apart.
@Suite struct ModelFileDateTests {
    /// A schema whose date default is not a whole number of milliseconds (as `Date()` is).
    static func schema(default date: Date) throws -> Schema {
        try Schema("Events", entities: [
            Entity("Event", attributes: [Attribute("eventID", .int, unique: true),
                                         Attribute("startsAt", .date, default: .date(date), min: .date(Date(timeIntervalSince1970: 0.0004)))]),
        ])
    }

    static let subMillisecond = Date(timeIntervalSince1970: 1_700_000_000.123456)

    @Test func aSchemaKeepsDatesToTheMillisecondAndRoundTripsThroughItsModelFile() throws {
        let schema = try Self.schema(default: Self.subMillisecond)
        #expect(schema.entities[0].attributes[1].defaultValue == .date(Date(timeIntervalSince1970: 1_700_000_000.123)))
        #expect(schema.entities[0].attributes[1].minimum == .date(Date(timeIntervalSince1970: 0)))
        let reread = try Schema(modelFile: Data(schema.modelFileJSON.text.utf8))
        #expect(reread.entities[0].attributes[1].defaultValue == schema.entities[0].attributes[1].defaultValue)
        #expect(reread.fingerprint == schema.fingerprint, "read → write → read must not change the fingerprint")
    }

    @Test(arguments: [1_700_000_000.123456, 1_577_836_800.123])
    func aStoreWithAFractionalDateDefaultReopens(seconds: Double) async throws {
        let directory = TemporaryDirectory("strata-model-date")
        defer { directory.remove() }
        let schema = try Self.schema(default: Date(timeIntervalSince1970: seconds))
        let store = try StoreTesting.create(in: directory, schema: schema)
        let id = store.allocateObjectIDs(for: "Event")[0]
        try await store.commit(ChangeSet(author: "test", inserted: [
            RowImage(id: id, values: [.int(1), .date(Self.subMillisecond)]),
        ]))
        await store.close()
        let reopened = try StoreTesting.open(in: directory, schema: schema)
        #expect(reopened.currentGeneration.object(id)?.values[1] == .date(Self.subMillisecond), "stored values keep their precision")
        await reopened.close()
        let withoutSchema = try Store.open(at: directory.appending("store.strata"), configuration: .init(readOnly: true))
        #expect(withoutSchema.schema.fingerprint == schema.fingerprint)
        await withoutSchema.close()
    }

    static func file(default text: String) -> Data {
        Data("""
        {"name": "Events", "entities": [{"name": "Event", "attributes": [
          {"name": "startsAt", "type": "date", "default": "\(text)"}]}]}
        """.utf8)
    }

    @Test("a model file's date and the same date written in Swift make the same schema", arguments: [
        ("2020-01-01T00:00:00Z", 1_577_836_800.0),
        ("2020-01-01T01:00:00+01:00", 1_577_836_800.0),
        ("2020-01-01T00:00:00.5Z", 1_577_836_800.5),
        ("2020-01-01T00:00:00.123Z", 1_577_836_800.123),
        ("2020-01-01T00:00:00.123456Z", 1_577_836_800.123456),
    ])
    func dateDefaults(text: String, seconds: Double) throws {
        let schema = try Schema(modelFile: Self.file(default: text))
        let swift = try Schema("Events", entities: [
            Entity("Event", attributes: [Attribute("startsAt", .date, default: .date(Date(timeIntervalSince1970: seconds)))]),
        ])
        #expect(schema.entities[0].attributes[0].defaultValue == swift.entities[0].attributes[0].defaultValue)
        #expect(schema.fingerprint == swift.fingerprint)
    }

    @Test func aNaNLimitIsRefused() {
        #expect(throws: SchemaError.self) {
            try Schema("S", entities: [Entity("E", attributes: [Attribute("x", .double, min: .double(.nan))])])
        }
    }

    @Test func equalSchemasHashEqually() throws {
        let a = try Schema("S", entities: [Entity("E", attributes: [Attribute("x", .double, default: .double(0.0))])])
        let b = try Schema("S", entities: [Entity("E", attributes: [Attribute("x", .double, default: .double(-0.0))])])
        #expect(a != b, "0.0 and -0.0 defaults fingerprint differently, so the schemas differ")
        #expect(Set([a, a]).count == 1)
    }
}
