/// A property of an entity that refers to objects of another (or the same) entity.
///
/// Every relationship has an inverse on its destination entity, and the two always agree.
///
/// ```swift
/// Relationship("albums", to: "Album", inverse: "artist", toMany: true, deleteRule: .cascade)
/// ```
public struct Relationship: Sendable, Hashable {
    /// What deleting the source object does to the objects this relationship refers to.
    public enum DeleteRule: String, Sendable, Hashable, CaseIterable, Codable {
        /// Remove the deleted object from the destinations' inverse relationship.
        case nullify
        /// Delete the destination objects too.
        case cascade
        /// Refuse to delete the source while the relationship refers to any object.
        case deny
    }

    /// The relationship's name, unique among its entity's properties.
    public var name: String
    /// The name of the destination entity.
    public var destination: String
    /// The name of the inverse relationship on the destination entity.
    public var inverse: String
    /// Whether the relationship refers to many objects (an ordered list) or at most one.
    public var isToMany: Bool
    /// Whether the relationship may be empty. Relationships are optional unless declared otherwise.
    public var isOptional: Bool
    /// What deleting the source object does to the destinations.
    public var deleteRule: DeleteRule
    /// The relationship's name in the previous schema version, for inferred migrations. It may
    /// stay in later versions: it applies only while the previous version lacks this
    /// relationship's own name (or another property takes that name over by renaming from it).
    public var renamedFrom: String?

    /// Creates a relationship. Every option defaults to the model file's default.
    public init(
        _ name: String, to destination: String, inverse: String, toMany: Bool = false,
        optional: Bool = true, deleteRule: DeleteRule = .nullify, renamedFrom: String? = nil
    ) {
        self.name = name
        self.destination = destination
        self.inverse = inverse
        self.isToMany = toMany
        self.isOptional = optional
        self.deleteRule = deleteRule
        self.renamedFrom = renamedFrom
    }
}
