/// A predicate format string that does not parse, naming the column and what was expected.
///
/// ``ObjectPredicate/init(format:)`` throws it. The column is 1-based and counts characters
/// (extended grapheme clusters, as `String.count` does) of ``format``; it points at the first
/// character that does not fit, or one past the last character when the format ends too early.
///
/// (Not named `PredicateError`, which Foundation declares for its `#Predicate` macro.)
/// Typed throws usually make naming it unnecessary: in `catch`, `error` already has this type.
///
/// ```swift
/// do {
///     _ = try ObjectPredicate(format: "age >= ")
/// } catch {
///     print(error)   // expected a value after '>=' at column 8 in "age >= "
/// }
/// ```
public struct PredicateSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, and what was expected instead: `expected a value after '>='`.
    public var message: String
    /// The 1-based column, in characters, of the culprit in ``format``.
    public var column: Int
    /// The whole format string that failed to parse.
    public var format: String

    /// Creates a predicate error.
    ///
    /// - Parameters:
    ///   - message: What is wrong and what was expected.
    ///   - column: The 1-based column, in characters, of the culprit.
    ///   - format: The format string that failed to parse.
    public init(message: String, column: Int, format: String) {
        self.message = message
        self.column = column
        self.format = format
    }

    /// The message, the column and the format: `expected a value after '>=' at column 8 in "age >= "`.
    public var description: String {
        "\(message) at column \(column) in \"\(format)\""
    }
}
