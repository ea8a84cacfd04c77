import Foundation

/// ISO-8601 dates as the model file, import files and predicates spell them:
/// `2020-01-01T00:00:00Z`, fractional seconds allowed, a `Z` or an offset (`+02:00`,
/// `-0530`).
///
/// Parsed and formatted here, not by Foundation's format style, for three reasons: the
/// format style rolls impossible dates over (`2019-02-29` read as March 1st, `25:00` as 1 a.m.
/// the next day) and ignores text after the date, where an import must refuse both; it uses
/// the Julian calendar before 1582-10-15, where ISO 8601 (and Python, JavaScript, SQLite)
/// use the proleptic Gregorian one, so early dates were days off; and it wrote years before
/// 1 in a form it could not read back. Years are four digits from 0000 to 9999; others are
/// written with a sign and at least four digits (`-0001`, `+10000`), as ISO 8601's expanded
/// form, which is read back too, up to six digits.
enum ISO8601 {
    /// The seconds from 1970 of the first moment of year -999,999 and of year 1,000,000:
    /// the expanded form's six digits reach no further, and dates outside are refused as
    /// attribute values (``canRepresent(_:)``).
    private static let earliest = Double(days(fromCivil: -999_999, 1, 1) * 86_400)
    private static let beyondLatest = Double(days(fromCivil: 1_000_000, 1, 1) * 86_400)

    /// Parses a date; `nil` if the text is not an ISO-8601 date and time, names a day or
    /// time that does not exist, or has anything after the date.
    static func date(from text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse(UnsafeRawBufferPointer($0)) }
    }

    /// Whether a date can be written (and so stored): in the years -999,999 to 999,999.
    static func canRepresent(_ date: Date) -> Bool {
        let seconds = date.timeIntervalSince1970
        return seconds >= earliest && seconds < beyondLatest - 0.0005  // NaN fails both
    }

    /// The date that text to the millisecond reads as: `total` milliseconds from 1970.
    static func date(milliseconds total: Int64) -> Date {
        Date(timeIntervalSince1970: Double(total) / 1000)
    }

    /// Why a date that ``canRepresent(_:)`` refuses cannot be stored, naming the latest
    /// one that can where the date is just past it.
    static func unrepresentable(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        let message = "\(seconds) seconds from 1970 is not a date between the years -999999 and 999999"
        guard seconds >= beyondLatest - 1, seconds < beyondLatest + 1 else { return message }
        // Dates this far out are held to a few milliseconds: text naming one of the last of
        // year 999,999 reads as the first moment of year 1,000,000.
        return message + " (a date this close to year 1000000 is held to "
            + "\(date.timeIntervalSinceReferenceDate.ulp * 1000) ms, so the last milliseconds of year 999999 read as its first moment); the latest date a store holds is \(string(from: latest))"
    }

    /// The latest date ``canRepresent(_:)`` accepts.
    static let latest: Date = {
        var date = Date(timeIntervalSince1970: beyondLatest)
        while !canRepresent(date) { date = Date(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate.nextDown) }
        return date
    }()

    /// Formats a date in UTC as text that reads back as exactly that date: to the
    /// millisecond, with fractional seconds only when it has them, when that is exact (so
    /// text parsed and formatted again is the same text); otherwise with as many fractional
    /// digits as the date needs, in steps of three, up to fifteen — a dump once wrote two
    /// dates a fraction of a millisecond apart as one, and its import merged two objects
    /// keyed by them.
    static func string(from date: Date) -> String {
        guard canRepresent(date) else { return "(no date: \(date.timeIntervalSince1970) s from 1970)" }
        let totalMilliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let (msSeconds, milliseconds) = floorDivision(totalMilliseconds, 1000)
        let short = text(seconds: msSeconds, fraction: milliseconds, digits: 3)
        // What reading the short text gives (see `parse`), without reading it: the common
        // case costs no parse.
        if Self.date(milliseconds: totalMilliseconds) == date { return short }
        // Whole seconds and the fraction apart, from the reference date (the origin of a
        // date's own double): both exact, where the product of the double and a scale is
        // off by tens of units.
        let interval = date.timeIntervalSinceReferenceDate
        let whole = interval.rounded(.down)
        for digits in stride(from: 6, through: 15, by: 3) {
            var scale: Int64 = 1
            for _ in 0..<digits { scale *= 10 }
            let nearest = Int64(((interval - whole) * Double(scale)).rounded())
            // The nearest text, or one a few units away: reading adds in binary, so the
            // nearest decimal may read back a unit in the last place off.
            for nudge: Int64 in [0, 1, -1, 2, -2, 3, -3] {
                let (carry, fraction) = floorDivision(nearest + nudge, scale)
                let text = text(seconds: Int64(whole) + referenceDateSeconds + carry, fraction: fraction, digits: digits)
                if Self.date(from: text) == date { return text }
            }
        }
        return short
    }

    /// The text of `seconds` from 1970 and `fraction` 1/10^`digits` seconds, fractional digits
    /// only when not zero.
    private static func text(seconds: Int64, fraction: Int64, digits: Int) -> String {
        let (days, secondOfDay) = floorDivision(seconds, 86_400)
        let (year, month, day) = civil(fromDays: days)
        var text = ""
        if (0...9999).contains(year) {
            text += padded(year, 4)
        } else {
            text += (year < 0 ? "-" : "+") + padded(abs(year), 4)
        }
        text += "-" + padded(month, 2) + "-" + padded(day, 2)
        text += "T" + padded(secondOfDay / 3600, 2) + ":" + padded(secondOfDay / 60 % 60, 2) + ":" + padded(secondOfDay % 60, 2)
        if fraction != 0 { text += "." + padded(fraction, digits) }
        return text + "Z"
    }

    // MARK: - Parsing

    private static func parse(_ bytes: UnsafeRawBufferPointer) -> Date? {
        var i = 0
        func digits(_ count: Int) -> Int64? {
            guard i + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for k in i..<(i + count) {
                let byte = bytes[k]
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            i += count
            return value
        }
        func expect(_ character: Character) -> Bool {
            guard i < bytes.count, bytes[i] == character.asciiValue! else { return false }
            i += 1
            return true
        }
        // Year: four digits, or a sign and four to six (the expanded form).
        var year: Int64
        if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") {
            let negative = bytes[i] == UInt8(ascii: "-")
            i += 1
            let start = i
            while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { i += 1 }
            let count = i - start
            guard (4...6).contains(count) else { return nil }  // years -999999 to +999999
            i = start
            guard let magnitude = digits(count) else { return nil }
            year = negative ? -magnitude : magnitude
        } else {
            guard let plain = digits(4) else { return nil }
            year = plain
        }
        guard expect("-"), let month = digits(2), expect("-"), let day = digits(2), expect("T"),
              let hour = digits(2), expect(":"), let minute = digits(2), expect(":"), let second = digits(2)
        else { return nil }
        guard (1...12).contains(month), (1...daysIn(month: month, of: year)).contains(day),
              hour < 24, minute < 60, second < 60
        else { return nil }
        // The fraction as an integer of its first fifteen digits over a power of ten (the
        // rest is below what a date holds), so that milliseconds read back exactly.
        var numerator: Int64 = 0, places = 0
        if expect(".") {
            let start = i
            while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 {
                if places < 15 {
                    numerator = numerator * 10 + Int64(bytes[i] - 0x30)
                    places += 1
                }
                i += 1
            }
            guard i > start else { return nil }
        }
        var offsetSeconds: Int64 = 0
        if expect("Z") {
            // UTC
        } else if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") {
            let sign: Int64 = bytes[i] == UInt8(ascii: "-") ? -1 : 1
            i += 1
            guard let hours = digits(2) else { return nil }
            _ = expect(":")
            guard let minutes = digits(2), hours < 24, minutes < 60 else { return nil }
            offsetSeconds = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard i == bytes.count else { return nil }
        let seconds = days(fromCivil: year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        if places <= 3 {
            var milliseconds = numerator
            for _ in places..<3 { milliseconds *= 10 }
            return date(milliseconds: seconds * 1000 + milliseconds)
        }
        // Finer fractions add to whole seconds counted from the reference date, the origin of
        // a date's own double: counted from 1970 the sum was rounded twice, and every other
        // double near today's dates could not be spelled.
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        return Date(timeIntervalSinceReferenceDate: Double(seconds - referenceDateSeconds) + Double(numerator) / scale)
    }

    // MARK: - The proleptic Gregorian calendar

    private static func isLeap(_ year: Int64) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    private static func daysIn(month: Int64, of year: Int64) -> Int64 {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to a date (year 0 is 1 BC). The well-known era arithmetic:
    /// 400-year eras of 146,097 days, each year counted from March so that leap days fall
    /// at the end.
    private static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDivision(y, 400).quotient
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01: the inverse of ``days(fromCivil:_:_:)``.
    private static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = floorDivision(shifted, 146_097).quotient
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// The reference date (2001-01-01) in seconds from 1970.
    static let referenceDateSeconds: Int64 = 978_307_200

    private static func floorDivision(_ a: Int64, _ b: Int64) -> (quotient: Int64, remainder: Int64) {
        let quotient = a / b, remainder = a % b
        return remainder < 0 ? (quotient - 1, remainder + b) : (quotient, remainder)
    }

    private static func padded(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
