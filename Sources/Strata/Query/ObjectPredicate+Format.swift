import Foundation

// MARK: - Parsing

extension ObjectPredicate {
    /// Parses a predicate format string: the subset of `NSPredicate`'s format language that
    /// Core Data users know.
    ///
    /// ```swift
    /// let rock = try ObjectPredicate(format: "album.artist.name ==[c] 'ac/dc' AND milliseconds > 300000")
    /// let busy = try ObjectPredicate(format: "albums.@count >= 3 OR NOT (name BEGINSWITH 'The')")
    /// let long = try ObjectPredicate(format: "ANY tracks.milliseconds BETWEEN {300000, 600000}")
    /// ```
    ///
    /// The language:
    ///
    /// - Comparisons `==` `=` `!=` `<>` `<` `<=` `=<` `>` `>=` `=>`, `BETWEEN {low, high}` and
    ///   `IN {a, b, c}`; string operators `BEGINSWITH` `ENDSWITH` `CONTAINS` `LIKE` (`*` and `?`
    ///   wildcards) and `MATCHES` (a regular expression). Any operator may carry the
    ///   modifiers `[c]` (case-insensitive), `[d]` (diacritic-insensitive) or `[cd]`, written
    ///   after it: `name ==[c] "x"`.
    /// - `AND` `OR` `NOT` (also `&&` `||` `!`), parentheses, `TRUEPREDICATE`, `FALSEPREDICATE`.
    ///   `NOT` binds tighter than `AND`, which binds tighter than `OR`. A chain of the same
    ///   connective is one node: `a AND b AND c` is `.and([a, b, c])`; a parenthesised group
    ///   stays a node of its own, so `(a AND b) AND c` is `.and([.and([a, b]), c])`.
    /// - Key paths: identifiers (a letter or `_`, then letters, digits and `_`; Unicode
    ///   letters and digits count) joined by `.`,
    ///   through to-one relationships (`album.artist.name`), optionally ending in `.@count`
    ///   on a to-many relationship (`albums.@count`). `ANY` (or `SOME`), `ALL` or `NONE`
    ///   before a key path quantifies over a to-many relationship (`ANY tracks.milliseconds > 300000`).
    /// - Literals: strings in double or single quotes (escapes `\"` `\'` `\\` `\n` `\t`),
    ///   integers (`.int`), decimals with an optional exponent (`.double`), negative numbers,
    ///   `true` `false` `YES` `NO` (`.bool`), `nil` `NULL` (`.null`). A literal may stand on
    ///   either side of a comparison; the operands are kept in the order written.
    ///
    /// Keywords are case-insensitive (`and`, `And`, `between`) and reserved: none of them may
    /// be a key or a component of a key path (there is no `#` escape).
    ///
    /// Parentheses and `NOT`s nest at most ``maximumFormatNesting`` deep, so that a hostile
    /// format cannot exhaust the stack.
    ///
    /// - Parameter format: The format string.
    /// - Throws: ``PredicateSyntaxError``, naming the 1-based column (in characters) and what was
    ///   expected there: `expected a value after '>=' at column 8 in "age >= "`. Also for an
    ///   unterminated string, an unknown operator, escape or modifier, unbalanced parentheses,
    ///   a `BETWEEN` without a list of two values, an integer beyond 64 bits, or nesting
    ///   deeper than ``maximumFormatNesting``.
    public init(format: String) throws(PredicateSyntaxError) {
        var parser = try PredicateParser(format: format)
        self = try parser.parse()
    }

    /// How deeply parentheses and `NOT` may nest in a format string (``init(format:)``): 32,
    /// far beyond what people write, and shallow enough to parse on a 512 KiB thread stack
    /// even in a debug build under ThreadSanitizer (200 levels did not).
    public static let maximumFormatNesting = 32
}

// MARK: - Printing

extension ObjectPredicate: CustomStringConvertible {
    /// The predicate as a canonical format string, which ``init(format:)`` parses back to an
    /// equal predicate.
    ///
    /// ```swift
    /// let predicate = try ObjectPredicate(format: "name =[c] 'x' and not (a = 1 or b <> 2)")
    /// print(predicate)   // name ==[c] "x" AND NOT (a == 1 OR b != 2)
    /// ```
    ///
    /// Keywords are upper-case, operators take their first spelling (`==`, `!=`, `<=`, `>=`),
    /// `SOME` prints as `ANY`, strings are double-quoted, and parentheses appear only where
    /// precedence or a nested group of the same connective needs them.
    ///
    /// What does not read back the same, because the language has no way to write it:
    ///
    /// - `.date` prints as an ISO-8601 string (`"2020-01-01T00:00:00Z"`) and reads back as a
    ///   `.string`, which a comparison with a date attribute reads as that date.
    /// - `.data` prints as a base64 string, `.uuid` as its canonical string and `.object` as
    ///   `"Entity/number"`, as the import files spell them; they read back as `.string`s,
    ///   which a comparison with a data or uuid attribute, or with a relationship, reads as
    ///   what they spell. `.objects` prints as a list of those strings, which parses only
    ///   after `IN` or `BETWEEN`.
    /// - An infinite `.double` prints as `1e999` or `-1e999`, which reads back as infinity;
    ///   NaN prints as `nan`, which reads back as a key (and NaN equals nothing anyway).
    /// - Shapes the parser never builds: `.and([])` prints as `TRUEPREDICATE`, `.or([])` as
    ///   `FALSEPREDICATE`, a one-element `.and` or `.or` as its element; a key that is not a
    ///   key path of the language (a reserved word, a space) prints as it is; a list outside
    ///   `IN`/`BETWEEN`, a quantifier before a literal, or `BETWEEN` with other than two
    ///   values prints in the obvious way but does not parse.
    public var description: String { PredicatePrinter.text(of: self).text }
}

/// Prints predicates as format strings.
private enum PredicatePrinter {
    /// How tightly printed text binds: a parent parenthesises a child that binds no tighter
    /// than the parent's own connective.
    enum Binding: Int, Comparable {
        case or, and, unary
        static func < (lhs: Binding, rhs: Binding) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    static func text(of predicate: ObjectPredicate) -> (text: String, binding: Binding) {
        switch predicate {
        case .constant(let value):
            return (value ? "TRUEPREDICATE" : "FALSEPREDICATE", .unary)
        case .comparison(let comparison):
            return (text(of: comparison), .unary)
        case .not(let operand):
            return ("NOT " + text(of: operand, parenthesizedUpTo: .and), .unary)
        case .and(let operands):
            guard operands.count > 1 else { return operands.first.map(text(of:)) ?? ("TRUEPREDICATE", .unary) }
            return (operands.map { text(of: $0, parenthesizedUpTo: .and) }.joined(separator: " AND "), .and)
        case .or(let operands):
            guard operands.count > 1 else { return operands.first.map(text(of:)) ?? ("FALSEPREDICATE", .unary) }
            return (operands.map { text(of: $0, parenthesizedUpTo: .or) }.joined(separator: " OR "), .or)
        }
    }

    /// The text of an operand of a connective, in parentheses if it binds no tighter than `binding`.
    private static func text(of predicate: ObjectPredicate, parenthesizedUpTo binding: Binding) -> String {
        let (text, own) = text(of: predicate)
        return own <= binding ? "(" + text + ")" : text
    }

    static func text(of comparison: Comparison) -> String {
        var text = comparison.quantifier.map { $0.rawValue + " " } ?? ""
        text += self.text(of: comparison.left) + " " + comparison.op.rawValue
        switch (comparison.options.contains(.caseInsensitive), comparison.options.contains(.diacriticInsensitive)) {
        case (true, true): text += "[cd]"
        case (true, false): text += "[c]"
        case (false, true): text += "[d]"
        case (false, false): break
        }
        return text + " " + self.text(of: comparison.right)
    }

    static func text(of operand: Operand) -> String {
        switch operand {
        case .key(let path): path
        case .value(let value): literal(value)
        case .list(let values): list(values.map(literal))
        }
    }

    static func list(_ elements: [String]) -> String {
        "{" + elements.joined(separator: ", ") + "}"
    }

    static func literal(_ value: Value) -> String {
        switch value {
        case .null: "nil"
        case .string(let string): quoted(string)
        case .int(let int): String(int)
        case .double(let double): literal(double)
        case .bool(let bool): bool ? "true" : "false"
        case .date(let date): quoted(ISO8601.string(from: date))
        case .data(let data): quoted(data.base64EncodedString())
        case .uuid(let uuid): quoted(uuid.uuidString)
        case .object(let id): quoted(id.description)
        case .objects(let ids): list(ids.map { quoted($0.description) })
        }
    }

    /// A double that reads back as the same double: Swift's shortest round-trip spelling,
    /// which always has a `.` or an exponent (`1.0`, `1e-05`), so it reads back as a double.
    static func literal(_ double: Double) -> String {
        if double.isFinite { return double.description }
        if double.isNaN { return "nan" }
        // 1e999 overflows to infinity when read back.
        return double < 0 ? "-1e999" : "1e999"
    }

    /// A double-quoted string literal with `\"`, `\\`, `\n` and `\t` escaped.
    static func quoted(_ string: String) -> String {
        var text = String.UnicodeScalarView()
        text.append("\"")
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text.append(contentsOf: #"\""#.unicodeScalars)
            case "\\": text.append(contentsOf: #"\\"#.unicodeScalars)
            case "\n": text.append(contentsOf: #"\n"#.unicodeScalars)
            case "\t": text.append(contentsOf: #"\t"#.unicodeScalars)
            default: text.append(scalar)
            }
        }
        text.append("\"")
        return String(text)
    }
}

// MARK: - Tokens

/// `word` upper-cased, or `nil` if it is not all ASCII: only ASCII letters fold, so that no
/// other letter (the dotless `ı`, the long `ſ`) upper-cases into a keyword.
private func asciiUppercased(_ word: some Sequence<Unicode.Scalar>) -> String? {
    var upper = String.UnicodeScalarView()
    for scalar in word {
        guard scalar.isASCII else { return nil }
        upper.append(("a"..."z").contains(scalar) ? Unicode.Scalar(UInt8(scalar.value) - 32) : scalar)
    }
    return String(upper)
}

/// The reserved words of the format language, matched case-insensitively.
private enum PredicateKeyword: String {
    case and = "AND", or = "OR", not = "NOT"
    case any = "ANY", some = "SOME", all = "ALL", none = "NONE"
    case between = "BETWEEN", `in` = "IN"
    case beginsWith = "BEGINSWITH", endsWith = "ENDSWITH", contains = "CONTAINS", like = "LIKE", matches = "MATCHES"
    case truePredicate = "TRUEPREDICATE", falsePredicate = "FALSEPREDICATE"
    case `true` = "TRUE", `false` = "FALSE", yes = "YES", no = "NO", `nil` = "NIL", null = "NULL"

    /// The keyword spelled by `word` in any case.
    init?(_ word: some Sequence<Unicode.Scalar>) {
        guard let upper = asciiUppercased(word) else { return nil }
        self.init(rawValue: upper)
    }

    var quantifier: Comparison.Quantifier? {
        switch self {
        case .any, .some: .any
        case .all: .all
        case .none: Comparison.Quantifier.none
        default: nil
        }
    }

    var comparisonOperator: Comparison.Operator? {
        switch self {
        case .between: .between
        case .in: .in
        case .beginsWith: .beginsWith
        case .endsWith: .endsWith
        case .contains: .contains
        case .like: .like
        case .matches: .matches
        default: nil
        }
    }

    var literal: Value? {
        switch self {
        case .true, .yes: .bool(true)
        case .false, .no: .bool(false)
        case .nil, .null: .null
        default: nil
        }
    }
}

/// A token of a format string, with its extent in the format's Unicode scalars.
private struct PredicateToken {
    enum Kind: Equatable {
        case end
        case keyword(PredicateKeyword)
        /// A key path, `@count` normalised to lower case.
        case key(String)
        /// A string or number literal.
        case literal(Value)
        /// `==` `!=` `<` `<=` `>` `>=` in any of their spellings.
        case comparisonOperator(Comparison.Operator)
        /// `[c]`, `[d]`, `[cd]`.
        case modifier(Comparison.Options)
        /// `&&`, `||`, `!`.
        case and, or, not
        case openParenthesis, closeParenthesis, openBrace, closeBrace, comma
        /// A character the language has no use for.
        case unexpected
    }

    var kind: Kind
    /// The offset of the token's first scalar.
    var start: Int
    /// The offset just past the token's last scalar.
    var end: Int
}

// MARK: - Lexer

/// Splits a format string into tokens, one at a time, so that the first error in reading
/// order is the one reported.
///
/// It walks Unicode scalars rather than characters: a quote followed by a combining mark is
/// one character but still opens a string, and `"\u{301}"` must read back as written.
/// Columns in errors are counted in characters all the same.
private struct PredicateLexer {
    let format: String
    private let scalars: [Unicode.Scalar]
    private var position = 0

    init(format: String) {
        self.format = format
        scalars = Array(format.unicodeScalars)
    }

    /// The source text from scalar offset `start` to `end`.
    func text(from start: Int, to end: Int) -> String {
        var text = String.UnicodeScalarView()
        text.append(contentsOf: scalars[start..<end])
        return String(text)
    }

    func text(of token: PredicateToken) -> String { text(from: token.start, to: token.end) }

    /// The 1-based column, in characters, of the character holding the scalar at `offset`
    /// (one past the last character for the end of the format).
    func column(at offset: Int) -> Int {
        var column = 1
        var scalarsBefore = 0
        for character in format {
            scalarsBefore += character.unicodeScalars.count
            if scalarsBefore > offset { return column }
            column += 1
        }
        return column
    }

    /// The character at scalar `offset`, for naming an unexpected one.
    func character(at offset: Int) -> Character? {
        let column = column(at: offset)
        return format.dropFirst(column - 1).first
    }

    func error(_ message: String, at offset: Int) -> PredicateSyntaxError {
        PredicateSyntaxError(message: message, column: column(at: offset), format: format)
    }

    /// The next scalar, not consumed.
    private func peek() -> Unicode.Scalar? {
        position < scalars.count ? scalars[position] : nil
    }

    private static func isDigit(_ scalar: Unicode.Scalar?) -> Bool {
        scalar.map { ("0"..."9").contains($0) } ?? false
    }

    private static func isIdentifierStart(_ scalar: Unicode.Scalar?) -> Bool {
        scalar.map { $0 == "_" || $0.properties.isXIDStart } ?? false
    }

    private static func isIdentifierContinue(_ scalar: Unicode.Scalar?) -> Bool {
        scalar.map { $0.properties.isXIDContinue } ?? false
    }

    /// The next token; `.end` at the end of the format, and from then on.
    mutating func next() throws(PredicateSyntaxError) -> PredicateToken {
        while let scalar = peek(), scalar.properties.isWhitespace { position += 1 }
        let start = position
        guard let scalar = peek() else { return PredicateToken(kind: .end, start: start, end: start) }
        position += 1
        func token(_ kind: PredicateToken.Kind) -> PredicateToken {
            PredicateToken(kind: kind, start: start, end: position)
        }
        /// Consumes `second` if it comes next.
        func take(_ second: Unicode.Scalar) -> Bool {
            guard peek() == second else { return false }
            position += 1
            return true
        }
        switch scalar {
        case "(": return token(.openParenthesis)
        case ")": return token(.closeParenthesis)
        case "{": return token(.openBrace)
        case "}": return token(.closeBrace)
        case ",": return token(.comma)
        case "=":
            if take("=") { return token(.comparisonOperator(.equal)) }
            if take("<") { return token(.comparisonOperator(.lessThanOrEqual)) }
            if take(">") { return token(.comparisonOperator(.greaterThanOrEqual)) }
            return token(.comparisonOperator(.equal))
        case "!":
            return take("=") ? token(.comparisonOperator(.notEqual)) : token(.not)
        case "<":
            if take("=") { return token(.comparisonOperator(.lessThanOrEqual)) }
            if take(">") { return token(.comparisonOperator(.notEqual)) }
            return token(.comparisonOperator(.lessThan))
        case ">":
            return take("=") ? token(.comparisonOperator(.greaterThanOrEqual)) : token(.comparisonOperator(.greaterThan))
        case "&":
            guard take("&") else { throw error("'&' is not an operator; use '&&' or AND", at: start) }
            return token(.and)
        case "|":
            guard take("|") else { throw error("'|' is not an operator; use '||' or OR", at: start) }
            return token(.or)
        case "[":
            return token(.modifier(try modifier(openedAt: start)))
        case "\"", "'":
            return token(.literal(.string(try string(quote: scalar, openedAt: start))))
        case "-" where Self.isDigit(peek()):
            return token(.literal(try number(startingAt: start)))
        case _ where Self.isDigit(scalar):
            return token(.literal(try number(startingAt: start)))
        case _ where Self.isIdentifierStart(scalar):
            return token(try keyPathOrKeyword(startingAt: start))
        default:
            return token(.unexpected)
        }
    }

    /// Skips the rest of an identifier whose first scalar has been read.
    private mutating func skipIdentifier() {
        while Self.isIdentifierContinue(peek()) { position += 1 }
    }

    /// A keyword, or a key path: identifiers joined by `.`, optionally ending in `.@count`.
    private mutating func keyPathOrKeyword(startingAt start: Int) throws(PredicateSyntaxError) -> PredicateToken.Kind {
        skipIdentifier()
        let first = scalars[start..<position]
        if peek() != "." {
            return PredicateKeyword(first).map { .keyword($0) } ?? .key(text(from: start, to: position))
        }
        var components = [text(from: start, to: position)]
        if PredicateKeyword(first) != nil {
            throw error("'\(components[0])' is a reserved word and cannot be used in a key path", at: start)
        }
        while peek() == "." {
            position += 1
            let componentStart = position
            if peek() == "@" {
                position += 1
                guard Self.isIdentifierStart(peek()) else {
                    throw error("expected 'count' after '@'", at: position)
                }
                skipIdentifier()
                guard asciiUppercased(scalars[(componentStart + 1)..<position]) == "COUNT" else {
                    let name = text(from: componentStart, to: position)
                    throw error("unknown collection operator '\(name)'; only '@count' is supported", at: componentStart)
                }
                guard peek() != "." else { throw error("'@count' must end the key path", at: position) }
                components.append("@count")
                break
            }
            guard Self.isIdentifierStart(peek()) else { throw error("expected a key after '.'", at: position) }
            skipIdentifier()
            if PredicateKeyword(scalars[componentStart..<position]) != nil {
                throw error(
                    "'\(text(from: componentStart, to: position))' is a reserved word and cannot be used in a key path",
                    at: componentStart)
            }
            components.append(text(from: componentStart, to: position))
        }
        return .key(components.joined(separator: "."))
    }

    /// The options of a modifier whose `[` has been read: `c`, `d` or both, in either order
    /// and either case, then `]`.
    private mutating func modifier(openedAt start: Int) throws(PredicateSyntaxError) -> Comparison.Options {
        var options: Comparison.Options = []
        while let scalar = peek(), scalar != "]" {
            let option: Comparison.Options
            switch scalar {
            case "c", "C": option = .caseInsensitive
            case "d", "D": option = .diacriticInsensitive
            case _ where scalar.properties.isAlphabetic:
                throw error("unknown modifier '\(scalar)'; expected [c], [d] or [cd]", at: position)
            default:
                throw error("expected ']' to close the modifier", at: position)
            }
            guard !options.contains(option) else { throw error("modifier '\(scalar)' given twice", at: position) }
            options.insert(option)
            position += 1
        }
        guard peek() == "]" else { throw error("expected ']' to close the modifier", at: position) }
        position += 1
        guard !options.isEmpty else { throw error("empty modifier '[]'; expected [c], [d] or [cd]", at: start) }
        return options
    }

    /// The value of a string literal whose opening quote has been read.
    private mutating func string(quote: Unicode.Scalar, openedAt start: Int) throws(PredicateSyntaxError) -> String {
        var value = String.UnicodeScalarView()
        while true {
            guard let scalar = peek() else {
                throw error("unterminated string: expected a closing \(quote)", at: start)
            }
            position += 1
            if scalar == quote { return String(value) }
            guard scalar == "\\" else {
                value.append(scalar)
                continue
            }
            guard let escaped = peek() else {
                throw error("unterminated string: expected a closing \(quote)", at: start)
            }
            switch escaped {
            case "\"", "'", "\\": value.append(escaped)
            case "n": value.append("\n")
            case "t": value.append("\t")
            default:
                throw error(#"unknown escape '\\#(escaped)' in a string; use \", \', \\, \n or \t"#, at: position - 1)
            }
            position += 1
        }
    }

    /// An integer (`.int`) or a decimal (`.double`) whose first scalar (a digit or `-`) has
    /// been read.
    private mutating func number(startingAt start: Int) throws(PredicateSyntaxError) -> Value {
        while Self.isDigit(peek()) { position += 1 }
        var isDecimal = false
        if peek() == "." {
            position += 1
            guard Self.isDigit(peek()) else { throw error("expected a digit after the decimal point", at: position) }
            while Self.isDigit(peek()) { position += 1 }
            isDecimal = true
        }
        if peek() == "e" || peek() == "E" {
            position += 1
            if peek() == "+" || peek() == "-" { position += 1 }
            guard Self.isDigit(peek()) else { throw error("expected the digits of the exponent", at: position) }
            while Self.isDigit(peek()) { position += 1 }
            isDecimal = true
        }
        let text = text(from: start, to: position)
        if let scalar = peek(), Self.isIdentifierContinue(scalar) {
            throw error("unexpected '\(scalar)' after the number \(text)", at: position)
        }
        if isDecimal {
            guard let double = Double(text) else { throw error("\(text) is not a number", at: start) }
            return .double(double)
        }
        guard let int = Int64(text) else {
            throw error("the integer \(text) does not fit in 64 bits", at: start)
        }
        return .int(int)
    }
}

// MARK: - Parser

/// A recursive-descent parser over ``PredicateLexer``'s tokens, one token of lookahead:
///
/// ```
/// predicate  := or END
/// or         := and (("OR" | "||") and)*
/// and        := unary (("AND" | "&&") unary)*
/// unary      := ("NOT" | "!")* ("(" or ")" | primary)
/// primary    := "TRUEPREDICATE" | "FALSEPREDICATE" | comparison
/// comparison := (QUANTIFIER KEYPATH | operand) OPERATOR [MODIFIER] (operand | list)
/// operand    := KEYPATH | STRING | NUMBER | "true" | "false" | "YES" | "NO" | "nil" | "NULL"
/// list       := "{" [operand-literal ("," operand-literal)*] "}"
/// ```
///
/// A list follows only `IN` or `BETWEEN` (two values), and holds only literals.
private struct PredicateParser {
    private var lexer: PredicateLexer
    /// The current token, not yet consumed.
    private var token: PredicateToken
    /// Where the last consumed token started and ended.
    private var previousStart = 0
    private var previousEnd = 0
    /// How many parentheses and `NOT`s enclose the current token.
    private var nesting = 0

    init(format: String) throws(PredicateSyntaxError) {
        lexer = PredicateLexer(format: format)
        token = try lexer.next()
    }

    mutating func parse() throws(PredicateSyntaxError) -> ObjectPredicate {
        let predicate = try parseConnectives()
        switch token.kind {
        case .end:
            return predicate
        case .closeParenthesis:
            throw error("unbalanced parentheses: ')' without a matching '('", at: token)
        default:
            throw error("expected AND, OR or the end of the format, found \(describe(token))", at: token)
        }
    }

    // MARK: Connectives
    //
    // Parentheses recurse through exactly two functions, `parseConnectives` and `parseUnary`,
    // and both keep their frames small (messages are built in helpers), so that the deepest
    // format allowed parses on a 512 KiB secondary-thread stack even in a debug build.

    /// `or := and (OR and)*` and `and := unary (AND unary)*`, read in one loop: a run of
    /// unaries joined by `AND` is one operand of the `OR`s around it.
    private mutating func parseConnectives() throws(PredicateSyntaxError) -> ObjectPredicate {
        var disjuncts: [ObjectPredicate] = []
        var conjuncts: [ObjectPredicate] = []
        while true {
            conjuncts.append(try parseUnary())
            if isConnective(.and) {
                try advance()
                continue
            }
            disjuncts.append(conjuncts.count == 1 ? conjuncts[0] : .and(conjuncts))
            conjuncts = []
            guard isConnective(.or) else { break }
            try advance()
        }
        return disjuncts.count == 1 ? disjuncts[0] : .or(disjuncts)
    }

    private func isConnective(_ keyword: PredicateKeyword) -> Bool {
        switch token.kind {
        case .keyword(let word): word == keyword
        case .and: keyword == .and
        case .or: keyword == .or
        case .not: keyword == .not
        default: false
        }
    }

    /// `unary := NOT* ("(" or ")" | primary)`.
    private mutating func parseUnary() throws(PredicateSyntaxError) -> ObjectPredicate {
        let negations = try parseNegations()
        let predicate: ObjectPredicate
        if isOpenParenthesis {
            let open = token.start
            try enterNesting()
            try advance()
            predicate = try parseConnectives()
            try closeGroup(openedAt: open)
        } else {
            predicate = try parsePrimary()
        }
        nesting -= negations
        return negations == 0 ? predicate : Self.negated(predicate, times: negations)
    }

    /// Consumes any number of `NOT`s, in a loop rather than by recursion, and counts them.
    private mutating func parseNegations() throws(PredicateSyntaxError) -> Int {
        var negations = 0
        while isConnective(.not) {
            try enterNesting()
            try advance()
            negations += 1
        }
        return negations
    }

    private static func negated(_ predicate: ObjectPredicate, times: Int) -> ObjectPredicate {
        var predicate = predicate
        for _ in 0..<times { predicate = .not(predicate) }
        return predicate
    }

    private var isOpenParenthesis: Bool {
        if case .openParenthesis = token.kind { true } else { false }
    }

    /// Consumes the `)` of a group, leaving a level of nesting.
    private mutating func closeGroup(openedAt open: Int) throws(PredicateSyntaxError) {
        guard case .closeParenthesis = token.kind else { throw unclosedGroup(openedAt: open) }
        nesting -= 1
        try advance()
    }

    /// `primary := TRUEPREDICATE | FALSEPREDICATE | comparison`.
    private mutating func parsePrimary() throws(PredicateSyntaxError) -> ObjectPredicate {
        switch token.kind {
        case .keyword(.truePredicate):
            try advance()
            return .constant(true)
        case .keyword(.falsePredicate):
            try advance()
            return .constant(false)
        default:
            return .comparison(try parseComparison())
        }
    }

    private func unclosedGroup(openedAt open: Int) -> PredicateSyntaxError {
        if token.kind == .end {
            return lexer.error("unbalanced parentheses: this '(' is never closed", at: open)
        }
        return error("expected AND, OR or ')', found \(describe(token))", at: token)
    }

    /// Counts one more level of parentheses or `NOT` around what follows the current token.
    private mutating func enterNesting() throws(PredicateSyntaxError) {
        nesting += 1
        guard nesting <= ObjectPredicate.maximumFormatNesting else { throw tooDeeplyNested() }
    }

    private func tooDeeplyNested() -> PredicateSyntaxError {
        error("too deeply nested: more than \(ObjectPredicate.maximumFormatNesting) levels of parentheses and NOT", at: token)
    }

    // MARK: Comparisons

    private mutating func parseComparison() throws(PredicateSyntaxError) -> Comparison {
        var quantifier: Comparison.Quantifier?
        let left: Operand
        let leftStart = token.start
        if case .keyword(let keyword) = token.kind, let quantifying = keyword.quantifier {
            try advance()
            guard case .key(let path) = token.kind else {
                throw error(expected("a key path", after: previousText), at: token)
            }
            quantifier = quantifying
            left = .key(path)
            try advance()
        } else if token.kind == .openBrace {
            throw error("a list is only allowed after IN or BETWEEN", at: token)
        } else if let operand = try parseOperand() {
            left = operand
        } else {
            // What came before, if anything: `AND`, `OR`, `NOT` or `(`.
            throw error(expected("a predicate", after: previousEnd > 0 ? previousText : nil), at: token)
        }

        let operatorStart = token.start
        let op = try parseOperator(leftStartingAt: leftStart)
        var options: Comparison.Options = []
        if case .modifier(let modifier) = token.kind {
            options = modifier
            try advance()
        }
        let right = try parseRightOperand(of: op, operatorStartingAt: operatorStart)
        return Comparison(left, op, right, options: options, quantifier: quantifier)
    }

    /// The operator, consumed.
    private mutating func parseOperator(leftStartingAt leftStart: Int) throws(PredicateSyntaxError) -> Comparison.Operator {
        let op: Comparison.Operator
        switch token.kind {
        case .comparisonOperator(let symbol):
            op = symbol
        case .keyword(let keyword):
            guard let named = keyword.comparisonOperator else {
                throw error(expected("an operator", after: lexer.text(from: leftStart, to: previousEnd)), at: token)
            }
            op = named
        case .key(let word):
            throw error("unknown operator '\(word)'", at: token)
        case .unexpected, .not:
            throw error("unknown operator \(describe(token))", at: token)
        case .modifier:
            throw error("a modifier goes right after its operator, as in ==[c]", at: token)
        default:
            throw error(expected("an operator", after: lexer.text(from: leftStart, to: previousEnd)), at: token)
        }
        try advance()
        return op
    }

    /// The right operand of `op`: a list of two values for `BETWEEN`, a list for `IN`, a key
    /// path or a literal for the others.
    private mutating func parseRightOperand(
        of op: Comparison.Operator, operatorStartingAt operatorStart: Int
    ) throws(PredicateSyntaxError) -> Operand {
        /// The operator and its modifier as written (`==[c]`), for messages.
        var operatorText: String { lexer.text(from: operatorStart, to: previousEnd) }
        switch op {
        case .between:
            guard token.kind == .openBrace else {
                throw error(expected("a list of two values", after: operatorText, example: "BETWEEN {1, 10}"), at: token)
            }
            let open = token
            let values = try parseList()
            guard values.count == 2 else {
                throw error("BETWEEN needs a list of exactly two values, found \(values.count)", at: open)
            }
            return .list(values)
        case .in:
            guard token.kind == .openBrace else {
                throw error(expected("a list", after: operatorText, example: "IN {1, 2, 3}"), at: token)
            }
            return .list(try parseList())
        default:
            if token.kind == .openBrace {
                throw error("a list is only allowed after IN or BETWEEN", at: token)
            }
            guard let operand = try parseOperand() else {
                throw error(expected("a value", after: operatorText), at: token)
            }
            return operand
        }
    }

    /// A key path or a literal, consumed; `nil` (nothing consumed) for anything else.
    private mutating func parseOperand() throws(PredicateSyntaxError) -> Operand? {
        let operand: Operand
        switch token.kind {
        case .key(let path): operand = .key(path)
        case .literal(let value): operand = .value(value)
        case .keyword(let keyword):
            guard let value = keyword.literal else { return nil }
            operand = .value(value)
        default: return nil
        }
        try advance()
        return operand
    }

    /// A list literal `{a, b, c}` of literal values, from its `{`.
    private mutating func parseList() throws(PredicateSyntaxError) -> [Value] {
        let open = token
        try advance()
        var values: [Value] = []
        if token.kind == .closeBrace {
            try advance()
            return values
        }
        var previous = "{"
        while true {
            switch token.kind {
            case .literal(let value):
                values.append(value)
            case .keyword(let keyword):
                guard let value = keyword.literal else { throw error(expected("a value", after: previous), at: token) }
                values.append(value)
            case .key(let path):
                throw error("a list holds only literal values, found the key path '\(path)'", at: token)
            case .openBrace:
                throw error("lists cannot be nested", at: token)
            default:
                throw error(expected("a value", after: previous), at: token)
            }
            try advance()
            switch token.kind {
            case .comma:
                previous = ","
                try advance()
            case .closeBrace:
                try advance()
                return values
            case .end:
                throw error("unbalanced braces: this '{' is never closed", at: open)
            default:
                throw error("expected ',' or '}' in the list, found \(describe(token))", at: token)
            }
        }
    }

    // MARK: Tokens and messages

    private mutating func advance() throws(PredicateSyntaxError) {
        previousStart = token.start
        previousEnd = token.end
        token = try lexer.next()
    }

    private func text(of token: PredicateToken) -> String { lexer.text(of: token) }

    /// `expected X after 'Y' (as in Z)`, then `, found W` unless the format ended.
    private func expected(_ what: String, after context: String?, example: String? = nil) -> String {
        var message = "expected " + what
        if let context { message += " after '\(context)'" }
        if let example { message += " (as in \(example))" }
        if token.kind != .end { message += ", found \(describe(token))" }
        return message
    }

    /// The text of the last consumed token.
    private var previousText: String { lexer.text(from: previousStart, to: previousEnd) }

    private func describe(_ token: PredicateToken) -> String {
        switch token.kind {
        case .end: "the end of the format"
        case .literal(.string): "the string " + text(of: token)
        case .unexpected: "'\(lexer.character(at: token.start).map(String.init) ?? text(of: token))'"
        default: "'\(text(of: token))'"
        }
    }

    private func error(_ message: String, at token: PredicateToken) -> PredicateSyntaxError {
        lexer.error(message, at: token.start)
    }
}
