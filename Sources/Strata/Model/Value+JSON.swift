import Foundation

extension Value {
    /// Converts a JSON value to a value of an attribute type, as the model and import files
    /// write them: dates as ISO-8601 strings, data as base64, UUIDs in canonical form.
    /// `null` gives `.null`.
    /// - Returns: the value, or a reason naming what was expected.
    public static func fromJSON(_ json: JSON, as type: AttributeType) -> Result<Value, ValueConversionError> {
        func wrong() -> Result<Value, ValueConversionError> {
            .failure(ValueConversionError(reason: "expected \(type.article) \(type.rawValue), got \(json.kindName)"))
        }
        switch (type, json) {
        case (_, .null): return .success(.null)
        case (.string, .string(let s)): return .success(.string(s))
        case (.int, .int(let i)): return .success(.int(i))
        case (.int, .double(let d)):
            // A number written with a fraction or an exponent, or too large for a 64-bit
            // integer, was read as a double. Above 2^53 a double no longer tells which
            // integer was written (9007199254740993.0 reads as ...992), so it is refused
            // rather than stored as a neighbouring number.
            guard d.isFinite, d.rounded() == d else {
                return .failure(ValueConversionError(reason: "\(d) is not a whole number"))
            }
            guard d > -9.223372036854775808e18, d < 9.223372036854775808e18 else {
                return .failure(ValueConversionError(reason: "\(d) is outside the range of a 64-bit integer or cannot be read exactly as one (write a plain integer from -9223372036854775808 to 9223372036854775807)"))
            }
            guard abs(d) < 9_007_199_254_740_992, let i = Int64(exactly: d) else {
                return .failure(ValueConversionError(reason: "\(d) is too large to be read exactly as an integer when written with a fraction or an exponent: write it as a plain integer"))
            }
            return .success(.int(i))
        case (.double, .double(let d)): return .success(.double(d))
        case (.double, .string(let s)) where Self.nonFiniteDoubles[s] != nil: return .success(.double(Self.nonFiniteDoubles[s]!))
        case (.double, .int(let i)): return .success(.double(Double(i)))
        case (.bool, .bool(let b)): return .success(.bool(b))
        case (.date, .string(let s)):
            guard let date = ISO8601.date(from: s) else {
                return .failure(ValueConversionError(reason: "\"\(s)\" is not an ISO-8601 date such as 2020-01-01T00:00:00Z"))
            }
            return .success(.date(date))
        case (.data, .string(let s)):
            guard let data = Data(base64Encoded: s) else {
                return .failure(ValueConversionError(reason: "the data string is not valid base64"))
            }
            return .success(.data(data))
        case (.uuid, .string(let s)):
            guard let uuid = UUID(uuidString: s) else {
                return .failure(ValueConversionError(reason: "\"\(s)\" is not a UUID"))
            }
            return .success(.uuid(uuid))
        default: return wrong()
        }
    }

    /// The strings that stand for the doubles JSON has no numbers for.
    static let nonFiniteDoubles: [String: Double] = ["Infinity": .infinity, "-Infinity": -.infinity, "NaN": .nan]

    /// The value as the model and import files write it (relationships as object IDs);
    /// infinite and NaN doubles, which JSON has no numbers for, as the strings `"Infinity"`,
    /// `"-Infinity"` and `"NaN"`, which ``fromJSON(_:as:)`` reads back.
    public var json: JSON {
        switch self {
        case .null: .null
        case .string(let s): .string(s)
        case .int(let i): .int(i)
        case .double(let d) where d.isFinite: .double(d)
        case .double(let d): .string(d.isNaN ? "NaN" : d < 0 ? "-Infinity" : "Infinity")
        case .bool(let b): .bool(b)
        case .date(let d): .string(ISO8601.string(from: d))
        case .data(let d): .string(d.base64EncodedString())
        case .uuid(let u): .string(u.uuidString.lowercased())  // the canonical form (RFC 9562) is lower case
        case .object(let id): .string(id.description)
        case .objects(let ids): .array(ids.map { .string($0.description) })
        }
    }
}

/// Why a JSON value does not fit an attribute type.
public struct ValueConversionError: Error, Sendable, Hashable {
    /// What was expected, and what was found.
    public var reason: String
}

extension AttributeType {
    var article: String { self == .int || self == .uuid ? "an" : "a" }
}
