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

    /// Dates across the whole range a store holds, as a default: the schema written out and
    /// read back has the same default and fingerprint, and keeping a kept date changes
    /// nothing. Far out (beyond about year 140,000) a date's double is coarser than half a
    /// millisecond, where rounding by scaling seconds from 1970 moved a rounded date again.
    @Test func datesAnywhereInTheRangeReadBackAsTheSchemaKeptThem() throws {
        var generator = SeededGenerator(seed: 0x5EED_DA7E)
        let texts = ["+143896-05-11T07:02:13.188Z", "+143248-05-11T07:06:10.813Z", "+999999-12-31T23:59:59.99Z",
                     "-999999-01-01T00:00:00.001Z", "+281000-01-01T00:00:00.999Z"]
        var dates = texts.map { ISO8601.date(from: $0)! }
        for _ in 0..<3_000 {
            // Uniform in the exponent as much as in the range, so that every magnitude is tried.
            let magnitude = Double.random(in: 0...45, using: &generator)
            let seconds = (Bool.random(using: &generator) ? 1 : -1) * pow(2, magnitude) + Double.random(in: 0..<1, using: &generator)
            let date = Date(timeIntervalSinceReferenceDate: seconds)
            if ISO8601.canRepresent(date) { dates.append(date) }
        }
        for date in dates {
            let schema = try Schema("Events", entities: [Entity("Event", attributes: [Attribute("startsAt", .date, default: .date(date))])])
            let kept = schema.entities[0].attributes[0].defaultValue!
            #expect(Schema.asWritten(kept) == kept, "keeping \(kept) again changed it")
            let reread = try Schema(modelFile: Data(schema.modelFileJSON.text.utf8))
            #expect(reread.fingerprint == schema.fingerprint, "\(date.timeIntervalSinceReferenceDate) s from 2001 (kept as \(kept)) read back differently")
        }
    }

    @Test func aStoreWithADateDefaultFarOutReopens() async throws {
        let directory = TemporaryDirectory("strata-model-date")
        defer { directory.remove() }
        let schema = try Schema(modelFile: Self.file(default: "+143896-05-11T07:02:13.188Z"))
        let store = try StoreTesting.create(in: directory, schema: schema)
        await store.close()
        let reopened = try Store.open(at: directory.appending("store.strata"), configuration: .init(readOnly: true))
        #expect(reopened.schema.fingerprint == schema.fingerprint)
        await reopened.close()
    }

    @Test("a date limit a store cannot hold is refused, naming it", arguments: [
        ("min", "-999999-01-01T00:00:00+01:00"), ("max", "+999999-12-31T23:59:59.999Z"),
    ])
    func unrepresentableDateLimits(label: String, text: String) {
        let file = Data("""
            {"name": "Events", "entities": [{"name": "Event", "attributes": [
              {"name": "startsAt", "type": "date", "\(label)": "\(text)"}]}]}
            """.utf8)
        let error = #expect(throws: SchemaError.self) { try Schema(modelFile: file) }
        #expect(error?.entity == "Event")
        #expect(error?.property == "startsAt")
        #expect(error?.message.hasPrefix("\(label): ") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("not a date between the years -999999 and 999999") == true)
    }

    @Test func theLastMillisecondsOfYear999999AreRefusedNamingTheLatestDate() throws {
        let date = ISO8601.date(from: "+999999-12-31T23:59:59.999Z")!
        let attribute = Attribute("startsAt", .date)
        let problem = try #require(AttributeCheck.problem(with: .date(date), for: attribute))
        #expect(problem.contains("the latest date a store holds is +999999-12-31T23:59:59.99"), "\(problem)")
        #expect(AttributeCheck.problem(with: .date(ISO8601.latest), for: attribute) == nil)
        #expect(ISO8601.date(from: ISO8601.string(from: ISO8601.latest)) == ISO8601.latest)
    }

    /// The model file writes every NaN as `"NaN"`, which reads back as one NaN: a default of
    /// another (negative, or with a payload) is kept as that one, and the store reopens.
    @Test(arguments: [-Double.nan, Double(nan: 0x1234, signaling: false), -Double(nan: 7, signaling: false)])
    func anyNaNDefaultIsKeptAsTheNaNTheModelFileReadsBack(nan: Double) async throws {
        let schema = try Schema("S", entities: [Entity("A", attributes: [Attribute("d", .double, default: .double(nan))])])
        guard case .double(let kept)? = schema.entities[0].attributes[0].defaultValue else {
            Issue.record("the default is not a double")
            return
        }
        #expect(kept.bitPattern == Double.nan.bitPattern)
        let directory = TemporaryDirectory("strata-model-nan")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, schema: schema)
        await store.close()
        let reopened = try Store.open(at: directory.appending("store.strata"), configuration: .init(readOnly: true))
        #expect(reopened.schema.fingerprint == schema.fingerprint)
        await reopened.close()
    }
}

/// A store whose schema record is whole (its checksum holds) but whose text does not read
/// back as the schema its header names was written so: its creation was not interrupted,
/// and opening says what is wrong instead of advising to remove it.
@Suite struct SchemaRecordMismatchTests {
    @Test func aWholeSchemaRecordThatDoesNotMatchItsHeaderIsNotAnInterruptedCreation() async throws {
        let directory = TemporaryDirectory("strata-schema-record")
        defer { directory.remove() }
        let written = try Schema("S", entities: [Entity("A", attributes: [Attribute("x", .int, default: .int(1))])])
        let store = try StoreTesting.create(in: directory, schema: written)
        await store.close()
        let path = directory.appending("store.strata")
        let file = path + "/" + StoreLayout.segmentName(firstTransaction: 1)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        let (header, end) = try bytes.withUnsafeBytes { try FileHeader.decode($0, expecting: .segment).get() }
        // The record of another schema, framed and checksummed as the store frames it.
        let other = try Schema("S", entities: [Entity("A", attributes: [Attribute("x", .int, default: .int(2))])])
        var writer = ByteWriter()
        let start = writer.beginFrame(.schema)
        writer.write(Array(other.modelFileJSON.text.utf8))
        writer.finishFrame(at: start, seed: RecordCodec(schema: written, storeID: header.storeID).seed)
        try Data(bytes[0..<end] + writer.bytes).write(to: URL(fileURLWithPath: file))
        let error = #expect(throws: StoreError.self) { try Store.open(at: path, configuration: .init(readOnly: true)) }
        #expect(error?.code == .corrupted, "\(error.map { "\($0)" } ?? "")")
        #expect(error?.message.contains("does not match the header's fingerprint") == true)
        #expect(error?.message.contains("interrupted") == false)
    }
}
