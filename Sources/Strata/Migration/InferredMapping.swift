/// How the objects of one schema become objects of the next when only the two schemas are
/// known: which entity and property each destination value comes from, and what a new
/// property starts with.
///
/// Entities, attributes and relationships are matched by their `renamedFrom` name when
/// they declare one that applies (see ``renames(_:_:_:)``), otherwise by name. Every
/// difference found is listed in ``changes``; the ones an inferred step cannot carry out
/// have `isInferable == false`.
struct InferredMapping: Sendable {
    /// Where one destination value comes from.
    enum PropertySource: Sendable, Hashable {
        /// The source property at this storage index.
        case copy(Int)
        /// The source property at this index, with `nil` replaced by a default (optional → required).
        case copyOrDefault(Int, Value)
        /// A value every object gets (a new property's default, `nil` or an empty list).
        case constant(Value)
    }

    struct EntityMapping: Sendable {
        /// The source entity's storage index, or `nil` for an entity the step adds.
        var source: Int?
        /// Per destination property (storage order): where its value comes from.
        var properties: [PropertySource]
    }

    let source: Schema
    let destination: Schema
    /// Per destination entity (storage order).
    private(set) var entities: [EntityMapping] = []
    /// Per source entity: the destination entity it becomes, or `nil` when removed.
    private(set) var destinationOfSource: [Int?]
    /// Every difference, in schema order.
    private(set) var changes: [SchemaChange] = []

    /// The differences an inferred step cannot carry out.
    var problems: [SchemaChange] { changes.filter { !$0.isInferable } }

    init(from source: Schema, to destination: Schema) {
        self.source = source
        self.destination = destination
        destinationOfSource = source.entities.map { _ in nil }
        let sources = Self.sources(destination.entities.map { ($0.name, $0.renamedFrom) }, source.entities.map { ($0.name, $0.renamedFrom) }) {
            source.entityIndex(named: $0)
        }
        for (index, sourceIndex) in sources.enumerated() {
            if let sourceIndex { destinationOfSource[sourceIndex] = index }
        }
        let twins = Self.twins(sources)
        for (index, (entity, sourceIndex)) in zip(destination.entities, sources).enumerated() {
            guard let sourceIndex else {
                changes.append(SchemaChange(.addedEntity, entity: entity.name, "added" + unmatchedHint(entity.renamedFrom, found: source.entityIndex(named:), in: "no entity")))
                entities.append(EntityMapping(source: nil, properties: newValues(entity)))
                continue
            }
            let old = source.entities[sourceIndex]
            if let twin = twins[index] {
                changes.append(SchemaChange(.renamedEntity, entity: entity.name,
                                            "renamed from \"\(old.name)\", which \(destination.entities[twin].name) is renamed from too: an inferred step does not make two objects of one",
                                            inferable: false))
            } else if old.name != entity.name {
                changes.append(SchemaChange(.renamedEntity, entity: entity.name, "renamed from \"\(old.name)\""))
            }
            entities.append(EntityMapping(source: sourceIndex, properties: mapProperties(of: entity, from: old)))
        }
        for (index, entity) in source.entities.enumerated() where destinationOfSource[index] == nil {
            changes.append(SchemaChange(.removedEntity, entity: entity.name, "removed: its objects are dropped"))
        }
    }

    /// Per destination entity or property (`name`, `renamedFrom`): the source one it comes
    /// from (`lookup` finds a source by name). A `renamedFrom` that ``renames(_:_:_:)`` applies
    /// wins; otherwise the same name, unless an applied rename takes that source elsewhere —
    /// a new entity or property taking a renamed one's old name starts empty.
    private static func sources(
        _ items: [(name: String, renamedFrom: String?)], _ older: [(name: String, renamedFrom: String?)], _ lookup: (String) -> Int?
    ) -> [Int?] {
        let renamed = renames(items, older, lookup)
        let claimed = Set(renamed.compactMap { $0 })
        return zip(items, renamed).map { item, renamed in
            if let renamed { return renamed }
            guard let found = lookup(item.name), !claimed.contains(found) else { return nil }
            return found
        }
    }

    /// Per item: the source its `renamedFrom` names, when that hint applies. It applies when
    /// the source has the old name and either lacks the item's own name, or another item
    /// renames from the own name (names swapped or rotated), or the old name is not kept
    /// (nothing of the new version has it: the old `title` is removed and `name` renamed to
    /// `title` — followed by name instead, `title` kept its old values and `name`'s were
    /// dropped). A hint whose item the source still has under its own name, whose own name
    /// nothing renames from, and whose old name the new version has again, is left over from
    /// the version that made the rename — a schema copied forward keeps its `renamedFrom` —
    /// and following it would move values between two properties (or entities) that both
    /// exist: the item matches by name instead. So is a hint the older version's item of the
    /// same name declares already (`older`: the older version's names and hints): that
    /// version made the rename, and a swap or rotation copied forward would otherwise be
    /// made again, moving every value back.
    private static func renames(
        _ items: [(name: String, renamedFrom: String?)], _ older: [(name: String, renamedFrom: String?)], _ lookup: (String) -> Int?
    ) -> [Int?] {
        let renamedFrom = Set(items.compactMap(\.renamedFrom))
        let names = Set(items.map(\.name))
        var olderHints: [String: String] = [:]
        for item in older { if let hint = item.renamedFrom { olderHints[item.name] = hint } }
        return items.map { item in
            guard let old = item.renamedFrom, let found = lookup(old), olderHints[item.name] != old else { return nil }
            return lookup(item.name) == nil || renamedFrom.contains(item.name) || !names.contains(old) ? found : nil
        }
    }

    /// Per item of ``sources(_:_:)``'s result: the earlier item that comes from the same
    /// source, when two `renamedFrom` hints name one source (`nil` for the first).
    private static func twins(_ sources: [Int?]) -> [Int?] {
        var first: [Int: Int] = [:]
        return sources.enumerated().map { item, source in
            guard let source else { return nil }
            if let earlier = first[source] { return earlier }
            first[source] = item
            return nil
        }
    }

    /// Per property of `entity`, in storage order: the property of `old` its values come
    /// from (matched as an inferred step matches them), or `nil` for a new one. `old` may be
    /// another entity than the one `entity` was (the source of a custom step's object).
    static func propertySources(of entity: Entity, from old: Entity) -> [Int?] {
        sources(entity.attributes.map { ($0.name, $0.renamedFrom) } + entity.relationships.map { ($0.name, $0.renamedFrom) },
                old.attributes.map { ($0.name, $0.renamedFrom) } + old.relationships.map { ($0.name, $0.renamedFrom) }) {
            old.propertyIndex(named: $0)
        }
    }

    private func newValues(_ entity: Entity) -> [PropertySource] {
        entity.newObjectValues.map { .constant($0) }
    }

    private mutating func mapProperties(of entity: Entity, from old: Entity) -> [PropertySource] {
        var result: [PropertySource] = []
        let sources = Self.propertySources(of: entity, from: old)
        let used = Set(sources.compactMap { $0 })
        let twins = Self.twins(sources).map { $0.map { entity.property(at: $0).name } }
        for (a, attribute) in entity.attributes.enumerated() {
            result.append(mapAttribute(attribute, of: entity, from: old, at: sources[a], twin: twins[a]))
        }
        for (r, relationship) in entity.relationships.enumerated() {
            let p = entity.attributes.count + r
            result.append(mapRelationship(relationship, of: entity, from: old, at: sources[p], twin: twins[p]))
        }
        for index in 0..<old.propertyCount where !used.contains(index) {
            switch old.property(at: index) {
            case .attribute(let a):
                changes.append(SchemaChange(.removedAttribute, entity: entity.name, key: a.name, "removed: its values are dropped"))
            case .relationship(let r):
                changes.append(SchemaChange(.removedRelationship, entity: entity.name, key: r.name, "removed"))
            }
        }
        return result
    }

    /// What to add to an added entity's or property's change when its `renamedFrom` names
    /// nothing of the older schema (a misspelt old name would otherwise drop the old values
    /// and start the new ones empty without a word): `found` looks the name up there,
    /// `what` says what it names none of.
    private func unmatchedHint(_ hint: String?, found: (String) -> Int?, in what: String) -> String {
        guard let hint, found(hint) == nil else { return "" }
        return "; its renamedFrom \"\(hint)\" names \(what) in \(source.name) version \(source.version), so nothing is carried over (check the old name)"
    }

    /// `twin`: an earlier property that renames from the same one, if any.
    private mutating func mapAttribute(
        _ attribute: Attribute, of entity: Entity, from old: Entity, at index: Int?, twin: String?
    ) -> PropertySource {
        let name = attribute.name
        guard let index else {
            let hint = unmatchedHint(attribute.renamedFrom, found: old.propertyIndex(named:), in: "no property of \(old.name)")
            if let value = attribute.defaultValue {
                changes.append(SchemaChange(.addedAttribute, entity: entity.name, key: name, "added (default \(value))" + hint))
                return .constant(value)
            }
            if attribute.isOptional {
                changes.append(SchemaChange(.addedAttribute, entity: entity.name, key: name, "added (optional, nil)" + hint))
            } else {
                changes.append(SchemaChange(.addedAttribute, entity: entity.name, key: name,
                                            "added as required without a default, so existing objects have no value for it; give it a default or make it optional" + hint,
                                            inferable: false))
            }
            return .constant(.null)
        }
        guard case .attribute(let previous) = old.property(at: index) else {
            changes.append(SchemaChange(.shapeChanged, entity: entity.name, key: name,
                                        "was a relationship of \(old.name), is now an attribute", inferable: false))
            return .constant(attribute.defaultValue ?? .null)
        }
        if let twin {
            changes.append(SchemaChange(.renamedAttribute, entity: entity.name, key: name,
                                        "renamed from \"\(previous.name)\", which \(twin) is renamed from too: an inferred step does not copy one attribute into two",
                                        inferable: false))
        } else if previous.name != name {
            changes.append(SchemaChange(.renamedAttribute, entity: entity.name, key: name, "renamed from \"\(previous.name)\""))
        }
        guard previous.type == attribute.type else {
            changes.append(SchemaChange(.typeChanged, entity: entity.name, key: name,
                                        "type changed from \(previous.type.rawValue) to \(attribute.type.rawValue)", inferable: false))
            return .constant(attribute.defaultValue ?? .null)
        }
        var source = PropertySource.copy(index)
        if previous.isOptional && !attribute.isOptional {
            if let value = attribute.defaultValue {
                changes.append(SchemaChange(.madeRequired, entity: entity.name, key: name, "made required: nil becomes the default \(value)"))
                source = .copyOrDefault(index, value)
            } else {
                changes.append(SchemaChange(.madeRequired, entity: entity.name, key: name,
                                            "made required without a default, so objects holding nil have no value; give it a default",
                                            inferable: false))
            }
        } else if !previous.isOptional && attribute.isOptional {
            changes.append(SchemaChange(.madeOptional, entity: entity.name, key: name, "made optional"))
        }
        var options: [String] = []
        if previous.isUnique != attribute.isUnique { options.append(attribute.isUnique ? "made unique" : "no longer unique") }
        if previous.isIndexed != attribute.isIndexed { options.append(attribute.isIndexed ? "indexed" : "no longer indexed") }
        if previous.minimum != attribute.minimum || previous.maximum != attribute.maximum
            || previous.minLength != attribute.minLength || previous.maxLength != attribute.maxLength
        {
            options.append("limits changed")
        }
        if previous.defaultValue != attribute.defaultValue && !(previous.isOptional && !attribute.isOptional) {
            options.append("default changed to \(attribute.defaultValue.map(\.description) ?? "none")")
        }
        if !options.isEmpty {
            changes.append(SchemaChange(.optionsChanged, entity: entity.name, key: name,
                                        options.joined(separator: ", ") + " (checked by validation)"))
        }
        return source
    }

    private mutating func mapRelationship(
        _ relationship: Relationship, of entity: Entity, from old: Entity, at index: Int?, twin: String?
    ) -> PropertySource {
        let name = relationship.name
        let empty: Value = relationship.isToMany ? .objects([]) : .null
        guard let index else {
            let hint = unmatchedHint(relationship.renamedFrom, found: old.propertyIndex(named:), in: "no property of \(old.name)")
            if relationship.isOptional {
                changes.append(SchemaChange(.addedRelationship, entity: entity.name, key: name, "added (empty)" + hint))
            } else {
                changes.append(SchemaChange(.addedRelationship, entity: entity.name, key: name,
                                            "added as required, but nothing says which \(relationship.destination) each object refers to" + hint,
                                            inferable: false))
            }
            return .constant(empty)
        }
        guard case .relationship(let previous) = old.property(at: index) else {
            changes.append(SchemaChange(.shapeChanged, entity: entity.name, key: name,
                                        "was an attribute of \(old.name), is now a relationship", inferable: false))
            return .constant(empty)
        }
        if let twin {
            changes.append(SchemaChange(.renamedRelationship, entity: entity.name, key: name,
                                        "renamed from \"\(previous.name)\", which \(twin) is renamed from too: an inferred step does not copy one relationship into two",
                                        inferable: false))
            return .constant(empty)
        } else if previous.name != name {
            changes.append(SchemaChange(.renamedRelationship, entity: entity.name, key: name, "renamed from \"\(previous.name)\""))
        }
        let previousDestination = source.entityIndex(named: previous.destination)!
        guard let target = destination.entityIndex(named: relationship.destination),
            destinationOfSource[previousDestination] == target
        else {
            changes.append(SchemaChange(.shapeChanged, entity: entity.name, key: name,
                                        "destination changed from \(previous.destination) to \(relationship.destination)", inferable: false))
            return .constant(empty)
        }
        guard previous.isToMany == relationship.isToMany else {
            changes.append(SchemaChange(.shapeChanged, entity: entity.name, key: name,
                                        relationship.isToMany ? "changed from to-one to to-many" : "changed from to-many to to-one",
                                        inferable: false))
            return .constant(empty)
        }
        // Each side keeps its contents, so the inverse must be the old inverse (renamed or
        // not); paired with another relationship, the two sides would disagree.
        let oldTarget = source.entities[previousDestination], newTarget = destination.entities[target]
        let inverseSource = Self.propertySources(of: newTarget, from: oldTarget)[newTarget.propertyIndex(named: relationship.inverse)!]
        guard inverseSource == oldTarget.propertyIndex(named: previous.inverse) else {
            changes.append(SchemaChange(.shapeChanged, entity: entity.name, key: name,
                                        "its inverse changed from \(previous.destination).\(previous.inverse) to \(relationship.destination).\(relationship.inverse), so each side's objects would no longer match the other's; a custom step must set it (a link's setValue keeps inverses in step)",
                                        inferable: false))
            return .constant(empty)
        }
        // The other side turned from to-many to to-one: these lists may give an object to two
        // owners, which it cannot have now. They are not carried; the step that sets the other
        // side (it changed shape, so only a custom one can) fills them through it.
        let oldInverse = oldTarget.relationships.first { $0.name == previous.inverse }
        let newInverse = newTarget.relationships.first { $0.name == relationship.inverse }
        if relationship.isToMany, oldInverse?.isToMany == true, newInverse?.isToMany == false {
            changes.append(SchemaChange(.shapeChanged, entity: entity.name, key: name,
                                        "emptied: its inverse \(relationship.destination).\(relationship.inverse) changed from to-many to to-one, so each object may have one owner only; the step that sets \(relationship.destination).\(relationship.inverse) fills it"))
            return .constant(empty)
        }
        if previous.isOptional && !relationship.isOptional {
            changes.append(SchemaChange(.madeRequired, entity: entity.name, key: name, "made required (empty ones fail validation)"))
        } else if !previous.isOptional && relationship.isOptional {
            changes.append(SchemaChange(.madeOptional, entity: entity.name, key: name, "made optional"))
        }
        if previous.deleteRule != relationship.deleteRule {
            changes.append(SchemaChange(.optionsChanged, entity: entity.name, key: name,
                                        "delete rule changed from \(previous.deleteRule.rawValue) to \(relationship.deleteRule.rawValue)"))
        }
        return .copy(index)
    }

    /// Source entity name → destination entity name, for renamed entities; `nil` when none is.
    var renamedEntities: [String: String]? {
        var renames: [String: String] = [:]
        for (s, d) in destinationOfSource.enumerated() {
            if let d, source.entities[s].name != destination.entities[d].name {
                renames[source.entities[s].name] = destination.entities[d].name
            }
        }
        return renames.isEmpty ? nil : renames
    }

    /// What ``destinationValues(of:entity:renames:relationships:)`` does with relationships.
    enum RelationshipValues {
        /// Keep object numbers, with renamed entities' names changed.
        case renamed
        /// Copy the source's values as they are.
        case asIs
        /// Leave them empty (a custom step fills them in its second pass).
        case empty
    }

    /// The destination values of a source row of the destination entity `d`'s source entity.
    func destinationValues(
        of row: [Value], entity d: Int, renames: [String: String]?, relationships: RelationshipValues = .renamed
    ) -> [Value] {
        let properties = entities[d].properties
        let attributeCount = destination.layout.entities[d].attributeCount
        var values = [Value]()
        values.reserveCapacity(properties.count)
        for (p, property) in properties.enumerated() {
            switch property {
            case .copy(let i):
                let value = row[i]
                guard p >= attributeCount else {
                    values.append(value)
                    continue
                }
                switch relationships {
                case .renamed: values.append(renames.map { Self.rename(value, $0) } ?? value)
                case .asIs: values.append(value)
                case .empty: values.append(destination.entities[d].relationships[p - attributeCount].isToMany ? .objects([]) : .null)
                }
            case .copyOrDefault(let i, let fallback): values.append(row[i].isNull ? fallback : row[i])
            case .constant(let value): values.append(value)
            }
        }
        return values
    }

    private static func rename(_ value: Value, _ renames: [String: String]) -> Value {
        // An ID of an entity that keeps its name stays as it is (no name looked up).
        func renamed(_ id: ObjectID) -> ObjectID {
            guard let name = renames[id.entity] else { return id }
            return ObjectID(entity: name, number: id.number)
        }
        return switch value {
        case .object(let id): .object(renamed(id))
        case .objects(let ids): .objects(ids.map(renamed))
        default: value
        }
    }

    /// The change that concerns `key` of `entity`, if any (for naming the cause of a failure):
    /// one validation checks (limits, uniqueness, made required, a new type, ...) before a
    /// rename, which is listed first but breaks nothing; given the validation `problem`, the
    /// change of its kind — a repeated value is the uniqueness's doing, a missing one the
    /// requirement's, when a key was made both (the first was blamed for either).
    func change(entity: String, key: String?, problem: String? = nil) -> SchemaChange? {
        let renames: Set<SchemaChange.Kind> = [.renamedEntity, .renamedAttribute, .renamedRelationship]
        let forKey = changes.filter { $0.entity == entity && $0.key == key }
        if let problem, let matching = forKey.first(where: { Self.explains($0, problem) }) { return matching }
        return forKey.first { !renames.contains($0.kind) || !$0.isInferable } ?? forKey.first
            ?? changes.first { $0.entity == entity && $0.key == nil }
    }

    /// Whether `change` is what a validation problem with this message checks.
    private static func explains(_ change: SchemaChange, _ problem: String) -> Bool {
        if problem.hasPrefix("unique value") { return change.kind == .optionsChanged && change.detail.contains("made unique") }
        if problem.contains("required") { return change.kind == .madeRequired }
        return false
    }
}
