import Foundation

/// A stored value: an attribute's value, or a relationship's destination(s).
///
/// Attributes hold `.string`, `.int`, `.double`, `.bool`, `.date`, `.data` or `.uuid` (or
/// `.null` when optional). A to-one relationship holds `.object` or `.null`; a to-many
/// relationship holds `.objects`, an ordered list without duplicates.
///
/// Two values are equal when they are the same stored value: strings by their UTF-8 bytes
/// (the order predicates and indexes use, so two spellings of "é" are two values, as in
/// SQLite), doubles by number with every NaN equal to every other (a NaN stored twice is
/// the same value; predicates still follow IEEE 754, where NaN equals nothing).
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

    /// A relationship value without its references to the objects `removed` picks (nil for
    /// a to-one, the rest of a to-many list), or `nil` when it refers to none of them.
    func removingReferences(where removed: (ObjectID) -> Bool) -> Value? {
        switch self {
        case .object(let id) where removed(id): .null
        case .objects(let ids) where ids.contains(where: removed): .objects(ids.filter { !removed($0) })
        default: nil
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
        case .date(let d): ISO8601.string(from: d)
        case .data(let d): "<\(d.count) bytes>"
        case .uuid(let u): u.uuidString.lowercased()
        case .object(let id): id.description
        case .objects(let ids): "[" + ids.map(\.description).joined(separator: ", ") + "]"
        }
    }

    /// Whether this is a double that is not a number.
    var isNaN: Bool { if case .double(let d) = self { d.isNaN } else { false } }

    public static func == (lhs: Value, rhs: Value) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.string(let a), .string(let b)): Value.sameBytes(a, b)
        case (.int(let a), .int(let b)): a == b
        case (.double(let a), .double(let b)): a == b || (a.isNaN && b.isNaN)
        case (.bool(let a), .bool(let b)): a == b
        case (.date(let a), .date(let b)): a == b
        case (.data(let a), .data(let b)): a == b
        case (.uuid(let a), .uuid(let b)): a == b
        case (.object(let a), .object(let b)): a == b
        case (.objects(let a), .objects(let b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0 as UInt8)
        case .string(let s):
            hasher.combine(1 as UInt8)
            hasher.combine(s.utf8.count)
            let hashed: Void? = s.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
            if hashed == nil { for byte in s.utf8 { hasher.combine(byte) } }
        case .int(let i): hasher.combine(2 as UInt8); hasher.combine(i)
        case .double(let d): hasher.combine(3 as UInt8); hasher.combine(d.isNaN ? Double.nan.bitPattern : d.bitPattern == (-0.0 as Double).bitPattern ? 0 : d.bitPattern)
        case .bool(let b): hasher.combine(4 as UInt8); hasher.combine(b)
        case .date(let d): hasher.combine(5 as UInt8); hasher.combine(d)
        case .data(let d): hasher.combine(6 as UInt8); hasher.combine(d)
        case .uuid(let u): hasher.combine(7 as UInt8); hasher.combine(u)
        case .object(let id): hasher.combine(8 as UInt8); hasher.combine(id)
        case .objects(let ids): hasher.combine(9 as UInt8); hasher.combine(ids)
        }
    }

    /// Whether two strings have the same UTF-8 bytes (not Swift's canonical equivalence).
    @inline(__always)
    static func sameBytes(_ a: String, _ b: String) -> Bool {
        let fast = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in
                x.count == y.count && (x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0)
            }
        }
        if let fast, let result = fast { return result }
        return a.utf8.elementsEqual(b.utf8)
    }
}