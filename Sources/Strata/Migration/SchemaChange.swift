/// One difference between two schema versions, as a migration step sees it.
///
/// An inferred step derives its changes from the two schemas alone: added and removed
/// entities, attributes and relationships, renames declared with `renamedFrom`, optional ↔
/// required with a default, new options and limits (checked by validation). A change that
/// cannot be inferred (a new type, a required attribute without a default, a to-one turned
/// to-many, a relationship paired with another inverse, ...) is reported with
/// ``isInferable`` `false`, naming the entity and key; such a step needs a custom transform
/// for the entity.
///
/// ```
/// Song.title: renamed from "name"
/// Song.rating: added (default 0)
/// Song.length: type changed from int to double (not inferable; write a custom transform for Song)
/// ```
public struct SchemaChange: Sendable, Hashable, CustomStringConvertible {
    /// What kind of difference it is.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case addedEntity, removedEntity, renamedEntity
        case addedAttribute, removedAttribute, renamedAttribute
        case addedRelationship, removedRelationship, renamedRelationship
        case madeRequired, madeOptional
        /// Options, limits, defaults, indexes or delete rules changed: checked by validation.
        case optionsChanged
        /// The attribute's type changed.
        case typeChanged
        /// A property changed between attribute and relationship, to-one and to-many, or its
        /// destination entity or inverse.
        case shapeChanged
    }

    /// The kind of difference.
    public var kind: Kind
    /// The entity concerned (its name in the newer schema, or the older one's if removed).
    public var entity: String
    /// The attribute or relationship concerned, if any.
    public var key: String?
    /// What changed, in words.
    public var detail: String
    /// Whether an inferred step can carry the change out.
    public var isInferable: Bool

    /// Creates a change.
    public init(_ kind: Kind, entity: String, key: String? = nil, _ detail: String, inferable: Bool = true) {
        self.kind = kind
        self.entity = entity
        self.key = key
        self.detail = detail
        self.isInferable = inferable
    }

    public var description: String {
        "\(entity)\(key.map { ".\($0)" } ?? ""): \(detail)"
            + (isInferable ? "" : " (not inferable; write a custom transform for \(entity))")
    }
}
