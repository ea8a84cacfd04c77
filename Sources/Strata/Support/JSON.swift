import Foundation

/// A parsed JSON value. Objects keep their keys in order; a key given twice is a parse
/// error (JSON that says two things about one key is refused, never silently resolved).
/// Strings and keys are compared by their UTF-8 bytes, as JSON text spells them: `"\u00e9"`
/// and `"e\u0301"` are different keys, as they are to every other JSON reader.
///
/// Strata parses JSON itself, byte by byte: it is faster than `JSONSerialization` for the
/// import format, tells `true` from `1` on every platform, and reports errors by column.
public enum JSON: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([(key: String, value: JSON)])

    /// The value for a key of an object; `nil` for a missing key or a non-object.
    public subscript(key: String) -> JSON? {
        guard case .object(let pairs) = self else { return nil }
        return pairs.first(where: { $0.key.utf8.elementsEqual(key.utf8) })?.value
    }

    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.int(let a), .int(let b)): a == b
        case (.double(let a), .double(let b)): a == b
        case (.string(let a), .string(let b)): a.utf8.elementsEqual(b.utf8)
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.key.utf8.elementsEqual($1.key.utf8) && $0.value == $1.value }
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let b): hasher.combine(b)
        case .int(let i): hasher.combine(i)
        case .double(let d): hasher.combine(d)
        case .string(let s): JSON.hashBytes(of: s, into: &hasher)
        case .array(let a): hasher.combine(a)
        case .object(let pairs):
            for pair in pairs {
                JSON.hashBytes(of: pair.key, into: &hasher)
                hasher.combine(pair.value)
            }
        }
    }

    private static func hashBytes(of text: String, into hasher: inout Hasher) {
        for byte in text.utf8 { hasher.combine(byte) }
        hasher.combine(text.utf8.count)
    }

    /// A short name of the value's kind, for error messages.
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Why JSON text could not be parsed, and where (1-based line and byte column of the byte
/// at fault).
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The 1-based line at which parsing failed (always 1 for text without line breaks).
    public var line: Int = 1
    /// The 1-based byte column, within its line, at which parsing failed.
    public var column: Int
    /// What was expected or wrong.
    public var reason: String
    public var description: String { line > 1 ? "\(reason) at line \(line), column \(column)" : "\(reason) at column \(column)" }
}

// MARK: - Parsing

extension JSON {
    /// Parses one JSON value that fills all of `bytes` (surrounding white space allowed).
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONParseError) -> JSON {
        var parser = JSONParser(bytes)
        return try parser.parseDocument()
    }

    /// Parses one JSON value from `data`.
    public static func parse(_ data: Data) throws(JSONParseError) -> JSON {
        let result: Result<JSON, JSONParseError> = data.withUnsafeBytes { raw in
            Result { () throws(JSONParseError) -> JSON in try JSON.parse(raw) }
        }
        return try result.get()
    }

    /// Parses one JSON value from a string.
    public static func parse(_ text: String) throws(JSONParseError) -> JSON {
        var text = text
        let result: Result<JSON, JSONParseError> = text.withUTF8 { utf8 in
            Result { () throws(JSONParseError) -> JSON in try JSON.parse(UnsafeRawBufferPointer(utf8)) }
        }
        return try result.get()
    }
}

struct JSONParser {
    private let bytes: UnsafeRawBufferPointer
    private var i = 0
    private var depth = 0
    /// Nesting deeper than this is refused rather than risking the stack: the parser
    /// recurses, and in a debug build each level takes more than 2 KiB of stack, so the
    /// deepest document accepted must parse on a thread with a 512 KiB stack (Darwin's
    /// secondary threads, where imports parse). Model and import files nest a few levels.
    static let maximumDepth = 128

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    private func fail(_ reason: String, at position: Int? = nil) -> JSONParseError {
        let position = min(position ?? i, bytes.count)
        var line = 1, start = 0
        for k in 0..<position where bytes[k] == 0x0A {
            line += 1
            start = k + 1
        }
        return JSONParseError(line: line, column: position - start + 1, reason: reason)
    }

    mutating func parseDocument() throws(JSONParseError) -> JSON {
        skipSpace()
        let value = try parseValue()
        skipSpace()
        guard i == bytes.count else { throw fail("unexpected text after the JSON value") }
        return value
    }

    private mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
    }

    private mutating func parseValue() throws(JSONParseError) -> JSON {
        guard i < bytes.count else { throw fail("expected a value but the text ended") }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectWord("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectWord("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectWord("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("expected a value (object, array, string, number, true, false or null)")
        }
    }

    private mutating func expectWord(_ word: StaticString) throws(JSONParseError) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - i >= count else { throw fail("expected \(word)") }
        for k in 0..<count where bytes[i + k] != word.utf8Start[k] { throw fail("expected \(word)") }
        i += count
    }

    private mutating func enter() throws(JSONParseError) {
        depth += 1
        guard depth <= JSONParser.maximumDepth else { throw fail("nesting deeper than \(JSONParser.maximumDepth) levels") }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSON {
        try enter()
        defer { depth -= 1 }
        i += 1
        var pairs: [(key: String, value: JSON)] = []
        pairs.reserveCapacity(8)  // one allocation for most objects, not four
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(pairs) }
        while true {
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a key string") }
            let keyStart = i
            let key = try parseString()
            if pairs.contains(where: { $0.key.utf8.elementsEqual(key.utf8) }) { throw fail("duplicate key \"\(key)\"", at: keyStart) }
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':' after key \"\(key)\"") }
            i += 1
            skipSpace()
            pairs.append((key, try parseValue()))
            skipSpace()
            guard i < bytes.count else { throw fail("expected ',' or '}' but the text ended") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(pairs) }
            throw fail("expected ',' or '}'")
        }
    }

    private mutating func parseArray() throws(JSONParseError) -> JSON {
        try enter()
        defer { depth -= 1 }
        i += 1
        var items: [JSON] = []
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
        while true {
            skipSpace()
            items.append(try parseValue())
            skipSpace()
            guard i < bytes.count else { throw fail("expected ',' or ']' but the text ended") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            throw fail("expected ',' or ']'")
        }
    }

    private mutating func parseNumber() throws(JSONParseError) -> JSON {
        let start = i
        var isInteger = true
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) else {
            throw fail("expected a digit")
        }
        if bytes[i] == UInt8(ascii: "0"), i + 1 < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i + 1]) {
            throw fail("a number may not start with 0")
        }
        func digits() { while i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) { i += 1 } }
        digits()
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            isInteger = false
            i += 1
            guard i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) else { throw fail("expected a digit after '.'") }
            digits()
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            isInteger = false
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) else { throw fail("expected a digit in the exponent") }
            digits()
        }
        if isInteger {
            // Fast path: accumulate, falling back to Double on overflow.
            var value: Int64 = 0
            var k = start
            let negative = bytes[k] == UInt8(ascii: "-")
            if negative { k += 1 }
            var overflow = false
            while k < i {
                let digit = Int64(bytes[k] - UInt8(ascii: "0"))
                let (m, o1) = value.multipliedReportingOverflow(by: 10)
                let (s, o2) = negative ? m.subtractingReportingOverflow(digit) : m.addingReportingOverflow(digit)
                if o1 || o2 { overflow = true; break }
                value = s
                k += 1
            }
            if !overflow { return .int(value) }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        guard let double = Double(text), double.isFinite else { throw fail("the number \(text.excerpt) is out of range", at: start) }
        return .double(double)
    }

    private mutating func parseString() throws(JSONParseError) -> String {
        let open = i
        i += 1
        let start = i
        // Fast path: no escapes.
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<i])
                i += 1
                guard let s = UTF8Text.string(raw) else {
                    throw fail("a string is not valid UTF-8", at: open)
                }
                return s
            }
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw fail("a control character must be escaped inside a string") }
            i += 1
        }
        var buffer = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[start..<i]))
        while true {
            guard i < bytes.count else { throw fail("a string is not closed", at: open) }
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                i += 1
                guard let s = String(validating: buffer, as: UTF8.self) else { throw fail("a string is not valid UTF-8", at: open) }
                return s
            }
            if b < 0x20 { throw fail("a control character must be escaped inside a string") }
            if b != UInt8(ascii: "\\") { buffer.append(b); i += 1; continue }
            i += 1
            guard i < bytes.count else { throw fail("a string is not closed", at: open) }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): buffer.append(0x22)
            case UInt8(ascii: "\\"): buffer.append(0x5C)
            case UInt8(ascii: "/"): buffer.append(0x2F)
            case UInt8(ascii: "b"): buffer.append(0x08)
            case UInt8(ascii: "f"): buffer.append(0x0C)
            case UInt8(ascii: "n"): buffer.append(0x0A)
            case UInt8(ascii: "r"): buffer.append(0x0D)
            case UInt8(ascii: "t"): buffer.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800..<0xDC00).contains(scalar) {
                    guard bytes.count - i >= 6, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw fail("a high surrogate must be followed by a low surrogate")
                    }
                    i += 2
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw fail("expected a low surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(scalar) {
                    throw fail("a lone low surrogate")
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw fail("an invalid \\u escape") }
                buffer.append(contentsOf: Array(String(Character(unicode)).utf8))
            default: throw fail("an unknown escape \\\(Character(Unicode.Scalar(e)))", at: i - 2)
            }
        }
    }

    private mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard bytes.count - i >= 4 else { throw fail("expected four hex digits after \\u") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[i]
            let digit: UInt32
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(b - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(b - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(b - UInt8(ascii: "A") + 10)
            default: throw fail("expected a hex digit")
            }
            value = value << 4 | digit
            i += 1
        }
        return value
    }
}

// MARK: - Writing

extension JSON {
    /// The value as compact JSON text (object keys in their stored order). An infinite or
    /// NaN double, which JSON has no number for, is written as `null`.
    public var text: String {
        var out = ""
        write(to: &out, indent: nil, level: 0)
        return out
    }

    /// The value as indented JSON text, for files people read.
    public var prettyText: String {
        var out = ""
        write(to: &out, indent: "  ", level: 0)
        return out + "\n"
    }

    private func write(to out: inout String, indent: String?, level: Int) {
        func newline(_ level: Int) {
            if let indent { out += "\n" + String(repeating: indent, count: level) }
        }
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d) where !d.isFinite:
            out += "null"  // JSON has no numbers for these (``Value/json`` writes them as strings)
        case .double(let d):
            out += d == d.rounded() && abs(d) < 1e15 ? String(format: "%.1f", d) : "\(d)"
        case .string(let s): JSON.writeString(s, to: &out)
        case .array(let items):
            if items.isEmpty { out += "[]"; return }
            out += "["
            for (k, item) in items.enumerated() {
                if k > 0 { out += "," }
                newline(level + 1)
                item.write(to: &out, indent: indent, level: level + 1)
            }
            newline(level)
            out += "]"
        case .object(let pairs):
            if pairs.isEmpty { out += "{}"; return }
            out += "{"
            for (k, pair) in pairs.enumerated() {
                if k > 0 { out += "," }
                newline(level + 1)
                JSON.writeString(pair.key, to: &out)
                out += indent == nil ? ":" : ": "
                pair.value.write(to: &out, indent: indent, level: level + 1)
            }
            newline(level)
            out += "}"
        }
    }

    static func writeString(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default:
                if let escape = controlEscape(scalar) { out += escape } else { out.unicodeScalars.append(scalar) }
            }
        }
        out += "\""
    }

    /// How JSON text writes a control character (`\n`, `\r`, `\t`, else `\u00XX`), or `nil`
    /// for any other character.
    public static func controlEscape(_ scalar: Unicode.Scalar) -> String? {
        switch scalar {
        case "\n": "\\n"
        case "\r": "\\r"
        case "\t": "\\t"
        case _ where scalar.value < 0x20: "\\u" + String(scalar.value, radix: 16).leftPadded(to: 4)
        default: nil
        }
    }
}
