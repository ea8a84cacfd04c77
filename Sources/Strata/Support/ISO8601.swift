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

    /// Formats a date, with fractional seconds only when it has them.
    static func string(from date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        return seconds.rounded(.down) == seconds ? plain.format(date) : fractional.format(date)
    }
}
