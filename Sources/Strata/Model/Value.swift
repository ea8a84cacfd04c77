import Foundation

/// A stored value: an attribute's value, or a relationship's destination(s).
///
/// Attributes hold `.string`, `.int`, `.double`, `.bool`, `.date`, `.data` or `.uuid` (or
/// `.null` when optional). A to-one relationship holds `.object` or `.null`; a to-many
/// relationship holds `.objects`, an ordered list without duplicates.
public enum Value: Sendable, Hashable, CustomStringConvertible {
    case null
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case date(Date)
    case data(Data)
    case uuid(UUID)
    case object(ObjectID)
    case objects([ObjectID])

    /// Whether this is `.null`.
    public var isNull: Bool { if case .null = self { true } else { false } }

    /// The objects a relationship value refers to: one for `.object`, the list for
    /// `.objects`, none otherwise.
    public var referencedObjects: [ObjectID] {
        switch self {
        case .object(let id): [id]
        case .objects(let ids): ids
        default: []
        }
    }

    /// Whether a relationship value refers to `id` (without making a list of one).
    @inline(__always)
    public func refers(to id: ObjectID) -> Bool {
        switch self {
        case .object(let other): other == id
        case .objects(let ids): ids.contains(id)
        default: false
        }
    }

    /// The attribute type this value belongs to, or `nil` for `.null` and relationship values.
    public var attributeType: AttributeType? {
        switch self {
        case .string: .string
        case .int: .int
        case .double: .double
        case .bool: .bool
        case .date: .date
        case .data: .data
        case .uuid: .uuid
        case .null, .object, .objects: nil
        }
    }

    public var description: String {
        switch self {
        case .null: "nil"
        case .string(let s): "\"\(s)\""
        case .int(let i): String(i)
        case .double(let d): String(d)
        case .bool(let b): String(b)
        case .date(let d): d.formatted(.iso8601)
        case .data(let d): "<\(d.count) bytes>"
        case .uuid(let u): u.uuidString
        case .object(let id): id.description
        case .objects(let ids): "[" + ids.map(\.description).joined(separator: ", ") + "]"
        }
    }
}
