import Foundation

/// ISO-8601 dates as the model file, import files and predicates spell them:
/// `2020-01-01T00:00:00Z`, fractional seconds allowed.
enum ISO8601 {
    private static let plain = Date.ISO8601FormatStyle()
    private static let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// Parses a date with or without fractional seconds; `nil` if the text is not ISO-8601.
    static func date(from text: String) -> Date? {
        (try? plain.parse(text)) ?? (try? fractional.parse(text))
    }

    /// Formats a date to the millisecond, with fractional seconds only when it has them.
    /// The milliseconds are rounded (the format style truncates, so 53.550 read back could
    /// print as 53.549): text parsed and formatted again is the same text.
    static func string(from date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        let seconds = (milliseconds / 1000).rounded(.down)
        let text = plain.format(Date(timeIntervalSince1970: seconds))
        let fraction = Int(milliseconds - seconds * 1000)
        guard fraction != 0, text.hasSuffix("Z") else { return text }
        let digits = String(fraction)
        return text.dropLast() + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }
}
