import Foundation
import Testing
@testable import Strata

@Suite struct JSONTests {
    @Test func parsesEveryKind() throws {
        let json = try JSON.parse(#" {"a": [1, -2, 3.5, 1e3, true, false, null, "x\n\u00e9\ud83c\udfb8"], "b": {}} "#)
        #expect(json == .object([
            ("a", .array([.int(1), .int(-2), .double(3.5), .double(1000), .bool(true), .bool(false), .null, .string("x\né🎸")])),
            ("b", .object([])),
        ]))
    }

    @Test func bigIntegersFallBackToDouble() throws {
        #expect(try JSON.parse("9223372036854775807") == .int(.max))
        #expect(try JSON.parse("-9223372036854775808") == .int(.min))
        #expect(try JSON.parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
    }

    @Test(arguments: [
        ("{\"a\":1,\"a\":2}", "duplicate key \"a\" at column 8"),
        ("[1,2", "expected ',' or ']' but the text ended"),
        ("{\"a\" 1}", "expected ':' after key \"a\" at column 6"),
        ("01", "a number may not start with 0 at column 1"),
        ("\"abc", "a string is not closed at column 1"),
        ("tru", "expected true at column 1"),
        ("[1] x", "unexpected text after the JSON value at column 5"),
        ("\"\\q\"", "an unknown escape \\q at column 2"),
        ("\"\\ud800\"", "a high surrogate must be followed by a low surrogate"),
        ("", "expected a value but the text ended at column 1"),
    ])
    func errorsNameTheColumn(text: String, message: String) {
        #expect(throws: JSONParseError.self) { try JSON.parse(text) }
        do {
            _ = try JSON.parse(text)
        } catch {
            #expect(error.description.contains(message), "\(error.description) should contain \(message)")
        }
    }

    @Test func refusesInvalidUTF8AndDeepNesting() {
        #expect(throws: JSONParseError.self) { try JSON.parse(Data([0x22, 0xFF, 0xFE, 0x22])) }
        #expect(throws: JSONParseError.self) { try JSON.parse(String(repeating: "[", count: 10_000)) }
    }

    @Test func writesWhatItReads() throws {
        let value = JSON.object([("s", .string("q\"\\\n\u{1}é")), ("n", .array([.int(-5), .double(2.5), .null, .bool(true)]))])
        #expect(try JSON.parse(value.text) == value)
        #expect(try JSON.parse(value.prettyText) == value)
        #expect(value.text == #"{"s":"q\"\\\n\u0001é","n":[-5,2.5,null,true]}"#)
    }
}
