/// The objects a migration step is building, as custom transforms and links see them.
///
/// Objects are created with ``insert(_:values:)``, which starts from exactly the values a
/// context's insert starts from — the new schema's defaults, `nil`, empty lists — and then
/// runs the model class's `awakeFromInsert()` when the plan was given model classes (see
/// ``MigrationPlan/init(schemas:steps:modelClasses:)``), so code-set defaults are never
/// skipped by a migration. Values are read and changed by key; setting a relationship keeps
/// its inverse in step, as a context does.
///
/// The objects are not held in memory: they are written, as they are made and changed, to a
/// temporary file in the store directory (removed when the step ends), and reading one reads
/// its newest version back. Every object made so far can be read, changed and found by its
/// unique value at any time. The bookkeeping — where each object's newest version is, which
/// source object it was made from, its unique value — is in a second temporary file behind a
/// page cache of fixed size, so the memory a step needs does not grow with the store.
///
/// Not `Sendable`: it lives for one step, on the migration's own thread (so its bookkeeping
/// is exempt from the runtime's exclusivity checks).
public final class MigrationDestination {
    /// The step being run, as errors name it.
    let stepName: String
    let step: MigrationStep
    /// The objects built so far, in a temporary file (validated when the step ends).
    let spill: MigrationSpill
    /// The older store's objects.
    let reader: MigrationSourceReader
    /// Per destination entity: the next object number to hand out.
    @exclusivity(unchecked) private var nextNumber: [UInt64]
    /// Per destination entity: the highest number used.
    @exclusivity(unchecked) private(set) var highestNumbers: [UInt64]
    /// The step's bookkeeping, in areas of the spill's paged index file:
    /// - `made`, per source entity: for each transformed source object, the range of
    ///   `madeList` positions of the objects made from it (first: start + 1, second: count);
    ///   a transform makes them one after the other;
    /// - `madeList`: by position, the objects transforms made (first: entity + 1, second: number);
    /// - `origins`, per destination entity: for objects a transform made, the source object
    ///   (first: source entity + 1, second: number).
    private let slots: PagedSlots
    private let made: [Int]
    private let madeList: Int
    @exclusivity(unchecked) private var madeCount: UInt64 = 0
    private let origins: [Int]
    /// Where the objects made from `current` start in `madeList`.
    @exclusivity(unchecked) private var currentStart: UInt64 = 0
    /// The source object whose transform is running.
    var current: MigrationSourceObject? {
        didSet { currentStart = madeCount }
    }
    /// Per destination entity with a unique attribute: its storage index.
    private let uniqueAttributes: [Int?]
    /// Per destination entity with a unique attribute: which objects hold each value.
    @exclusivity(unchecked) private var uniques: [UniqueValueIndex?]
    /// Objects inserted that still need their model class's `awakeFromInsert` values
    /// (applied in batches of ``AwakeFromInsert/batchSize``).
    var awaitingAwake: [(entity: Int, number: UInt64)] = []
    private var pendingAwake: Set<ObjectID> = []
    /// For objects awaiting `awakeFromInsert`: keys a transform set explicitly (so
    /// `awakeFromInsert` values never overwrite them).
    var explicitKeys: [ObjectID: [Int]] = [:]
    /// Destination entities with a model class whose `awakeFromInsert` must run.
    let awakenedEntities: Set<Int>
    /// The scratch context `awakeFromInsert` runs in, made when first needed.
    var awakeLink: ContextLink?
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

    init(step: MigrationStep, source: Generation, awakenedEntities: Set<Int>, spill: MigrationSpill) {
        self.step = step
        self.stepName = step.name
        self.reader = MigrationSourceReader(source)
        self.spill = spill
        self.awakenedEntities = awakenedEntities
        // New numbers start above every number the matching source entity ever used, so an
        // object keeping its source number never meets a new one.
        let next = step.destination.entities.indices.map { step.highestNumberCarried(into: $0, from: source) + 1 }
        nextNumber = next
        let schema = step.destination
        highestNumbers = schema.entities.map { _ in 0 }
        let slots = spill.slots
        self.slots = slots
        made = step.source.entities.map { _ in slots.makeArea() }
        madeList = slots.makeArea()
        origins = schema.entities.map { _ in slots.makeArea() }
        let uniqueAttributes = schema.entities.map { $0.attributes.firstIndex(where: \.isUnique) }
        self.uniqueAttributes = uniqueAttributes
        // Sized for the source objects the entity comes from, or else for the largest source entity.
        let largest = source.tables.map(\.count).max() ?? 0
        uniques = schema.entities.indices.map { d in
            guard uniqueAttributes[d] != nil else { return nil }
            let expected = step.mapping.entities[d].source.map { source.tables[$0].count } ?? largest
            return UniqueValueIndex(slots: slots, expected: expected)
        }
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

    // MARK: - Rows

    /// An object's values, or `nil` when it does not exist.
    func row(_ entity: Int, _ number: UInt64) throws(MigrationError) -> [Value]? {
        do throws(StoreError) {
            if let failure = spill.failure { throw failure }
            return try spill.values(entity, number)
        } catch {
            throw MigrationError.store(error, step: stepName, "reading the step's new objects")
        }
    }

    /// Throws the first failure of the spill or its index that no caller has seen thrown yet
    /// (a read made by a lookup that cannot throw).
    func checkSpill() throws(MigrationError) {
        if let failure = spill.failure { throw MigrationError.store(failure, step: stepName, "reading the step's new objects") }
    }

    /// Writes an object's values (new when `old` is `nil`), keeping the unique values' index.
    func writeRow(_ entity: Int, _ number: UInt64, _ values: [Value], old: [Value]?) throws(MigrationError) {
        do throws(StoreError) {
            if let failure = spill.failure { throw failure }
            try spill.write(entity, number, values)
        } catch {
            throw MigrationError.store(error, step: stepName, "writing the step's new objects")
        }
        if old == nil, number > highestNumbers[entity] { highestNumbers[entity] = number }
        guard let u = uniqueAttributes[entity] else { return }
        let before = old?[u] ?? .null, after = values[u]
        guard old == nil || before != after else { return }
        if !before.isNull { uniques[entity]!.remove(before, number) }
        if !after.isNull { uniques[entity]!.insert(after, number) }
    }

    /// The objects of an entity holding a unique value, in the order they took it. A holder
    /// found by the value's hash is confirmed by reading its row.
    private func holders(of value: Value, entity: Int, known: UInt64? = nil) -> [UInt64] {
        guard let u = uniqueAttributes[entity], let index = uniques[entity] else { return [] }
        return index.holders(of: value, known: known) { number in
            do throws(StoreError) {
                return try spill.values(entity, number)?[u] == value
            } catch {
                spill.recordFailure(error)
                return false
            }
        }
    }

    /// Changes some values of an existing object.
    func updateRow(_ entity: Int, _ number: UInt64, _ changes: [(index: Int, value: Value)]) throws(MigrationError) {
        guard let old = try row(entity, number) else {
            preconditionFailure("update of \(schema.entities[entity].name)/\(number), which the migration has not created")
        }
        var values = old
        for change in changes { values[change.index] = change.value }
        try writeRow(entity, number, values, old: old)
    }

    /// For a unique value more than one object holds: the lowest-numbered of them (the one
    /// validation says the others repeat); `nil` when at most one object holds it.
    func lowestHolder(of value: Value, entity: Int, holder: UInt64) -> UInt64? {
        let holders = holders(of: value, entity: entity, known: holder)
        return holders.count > 1 ? holders.min() : nil
    }

    /// Whether a source object has nothing made from it: a transform made nothing, or the
    /// step removes its entity (and no transform reads it).
    func isDropped(_ id: ObjectID) -> Bool {
        guard let s = step.source.entityIndex(of: id) else { return false }
        guard step.transforms[step.source.entities[s].name] != nil else { return step.mapping.destinationOfSource[s] == nil }
        return slots.slot(made[s], id.number).isEmpty
    }

    /// The source object a destination object was made from by a transform.
    func origin(_ entity: Int, _ number: UInt64) -> ObjectID? {
        let origin = slots.slot(origins[entity], number)
        return origin.isEmpty ? nil : ObjectID(entityName: step.source.layout.entityNames[Int(origin.first) - 1], number: origin.second)
    }

    /// The destination objects a transform made from a source object.
    func madeObjects(_ s: Int, _ number: UInt64) -> [ObjectID]? {
        let range = slots.slot(made[s], number)
        guard !range.isEmpty else { return nil }
        return (range.first - 1..<range.first - 1 + range.second).map { position in
            let object = slots.slot(madeList, position)
            return ObjectID(entityName: schema.layout.entityNames[Int(object.first) - 1], number: object.second)
        }
    }

    /// Whether the running transform has already made an object of entity `index`.
    private func currentMade(_ index: Int) -> Bool {
        (currentStart..<madeCount).contains { slots.slot(madeList, $0).first == UInt64(index) + 1 }
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
        if let current, step.mapping.destinationOfSource[current.entityIndex] == index, !currentMade(index) {
            number = current.id.number
        } else {
            number = nextNumber[index]
            nextNumber[index] += 1
        }
        if number >= nextNumber[index] { nextNumber[index] = number + 1 }
        let id = ObjectID(entityName: schema.layout.entityNames[index], number: number)
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
        try writeRow(index, number, row, old: nil)
        if let current {
            slots.setSlot(madeList, madeCount, PagedSlots.Slot(first: UInt64(index) + 1, second: number))
            madeCount += 1
            slots.setSlot(made[current.entityIndex], current.id.number,
                          PagedSlots.Slot(first: currentStart + 1, second: madeCount - currentStart))
            slots.setSlot(origins[index], number, PagedSlots.Slot(first: UInt64(current.entityIndex) + 1, second: current.id.number))
        }
        if awakenedEntities.contains(index) {
            awaitingAwake.append((index, number))
            pendingAwake.insert(id)
            if !explicit.isEmpty { explicitKeys[id] = explicit }
        }
        for (property, value) in relationships {
            try setRelationship(value, at: property, of: id, entity: index)
        }
        return id
    }

    /// Forgets the objects awaiting `awakeFromInsert` (once it has run for them).
    func finishAwakening() {
        awaitingAwake = []
        pendingAwake = []
        explicitKeys = [:]
    }

    // MARK: - Reading

    /// The value of a key of a destination object.
    /// - Throws: ``MigrationError/Code/transformFailed`` when the object or key does not exist.
    public func value(forKey key: String, of id: ObjectID) throws(MigrationError) -> Value {
        let (entity, property) = try locate(id, key)
        return try row(entity, id.number)![property]
    }

    /// The destination object of an entity whose unique attribute has this value.
    ///
    /// When several objects hold the value (which validation reports), this is one of them.
    public func object(_ entity: String, uniqueValue: Value) -> ObjectID? {
        guard let index = schema.entityIndex(named: entity), !uniqueValue.isNull,
            let number = holders(of: uniqueValue, entity: index).last
        else { return nil }
        return ObjectID(entityName: schema.layout.entityNames[index], number: number)
    }

    /// The destination objects a transform made from a source object, in the order made.
    public func objects(madeFrom source: ObjectID) -> [ObjectID] {
        guard let s = step.source.entityIndex(named: source.entity) else { return [] }
        return madeObjects(s, source.number) ?? []
    }

    /// The source object a destination object was made from: by a transform, or carried over.
    public func sourceObject(of id: ObjectID) -> MigrationSourceObject? {
        guard let entity = schema.entityIndex(of: id) else { return nil }
        if let source = origin(entity, id.number) { return reader.object(source) }
        guard let s = step.mapping.entities[entity].source, step.transforms[step.source.entities[s].name] == nil else { return nil }
        return reader.object(ObjectID(entityName: step.source.layout.entityNames[s], number: id.number))
    }

    /// Every destination object of an entity, in number order.
    public func objects(of entity: String) -> [ObjectID] {
        guard let index = schema.entityIndex(named: entity) else { return [] }
        let name = schema.layout.entityNames[index]
        return spill.numbers(of: index).map { ObjectID(entityName: name, number: $0) }
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
            try updateRow(entity, id.number, [(property, value)])
            if pendingAwake.contains(id) { explicitKeys[id, default: []].append(property) }
        } else {
            try setRelationship(value, at: property, of: id, entity: entity)
        }
    }

    private func locate(_ id: ObjectID, _ key: String) throws(MigrationError) -> (Int, Int) {
        guard let entity = schema.entityIndex(of: id), spill.contains(entity, id.number) else {
            throw failure("\(id) does not exist in the new store", entity: id.entity, object: id, key: key)
        }
        guard let property = schema.layout.entities[entity].propertyNames.firstIndex(of: key) else {
            throw failure("the new entity \(id.entity) has no key \"\(key)\"; its keys are \(schema.layout.entities[entity].propertyNames)",
                          entity: id.entity, object: id, key: key)
        }
        return (entity, property)
    }

    /// Sets a relationship and maintains the inverse of every object leaving and joining it.
    /// An object joining adds this one at the end of its to-many inverse, unless it lists it
    /// already (lists are ordered, and being listed again does not move it), as a context
    /// does. `filledInverse` hears of each joining object whose inverse was empty (entity,
    /// number, the inverse's storage index).
    func setRelationship(
        _ value: Value, at property: Int, of id: ObjectID, entity: Int,
        filledInverse: ((_ entity: Int, _ number: UInt64, _ property: Int) -> Void)? = nil
    ) throws(MigrationError) {
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
        for target in targets where target.entity != relationship.destinationName || !spill.contains(destination, target.number) {
            throw failure("\(target) does not exist in the new store (relationship \"\(key)\" refers to \(relationship.destinationName) objects)",
                          entity: id.entity, object: id, key: key)
        }
        var row = try row(entity, id.number)!
        // Whether an update below rewrote this object's own row (a relationship to its own entity).
        var touchedSelf = false
        let old = CommitPlan.targets(row[property])
        // Most lists are short: sets only pay off for long ones.
        let joining = targets.count > 16 ? Set(targets) : nil, leaving = old.count > 16 ? Set(old) : nil
        for target in old where !(joining?.contains(target) ?? targets.contains(target)) {
            if target == id { touchedSelf = true }
            try removeInverse(of: id, from: target, destination: destination, inverse: inverse, toMany: inverseIsToMany)
        }
        for target in targets where !(leaving?.contains(target) ?? old.contains(target)) {
            var targetRow = try self.row(destination, target.number)!
            if !inverseIsToMany, case .object(let previous) = targetRow[inverse], previous != id,
                let previousEntity = schema.entityIndex(named: previous.entity),
                let values = try self.row(previousEntity, previous.number)
            {
                // The target leaves its previous owner.
                let updated: Value = relationship.isToMany ? .objects(CommitPlan.targets(values[property]).filter { $0 != target }) : .null
                try updateRow(previousEntity, previous.number, [(property, updated)])
                if previous == target { targetRow = try self.row(destination, target.number)! }
            }
            let current = CommitPlan.targets(targetRow[inverse])
            if inverseIsToMany && current.contains(id) { continue }
            if target == id { touchedSelf = true }
            if current.isEmpty { filledInverse?(destination, target.number, inverse) }
            try updateRow(destination, target.number, [(inverse, inverseIsToMany ? .objects(current + [id]) : .object(id))])
        }
        if touchedSelf { row = try self.row(entity, id.number)! }
        let new: Value = relationship.isToMany ? .objects(targets) : (targets.first.map { .object($0) } ?? .null)
        var values = row
        values[property] = new
        try writeRow(entity, id.number, values, old: row)
    }

    private func removeInverse(of id: ObjectID, from target: ObjectID, destination: Int, inverse: Int, toMany: Bool) throws(MigrationError) {
        guard let row = try row(destination, target.number) else { return }
        let updated: Value = toMany ? .objects(CommitPlan.targets(row[inverse]).filter { $0 != id }) : .null
        var values = row
        values[inverse] = updated
        try writeRow(destination, target.number, values, old: row)
    }

    func failure(_ message: String, entity: String? = nil, object: ObjectID? = nil, key: String? = nil) -> MigrationError {
        MigrationError(.transformFailed, message, step: stepName, entity: entity, object: object ?? current?.id, key: key,
                       cause: entity.flatMap { step.mapping.change(entity: $0, key: key) })
    }
}
