/// A condition on objects: Core Data's `NSPredicate`, as a value. The format-string
/// language (``init(format:)``) parses into it; typed key paths build it too.
///
/// (Named so that it does not collide with Foundation's `Predicate` macro type.)
///
/// ```swift
/// let long = try ObjectPredicate(format: "milliseconds > 300000 AND album.artist.name ==[c] 'ac/dc'")
/// let same = ObjectPredicate.comparison(.init(.key("milliseconds"), .greaterThan, .value(.int(300_000))))
///     && ObjectPredicate.comparison(.init(.key("album.artist.name"), .equal, .value(.string("ac/dc")), options: .caseInsensitive))
/// ```
///
/// Predicates are values: `Sendable`, `Hashable`, and printed back as format strings
/// (``description``) that parse to the same predicate.
public indirect enum ObjectPredicate: Sendable, Hashable {
    /// `TRUEPREDICATE` / `FALSEPREDICATE`.
    case constant(Bool)
    /// One comparison.
    case comparison(Comparison)
    /// All of the predicates (`AND`, `&&`).
    case and([ObjectPredicate])
    /// Any of the predicates (`OR`, `||`).
    case or([ObjectPredicate])
    /// The negation (`NOT`, `!`).
    case not(ObjectPredicate)

    /// Both predicates.
    public static func && (lhs: ObjectPredicate, rhs: ObjectPredicate) -> ObjectPredicate {
        switch (lhs, rhs) {
        case (.and(let l), .and(let r)): .and(l + r)
        case (.and(let l), _): .and(l + [rhs])
        case (_, .and(let r)): .and([lhs] + r)
        default: .and([lhs, rhs])
        }
    }

    /// Either predicate.
    public static func || (lhs: ObjectPredicate, rhs: ObjectPredicate) -> ObjectPredicate {
        switch (lhs, rhs) {
        case (.or(let l), .or(let r)): .or(l + r)
        case (.or(let l), _): .or(l + [rhs])
        case (_, .or(let r)): .or([lhs] + r)
        default: .or([lhs, rhs])
        }
    }

    /// The negation.
    public static prefix func ! (predicate: ObjectPredicate) -> ObjectPredicate { .not(predicate) }
}

/// One comparison of a predicate: `left op right`, optionally quantified over a to-many key
/// path (`ANY tracks.milliseconds > 300000`).
public struct Comparison: Sendable, Hashable {
    /// How a comparison over a to-many key path combines the destinations' results.
    public enum Quantifier: String, Sendable, Hashable {
        /// At least one destination matches (`ANY`, also `SOME`).
        case any = "ANY"
        /// Every destination matches (`ALL`); true when there are none.
        case all = "ALL"
        /// No destination matches (`NONE`).
        case none = "NONE"
    }

    /// The comparison operators.
    public enum Operator: String, Sendable, Hashable, CaseIterable {
        case equal = "=="
        case notEqual = "!="
        case lessThan = "<"
        case lessThanOrEqual = "<="
        case greaterThan = ">"
        case greaterThanOrEqual = ">="
        /// `BETWEEN {low, high}`: inclusive at both ends; the right side is a two-element list.
        case between = "BETWEEN"
        /// `IN {a, b, c}`: the right side is a list.
        case `in` = "IN"
        case beginsWith = "BEGINSWITH"
        case endsWith = "ENDSWITH"
        /// Text containing text; a to-many relationship containing an object (membership,
        /// `albums CONTAINS 'Album/3'`, as `ANY albums == 'Album/3'`).
        case contains = "CONTAINS"
        /// `*` matches any run of characters, `?` any one character.
        case like = "LIKE"
        /// An ICU-style regular expression matched against the whole string.
        case matches = "MATCHES"
    }

    /// String comparison modifiers: `[c]`, `[d]`, `[cd]`.
    public struct Options: OptionSet, Sendable, Hashable {
        /// The options' bits.
        public let rawValue: Int
        /// Options from their bits.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// `[c]`: case-insensitive.
        public static let caseInsensitive = Options(rawValue: 1)
        /// `[d]`: diacritic-insensitive.
        public static let diacriticInsensitive = Options(rawValue: 2)
    }

    /// `ANY` / `ALL` / `NONE`, or `nil` (a to-many key path without one means `ANY`).
    public var quantifier: Quantifier?
    /// The left side (usually a key path).
    public var left: Operand
    /// The operator.
    public var op: Operator
    /// The right side (usually a literal).
    public var right: Operand
    /// String modifiers.
    public var options: Options

    /// Creates a comparison.
    public init(_ left: Operand, _ op: Operator, _ right: Operand, options: Options = [], quantifier: Quantifier? = nil) {
        self.left = left
        self.op = op
        self.right = right
        self.options = options
        self.quantifier = quantifier
    }
}

/// A side of a comparison.
public enum Operand: Sendable, Hashable {
    /// A key path from the fetched entity: `title`, `album.artist.name`, `songs.@count`.
    case key(String)
    /// A literal value. A `.string` compared with a date attribute is read as ISO-8601, with
    /// a uuid attribute as a UUID, with a data attribute as base64, and with a relationship as
    /// an object ID (`"Album/3"`) of its destination entity.
    case value(Value)
    /// A list literal `{a, b, c}` (for `IN` and `BETWEEN`).
    case list([Value])
}
