/// A kind of object in a schema: its attributes, relationships and default sort order.
///
/// On disk an object's values are stored in property order: the attributes in the order
/// declared, then the relationships in the order declared. That order is part of the
/// schema fingerprint.
///
/// ```swift
/// Entity("Artist",
///        attributes: [Attribute("artistID", .int, unique: true), Attribute("name", .string)],
///        relationships: [Relationship("albums", to: "Album", inverse: "artist", toMany: true)],
///        defaultSort: [SortKey("name")])
/// ```
public struct Entity: Sendable, Hashable {
    /// The entity's name, unique within the schema. It may not contain `/`.
    public var name: String
    /// The attributes, in declared (storage) order.
    public var attributes: [Attribute]
    /// The relationships, in declared (storage) order.
    public var relationships: [Relationship]
    /// The order finders and queries use when none is given.
    public var defaultSort: [SortKey]
    /// The entity's name in the previous schema version, for inferred migrations. It may
    /// stay in later versions: it applies only while the previous version lacks this
    /// entity's own name (or another entity takes that name over by renaming from it).
    public var renamedFrom: String?

    /// Creates an entity.
    public init(
        _ name: String, attributes: [Attribute] = [], relationships: [Relationship] = [],
        defaultSort: [SortKey] = [], renamedFrom: String? = nil
    ) {
        self.name = name
        self.attributes = attributes
        self.relationships = relationships
        self.defaultSort = defaultSort
        self.renamedFrom = renamedFrom
    }

    /// The number of stored properties: attributes plus relationships.
    public var propertyCount: Int { attributes.count + relationships.count }

    /// The unique attribute, if the entity declares one.
    public var uniqueAttribute: Attribute? { attributes.first(where: \.isUnique) }

    /// A property of the entity, by storage index.
    public enum Property: Sendable, Hashable {
        case attribute(Attribute)
        case relationship(Relationship)

        /// The property's name.
        public var name: String {
            switch self {
            case .attribute(let a): a.name
            case .relationship(let r): r.name
            }
        }
    }

    /// The property at a storage index (attributes first, then relationships).
    public func property(at index: Int) -> Property {
        index < attributes.count
            ? .attribute(attributes[index]) : .relationship(relationships[index - attributes.count])
    }

    /// The storage index of the property with this name, if any.
    public func propertyIndex(named name: String) -> Int? {
        if let i = attributes.firstIndex(where: { $0.name == name }) { return i }
        if let i = relationships.firstIndex(where: { $0.name == name }) { return attributes.count + i }
        return nil
    }

    /// The values a new object starts with, in storage order: each attribute's default (or
    /// `nil`), empty relationships. Contexts' inserts and migrations' inserts both start here.
    var newObjectValues: [Value] {
        attributes.map { $0.defaultValue ?? .null } + relationships.map { $0.isToMany ? .objects([]) : .null }
    }

    /// The names of every property, in storage order (used in error messages).
    public var propertyNames: [String] { attributes.map(\.name) + relationships.map(\.name) }
}
