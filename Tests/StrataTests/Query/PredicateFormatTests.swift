import Foundation
import Testing

@testable import Strata

// MARK: - Helpers

/// `key op value`, the usual shape.
private func compare(
    _ key: String, _ op: Comparison.Operator, _ value: Value,
    options: Comparison.Options = [], quantifier: Comparison.Quantifier? = nil
) -> ObjectPredicate {
    .comparison(Comparison(.key(key), op, .value(value), options: options, quantifier: quantifier))
}

/// `key op {values}`.
private func compare(_ key: String, _ op: Comparison.Operator, list: [Value], options: Comparison.Options = []) -> ObjectPredicate {
    .comparison(Comparison(.key(key), op, .list(list), options: options))
}

/// Any two operands.
private func compare(_ left: Operand, _ op: Comparison.Operator, _ right: Operand) -> ObjectPredicate {
    .comparison(Comparison(left, op, right))
}

/// The error parsing `format` throws, or `nil` (recorded as an issue) if it parses.
private func parseError(_ format: String, sourceLocation: SourceLocation = #_sourceLocation) -> PredicateSyntaxError? {
    do {
        let predicate = try ObjectPredicate(format: format)
        Issue.record("\(format) parsed as \(predicate)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

private let a1 = compare("a", .equal, .int(1))
private let b2 = compare("b", .equal, .int(2))
private let c3 = compare("c", .equal, .int(3))
private let d4 = compare("d", .equal, .int(4))

/// A format string and the predicate it must parse to.
struct FormatParseCase: Sendable, CustomTestStringConvertible {
    let format: String
    let expected: ObjectPredicate
    init(_ format: String, _ expected: ObjectPredicate) {
        self.format = format
        self.expected = expected
    }
    var testDescription: String { format }
}

/// A malformed format string, the message and the column it must fail with.
struct FormatErrorCase: Sendable, CustomTestStringConvertible {
    let format: String
    let message: String
    let column: Int
    init(_ format: String, _ message: String, column: Int) {
        self.format = format
        self.message = message
        self.column = column
    }
    var testDescription: String { format }
}

// MARK: - Parsing

@Suite("PredicateFormat: parsing")
struct PredicateFormatParsingTests {
    static let comparisons: [FormatParseCase] = [
        FormatParseCase("a == 1", a1),
        FormatParseCase("a = 1", a1),
        FormatParseCase("a==1", a1),
        FormatParseCase("a != 1", compare("a", .notEqual, .int(1))),
        FormatParseCase("a <> 1", compare("a", .notEqual, .int(1))),
        FormatParseCase("a < 1", compare("a", .lessThan, .int(1))),
        FormatParseCase("a <= 1", compare("a", .lessThanOrEqual, .int(1))),
        FormatParseCase("a =< 1", compare("a", .lessThanOrEqual, .int(1))),
        FormatParseCase("a > 1", compare("a", .greaterThan, .int(1))),
        FormatParseCase("a >= 1", compare("a", .greaterThanOrEqual, .int(1))),
        FormatParseCase("a => 1", compare("a", .greaterThanOrEqual, .int(1))),
        FormatParseCase("a>=1", compare("a", .greaterThanOrEqual, .int(1))),
        FormatParseCase("age BETWEEN {18, 65}", compare("age", .between, list: [.int(18), .int(65)])),
        FormatParseCase("age between{18,65}", compare("age", .between, list: [.int(18), .int(65)])),
        FormatParseCase("rating BETWEEN {-1.5, 2e3}", compare("rating", .between, list: [.double(-1.5), .double(2000)])),
        FormatParseCase("id IN {1, 2, 3}", compare("id", .in, list: [.int(1), .int(2), .int(3)])),
        FormatParseCase("id in {}", compare("id", .in, list: [])),
        FormatParseCase("name IN {'a', \"b\", nil, true}", compare("name", .in, list: [.string("a"), .string("b"), .null, .bool(true)])),
        FormatParseCase("title BEGINSWITH 'The'", compare("title", .beginsWith, .string("The"))),
        FormatParseCase("title ENDSWITH 'the'", compare("title", .endsWith, .string("the"))),
        FormatParseCase("title CONTAINS 'the'", compare("title", .contains, .string("the"))),
        FormatParseCase("title LIKE 'T?e*'", compare("title", .like, .string("T?e*"))),
        FormatParseCase("title MATCHES '^T.*$'", compare("title", .matches, .string("^T.*$"))),
        FormatParseCase("title beginsWith 'x'", compare("title", .beginsWith, .string("x"))),
        FormatParseCase("title matches 'x'", compare("title", .matches, .string("x"))),
    ]

    static let modifiers: [FormatParseCase] = [
        FormatParseCase("name ==[c] \"x\"", compare("name", .equal, .string("x"), options: .caseInsensitive)),
        FormatParseCase("name =[d] 'x'", compare("name", .equal, .string("x"), options: .diacriticInsensitive)),
        FormatParseCase(
            "title BEGINSWITH[cd] 'a'", compare("title", .beginsWith, .string("a"), options: [.caseInsensitive, .diacriticInsensitive])),
        FormatParseCase(
            "title CONTAINS[dc] 'a'", compare("title", .contains, .string("a"), options: [.caseInsensitive, .diacriticInsensitive])),
        FormatParseCase("title LIKE[C] 'a*'", compare("title", .like, .string("a*"), options: .caseInsensitive)),
        FormatParseCase("title ENDSWITH [c] 'a'", compare("title", .endsWith, .string("a"), options: .caseInsensitive)),
        FormatParseCase("title MATCHES[c] 'a.'", compare("title", .matches, .string("a."), options: .caseInsensitive)),
        FormatParseCase("name IN[c] {'a', 'b'}", compare("name", .in, list: [.string("a"), .string("b")], options: .caseInsensitive)),
        FormatParseCase("name !=[cd] 'x'", compare("name", .notEqual, .string("x"), options: [.caseInsensitive, .diacriticInsensitive])),
    ]

    static let connectives: [FormatParseCase] = [
        FormatParseCase("a == 1 AND b == 2", .and([a1, b2])),
        FormatParseCase("a == 1 && b == 2", .and([a1, b2])),
        FormatParseCase("a == 1&&b == 2", .and([a1, b2])),
        FormatParseCase("a == 1 and b == 2 And c == 3", .and([a1, b2, c3])),
        FormatParseCase("a == 1 OR b == 2 || c == 3", .or([a1, b2, c3])),
        FormatParseCase("NOT a == 1", .not(a1)),
        FormatParseCase("!a == 1", .not(a1)),
        FormatParseCase("not not a == 1", .not(.not(a1))),
        FormatParseCase("! (a == 1)", .not(a1)),
        FormatParseCase("(a == 1)", a1),
        FormatParseCase("((a == 1))", a1),
        FormatParseCase("TRUEPREDICATE", .constant(true)),
        FormatParseCase("falsepredicate", .constant(false)),
        FormatParseCase("TruePredicate OR a == 1", .or([.constant(true), a1])),
        // NOT > AND > OR, left to right.
        FormatParseCase("a == 1 OR b == 2 AND c == 3", .or([a1, .and([b2, c3])])),
        FormatParseCase("a == 1 AND b == 2 OR c == 3 AND d == 4", .or([.and([a1, b2]), .and([c3, d4])])),
        FormatParseCase("NOT a == 1 AND b == 2", .and([.not(a1), b2])),
        FormatParseCase("NOT (a == 1 AND b == 2)", .not(.and([a1, b2]))),
        FormatParseCase("(a == 1 OR b == 2) AND c == 3", .and([.or([a1, b2]), c3])),
        // A parenthesised group stays a node of its own.
        FormatParseCase("(a == 1 AND b == 2) AND c == 3", .and([.and([a1, b2]), c3])),
        FormatParseCase("a == 1 OR (b == 2 OR c == 3)", .or([a1, .or([b2, c3])])),
        FormatParseCase(" \t a == 1\nAND\r\nb == 2 ", .and([a1, b2])),
    ]

    static let keyPaths: [FormatParseCase] = [
        FormatParseCase("album.artist.name == \"AC/DC\"", compare("album.artist.name", .equal, .string("AC/DC"))),
        FormatParseCase("albums.@count >= 3", compare("albums.@count", .greaterThanOrEqual, .int(3))),
        FormatParseCase("album.artist.albums.@COUNT > 1", compare("album.artist.albums.@count", .greaterThan, .int(1))),
        FormatParseCase("_private_1 == 1", compare("_private_1", .equal, .int(1))),
        FormatParseCase("café.naïve == 1", compare("café.naïve", .equal, .int(1))),
        FormatParseCase("名前 == 'x'", compare("名前", .equal, .string("x"))),
        // Words that merely start with a keyword are keys.
        FormatParseCase("android == 1 AND nothing == 2", .and([compare("android", .equal, .int(1)), compare("nothing", .equal, .int(2))])),
        FormatParseCase(
            "inside IN {1} OR notes.anything == nil",
            .or([compare("inside", .in, list: [.int(1)]), compare("notes.anything", .equal, .null)])),
        FormatParseCase("ANY tracks.milliseconds > 300000", compare("tracks.milliseconds", .greaterThan, .int(300_000), quantifier: .any)),
        FormatParseCase("some tracks.milliseconds > 300000", compare("tracks.milliseconds", .greaterThan, .int(300_000), quantifier: .any)),
        FormatParseCase(
            "ALL tracks.title BEGINSWITH[c] 'a'",
            compare("tracks.title", .beginsWith, .string("a"), options: .caseInsensitive, quantifier: .all)),
        FormatParseCase(
            "None tags IN {'x'}", .comparison(Comparison(.key("tags"), .in, .list([.string("x")]), quantifier: Comparison.Quantifier.none))),
        FormatParseCase("NOT ANY tags == 'x'", .not(compare("tags", .equal, .string("x"), quantifier: .any))),
        FormatParseCase("albums.@count == songs.@count", compare(.key("albums.@count"), .equal, .key("songs.@count"))),
    ]

    static let literals: [FormatParseCase] = [
        FormatParseCase(#"s == "double""#, compare("s", .equal, .string("double"))),
        FormatParseCase("s == 'single'", compare("s", .equal, .string("single"))),
        FormatParseCase(#"s == "it's""#, compare("s", .equal, .string("it's"))),
        FormatParseCase(#"s == 'say "hi"'"#, compare("s", .equal, .string("say \"hi\""))),
        FormatParseCase(#"s == "a\"b\'c\\d\ne\tf""#, compare("s", .equal, .string("a\"b'c\\d\ne\tf"))),
        FormatParseCase(#"s == 'a\'b'"#, compare("s", .equal, .string("a'b"))),
        FormatParseCase("s == ''", compare("s", .equal, .string(""))),
        FormatParseCase("s == \"日本語 🎸 e\u{301}\"", compare("s", .equal, .string("日本語 🎸 e\u{301}"))),
        FormatParseCase("s == \"\u{301}\"", compare("s", .equal, .string("\u{301}"))),
        FormatParseCase("n == 0", compare("n", .equal, .int(0))),
        FormatParseCase("n == 42", compare("n", .equal, .int(42))),
        FormatParseCase("n == -42", compare("n", .equal, .int(-42))),
        FormatParseCase("n == 007", compare("n", .equal, .int(7))),
        FormatParseCase("n == 9223372036854775807", compare("n", .equal, .int(.max))),
        FormatParseCase("n == -9223372036854775808", compare("n", .equal, .int(.min))),
        FormatParseCase("x == 1.5", compare("x", .equal, .double(1.5))),
        FormatParseCase("x == 1.0", compare("x", .equal, .double(1))),
        FormatParseCase("x == -0.25", compare("x", .equal, .double(-0.25))),
        FormatParseCase("x == 1e3", compare("x", .equal, .double(1000))),
        FormatParseCase("x == 2.5E-3", compare("x", .equal, .double(0.0025))),
        FormatParseCase("x == 1e+16", compare("x", .equal, .double(1e16))),
        FormatParseCase("x == -1e999", compare("x", .equal, .double(-.infinity))),
        FormatParseCase("b == true", compare("b", .equal, .bool(true))),
        FormatParseCase("b == FALSE", compare("b", .equal, .bool(false))),
        FormatParseCase("b == YES", compare("b", .equal, .bool(true))),
        FormatParseCase("b == no", compare("b", .equal, .bool(false))),
        FormatParseCase("v == nil", compare("v", .equal, .null)),
        FormatParseCase("v != NULL", compare("v", .notEqual, .null)),
        // Operands stay in the order written.
        FormatParseCase("3 < albums.@count", compare(.value(.int(3)), .lessThan, .key("albums.@count"))),
        FormatParseCase("'AC/DC' == name", compare(.value(.string("AC/DC")), .equal, .key("name"))),
        FormatParseCase("nil == name", compare(.value(.null), .equal, .key("name"))),
        FormatParseCase("'x' IN {'x'}", compare(.value(.string("x")), .in, .list([.string("x")]))),
        FormatParseCase("a == b", compare(.key("a"), .equal, .key("b"))),
    ]

    @Test("comparison operators", arguments: comparisons)
    func comparison(_ test: FormatParseCase) throws {
        #expect(try ObjectPredicate(format: test.format) == test.expected)
    }

    @Test("[c], [d] and [cd] modifiers", arguments: modifiers)
    func modifier(_ test: FormatParseCase) throws {
        #expect(try ObjectPredicate(format: test.format) == test.expected)
    }

    @Test("AND, OR, NOT, parentheses, constants and precedence", arguments: connectives)
    func connective(_ test: FormatParseCase) throws {
        #expect(try ObjectPredicate(format: test.format) == test.expected)
    }

    @Test("key paths, @count and quantifiers", arguments: keyPaths)
    func keyPath(_ test: FormatParseCase) throws {
        #expect(try ObjectPredicate(format: test.format) == test.expected)
    }

    @Test("literals", arguments: literals)
    func literal(_ test: FormatParseCase) throws {
        #expect(try ObjectPredicate(format: test.format) == test.expected)
    }

    @Test("the documentation's examples parse as documented")
    func documentationExamples() throws {
        // ObjectPredicate's own example: the format and the built predicate are equal.
        let long = try ObjectPredicate(format: "milliseconds > 300000 AND album.artist.name ==[c] 'ac/dc'")
        let same =
            ObjectPredicate.comparison(.init(.key("milliseconds"), .greaterThan, .value(.int(300_000))))
            && ObjectPredicate.comparison(.init(.key("album.artist.name"), .equal, .value(.string("ac/dc")), options: .caseInsensitive))
        #expect(long == same)
        // init(format:)'s examples.
        #expect(
            try ObjectPredicate(format: "albums.@count >= 3 OR NOT (name BEGINSWITH 'The')")
                == .or([compare("albums.@count", .greaterThanOrEqual, .int(3)), .not(compare("name", .beginsWith, .string("The")))]))
        #expect(
            try ObjectPredicate(format: "ANY tracks.milliseconds BETWEEN {300000, 600000}")
                == .comparison(Comparison(.key("tracks.milliseconds"), .between, .list([.int(300_000), .int(600_000)]), quantifier: .any)))
        // description's example.
        #expect(
            try ObjectPredicate(format: "name =[c] 'x' and not (a = 1 or b <> 2)").description
                == #"name ==[c] "x" AND NOT (a == 1 OR b != 2)"#)
    }

    @Test("a long chain of AND is one flat node")
    func longChain() throws {
        let format = (0..<1000).map { "k\($0) == \($0)" }.joined(separator: " AND ")
        let predicate = try ObjectPredicate(format: format)
        guard case .and(let operands) = predicate else {
            Issue.record("expected .and, got \(predicate)")
            return
        }
        #expect(operands.count == 1000)
        #expect(operands.last == compare("k999", .equal, .int(999)))
    }
}

// MARK: - Errors

@Suite("PredicateFormat: errors")
struct PredicateFormatErrorTests {
    static let cases: [FormatErrorCase] = [
        // Unexpected end.
        FormatErrorCase("", "expected a predicate", column: 1),
        FormatErrorCase("   ", "expected a predicate", column: 4),
        FormatErrorCase("age >= ", "expected a value after '>='", column: 8),
        FormatErrorCase("milliseconds >=", "expected a value after '>='", column: 16),
        FormatErrorCase("name ==[c]", "expected a value after '==[c]'", column: 11),
        FormatErrorCase("name", "expected an operator after 'name'", column: 5),
        FormatErrorCase("a == 1 AND", "expected a predicate after 'AND'", column: 11),
        FormatErrorCase("a == 1 or", "expected a predicate after 'or'", column: 10),
        FormatErrorCase("NOT", "expected a predicate after 'NOT'", column: 4),
        FormatErrorCase("ANY", "expected a key path after 'ANY'", column: 4),
        FormatErrorCase("ANY 3 > 1", "expected a key path after 'ANY', found '3'", column: 5),
        // Something else where a value was expected.
        FormatErrorCase("age >= AND b == 1", "expected a value after '>=', found 'AND'", column: 8),
        FormatErrorCase("a == 1 AND AND b == 2", "expected a predicate after 'AND', found 'AND'", column: 12),
        FormatErrorCase("a == 1 AND )", "expected a predicate after 'AND', found ')'", column: 12),
        FormatErrorCase("()", "expected a predicate after '(', found ')'", column: 2),
        FormatErrorCase("a == 1 b == 2", "expected AND, OR or the end of the format, found 'b'", column: 8),
        FormatErrorCase("(a == 1 b == 2)", "expected AND, OR or ')', found 'b'", column: 9),
        FormatErrorCase("a == 1 'x'", "expected AND, OR or the end of the format, found the string 'x'", column: 8),
        // Unknown operators and characters.
        FormatErrorCase("name EQUALS 'x'", "unknown operator 'EQUALS'", column: 6),
        FormatErrorCase("name ~ 'x'", "unknown operator '~'", column: 6),
        FormatErrorCase("name 'x'", "expected an operator after 'name', found the string 'x'", column: 6),
        FormatErrorCase("a NOT IN {1}", "expected an operator after 'a', found 'NOT'", column: 3),
        FormatErrorCase("a === 1", "expected a value after '==', found '='", column: 5),
        FormatErrorCase("a == 1 & b == 2", "'&' is not an operator; use '&&' or AND", column: 8),
        FormatErrorCase("a == 1 | b == 2", "'|' is not an operator; use '||' or OR", column: 8),
        FormatErrorCase("a == 1 ; b == 2", "expected AND, OR or the end of the format, found ';'", column: 8),
        FormatErrorCase("name [c] == 'x'", "a modifier goes right after its operator, as in ==[c]", column: 6),
        // Modifiers.
        FormatErrorCase("name ==[x] 'a'", "unknown modifier 'x'; expected [c], [d] or [cd]", column: 9),
        FormatErrorCase("name ==[cc] 'a'", "modifier 'c' given twice", column: 10),
        FormatErrorCase("name ==[] 'a'", "empty modifier '[]'; expected [c], [d] or [cd]", column: 8),
        FormatErrorCase("name ==[c 'a'", "expected ']' to close the modifier", column: 10),
        // Parentheses and lists.
        FormatErrorCase("(a == 1", "unbalanced parentheses: this '(' is never closed", column: 1),
        FormatErrorCase("((a == 1) OR (b == 2)", "unbalanced parentheses: this '(' is never closed", column: 1),
        FormatErrorCase("a == 1)", "unbalanced parentheses: ')' without a matching '('", column: 7),
        FormatErrorCase("age BETWEEN 3", "expected a list of two values after 'BETWEEN' (as in BETWEEN {1, 10}), found '3'", column: 13),
        FormatErrorCase("age BETWEEN {1}", "BETWEEN needs a list of exactly two values, found 1", column: 13),
        FormatErrorCase("age BETWEEN {1, 2, 3}", "BETWEEN needs a list of exactly two values, found 3", column: 13),
        FormatErrorCase("age between", "expected a list of two values after 'between' (as in BETWEEN {1, 10})", column: 12),
        FormatErrorCase("id IN 3", "expected a list after 'IN' (as in IN {1, 2, 3}), found '3'", column: 7),
        FormatErrorCase("id IN[c] 'a'", "expected a list after 'IN[c]' (as in IN {1, 2, 3}), found the string 'a'", column: 10),
        FormatErrorCase("name BEGINSWITH[cd]", "expected a value after 'BEGINSWITH[cd]'", column: 20),
        FormatErrorCase("id IN {1, 2", "unbalanced braces: this '{' is never closed", column: 7),
        FormatErrorCase("id IN {1,}", "expected a value after ',', found '}'", column: 10),
        FormatErrorCase("id IN {1 2}", "expected ',' or '}' in the list, found '2'", column: 10),
        FormatErrorCase("id IN {name}", "a list holds only literal values, found the key path 'name'", column: 8),
        FormatErrorCase("id IN {{1}}", "lists cannot be nested", column: 8),
        FormatErrorCase("id == {1, 2}", "a list is only allowed after IN or BETWEEN", column: 7),
        FormatErrorCase("{1} CONTAINS 1", "a list is only allowed after IN or BETWEEN", column: 1),
        // Literals.
        FormatErrorCase("name == \"AC/DC", "unterminated string: expected a closing \"", column: 9),
        FormatErrorCase("name == 'AC/DC\\'", "unterminated string: expected a closing '", column: 9),
        FormatErrorCase(#"name == "a\qb""#, #"unknown escape '\q' in a string; use \", \', \\, \n or \t"#, column: 11),
        FormatErrorCase("n == 99999999999999999999", "the integer 99999999999999999999 does not fit in 64 bits", column: 6),
        FormatErrorCase("n == 1.", "expected a digit after the decimal point", column: 8),
        FormatErrorCase("n == 1e", "expected the digits of the exponent", column: 8),
        FormatErrorCase("n == 12abc", "unexpected 'a' after the number 12", column: 8),
        FormatErrorCase("n == - 1", "expected a value after '==', found '-'", column: 6),
        // Key paths.
        FormatErrorCase("album. == 1", "expected a key after '.'", column: 7),
        FormatErrorCase("album.1 == 1", "expected a key after '.'", column: 7),
        FormatErrorCase("albums.@sum > 1", "unknown collection operator '@sum'; only '@count' is supported", column: 8),
        FormatErrorCase("albums.@count.x > 1", "'@count' must end the key path", column: 14),
        FormatErrorCase("albums.@ > 1", "expected 'count' after '@'", column: 9),
        FormatErrorCase("album.in == 1", "'in' is a reserved word and cannot be used in a key path", column: 7),
        FormatErrorCase("Any.name == 1", "'Any' is a reserved word and cannot be used in a key path", column: 1),
        FormatErrorCase("in == 1", "expected a predicate, found 'in'", column: 1),
        FormatErrorCase("@count > 1", "expected a predicate, found '@'", column: 1),
        FormatErrorCase("id IN {", "expected a value after '{'", column: 8),
        // The first error in reading order is the one reported.
        FormatErrorCase("a == AND \"unterminated", "expected a value after '==', found 'AND'", column: 6),
        FormatErrorCase("a == 1 AND b == 'x' OR \"", "unterminated string: expected a closing \"", column: 24),
        // Columns count characters, not scalars or bytes.
        FormatErrorCase("名前 ==", "expected a value after '=='", column: 6),
        FormatErrorCase("\"👍🏽 e\u{301}\" == ", "expected a value after '=='", column: 10),
        FormatErrorCase("\"👍🏽\" == 1 ~", "expected AND, OR or the end of the format, found '~'", column: 10),
    ]

    @Test("malformed formats fail with a message and a column", arguments: cases)
    func malformed(_ test: FormatErrorCase) {
        let error = parseError(test.format)
        #expect(error?.message == test.message)
        #expect(error?.column == test.column)
        #expect(error?.format == test.format)
    }

    @Test("the description names the message, the column and the format")
    func errorDescription() {
        #expect(parseError("age >= ")?.description == #"expected a value after '>=' at column 8 in "age >= ""#)
    }

    @Test("nesting is capped, in parentheses and in NOTs")
    func nesting() throws {
        let limit = ObjectPredicate.maximumFormatNesting
        let deepest = String(repeating: "(", count: limit) + "a == 1" + String(repeating: ")", count: limit)
        #expect(try ObjectPredicate(format: deepest) == a1)
        let nots = String(repeating: "NOT ", count: limit) + "a == 1"
        var expected = a1
        for _ in 0..<limit { expected = .not(expected) }
        #expect(try ObjectPredicate(format: nots) == expected)

        let message = "too deeply nested: more than \(limit) levels of parentheses and NOT"
        let tooDeep = String(repeating: "(", count: limit + 1) + "a == 1" + String(repeating: ")", count: limit + 1)
        #expect(parseError(tooDeep) == PredicateSyntaxError(message: message, column: limit + 1, format: tooDeep))
        let mixed = String(repeating: "NOT (", count: limit / 2) + "!a == 1" + String(repeating: ")", count: limit / 2)
        #expect(parseError(mixed) == PredicateSyntaxError(message: message, column: 5 * (limit / 2) + 1, format: mixed))
        // Hostile input fails quickly and cleanly instead of exhausting the stack.
        let hostile = String(repeating: "(", count: 100_000)
        #expect(parseError(hostile) == PredicateSyntaxError(message: message, column: limit + 1, format: hostile))
    }

    @Test("the deepest nesting parses on a thread with a 512 KiB stack")
    func smallStack() async {
        let limit = ObjectPredicate.maximumFormatNesting
        let format = String(repeating: "(", count: limit) + "a == 1" + String(repeating: ")", count: limit)
        let parsed = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let thread = Thread {
                continuation.resume(returning: (try? ObjectPredicate(format: format)) != nil)
            }
            thread.stackSize = 512 * 1024
            thread.start()
        }
        #expect(parsed)
    }
}

// MARK: - Printing

@Suite("PredicateFormat: printing")
struct PredicateFormatPrintingTests {
    static let canonical: [FormatParseCase] = [
        FormatParseCase("a == 1", a1),
        FormatParseCase(
            "name ==[c] \"x\" AND NOT (a == 1 OR b != 2)",
            .and([
                compare("name", .equal, .string("x"), options: .caseInsensitive),
                .not(.or([a1, compare("b", .notEqual, .int(2))])),
            ])),
        FormatParseCase("a == 1 OR b == 2 AND c == 3", .or([a1, .and([b2, c3])])),
        FormatParseCase("(a == 1 OR b == 2) AND c == 3", .and([.or([a1, b2]), c3])),
        FormatParseCase("(a == 1 AND b == 2) AND c == 3", .and([.and([a1, b2]), c3])),
        FormatParseCase("a == 1 OR (b == 2 OR c == 3)", .or([a1, .or([b2, c3])])),
        FormatParseCase("NOT NOT a == 1", .not(.not(a1))),
        FormatParseCase("NOT TRUEPREDICATE", .not(.constant(true))),
        FormatParseCase("NOT (a == 1 AND b == 2)", .not(.and([a1, b2]))),
        FormatParseCase("ANY tracks.milliseconds > 300000", compare("tracks.milliseconds", .greaterThan, .int(300_000), quantifier: .any)),
        FormatParseCase(
            "NONE tags IN {\"x\", nil, true, 1, 1.5}",
            .comparison(
                Comparison(
                    .key("tags"), .in, .list([.string("x"), .null, .bool(true), .int(1), .double(1.5)]),
                    quantifier: Comparison.Quantifier.none))),
        FormatParseCase("age BETWEEN {18, 65}", compare("age", .between, list: [.int(18), .int(65)])),
        FormatParseCase("id IN {}", compare("id", .in, list: [])),
        FormatParseCase(
            "title BEGINSWITH[cd] \"a\"", compare("title", .beginsWith, .string("a"), options: [.caseInsensitive, .diacriticInsensitive])),
        FormatParseCase("title LIKE[d] \"a*\"", compare("title", .like, .string("a*"), options: .diacriticInsensitive)),
        FormatParseCase("3 < albums.@count", compare(.value(.int(3)), .lessThan, .key("albums.@count"))),
        FormatParseCase("x == 1.0", compare("x", .equal, .double(1))),
        FormatParseCase("x == -0.5", compare("x", .equal, .double(-0.5))),
        FormatParseCase("x == 1e-05", compare("x", .equal, .double(0.00001))),
        FormatParseCase("x == 1e+16", compare("x", .equal, .double(1e16))),
        FormatParseCase("x == 0.1", compare("x", .equal, .double(0.1))),
        FormatParseCase("x == 1e999", compare("x", .equal, .double(.infinity))),
        FormatParseCase("x == -9223372036854775808", compare("x", .equal, .int(.min))),
        FormatParseCase(#"s == "a\"b'c\\d\ne\tf""#, compare("s", .equal, .string("a\"b'c\\d\ne\tf"))),
        FormatParseCase("v == nil AND b == false", .and([compare("v", .equal, .null), compare("b", .equal, .bool(false))])),
        // Values the language cannot write print as the import files spell them.
        FormatParseCase("d == \"2020-01-01T00:00:00Z\"", compare("d", .equal, .date(Date(timeIntervalSince1970: 1_577_836_800)))),
        FormatParseCase("d == \"AQID\"", compare("d", .equal, .data(Data([1, 2, 3])))),
        FormatParseCase(
            "u == \"E621E1F8-C36C-495A-93FC-0C247A3E6E5F\"",
            compare("u", .equal, .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F") ?? UUID()))),
        FormatParseCase("artist == \"Artist/7\"", compare("artist", .equal, .object(ObjectID(entity: "Artist", number: 7)))),
        FormatParseCase("x == nan", compare("x", .equal, .double(.nan))),
        // Shapes the parser never builds print as their meaning.
        FormatParseCase("TRUEPREDICATE", .and([])),
        FormatParseCase("FALSEPREDICATE", .or([])),
        FormatParseCase("a == 1", .or([.and([a1])])),
        FormatParseCase("NOT (a == 1 OR b == 2)", .not(.and([.or([a1, b2])]))),
    ]

    @Test("description is the canonical format string", arguments: canonical)
    func canonicalText(_ test: FormatParseCase) {
        #expect(test.expected.description == test.format)
    }

    @Test("a date prints as ISO-8601 and reads back as that string")
    func dateReadsBackAsString() throws {
        let date = Date(timeIntervalSince1970: 1_577_836_800.25)
        let printed = compare("createdAt", .greaterThan, .date(date)).description
        #expect(printed == "createdAt > \"2020-01-01T00:00:00.250Z\"")
        #expect(try ObjectPredicate(format: printed) == compare("createdAt", .greaterThan, .string("2020-01-01T00:00:00.250Z")))
    }

    @Test("a string that starts with a combining mark round-trips")
    func combiningMarks() throws {
        for text in ["\u{301}", "a\u{301}", "\\\u{301}", "\"\u{301}", "\u{600}", "x\u{600}", "👍🏽", "\r\n", "\u{200D}"] {
            let predicate = compare("s", .equal, .string(text))
            let parsed = try ObjectPredicate(format: predicate.description)
            guard case .comparison(let comparison) = parsed, case .value(.string(let back)) = comparison.right else {
                Issue.record("\(predicate) parsed to \(parsed)")
                continue
            }
            #expect(Array(back.unicodeScalars) == Array(text.unicodeScalars))
        }
    }
}

// MARK: - Round trip

@Suite("PredicateFormat: round trip")
struct PredicateFormatRoundTripTests {
    @Test("random predicates print and parse back equal", arguments: [0x5EED_0001, 0xC0FFEE, 20_240_611] as [UInt64])
    func roundTrip(seed: UInt64) {
        var generator = RandomPredicates(seed: seed)
        for index in 0..<1000 {
            let predicate = generator.predicate()
            let text = predicate.description
            do {
                let parsed = try ObjectPredicate(format: text)
                guard parsed == predicate else {
                    Issue.record("seed \(seed), predicate \(index): \(text) parsed back as \(parsed) (\(parsed == predicate))")
                    return
                }
                guard parsed.description == text else {
                    Issue.record("seed \(seed), predicate \(index): \(text) printed back as \(parsed.description)")
                    return
                }
            } catch {
                Issue.record("seed \(seed), predicate \(index): \(text) does not parse: \(error)")
                return
            }
        }
    }
}

/// Random predicates built only from what the format language can write, so that every
/// one must survive `description` then `init(format:)`.
private struct RandomPredicates {
    var rng: SeededGenerator

    init(seed: UInt64) { rng = SeededGenerator(seed: seed) }

    private mutating func pick<T>(_ choices: [T]) -> T { choices[rng.next(below: choices.count)] }
    private mutating func chance(_ percent: Int) -> Bool { rng.next(below: 100) < percent }

    mutating func predicate(depth: Int = 0) -> ObjectPredicate {
        if depth >= 5 || chance(30 + depth * 15) {
            return chance(8) ? .constant(chance(50)) : .comparison(comparison())
        }
        switch rng.next(below: 3) {
        case 0: return .not(predicate(depth: depth + 1))
        case 1: return .and((0..<(2 + rng.next(below: 3))).map { _ in predicate(depth: depth + 1) })
        default: return .or((0..<(2 + rng.next(below: 3))).map { _ in predicate(depth: depth + 1) })
        }
    }

    mutating func comparison() -> Comparison {
        let op = pick(Comparison.Operator.allCases)
        let options = pick(
            [[], .caseInsensitive, .diacriticInsensitive, [.caseInsensitive, .diacriticInsensitive]] as [Comparison.Options])
        let right: Operand
        switch op {
        case .between: right = .list([value(), value()])
        case .in: right = .list((0..<rng.next(below: 5)).map { _ in value() })
        default: right = chance(15) ? .key(keyPath()) : .value(value())
        }
        if chance(25) {
            return Comparison(.key(keyPath()), op, right, options: options, quantifier: pick([.any, .all, Comparison.Quantifier.none]))
        }
        let left: Operand = chance(15) ? .value(value()) : .key(keyPath())
        return Comparison(left, op, right, options: options)
    }

    mutating func keyPath() -> String {
        let names = [
            "name", "title", "a", "_x", "x1", "A_b_2", "café", "名前", "milliseconds", "album", "artist",
            "android", "order", "inside", "nothing", "yesterday", "nilly", "ANYthing", "between_", "Σίσυφος",
        ]
        var components = (0..<(1 + rng.next(below: 3))).map { _ in pick(names) }
        if chance(20) { components.append("@count") }
        return components.joined(separator: ".")
    }

    mutating func value() -> Value {
        switch rng.next(below: 5) {
        case 0: return chance(50) ? .null : .bool(chance(50))
        case 1: return .int(chance(50) ? pick([0, 1, -1, 42, .max, .min]) : Int64(bitPattern: rng.next()))
        case 2: return .double(double())
        default: return .string(string())
        }
    }

    mutating func double() -> Double {
        if chance(30) {
            return pick([
                0, 1, -1, 0.1, 1.5, 1e16, 1e-5, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
                .leastNonzeroMagnitude, .leastNormalMagnitude, .infinity, -.infinity,
            ])
        }
        if chance(50) { return Double(Int32(truncatingIfNeeded: rng.next())) / 1000 }
        while true {
            let double = Double(bitPattern: rng.next())
            if !double.isNaN { return double }
        }
    }

    mutating func string() -> String {
        let pieces = [
            "a", "Z", " ", "\"", "'", "\\", "\n", "\t", "\r", "\r\n", "*", "?", "{", "}", "(", ")", "AND", "==",
            "é", "e\u{301}", "\u{301}", "\u{600}", "\u{200D}", "日本", "🎸", "👍🏽", "\u{0}", "[c]", "@count", ".",
        ]
        return (0..<rng.next(below: 8)).map { _ in pick(pieces) }.joined()
    }
}
