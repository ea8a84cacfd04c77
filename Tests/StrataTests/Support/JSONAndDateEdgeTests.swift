import Foundation
import Testing
@testable import Strata

/// JSON numbers, non-finite doubles and keys at the edges.
@Suite struct JSONEdgeTests {
    /// An integer literal below Int64.min is read as a double that rounds to -2^63, and a
    /// literal with a fraction or exponent above 2^53 rounds to a neighbouring integer:
    /// neither may be stored as an int that differs from the number written.
    @Test(arguments: [
        ("-9223372036854775809", "-9223372036854775809"), ("-9223372036854776000", "-9223372036854776000"),
        ("9007199254740993.0", "9007199254740993"), ("9.007199254740993e15", "9007199254740993"),
    ])
    func integerAttributeNeverStoresADifferentNumber(text: String, exact: String) throws {
        let json = try JSON.parse(text)
        if case .success(let value) = Value.fromJSON(json, as: .int) {
            // Refusing is fine; accepting must keep the number written.
            #expect(value.description == exact, "\(text) was silently stored as \(value)")
        }
    }

    /// JSON has no numbers for non-finite doubles: `JSON.text` writes `null`, never `nan`.
    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func writerNeverProducesInvalidJSON(value: Double) {
        let text = JSON.array([.double(value)]).text
        #expect((try? JSON.parse(text)) != nil, "\(text) is not JSON")
        #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8))) != nil, "\(text) is not JSON")
    }

    /// Keys are compared by their bytes: U+00E9 and U+0065 U+0301 are two keys, not a
    /// duplicate (String's == would call them equal), and the subscript tells them apart.
    @Test func distinctKeysThatAreCanonicallyEquivalentAreNotDuplicates() throws {
        let json = try JSON.parse(#"{"\u00e9": 1, "e\u0301": 2}"#)
        guard case .object(let pairs) = json else { Issue.record("not an object"); return }
        #expect(pairs.count == 2)
        #expect(Array(pairs[0].key.unicodeScalars) != Array(pairs[1].key.unicodeScalars))
        #expect(json["e\u{301}"] == .int(2))
        #expect(json["\u{e9}"] == .int(1))
    }

    @Test func aModelFileMayStartWithAByteOrderMark() throws {
        let text = #"{"name": "Marked", "entities": [{"name": "Item", "attributes": [{"name": "title", "type": "string"}]}]}"#
        let schema = try Schema(modelFile: Data([0xEF, 0xBB, 0xBF]) + Data(text.utf8))
        #expect(schema.name == "Marked")
    }
}

@Suite struct ISO8601EdgeTests {
    /// Impossible days and times are refused, never rolled over (Foundation's format style
    /// read 2019-02-29 as 2019-03-01 and 25:00 as 01:00 the next day).
    @Test(arguments: [
        "2019-02-29T00:00:00Z", "2020-02-30T00:00:00Z", "2021-04-31T00:00:00Z",
        "2020-01-01T25:00:00Z", "2020-01-01T00:99:00Z", "2020-01-01T00:00:61Z",
    ])
    func impossibleDatesAreRefused(text: String) {
        let date = ISO8601.date(from: text)
        #expect(date == nil, "\(text) was read as \(date.map { ISO8601.string(from: $0) } ?? "")")
        if case .success(let value) = Value.fromJSON(.string(text), as: .date) { Issue.record("imported \(text) as \(value)") }
    }

    /// Text after the date is refused, not ignored.
    @Test(arguments: ["2020-01-01T00:00:00Zjunk", "2020-01-01T00:00:00Z2021-06-01T00:00:00Z", "2020-01-01T00:00:00.5Z!", "2020-01-01T00:00:00+02:00xyz"])
    func trailingTextIsRefused(text: String) {
        #expect(ISO8601.date(from: text) == nil)
    }

    /// Every date is written in a form that reads back (years before 0 and after 9999 in the
    /// expanded form, with a sign), so a dump always imports.
    @Test(arguments: [-1e11, -62198755200.0, -62135596800.001, 253402300800.0, 1e13, -3e13, 0.001, -0.001])
    func everyWrittenDateReadsBack(seconds: Double) throws {
        let value = Value.date(Date(timeIntervalSince1970: seconds))
        let back = Value.fromJSON(value.json, as: .date)
        #expect((try? back.get()) == value, "\(value.json.text) does not read back")
    }

    /// ISO 8601 uses the proleptic Gregorian calendar, as Python, JavaScript, SQLite and GNU
    /// date do (Foundation's format style switches to the Julian one before 1582-10-15).
    @Test(arguments: [
        ("0001-01-01T00:00:00Z", -62135596800.0),
        ("1000-06-15T00:00:00Z", -30595968000.0),
        ("1582-10-14T00:00:00Z", -12219379200.0),
    ])
    func datesUseTheProlepticGregorianCalendar(text: String, seconds: Double) {
        #expect(ISO8601.date(from: text)?.timeIntervalSince1970 == seconds)
        #expect(ISO8601.string(from: Date(timeIntervalSince1970: seconds)) == text)
    }
}

extension ISO8601EdgeTests {
    @Test(arguments: [
        ("2020-01-01T00:00:00+02:00", 1577829600.0), ("2020-01-01T00:00:00-0530", 1577856600.0),
        ("2020-02-29T23:59:59.5Z", 1583020799.5), ("1969-12-31T23:59:59.999Z", -0.001),
        ("-0001-12-31T00:00:00Z", -62167305600.0), ("+10000-01-01T00:00:00Z", 253402300800.0),
    ])
    func validDatesRead(text: String, seconds: Double) throws {
        let date = try #require(ISO8601.date(from: text))
        #expect(abs(date.timeIntervalSince1970 - seconds) < 1e-6)
    }

    @Test(arguments: ["2020-1-01T00:00:00Z", "20200101T000000Z", "2020-01-01", "2020-01-01T00:00Z", "2020-01-01T00:00:00",
                      "2020-01-01T00:00:00.Z", "2020-01-01t00:00:00z", "+123-01-01T00:00:00Z", "2020-01-01T00:00:00+24:00", ""])
    func malformedDatesAreRefused(text: String) {
        #expect(ISO8601.date(from: text) == nil)
    }

    /// Random millisecond dates over ±31,000 years (where a double still holds every
    /// millisecond) format and read back exactly, and
    /// agree with Foundation's Gregorian calendar where that one is proleptic (after 1582).
    @Test func randomDatesRoundTrip() throws {
        var random = SplitMix64(seed: 7)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        for _ in 0..<20_000 {
            let milliseconds = Int64(bitPattern: random.next()) % 1_000_000_000_000_000
            let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            let text = ISO8601.string(from: date)
            let back = try #require(ISO8601.date(from: text), "\(text) does not read back")
            #expect(Int64((back.timeIntervalSince1970 * 1000).rounded()) == milliseconds, "\(text)")
            if date.timeIntervalSince1970 > -12219292800, date.timeIntervalSince1970 < 253402300800 {
                let parts = calendar.dateComponents([.year, .month, .day], from: date)
                #expect(text.hasPrefix(String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)), "\(text) vs \(parts)")
            }
        }
    }

    /// A date no ISO 8601 text can spell is not a value an attribute takes, so that every
    /// stored date can be dumped and imported again.
    @Test(arguments: [Double.nan, .infinity, 1e15, -1e15])
    func unwritableDatesAreRefusedAsValues(seconds: Double) {
        let attribute = Attribute("when", .date)
        #expect(attribute.problem(with: .date(Date(timeIntervalSince1970: seconds))) != nil)
    }
}

extension ISO8601EdgeTests {
    /// Any date — a `Date()` with its sub-millisecond part, a random instant over ±31,000
    /// years — is written as text that reads back as exactly that date, so that a dump and
    /// its import hold the same values (two dates a fraction of a millisecond apart were
    /// written alike, and two objects keyed by them became one).
    @Test func everyDateReadsBackExactly() throws {
        var random = SplitMix64(seed: 11)
        var dates = [Date(), Date(timeIntervalSince1970: 1_700_000_000.000_123_4), Date(timeIntervalSinceReferenceDate: 0.000_000_1)]
        for _ in 0..<20_000 {
            let unit = Double(random.next() >> 11) / Double(1 << 53)  // [0, 1)
            dates.append(Date(timeIntervalSince1970: 1_600_000_000 + unit * 200_000_000))
            dates.append(Date(timeIntervalSince1970: (unit - 0.5) * 2e12))
            dates.append(Date(timeIntervalSinceReferenceDate: Double(Int64(bitPattern: random.next()) % 1_000_000_000_000) / 1e3 + unit / 1e3))
        }
        var wrong: [String] = []
        for date in dates where ISO8601.canRepresent(date) {
            let text = ISO8601.string(from: date)
            if ISO8601.date(from: text) != date { wrong.append("\(date.timeIntervalSinceReferenceDate) → \(text)") }
        }
        #expect(wrong.isEmpty, "\(wrong.count) dates do not read back: \(wrong.prefix(5))")
        // Millisecond dates keep their short form.
        #expect(ISO8601.string(from: Date(timeIntervalSince1970: 1_577_836_800.25)) == "2020-01-01T00:00:00.250Z")
        #expect(ISO8601.string(from: Date(timeIntervalSinceReferenceDate: 599_529_600.000_25)) == "2020-01-01T00:00:00.000250Z")
    }
}
