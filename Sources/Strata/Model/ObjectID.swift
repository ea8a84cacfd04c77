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
///
/// An ID is two words: its entity's name is interned — kept once per process, for the life
/// of the process — and the ID refers to it. Build IDs from your schema's entity names;
/// text from outside that may name any entity is best checked against the entity you expect
/// before it becomes an ID (the importer and predicates do so): parsing and decoding refuse
/// what is not an entity name at all, but intern every name that could be one.
public struct ObjectID: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
    /// The entity's interned name, held without a reference count: interned names are
    /// never freed. Read through `_withUnsafeGuaranteedRef` — reading it as a plain
    /// reference (or an `unowned(unsafe)` one) retains it, and every thread retaining the
    /// same few names makes their reference counts the busiest cache lines of the process.
    private let name: Unmanaged<EntityName>
    /// The number the store allocated for the object, unique within its entity; never 0.
    public let number: UInt64

    /// The name of the object's entity.
    public var entity: String { name._withUnsafeGuaranteedRef { $0.string } }

    /// The interned name's identity: the same for every ID of an entity, and what schema
    /// layouts compare to find the entity (see ``EntityName/key``).
    var entityKey: EntityKey { EntityKey(name) }

    /// Creates an identifier from an entity name and a number.
    public init(entity: String, number: UInt64) {
        self.init(entityName: EntityName.interned(entity), number: number)
    }

    /// Creates an identifier from an interned entity name (see ``SchemaLayout/entityNames``),
    /// without looking the name up.
    init(entityName: EntityName, number: UInt64) {
        name = Unmanaged.passUnretained(entityName)
        self.number = number
    }

    /// Parses the `Entity/number` form; returns `nil` for anything else — a number that is
    /// not positive, or an entity part no schema could name (an entity's name is a letter
    /// or `_` followed by letters, digits or `_`), which is refused before it is interned.
    public init?(parsing text: some StringProtocol) {
        guard let (entity, number) = Self.parts(of: text) else { return nil }
        let name = String(entity)
        guard Schema.isIdentifier(name) else { return nil }
        self.init(entity: name, number: number)
    }

    /// Parses the `Entity/number` form of an ID of `entity` (an interned name, such as a
    /// schema layout's); returns `nil` for anything else. Text naming another entity is
    /// refused before its name is interned, so input that names many entities does not grow
    /// the table of names, and the table is not looked up (under its lock) per ID.
    init?(parsing text: some StringProtocol, of entity: EntityName) {
        guard let (name, number) = Self.parts(of: text), name == entity.string else { return nil }
        self.init(entityName: entity, number: number)
    }

    /// The entity name and number of the `Entity/number` form, or `nil`.
    static func parts<Text: StringProtocol>(of text: Text) -> (entity: Text.SubSequence, number: UInt64)? {
        guard let slash = text.lastIndex(of: "/"), slash != text.startIndex,
            let number = UInt64(text[text.index(after: slash)...]), number > 0
        else { return nil }
        return (text[..<slash], number)
    }

    public var description: String { "\(entity)/\(number)" }

    /// Hashes the number and the interned name's identity: equal IDs hash equally, and
    /// hashing (done for every object in every identity map and set) never reads the name.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(number)
        hasher.combine(entityKey.address)
    }

    /// Compares numbers, then entities by identity (each name is interned once).
    public static func == (lhs: ObjectID, rhs: ObjectID) -> Bool {
        lhs.number == rhs.number && lhs.entityKey == rhs.entityKey
    }

    /// Orders by entity name, then by number: the stable order dumps and tests use.
    public static func < (lhs: ObjectID, rhs: ObjectID) -> Bool {
        lhs.entityKey == rhs.entityKey ? lhs.number < rhs.number : lhs.entity < rhs.entity
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
