/// A typed property of an entity that holds a value (as opposed to a ``Relationship``).
///
/// ```swift
/// Attribute("artistID", .int, unique: true)
/// Attribute("name", .string, optional: true, indexed: true, maxLength: 200)
/// ```
public struct Attribute: Sendable, Hashable {
    /// The attribute's name, unique within its entity.
    public var name: String
    /// The type of the attribute's values.
    public var type: AttributeType
    /// Whether the attribute may hold `nil`. Attributes are required unless declared optional.
    public var isOptional: Bool
    /// The value a new object gets when none is given.
    public var defaultValue: Value?
    /// Whether no two objects of the entity may share a value of this attribute.
    public var isUnique: Bool
    /// Whether the store keeps an index on this attribute for queries.
    public var isIndexed: Bool
    /// The attribute's name in the previous schema version, for inferred migrations. It may
    /// stay in later versions: it applies only while the previous version lacks this
    /// attribute's own name (or another property takes that name over by renaming from it).
    public var renamedFrom: String?
    /// The smallest allowed value (int, double and date attributes).
    public var minimum: Value?
    /// The largest allowed value (int, double and date attributes).
    public var maximum: Value?
    /// The fewest characters (string) or bytes (data) allowed.
    public var minLength: Int?
    /// The most characters (string) or bytes (data) allowed.
    public var maxLength: Int?

    /// Creates an attribute. Every option defaults to the model file's default.
    public init(
        _ name: String, _ type: AttributeType, optional: Bool = false, default defaultValue: Value? = nil,
        unique: Bool = false, indexed: Bool = false, renamedFrom: String? = nil,
        min minimum: Value? = nil, max maximum: Value? = nil, minLength: Int? = nil, maxLength: Int? = nil
    ) {
        self.name = name
        self.type = type
        self.isOptional = optional
        self.defaultValue = defaultValue
        self.isUnique = unique
        self.isIndexed = indexed
        self.renamedFrom = renamedFrom
        self.minimum = minimum
        self.maximum = maximum
        self.minLength = minLength
        self.maxLength = maxLength
    }
}
