import Foundation

/// A validated data model: named, versioned, a list of entities.
///
/// A schema is checked when it is created: every relationship's destination and inverse
/// must exist and point back, names must be unique identifiers, defaults and limits must fit
/// their attribute's type. A schema that is wrong throws a ``SchemaError`` naming the entity
/// and property.
///
/// ```swift
/// let schema = try Schema("Songbook", version: 1, entities: [
///     Entity("Artist",
///            attributes: [Attribute("artistID", .int, unique: true),
///                         Attribute("name", .string, optional: true, indexed: true)],
///            relationships: [Relationship("albums", to: "Album", inverse: "artist",
///                                         toMany: true, deleteRule: .cascade)],
///            defaultSort: [SortKey("name")]),
///     Entity("Album",
///            attributes: [Attribute("albumID", .int, unique: true), Attribute("title", .string)],
///            relationships: [Relationship("artist", to: "Artist", inverse: "albums")]),
/// ])
/// print(schema.fingerprint)   // the same for the same model written as a model file
/// ```
public struct Schema: Sendable, Hashable {
    /// The model's name.
    public let name: String
    /// The model's version, for migrations.
    public let version: Int
    /// The entities, in declared order (their storage indexes).
    public let entities: [Entity]
    /// A digest of everything that affects how objects are stored and checked.
    ///
    /// Two schemas have the same fingerprint when their entities, properties (in order),
    /// types, options, defaults, limits and default sorts are equal. The schema's name,
    /// version and `renamedFrom` hints do not count: they describe history, not shape.
    public let fingerprint: SchemaFingerprint

    /// The schema flattened for encoding, decoding and checking.
    let layout: SchemaLayout

    /// Creates and validates a schema.
    /// - Throws: ``SchemaError`` naming the entity and property at fault.
    public init(_ name: String, version: Int = 1, entities: [Entity]) throws(SchemaError) {
        self.name = name
        self.version = version
        // Defaults and limits are kept as the model file writes them — dates to the
        // millisecond, every NaN as the one NaN it reads back — so that a schema written out
        // and read back (as every store does when it opens) has the same values and the
        // same fingerprint.
        let entities = entities.map { entity in
            var entity = entity
            entity.attributes = entity.attributes.map { attribute in
                var attribute = attribute
                attribute.defaultValue = attribute.defaultValue.map(Self.asWritten)
                attribute.minimum = attribute.minimum.map(Self.asWritten)
                attribute.maximum = attribute.maximum.map(Self.asWritten)
                return attribute
            }
            return entity
        }
        self.entities = entities
        var names = Set<String>()
        for entity in entities where !names.insert(entity.name).inserted {
            throw SchemaError(schema: name, entity: entity.name, "the entity name is used twice; rename one")
        }
        self.layout = SchemaLayout(entities)
        self.fingerprint = SchemaFingerprint(of: entities)
        try validate()
    }

    /// The storage index of the entity with this name, if any.
    public func entityIndex(named name: String) -> Int? { layout.entityIndex(named: name) }

    /// The storage index of an ID's entity (its interned name compared by identity).
    func entityIndex(of id: ObjectID) -> Int? { layout.entityIndex(of: id) }

    /// The entity with this name, if any.
    public func entity(named name: String) -> Entity? {
        layout.entityIndex(named: name).map { entities[$0] }
    }

    /// A default or limit as the model file keeps it: a date to the millisecond, a NaN as
    /// the NaN that `"NaN"` reads back as; other values as they are.
    ///
    /// Keeping a kept value changes nothing, at every magnitude (the model file then writes
    /// it as text that reads back as exactly it). A date's nearest millisecond is found on
    /// its own double (seconds from 2001), whose whole seconds and fraction apart are exact;
    /// within about 35,000 years of 2001 the date kept is the one the millisecond's text reads
    /// as (so the file writes three fractional digits at most), which lies within a quarter of
    /// a millisecond of it. Further out a double is coarser than that, and the date kept is
    /// the millisecond's nearest double instead: rounding it again finds the same one.
    /// (Scaling seconds from 1970 by 1000 and back at every magnitude moved a date kept
    /// beyond about year 140,000 when it was kept again, and a store whose schema held one
    /// could not be opened.)
    static func asWritten(_ value: Value) -> Value {
        switch value {
        case .date(let date) where ISO8601.canRepresent(date):
            let seconds = date.timeIntervalSinceReferenceDate
            let whole = seconds.rounded(.down)
            let milliseconds = ((seconds - whole) * 1000).rounded()
            guard abs(whole) < 0x1p40 else { return .date(Date(timeIntervalSinceReferenceDate: whole + milliseconds / 1000)) }
            let total = (Int64(whole) + ISO8601.referenceDateSeconds) * 1000 + Int64(milliseconds)
            return .date(ISO8601.date(milliseconds: total))
        case .double(let number) where number.isNaN:
            return .double(.nan)
        default:
            return value
        }
    }

    /// Equal schemas have the same fingerprint too (values that compare equal but encode
    /// differently, such as 0.0 and -0.0 defaults, make different schemas), as hashing
    /// uses it.
    public static func == (lhs: Schema, rhs: Schema) -> Bool {
        lhs.name == rhs.name && lhs.version == rhs.version && lhs.fingerprint == rhs.fingerprint && lhs.entities == rhs.entities
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(version)
        hasher.combine(fingerprint)
    }
}

// MARK: - Validation

extension Schema {
    private func validate() throws(SchemaError) {
        guard !name.isEmpty else { throw SchemaError("the schema has no name; give it one") }
        for entity in entities { try validate(entity) }
    }

    private func fail(_ entity: Entity, _ property: String? = nil, _ message: String) -> SchemaError {
        SchemaError(schema: name, entity: entity.name, property: property, message)
    }

    private func validate(_ entity: Entity) throws(SchemaError) {
        guard Schema.isIdentifier(entity.name) else {
            throw fail(entity, nil, "an entity name must be a letter or _ followed by letters, digits or _")
        }
        var seen = Set<String>()
        for property in entity.propertyNames {
            guard Schema.isIdentifier(property) else {
                throw fail(entity, property, "a property name must be a letter or _ followed by letters, digits or _")
            }
            guard seen.insert(property).inserted else {
                throw fail(entity, property, "the name is used by two properties of the entity; rename one")
            }
        }
        let uniques = entity.attributes.filter(\.isUnique)
        if uniques.count > 1 {
            throw fail(entity, uniques[1].name,
                       "only one unique attribute per entity is supported; \"\(uniques[0].name)\" is already unique")
        }
        for attribute in entity.attributes { try validate(attribute, of: entity) }
        for relationship in entity.relationships { try validate(relationship, of: entity) }
        for sortKey in entity.defaultSort {
            try validateKeyPath(sortKey.key, from: entity, purpose: "default sort key")
        }
    }

    private func validate(_ attribute: Attribute, of entity: Entity) throws(SchemaError) {
        let type = attribute.type
        if let value = attribute.defaultValue {
            if value.isNull {
                guard attribute.isOptional else {
                    throw fail(entity, attribute.name, "the default is nil but the attribute is not optional")
                }
            } else if value.attributeType != type {
                throw fail(entity, attribute.name, "the default \(value) is not a \(type.rawValue)")
            }
        }
        for (label, bound) in [("min", attribute.minimum), ("max", attribute.maximum)] {
            guard let bound else { continue }
            guard [.int, .double, .date].contains(type) else {
                throw fail(entity, attribute.name, "\(label) applies only to int, double and date attributes, not \(type.rawValue)")
            }
            guard bound.attributeType == type else {
                throw fail(entity, attribute.name, "\(label) \(bound) is not a \(type.rawValue)")
            }
            guard !bound.isNaN else { throw fail(entity, attribute.name, "\(label) is NaN, which is not a number: give a number or no \(label)") }
            if case .date(let date) = bound, !ISO8601.canRepresent(date) {
                throw fail(entity, attribute.name, "\(label): \(ISO8601.unrepresentable(date))")
            }
        }
        if let lower = attribute.minimum, let upper = attribute.maximum, Value.compare(lower, upper) == .orderedDescending {
            throw fail(entity, attribute.name, "min \(lower) is greater than max \(upper)")
        }
        for (label, length) in [("minLength", attribute.minLength), ("maxLength", attribute.maxLength)] {
            guard let length else { continue }
            guard type == .string || type == .data else {
                throw fail(entity, attribute.name, "\(label) applies only to string and data attributes, not \(type.rawValue)")
            }
            guard length >= 0 else { throw fail(entity, attribute.name, "\(label) \(length) is negative") }
        }
        if let lower = attribute.minLength, let upper = attribute.maxLength, lower > upper {
            throw fail(entity, attribute.name, "minLength \(lower) is greater than maxLength \(upper)")
        }
        if let value = attribute.defaultValue, !value.isNull,
            let problem = AttributeCheck.problem(with: value, for: attribute)
        {
            throw fail(entity, attribute.name, "the default \(value) is invalid: \(problem)")
        }
        // A store keeps its schema as model-file text and checks it against its fingerprint
        // when it opens: a value that read back as another would leave a store that cannot
        // be opened again, so such a schema is refused before any store is made with it.
        for (label, value) in [("default", attribute.defaultValue), ("min", attribute.minimum), ("max", attribute.maximum)] {
            guard let value, !value.isNull else { continue }
            let back = (try? JSON.parse(value.json.text)).flatMap { try? Value.fromJSON($0, as: type).get() }
            if let back, Self.sameBits(value, back) { continue }
            throw fail(entity, attribute.name, "the \(label) \(value) does not read back as itself from the model file (it reads as \(back.map { "\($0)" } ?? "nothing")), so a store could not check its schema when it opens: give another \(label)")
        }
    }

    /// Whether two values are the same to the bit (`-0.0` is not `0.0`, one NaN not another).
    private static func sameBits(_ a: Value, _ b: Value) -> Bool {
        switch (a, b) {
        case (.double(let x), .double(let y)): x.bitPattern == y.bitPattern
        case (.date(let x), .date(let y)): x.timeIntervalSinceReferenceDate.bitPattern == y.timeIntervalSinceReferenceDate.bitPattern
        default: a == b
        }
    }

    private func validate(_ relationship: Relationship, of entity: Entity) throws(SchemaError) {
        guard let destination = self.entity(named: relationship.destination) else {
            throw fail(entity, relationship.name,
                       "the destination entity \"\(relationship.destination)\" does not exist; entities are \(entities.map(\.name))")
        }
        guard let inverse = destination.relationships.first(where: { $0.name == relationship.inverse }) else {
            throw fail(entity, relationship.name,
                       "the inverse \"\(relationship.inverse)\" is not a relationship of \"\(destination.name)\"; its relationships are \(destination.relationships.map(\.name))")
        }
        guard inverse.destination == entity.name, inverse.inverse == relationship.name else {
            throw fail(entity, relationship.name,
                       "the inverse \"\(destination.name).\(inverse.name)\" points back to \"\(inverse.destination).\(inverse.inverse)\", not \"\(entity.name).\(relationship.name)\"")
        }
    }

    /// Checks a dotted key path: every step but the last a to-one relationship, the last an attribute.
    func validateKeyPath(_ keyPath: String, from entity: Entity, purpose: String) throws(SchemaError) {
        var current = entity
        let components = keyPath.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        for (i, component) in components.enumerated() {
            let isLast = i == components.count - 1
            if isLast {
                guard current.attributes.contains(where: { $0.name == component }) else {
                    throw fail(entity, keyPath,
                               "\(purpose) \"\(keyPath)\": \"\(component)\" is not an attribute of \"\(current.name)\"; its attributes are \(current.attributes.map(\.name))")
                }
            } else {
                guard let step = current.relationships.first(where: { $0.name == component }), !step.isToMany,
                    let next = self.entity(named: step.destination)
                else {
                    throw fail(entity, keyPath,
                               "\(purpose) \"\(keyPath)\": \"\(component)\" is not a to-one relationship of \"\(current.name)\"")
                }
                current = next
            }
        }
    }

    /// Whether a name is a letter or `_` followed by letters, digits or `_`.
    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first else { return false }
        func isLetter(_ c: Unicode.Scalar) -> Bool { c == "_" || c.properties.isAlphabetic }
        return isLetter(first) && name.unicodeScalars.allSatisfy { isLetter($0) || ("0"..."9").contains($0) }
    }
}
