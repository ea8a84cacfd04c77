/// A schema flattened for the hot paths (encoding, decoding, replay, commit checks): per
/// entity, one small trivially-copyable descriptor per property, so that reading a value
/// costs no copies of names, arrays or options.
final class SchemaLayout: Sendable {
    /// What a stored value of a property must be.
    enum Kind: Sendable, Hashable {
        case attribute(AttributeType)
        case toOne(destination: Int)
        case toMany(destination: Int)

        /// The entity a relationship's objects belong to; `nil` for an attribute.
        var destination: Int? {
            switch self {
            case .attribute: nil
            case .toOne(let destination), .toMany(let destination): destination
            }
        }
    }

    /// A class, so that hot paths holding one pay one retain, not one per array inside.
    final class EntityLayout: Sendable {
        let name: String
        let attributeCount: Int
        let kinds: [Kind]
        let propertyNames: [String]
        /// The storage index of the unique attribute, if any.
        let uniqueAttribute: Int?
        /// The attributes with an ordered index: those declared `indexed` or `unique`.
        let orderedIndexAttributes: [Int]
        let propertyCount: Int
        /// Per property: for a relationship, the storage index of its inverse in the
        /// destination entity; -1 for attributes.
        let inverseIndexes: [Int]
        /// Per attribute: what a value must be when the attribute has no limits but an int
        /// one's integer minimum and maximum (no lengths), is not a unique double (which must
        /// not be NaN) and is not a date (which must be within the years ISO 8601 text can
        /// spell), so that the commit checks such values without reading the attribute;
        /// `nil` for the others.
        let plainChecks: [PlainCheck?]
        /// Per property: for a relationship, whether the check of a transaction that only
        /// inserts looks this side's targets up, or only counts them (the inverse side looks
        /// its own up, and the two sides' counts must agree — see
        /// ``CommitPlan/checkInserted(_:in:lists:tally:)``): the to-many side of a one-to-many
        /// relationship, whose targets each name one object back; of two sides alike, the one
        /// whose entity and storage index come first; both sides of a relationship that is
        /// its own inverse. `false` for attributes.
        let followsTargets: [Bool]

        init(name: String, attributeCount: Int, kinds: [Kind], propertyNames: [String], uniqueAttribute: Int?, orderedIndexAttributes: [Int],
             inverseIndexes: [Int], plainChecks: [PlainCheck?], followsTargets: [Bool]) {
            self.name = name
            self.attributeCount = attributeCount
            self.kinds = kinds
            self.propertyNames = propertyNames
            self.uniqueAttribute = uniqueAttribute
            self.orderedIndexAttributes = orderedIndexAttributes
            self.propertyCount = kinds.count
            self.inverseIndexes = inverseIndexes
            self.plainChecks = plainChecks
            self.followsTargets = followsTargets
        }
    }

    /// What a value of an attribute with no other checks must be (see
    /// ``EntityLayout/plainChecks``).
    struct PlainCheck: Sendable {
        let type: AttributeType
        let optional: Bool
        /// For an int attribute with an integer minimum or maximum, the values they admit.
        let integers: ClosedRange<Int64>?

        /// The check for `attribute`, or `nil` when it needs the full one.
        init?(_ attribute: Attribute) {
            guard attribute.minLength == nil, attribute.maxLength == nil, !(attribute.isUnique && attribute.type == .double),
                attribute.type != .date
            else { return nil }
            type = attribute.type
            optional = attribute.isOptional
            switch (attribute.minimum, attribute.maximum) {
            case (nil, nil):
                integers = nil
            case (.int(let minimum)?, .int(let maximum)?) where attribute.type == .int && minimum <= maximum:
                integers = minimum...maximum
            case (.int(let minimum)?, nil) where attribute.type == .int:
                integers = minimum...Int64.max
            case (nil, .int(let maximum)?) where attribute.type == .int:
                integers = Int64.min...maximum
            default:
                return nil
            }
        }

        /// Whether `value`, of this check's type, passes it.
        @inline(__always)
        func admits(_ value: Value) -> Bool {
            guard let integers else { return true }
            if case .int(let number) = value { return integers.contains(number) }
            return false
        }
    }

    let entities: [EntityLayout]
    let entityIndexes: [String: Int]

    /// A relationship as the importer and migrations link objects through it.
    struct RelationshipLayout {
        let isToMany: Bool
        /// The destination entity's storage index.
        let destination: Int
        /// The inverse's storage index in the destination entity.
        let inverse: Int
        let inverseIsToMany: Bool
    }

    /// The relationship at a property's storage index, or `nil` for an attribute.
    func relationship(entity: Int, property: Int) -> RelationshipLayout? {
        let layout = entities[entity]
        let (isToMany, destination): (Bool, Int)
        switch layout.kinds[property] {
        case .attribute: return nil
        case .toOne(let d): (isToMany, destination) = (false, d)
        case .toMany(let d): (isToMany, destination) = (true, d)
        }
        let inverse = layout.inverseIndexes[property]
        guard case .toMany = entities[destination].kinds[inverse] else {
            return RelationshipLayout(isToMany: isToMany, destination: destination, inverse: inverse, inverseIsToMany: false)
        }
        return RelationshipLayout(isToMany: isToMany, destination: destination, inverse: inverse, inverseIsToMany: true)
    }
    /// The entity names in storage order, for the linear lookup of small schemas.
    private let names: [String]
    /// The entity names in storage order, interned: what the store's IDs hold.
    let entityNames: [EntityName]
    /// Their addresses (``EntityName/key``), which IDs are compared with.
    let entityKeys: [EntityKey]
    /// Storage indexes by interned name's address, for schemas too large to search in turn.
    private let indexesByKey: [EntityKey: Int]

    /// The storage index of an ID's entity: its interned name compared by address.
    @inline(__always)
    func entityIndex(of id: ObjectID) -> Int? {
        let key = id.entityKey
        if entityKeys.count <= 8 {
            for i in entityKeys.indices where entityKeys[i] == key { return i }
            return nil
        }
        return indexesByKey[key]
    }

    /// The storage index of an entity. Small schemas compare names in turn (small strings
    /// compare in a few instructions, faster than hashing the name); larger ones hash.
    @inline(__always)
    func entityIndex(named name: String) -> Int? {
        if names.count <= 8 {
            for i in names.indices where names[i] == name { return i }
            return nil
        }
        return entityIndexes[name]
    }

    init(_ entities: [Entity]) {
        var indexes: [String: Int] = [:]
        for (i, entity) in entities.enumerated() where indexes[entity.name] == nil { indexes[entity.name] = i }
        entityIndexes = indexes
        names = entities.map(\.name)
        entityNames = entities.map { EntityName.interned($0.name) }
        entityKeys = entityNames.map(\.key)
        var byKey: [EntityKey: Int] = [:]
        for (i, key) in entityKeys.enumerated() where byKey[key] == nil { byKey[key] = i }
        indexesByKey = byKey
        self.entities = entities.enumerated().map { (entityIndex, entity) in
            let kinds = entity.attributes.map { Kind.attribute($0.type) }
                + entity.relationships.map { r -> Kind in
                    let destination = indexes[r.destination] ?? -1
                    return r.isToMany ? .toMany(destination: destination) : .toOne(destination: destination)
                }
            return EntityLayout(name: entity.name, attributeCount: entity.attributes.count, kinds: kinds,
                                propertyNames: entity.propertyNames, uniqueAttribute: entity.attributes.firstIndex(where: \.isUnique),
                                orderedIndexAttributes: entity.attributes.indices.filter { entity.attributes[$0].isIndexed || entity.attributes[$0].isUnique },
                                inverseIndexes: entity.attributes.map { _ in -1 } + entity.relationships.map { r in
                                    indexes[r.destination].flatMap { entities[$0].propertyIndex(named: r.inverse) } ?? -1
                                },
                                plainChecks: entity.attributes.map(PlainCheck.init),
                                followsTargets: entity.attributes.map { _ in false } + entity.relationships.enumerated().map { (offset, r) in
                                    let index = entity.attributes.count + offset
                                    guard let destination = indexes[r.destination], let inverse = entities[destination].propertyIndex(named: r.inverse),
                                        inverse >= entities[destination].attributes.count
                                    else { return true }
                                    let inverseIsToMany = entities[destination].relationships[inverse - entities[destination].attributes.count].isToMany
                                    if r.isToMany != inverseIsToMany { return r.isToMany }
                                    return (entityIndex, index) <= (destination, inverse)
                                })
        }
    }
}
