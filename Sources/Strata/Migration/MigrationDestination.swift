/// The objects a migration step is building, as custom transforms and links see them.
///
/// Objects are created with ``insert(_:values:)``, which starts from exactly the values a
/// context's insert starts from — the new schema's defaults, `nil`, empty lists — and then
/// runs the model class's `awakeFromInsert()` when the plan was given model classes (see
/// ``MigrationPlan/init(schemas:steps:modelClasses:)``), so code-set defaults are never
/// skipped by a migration. Values are read and changed by key; setting a relationship keeps
/// its inverse in step, as a context does.
///
/// Not `Sendable`: it lives for one step, on the migration's own thread.
public final class MigrationDestination {
    /// The step being run, as errors name it.
    let stepName: String
    let step: MigrationStep
    /// The objects built so far (the store's own structure; validated when the step ends).
    var generation: Generation
    /// The older store's objects.
    let reader: MigrationSourceReader
    /// Per destination entity: the next object number to hand out.
    private var nextNumber: [UInt64]
    /// For transformed source objects: the destination objects made from each.
    private(set) var madeFrom: [ObjectID: [ObjectID]] = [:]
    /// For destination objects a transform made: the source object.
    private(set) var origin: [ObjectID: ObjectID] = [:]
    /// The source object whose transform is running.
    var current: MigrationSourceObject?
    /// Objects inserted by transforms, per destination entity, that still need their
    /// model class's `awakeFromInsert` values (applied in batches).
    var awaitingAwake: [Int: [ObjectID]] = [:]
    /// Per destination entity: keys a transform set explicitly (so `awakeFromInsert` values
    /// never overwrite them).
    var explicitKeys: [ObjectID: [Int]] = [:]
    /// Destination entities with a model class whose `awakeFromInsert` must run.
    let awakenedEntities: Set<Int>
    /// Per destination entity: a new object's values (computed once).
    private let newRows: [[Value]]
    /// Per destination entity, per storage index: what setting a relationship needs.
    private let relationshipInfo: [[RelationshipInfo?]]

    struct RelationshipInfo {
        let name: String
        let isToMany: Bool
        let destinationName: String
        let destination: Int
        let inverse: Int
        let inverseIsToMany: Bool
    }

    init(step: MigrationStep, source: Generation, awakenedEntities: Set<Int>) {
        self.step = step
        self.stepName = step.name
        self.reader = MigrationSourceReader(source)
        self.generation = Generation(schema: step.destination)
        self.awakenedEntities = awakenedEntities
        // New numbers start above every number the matching source entity ever used, so an
        // object keeping its source number never meets a new one.
        var next = step.destination.entities.map { _ in UInt64(1) }
        for (index, mapping) in step.mapping.entities.enumerated() {
            if let s = mapping.source { next[index] = source.highestNumbers[s] + 1 }
        }
        nextNumber = next
        let schema = step.destination
        newRows = schema.entities.map(\.newObjectValues)
        relationshipInfo = schema.entities.enumerated().map { entityIndex, entity in
            (0..<entity.propertyCount).map { index -> RelationshipInfo? in
                guard case .relationship(let r) = entity.property(at: index),
                    let link = schema.layout.relationship(entity: entityIndex, property: index)
                else { return nil }
                return RelationshipInfo(name: r.name, isToMany: link.isToMany, destinationName: r.destination, destination: link.destination,
                                        inverse: link.inverse, inverseIsToMany: link.inverseIsToMany)
            }
        }
    }

    /// The schema the objects are built for.
    public var schema: Schema { step.destination }

    // MARK: - Creating

    /// Creates an object of the new schema and returns its ID.
    ///
    /// The first object of the source object's own (new) entity that a transform creates
    /// keeps the source object's number, so IDs stay stable across a split; other objects
    /// get new numbers. `values` may set attributes and relationships (to objects that
    /// already exist in the destination; inverses follow).
    /// - Throws: ``MigrationError/Code/transformFailed`` naming the entity and key when the
    ///   entity or a key does not exist, or a related object is missing.
    @discardableResult
    public func insert(_ entity: String, values: [String: Value] = [:]) throws(MigrationError) -> ObjectID {
        guard let index = schema.entityIndex(named: entity) else {
            throw failure("the new schema has no entity \"\(entity)\"; its entities are \(schema.entities.map(\.name))", entity: entity)
        }
        let layout = schema.layout.entities[index]
        var number: UInt64
        if let current, step.mapping.destinationOfSource[current.entityIndex] == index,
            !(madeFrom[current.id]?.contains { $0.entity == layout.name } ?? false)
        {
            number = current.id.number
        } else {
            number = nextNumber[index]
            nextNumber[index] += 1
        }
        if number >= nextNumber[index] { nextNumber[index] = number + 1 }
        let id = ObjectID(entity: layout.name, number: number)
        var row = newRows[index]
        var relationships: [(Int, Value)] = []
        var explicit: [Int] = []
        for (key, value) in values {
            guard let property = layout.propertyNames.firstIndex(of: key) else {
                throw failure("the new entity \(entity) has no key \"\(key)\"; its keys are \(layout.propertyNames)", entity: entity, key: key)
            }
            if property < layout.attributeCount {
                row[property] = value
                explicit.append(property)
            } else {
                relationships.append((property, value))
            }
        }
        generation.insertRow(id, entity: index, values: row, version: 0)
        if let current {
            madeFrom[current.id, default: []].append(id)
            origin[id] = current.id
        }
        if awakenedEntities.contains(index) {
            awaitingAwake[index, default: []].append(id)
            if !explicit.isEmpty { explicitKeys[id] = explicit }
        }
        for (property, value) in relationships {
            try setRelationship(value, at: property, of: id, entity: index)
        }
        return id
    }

    // MARK: - Reading

    /// The value of a key of a destination object.
    /// - Throws: ``MigrationError/Code/transformFailed`` when the object or key does not exist.
    public func value(forKey key: String, of id: ObjectID) throws(MigrationError) -> Value {
        let (entity, property) = try locate(id, key)
        return generation.tables[entity][id.number]!.values[property]
    }

    /// The destination object of an entity whose unique attribute has this value.
    public func object(_ entity: String, uniqueValue: Value) -> ObjectID? {
        generation.object(of: entity, uniqueValue: uniqueValue)?.id
    }

    /// The destination objects a transform made from a source object, in the order made.
    public func objects(madeFrom source: ObjectID) -> [ObjectID] { madeFrom[source] ?? [] }

    /// The source object a destination object was made from: by a transform, or carried over.
    public func sourceObject(of id: ObjectID) -> MigrationSourceObject? {
        if let source = origin[id] { return reader.object(source) }
        guard let entity = schema.entityIndex(named: id.entity), let s = step.mapping.entities[entity].source,
            step.transforms[step.source.entities[s].name] == nil
        else { return nil }
        return reader.object(ObjectID(entity: step.source.entities[s].name, number: id.number))
    }

    /// Every destination object of an entity, in number order.
    public func objects(of entity: String) -> [ObjectID] {
        guard let index = schema.entityIndex(named: entity) else { return [] }
        let name = schema.entities[index].name
        var ids: [ObjectID] = []
        ids.reserveCapacity(generation.tables[index].count)
        generation.tables[index].forEach { number, _ in ids.append(ObjectID(entity: name, number: number)) }
        return ids
    }

    // MARK: - Changing

    /// Sets a key of a destination object. Setting a relationship keeps its inverse in step:
    /// objects leaving it drop this object from their inverse, objects joining it refer back
    /// (leaving their previous owner when the inverse is to-one).
    /// - Throws: ``MigrationError/Code/transformFailed`` when the object, key or a related
    ///   object does not exist, or the value's shape does not fit the relationship.
    public func setValue(_ value: Value, forKey key: String, of id: ObjectID) throws(MigrationError) {
        let (entity, property) = try locate(id, key)
        if property < schema.layout.entities[entity].attributeCount {
            generation.updateRow(id, entity: entity, changes: [PropertyChange(index: property, value: value)], version: 0)
            if awakenedEntities.contains(entity) { explicitKeys[id, default: []].append(property) }
        } else {
            try setRelationship(value, at: property, of: id, entity: entity)
        }
    }

    private func locate(_ id: ObjectID, _ key: String) throws(MigrationError) -> (Int, Int) {
        guard let entity = schema.entityIndex(named: id.entity), generation.tables[entity][id.number] != nil else {
            throw failure("\(id) does not exist in the new store", entity: id.entity, object: id, key: key)
        }
        guard let property = schema.layout.entities[entity].propertyNames.firstIndex(of: key) else {
            throw failure("the new entity \(id.entity) has no key \"\(key)\"; its keys are \(schema.layout.entities[entity].propertyNames)",
                          entity: id.entity, object: id, key: key)
        }
        return (entity, property)
    }

    /// Sets a relationship and maintains the inverse of every object leaving and joining it.
    func setRelationship(_ value: Value, at property: Int, of id: ObjectID, entity: Int) throws(MigrationError) {
        let relationship = relationshipInfo[entity][property]!
        let key = relationship.name
        let targets: [ObjectID]
        switch (value, relationship.isToMany) {
        case (.null, false): targets = []
        case (.object(let target), false): targets = [target]
        case (.objects(let list), true): targets = list
        default:
            throw failure("\(value) does not fit the \(relationship.isToMany ? "to-many" : "to-one") relationship \"\(key)\"",
                          entity: id.entity, object: id, key: key)
        }
        let destination = relationship.destination, inverse = relationship.inverse, inverseIsToMany = relationship.inverseIsToMany
        for target in targets where target.entity != relationship.destinationName || generation.tables[destination][target.number] == nil {
            throw failure("\(target) does not exist in the new store (relationship \"\(key)\" refers to \(relationship.destinationName) objects)",
                          entity: id.entity, object: id, key: key)
        }
        let old = CommitPlan.targets(generation.tables[entity][id.number]!.values[property])
        // Most lists are short: sets only pay off for long ones.
        let joining = targets.count > 16 ? Set(targets) : nil, leaving = old.count > 16 ? Set(old) : nil
        for target in old where !(joining?.contains(target) ?? targets.contains(target)) {
            removeInverse(of: id, from: target, destination: destination, inverse: inverse, toMany: inverseIsToMany)
        }
        for target in targets where !(leaving?.contains(target) ?? old.contains(target)) {
            if !inverseIsToMany, case .object(let previous) = generation.tables[destination][target.number]!.values[inverse], previous != id,
                let previousEntity = schema.entityIndex(named: previous.entity),
                var values = generation.tables[previousEntity][previous.number]?.values
            {
                // The target leaves its previous owner.
                values[property] = relationship.isToMany ? .objects(CommitPlan.targets(values[property]).filter { $0 != target }) : .null
                generation.updateRow(previous, entity: previousEntity, changes: [PropertyChange(index: property, value: values[property])], version: 0)
            }
            let current = generation.tables[destination][target.number]!.values[inverse]
            let updated: Value = inverseIsToMany ? .objects(CommitPlan.targets(current).filter { $0 != id } + [id]) : .object(id)
            generation.updateRow(target, entity: destination, changes: [PropertyChange(index: inverse, value: updated)], version: 0)
        }
        generation.updateRow(id, entity: entity, changes: [PropertyChange(index: property, value: relationship.isToMany ? .objects(targets) : (targets.first.map { .object($0) } ?? .null))], version: 0)
    }

    private func removeInverse(of id: ObjectID, from target: ObjectID, destination: Int, inverse: Int, toMany: Bool) {
        guard let row = generation.tables[destination][target.number] else { return }
        let updated: Value = toMany ? .objects(CommitPlan.targets(row.values[inverse]).filter { $0 != id }) : .null
        generation.updateRow(target, entity: destination, changes: [PropertyChange(index: inverse, value: updated)], version: 0)
    }

    func failure(_ message: String, entity: String? = nil, object: ObjectID? = nil, key: String? = nil) -> MigrationError {
        MigrationError(.transformFailed, message, step: stepName, entity: entity, object: object ?? current?.id, key: key,
                       cause: entity.flatMap { step.mapping.change(entity: $0, key: key) })
    }
}
