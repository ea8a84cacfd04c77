/// The permanent identity of a stored object: its entity and a number the store allocated.
///
/// An `ObjectID` is assigned when an object is inserted and never changes: there are no
/// temporary IDs. It is a plain value, so it crosses contexts freely where objects may not.
/// It prints, parses and encodes as `Entity/number`:
///
/// ```swift
/// let id = ObjectID(entity: "Artist", number: 42)
/// print(id)                                   // Artist/42
/// ObjectID(parsing: "Artist/42") == id        // true
/// ```
public struct ObjectID: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
    /// The name of the object's entity.
    public let entity: String
    /// The number the store allocated for the object, unique within its entity; never 0.
    public let number: UInt64

    /// Creates an identifier from an entity name and a number.
    public init(entity: String, number: UInt64) {
        self.entity = entity
        self.number = number
    }

    /// Parses the `Entity/number` form; returns `nil` for anything else.
    public init?(parsing text: some StringProtocol) {
        guard let slash = text.lastIndex(of: "/"), slash != text.startIndex,
            let number = UInt64(text[text.index(after: slash)...]), number > 0
        else { return nil }
        self.init(entity: String(text[..<slash]), number: number)
    }

    public var description: String { "\(entity)/\(number)" }

    /// Hashes the number and the entity name's length: equal IDs hash equally, and hashing
    /// (done for every object in every identity map and set) never walks the name.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(number)
        hasher.combine(entity.utf8.count)
    }

    /// Compares numbers first: IDs in one list mostly share their entity, so most unequal
    /// pairs differ by number and the names are never compared.
    public static func == (lhs: ObjectID, rhs: ObjectID) -> Bool {
        lhs.number == rhs.number && lhs.entity == rhs.entity
    }

    /// Orders by entity name, then by number: the stable order dumps and tests use.
    public static func < (lhs: ObjectID, rhs: ObjectID) -> Bool {
        lhs.entity == rhs.entity ? lhs.number < rhs.number : lhs.entity < rhs.entity
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = ObjectID(parsing: text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath,
                      debugDescription: "\"\(text)\" is not an object ID; expected the form Entity/42"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
