import Foundation

/// The objects one context holds and everything it knows about them: the identity map,
/// change tracking, inverse maintenance and delete rules.
///
/// Not `Sendable`: a graph lives in its context's isolation, and its objects with it.
/// ``ObjectContext`` owns one and delegates to it; ``ManagedObject``s call into it
/// synchronously from the same isolation.
final class ObjectGraph {
    let schema: Schema
    let link: ContextLink
    /// Per entity, per storage index: what a relationship needs for inverse maintenance.
    let relationships: [[RelationshipInfo?]]
    /// Per entity: a new object's values (defaults, nulls, empty lists).
    let newRows: [[Value]]
    /// Per entity: its values when missing (nulls and empty lists).
    let emptyRows: [[Value]]

    /// The identity map: one instance per object ID.
    private(set) var registered: [ObjectID: ManagedObject] = [:]
    /// Model classes registered in this context beyond the coordinator's.
    private var classes: [Int: ManagedObject.Type] = [:]
    private(set) var inserted: Set<ObjectID> = []
    private(set) var updated: Set<ObjectID> = []
    private(set) var deleted: Set<ObjectID> = []
    /// Writes through typed properties or ``ManagedObject/subscript(_:)`` that another
    /// context's deletion made impossible (the object, or the one a relationship was set to,
    /// is gone), in order: a setter cannot throw, and a deletion elsewhere is no programmer
    /// error to trap on, so the next save reports them (see ``takeUnappliedWrites()``).
    private(set) var unappliedWrites: [StoreError] = []
    /// Whether this context may hold a tombstone of an object its parent holds deleted — a
    /// deletion it saved into the parent or merged from it, or an object its save, or reading
    /// it again, found gone there: a child that has held a tombstone since it was made or
    /// reset. Its merges then look for objects naming such a tombstone (see `merge`); a merge
    /// in a context that never held one pays nothing.
    var holdsDeletionsOfParent: Bool { !link.isRoot && holdsTombstones }
    /// Tombstones that an object loaded or brought back to life names as its parent shows it: this
    /// context learned of a deletion the parent held, which the parent has dropped since
    /// (a context that does not follow its parent is not told). Brought back, with the
    /// objects on the other side, when the turn ends (``bringBackTombstonesShownAgain()``):
    /// left as they were, an album revived as the parent showed it listed a song held here
    /// as deleted, which named it back.
    var tombstonesShownAgain: Set<ObjectID> = []
    /// Whether an object registered here has become a tombstone since the context was made or
    /// reset (set by ``ManagedObject``): objects loaded in a context that never held one look
    /// for no tombstone among the objects they name.
    var holdsTombstones = false
    /// Incremented on every change; objects remember the value at their last change.
    private(set) var changeCounter: UInt64 = 0
    /// Objects changed since the layer was last published.
    private var unpublished: Set<ObjectID> = []
    /// The layer changed beyond its rows (``PendingLayer/mergesLeftUnchanged``).
    private var layerNeedsPublishing = false
    /// What changed since the last objects-did-change notification.
    var pendingNotification = ObjectsDidChange()
    /// How many turns of work (`perform`, `performAndWait`) are running in the context.
    var turnDepth = 0
    /// Set by a `.main` context: asks for its pending changes to be processed once the
    /// current main-actor job ends.
    var scheduleProcessing: (@Sendable () -> Void)?
    /// Whether processing has been asked for and has not run since.
    private var processingScheduled = false
    /// The value each key reported updated had when first set in this turn: a key set back
    /// to it by the end of the turn changed nothing anyone saw, and is not reported.
    private var shownBeforeTurn: [ObjectID: [Int: Value]] = [:]
    /// This context's pending changes as published to its children.
    private(set) var layer: PendingLayer
    /// The layer of a context with no pending changes.
    private let emptyLayer: PendingLayer
    /// Unique values set in this context (entity → value → object); may be stale, checked on use.
    private(set) var pendingUniques: [Int: [Value: ObjectID]] = [:]
    /// The identity map's size at which ``releaseUnreferencedObjects()`` next looks for
    /// objects to let go: twice its size after the last pass (so a pass costs O(1) per
    /// object registered), and never below ``minimumReleaseThreshold``.
    private var releaseThreshold = ObjectGraph.minimumReleaseThreshold
    static let minimumReleaseThreshold = 4096
    private var isTornDown = false
    /// While a typed predicate's key path is read on a probe: the keys read, in order.
    var recordedKeys: [String]?
    /// While keys are recorded: whether the last attribute read is declared as a type that
    /// can hold nil (see ``KeyNamer``).
    var lastReadHoldsNil = false
    /// The entity of each model class registered with ``register(_:)``.
    private var registeredClasses: [ObjectIdentifier: Int] = [:]
    /// Probe objects (object number 0) by entity, for naming typed key paths.
    private var probes: [Int: ManagedObject] = [:]
    /// Live results in this context, told about every turn's changes.
    var resultsObservers: [WeakResults] = []

    struct RelationshipInfo {
        let name: String
        let isToMany: Bool
        let isOptional: Bool
        let destination: Int
        let inverseIndex: Int
        let deleteRule: Relationship.DeleteRule
    }

    init(link: ContextLink) {
        self.link = link
        self.schema = link.schema
        let schema = link.schema
        relationships = schema.entities.map { entity in
            (0..<entity.propertyCount).map { index -> RelationshipInfo? in
                guard case .relationship(let r) = entity.property(at: index) else { return nil }
                let destination = schema.entityIndex(named: r.destination)!
                return RelationshipInfo(name: r.name, isToMany: r.isToMany, isOptional: r.isOptional, destination: destination,
                                        inverseIndex: schema.entities[destination].propertyIndex(named: r.inverse)!,
                                        deleteRule: r.deleteRule)
            }
        }
        layer = PendingLayer(schema: schema)
        emptyLayer = layer
        emptyRows = schema.entities.map { entity in
            (0..<entity.propertyCount).map { index in
                switch entity.property(at: index) {
                case .attribute: .null
                case .relationship(let r): r.isToMany ? .objects([]) : .null
                }
            }
        }
        newRows = schema.entities.map(\.newObjectValues)
    }

    /// Tells the store that the numbers of these inserted objects, let go of unsaved, will
    /// never be inserted (``Store/retire(_:)``) — except those of objects a save in flight
    /// is taking to the parent or the store.
    func retireNumbers(of ids: some Collection<ObjectID>) {
        guard !ids.isEmpty else { return }
        let retired = ids.filter { registered[$0]?.keysSetDuringSave == nil }
        link.coordinator.store.retire(retired)
    }

    /// Breaks the cycle between the graph and its objects when the context goes away.
    func tearDown() {
        isTornDown = true
        retireNumbers(of: inserted)
        registered = [:]
        inserted = []
        updated = []
        deleted = []
        probes = [:]
    }

    private func checkAlive(_ object: ManagedObject) {
        if isTornDown {
            preconditionFailure("\(object.objectID) belongs to a context that was discarded; objects cannot outlive their context")
        }
    }

    var hasChanges: Bool { !inserted.isEmpty || !updated.isEmpty || !deleted.isEmpty }
    /// Objects inserted, then deleted while a save taking their insertion was in flight: once
    /// it lands they exist below this context, deleted here. The layer shows them deleted
    /// meanwhile — not absent, which its children would read through to the store, where
    /// the save puts them: a child that had deleted such an object took it back as one whose
    /// deletion this context had undone.
    private(set) var discardedDuringSave: Set<ObjectID> = []

    /// A save that took an object in ``discardedDuringSave`` is over: the object is deleted
    /// here (the save landed) or gone (it failed).
    func saveEnded(for id: ObjectID) {
        if discardedDuringSave.remove(id) != nil { unpublished.insert(id) }
    }

    // MARK: - Keys

    func index(of key: String, in object: ManagedObject) -> Int {
        guard let index = schema.entities[object.entityIndex].propertyIndex(named: key) else {
            preconditionFailure("\(object.objectID.entity) has no key \"\(key)\"; its keys are \(object.entity.propertyNames)")
        }
        return index
    }

    func checkedIndex(of key: String, in object: ManagedObject) throws(StoreError) -> Int {
        guard let index = schema.entities[object.entityIndex].propertyIndex(named: key) else {
            throw StoreError(.invalidValue, "\(object.objectID.entity) has no key \"\(key)\"; its keys are \(object.entity.propertyNames)",
                             object: object.objectID, key: key)
        }
        return index
    }

    /// The storage index for a property wrapper, looked up once per object. The first look-up
    /// checks that the wrapper fits the property: an `@Managed` property of a built-in type
    /// declared with another type than the attribute's would read `nil` or empty over the
    /// stored value, and writing it would trap; `@ToOne`/`@ToMany` must name a relationship
    /// of that kind.
    func cachedIndex(_ cache: inout Int, key: String, in object: ManagedObject, declaring kind: DeclaredKind) -> Int {
        if cache < 0 {
            let index = index(of: key, in: object)
            let stored = schema.layout.entities[object.entityIndex].kinds[index]
            let fits: Bool
            var declared = ""
            switch (kind, stored) {
            case (.attribute(let type), .attribute(let attributeType)):
                if let exact = type as? any ExactlyStored.Type {
                    fits = exact.storedType == attributeType
                    declared = "\(type)"
                } else {
                    fits = true  // a type of the application's own: it converts values itself
                }
            case (.toOne, .toOne), (.toMany, .toMany): fits = true
            case (.attribute(let type), _): fits = false; declared = "@Managed \(type)"
            case (.toOne, _): fits = false; declared = "@ToOne"
            case (.toMany, _): fits = false; declared = "@ToMany"
            }
            if !fits {
                let what: String = switch stored {
                case .attribute(let type): "\(type.article) \(type.rawValue) attribute"
                case .toOne: "a to-one relationship"
                case .toMany: "a to-many relationship"
                }
                preconditionFailure("\(type(of: object)).\(key) is declared as \(declared), but \(object.objectID.entity).\(key) is \(what); declare it to match the schema")
            }
            cache = index
        }
        return cache
    }

    /// What a property wrapper declares, for ``cachedIndex(_:key:in:declaring:)``.
    enum DeclaredKind {
        case attribute(Any.Type)
        case toOne
        case toMany
    }

    // MARK: - Objects

    func entityIndex(named name: String) -> Int {
        guard let index = schema.entityIndex(named: name) else {
            preconditionFailure("schema \"\(schema.name)\" has no entity \"\(name)\"; its entities are \(schema.entities.map(\.name))")
        }
        return index
    }

    /// The storage index of an ID's entity.
    func entityIndex(of id: ObjectID) -> Int {
        guard let index = schema.entityIndex(of: id) else {
            preconditionFailure("schema \"\(schema.name)\" has no entity \"\(id.entity)\" (of \(id)); its entities are \(schema.entities.map(\.name))")
        }
        return index
    }

    func register(_ type: ManagedObject.Type) -> Int {
        // Known classes are found by identity: `entityName` makes a string (from the type's
        // name, unless overridden) each time it is asked.
        if let entity = registeredClasses[ObjectIdentifier(type)] { return entity }
        guard let entity = schema.entityIndex(named: type.entityName) else {
            preconditionFailure("\(type) models entity \"\(type.entityName)\", which schema \"\(schema.name)\" does not have (its entities are \(schema.entities.map(\.name))); "
                                + "override `class var entityName` in \(type) to name the entity it models")
        }
        if let existing = modelClass(for: entity), existing != type {
            preconditionFailure("entity \"\(type.entityName)\" is already modelled by \(existing) in this context; one class per entity")
        }
        classes[entity] = type
        registeredClasses[ObjectIdentifier(type)] = entity
        return entity
    }

    func modelClass(for entity: Int) -> ManagedObject.Type? {
        classes[entity] ?? link.models[schema.entities[entity].name]
    }

    /// The context's instance for an ID: the registered one, or a new fault.
    func object(with id: ObjectID) -> ManagedObject {
        if let object = registered[id] {
            if object.mayReappear { reviveIfPresent(object) }
            return object
        }
        // While a typed key path is read on a probe, its to-one relationships lead to the next
        // probe; otherwise number 0 is an ID like any other that no object has.
        if id.number == 0, recordedKeys != nil, let entity = schema.entityIndex(of: id) { return probe(entity: entity) }
        precondition(!isTornDown, "object(with: \(id)): the context was discarded")
        let entity = entityIndex(of: id)
        let type = modelClass(for: entity) ?? ManagedObject.self
        let object = type.init(ObjectToken(id: id, graph: self, entityIndex: entity))
        registered[id] = object
        return object
    }

    func object<T: ManagedObject>(with id: ObjectID, as type: T.Type) -> T {
        let object = object(with: id)
        guard let typed = object as? T else {
            preconditionFailure("\(id) is a \(Swift.type(of: object)), not a \(T.self); pass \(T.self) in the coordinator's model classes (or insert one first) so that \(id.entity) objects are made as \(T.self)")
        }
        return typed
    }

    /// The value that makes a relationship refer to `target`, which must belong to this context.
    func reference(to target: ManagedObject?, from source: ManagedObject, key: String) -> Value {
        do throws(StoreError) {
            return try checkedReference(to: target, from: source, key: key)
        } catch {
            preconditionFailure("\(error)")
        }
    }

    func checkedReference(to target: ManagedObject?, from source: ManagedObject, key: String) throws(StoreError) -> Value {
        guard let target else { return .null }
        guard target.graph === self else {
            throw StoreError(.wrongContext, "\(source.objectID).\(key): \(target.objectID) belongs to another context; pass its objectID and use object(with:) in this one",
                             object: source.objectID, key: key)
        }
        return .object(target.objectID)
    }

    func registeredObject(for id: ObjectID) -> ManagedObject? { registered[id] }

    func registerDirectly(_ object: ManagedObject) {
        precondition(registered[object.objectID] == nil, "\(object.objectID) is already registered in \(link.name)")
        registered[object.objectID] = object
    }

    var registeredObjects: [ManagedObject] { Array(registered.values) }

    /// Loads a fault's values from the parent. An object missing there becomes a tombstone
    /// until it appears (see ``reviveIfPresent(_:)``).
    func load(_ object: ManagedObject) {
        guard !object.isLoaded else { return }
        checkAlive(object)
        let parentView = link.sourceView()
        if let row = parentView.row(object.objectID) {
            let values = holdsDeletionsOfParent ? withoutDeletionsHeldByParent(row.values, of: object.entityIndex, parentView: parentView) : row.values
            object.storage = values
            object.base = values
            object.baseVersion = row.version
            noteTombstones(namedBy: values, of: object.entityIndex)
        } else {
            object.storage = emptyValues(of: object.entityIndex)
            object.lifecycle = .deletedElsewhere
            object.missingWhenLoaded = true
        }
        object.isLoaded = true
    }

    /// Brings back an object that was missing when it was loaded, if it is in the context's
    /// view now: asked for before another context saved it, the context's instance was a
    /// tombstone, and would have stayed one — never found again, its values empty — though
    /// the object exists. Done whenever the object is asked for (by ID, by a fetch, through
    /// a relationship) and when a merge names it. An object whose deletion this context
    /// learned of stays a tombstone (while the context holds it: one let go is asked for
    /// again as any ID, see ``releaseUnreferencedObjects()``).
    @discardableResult
    func reviveIfPresent(_ object: ManagedObject) -> Bool {
        guard object.mayReappear, object.lifecycle == .deletedElsewhere,
              let row = link.sourceView().row(object.objectID)
        else { return false }
        object.missingWhenLoaded = false
        object.deletionSavedToParent = false
        // Nothing pending: keys changed before a deletion that was saved are not changes now.
        object.changedKeys = []
        object.deletedInConflict = false
        object.storage = row.values
        object.base = row.values
        object.baseVersion = row.version
        object.lifecycle = .persistent
        setTracking(object)
        touch(object)
        pendingNotification.refreshed.insert(object.objectID)
        noteTombstones(namedBy: row.values, of: object.entityIndex)
        return true
    }

    /// Notes the tombstones held here that `values`, just read from the parent (or taken from
    /// it by a save), name (see ``tombstonesShownAgain``).
    func noteTombstones(namedBy values: [Value], of entity: Int) {
        guard holdsTombstones else { return }
        for (index, info) in relationships[entity].enumerated() where info != nil { noteTombstones(in: values[index]) }
    }

    /// Notes the tombstones held here that a relationship's `value`, just read from the
    /// parent, names (see ``tombstonesShownAgain``).
    func noteTombstones(in value: Value) {
        guard holdsTombstones else { return }
        tombstonesShownAgain.formUnion(tombstones(in: value) { $0.isLoaded && !$0.mayReappear && !$0.deletedInConflict })
    }

    /// The objects a relationship's `value` names that are tombstones here and that `include`
    /// accepts, in the value's order.
    func tombstones(in value: Value, where include: (ManagedObject) -> Bool) -> [ObjectID] {
        Self.targets(value).filter { target in
            guard let object = registered[target], object.lifecycle == .deletedElsewhere else { return false }
            return include(object)
        }
    }

    func emptyValues(of entity: Int) -> [Value] { emptyRows[entity] }

    /// A change made outside any turn of work — a main-actor object changed directly —
    /// is processed (notified, shown to live results and children) once the current
    /// main-actor job ends; the context asks for that once until it has run.
    private func scheduleProcessingOnce() {
        guard !processingScheduled, let scheduleProcessing else { return }
        processingScheduled = true
        scheduleProcessing()
    }

    func insert(entity: Int) -> ManagedObject {
        precondition(!isTornDown, "insert: the context was discarded")
        let id = link.allocateObjectID(entity: entity)
        let type = modelClass(for: entity) ?? ManagedObject.self
        let object = type.init(ObjectToken(id: id, graph: self, entityIndex: entity))
        let values = newRows[entity]
        object.storage = values
        object.isLoaded = true
        object.lifecycle = .inserted
        registered[id] = object
        inserted.insert(id)
        touch(object)
        pendingNotification.inserted.insert(id)
        notePendingUnique(of: object)
        object.awakeFromInsert()
        return object
    }

    private func touch(_ object: ManagedObject) {
        changeCounter += 1
        object.lastChange = changeCounter
        unpublished.insert(object.objectID)
    }

    // MARK: - Values

    func read(_ object: ManagedObject, index: Int) -> Value {
        if object.objectID.number == 0, probes[object.entityIndex] === object {
            // A probe: record the key, and lead a to-one relationship to the next probe.
            recordedKeys?.append(schema.layout.entities[object.entityIndex].propertyNames[index])
            if case .toOne(let destination) = schema.layout.entities[object.entityIndex].kinds[index] {
                return .object(probe(entity: destination).objectID)
            }
            return object.storage[index]
        }
        load(object)
        if object.mayReappear { reviveIfPresent(object) }
        return object.storage[index]
    }

    /// The probe object of a model class (a class registered for an entity).
    func probe(ofType type: Any.Type) -> ManagedObject? {
        guard let type = type as? ManagedObject.Type else { return nil }
        return probe(entity: register(type))
    }

    func probe(entity: Int) -> ManagedObject {
        if let probe = probes[entity] { return probe }
        let type = modelClass(for: entity) ?? ManagedObject.self
        let probe = type.init(ObjectToken(id: ObjectID(entityName: schema.layout.entityNames[entity], number: 0), graph: self, entityIndex: entity))
        // A distinctive value in every attribute, so that a typed key path computing
        // something from a stored property can be told from the property (see `KeyNamer`).
        probe.storage = emptyRows[entity]
        for (index, attribute) in schema.entities[entity].attributes.enumerated() {
            probe.storage[index] = Self.probeValue(of: attribute.type, at: index)
        }
        probe.isLoaded = true
        probes[entity] = probe
        return probe
    }

    private static func probeValue(of type: AttributeType, at index: Int) -> Value {
        let n = UInt8(truncatingIfNeeded: index)
        return switch type {
        case .string: .string("\u{F8FF}probe \(index)")
        case .int: .int(-7_919_000_000 - Int64(index))
        case .double: .double(-7_919.25 - Double(index))
        case .bool: .bool(true)
        case .date: .date(Date(timeIntervalSince1970: -7_919_000 - Double(index)))
        case .data: .data(Data([0xF8, 0xFF, n]))
        case .uuid: .uuid(UUID(uuid: (0xF8, 0xFF, n, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0)))
        }
    }

    /// Probe values other than ``probeValue(of:at:)``'s, each unlike it where common
    /// computations act: upper case, accents, spaces and the empty string; positive and
    /// zero numbers; `false`; a later date; other bytes.
    static func otherProbeValues(of type: AttributeType, at index: Int) -> [Value] {
        let n = UInt8(truncatingIfNeeded: index)
        return switch type {
        case .string: [.string(" \u{F8FF}Probe É \(index) "), .string("")]
        case .int: [.int(7_919_000_000 + Int64(index)), .int(0)]
        case .double: [.double(7_919.75 + Double(index)), .double(0)]
        case .bool: [.bool(false)]
        case .date: [.date(Date(timeIntervalSince1970: 7_919_000 + Double(index)))]
        case .data: [.data(Data()), .data(Data([0x00, n]))]
        case .uuid: [.uuid(UUID(uuid: (0x00, 0x01, n, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 1)))]
        }
    }

    /// ``write(_:index:value:)`` for setters that cannot throw: a write that another
    /// context's deletion made impossible changes nothing and is kept for the next save to
    /// report (``unappliedWrites``); any other failure — a value of the wrong type, an object
    /// of another entity, an object this context deleted itself — is a programmer error and
    /// traps with the error's message.
    func writeOrTrap(_ object: ManagedObject, index: Int, value: Value) {
        do throws(StoreError) {
            try write(object, index: index, value: value)
        } catch where error.code == .objectNotFound || error.code == .danglingReference
            || (error.code == .objectDeleted && object.lifecycle == .deletedElsewhere)
        {
            unappliedWrites.append(error)
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// The error a save throws for the writes that could not be made since the last save or
    /// rollback, which it forgets (a save after it saves the other changes); `nil` if none.
    func takeUnappliedWrites() -> StoreError? {
        guard let first = unappliedWrites.first else { return nil }
        let more = unappliedWrites.count - 1
        unappliedWrites = []
        return StoreError(first.code,
                          "\(first.message); the change was not made\(more > 0 ? " (nor \(more) more like it)" : ""), and nothing was saved: the context's other changes are still pending, and saving again saves them",
                          object: first.object, key: first.key)
    }

    /// Sets a value after checking its type; relationships keep their inverses in step.
    func write(_ object: ManagedObject, index: Int, value: Value) throws(StoreError) {
        checkAlive(object)
        if turnDepth == 0 { scheduleProcessingOnce() }
        load(object)
        if object.mayReappear { reviveIfPresent(object) }
        let layout = schema.layout.entities[object.entityIndex]
        guard object.lifecycle == .inserted || object.lifecycle == .persistent else {
            if object.missingWhenLoaded {
                throw StoreError(.objectNotFound, "\(object.objectID) does not exist in context \"\(link.name)\"'s view (deleted, or never saved where this context can see it, or not yet); it cannot be changed",
                                 object: object.objectID, key: layout.propertyNames[index])
            }
            throw StoreError(.objectDeleted, "\(object.objectID) is deleted; it cannot be changed", object: object.objectID, key: layout.propertyNames[index])
        }
        // An object deleted elsewhere, kept for its changes, whose last change this write
        // undoes becomes a tombstone (see `setPrimitive`): then, its inverses in step, the
        // objects naming it let go of it. (An artist went on listing the deleted album.)
        defer { if object.lifecycle == .deletedElsewhere { forgetReferences(toDeleted: [object.objectID], pending: true) } }
        guard case .attribute(let type) = layout.kinds[index] else {
            try setRelationship(object, index: index, info: relationships[object.entityIndex][index]!, value: value, key: layout.propertyNames[index])
            return
        }
        if !value.isNull && value.attributeType != type {
            let key = layout.propertyNames[index]
            throw StoreError(.invalidValue, "\(object.objectID).\(key): \(value) is not a \(type.rawValue)", object: object.objectID, key: key)
        }
        guard object.storage[index] != value else { return }
        setPrimitive(object, index: index, value: value)
    }

    /// Sets a value with no checks and no inverse maintenance, tracking the change.
    func setPrimitive(_ object: ManagedObject, index: Int, value: Value) {
        // (Not for an object inserted in this turn: it is reported as inserted.)
        if object.lifecycle == .persistent || (object.lifecycle == .inserted && !pendingNotification.inserted.contains(object.objectID)),
            shownBeforeTurn[object.objectID]?[index] == nil
        {
            shownBeforeTurn[object.objectID, default: [:]][index] = object.storage[index]
        }
        object.storage[index] = value
        object.keysSetDuringSave?.insert(index)
        switch object.lifecycle {
        case .inserted:
            object.changedKeys.insert(index)
        case .persistent:
            // Under a conflict kept for the next save (merge policy `error`) the base is the old
            // row: a key set back to it still differs from the row merged since, and stays a
            // change for the save to report. (Dropped, the object showed the old value with
            // nothing pending while the store held the merged one, and no save mentioned it.)
            if object.base?[index] == value, object.mergedRowInConflict.map({ $0.values[index] == value }) ?? true {
                object.changedKeys.remove(index)
            } else {
                object.changedKeys.insert(index)
            }
            if object.changedKeys.isEmpty, object.deletedInConflict {
                // Deleted elsewhere and kept for its changes, the last of which is gone: nothing
                // keeps it now, as a merge keeps no object without changes. (It stayed alive,
                // through a rollback too, showing an album the store had deleted.)
                if object.keysSetDuringSave != nil { object.keysSetDuringSave = [] }
                makeTombstone(object)
                return
            }
            if object.changedKeys.isEmpty { updated.remove(object.objectID) } else { updated.insert(object.objectID) }
        case .deleted, .discarded, .deletedElsewhere:
            return  // a snapshot being tidied (inverse maintenance), not a change to save
        }
        touch(object)
        let layout = schema.layout.entities[object.entityIndex]
        // Objects inserted in an earlier turn and not yet saved are reported as updated too
        // (live results showing them must refresh); in their own turn, as inserted only.
        pendingNotification.noteUpdate(object.objectID, key: layout.propertyNames[index])
        if index == layout.uniqueAttribute { notePendingUnique(of: object) }
    }

    /// Records the unique value `object` holds now (if it has one), so that lookups by
    /// unique key in this context find it before it is saved (see
    /// ``uniqueHolder(entity:value:excluding:)``): objects inserted here, given a new key
    /// here, or inserted by a child's save.
    func notePendingUnique(of object: ManagedObject) {
        guard let unique = schema.layout.entities[object.entityIndex].uniqueAttribute else { return }
        let value = object.storage[unique]
        if !value.isNull { pendingUniques[object.entityIndex, default: [:]][value] = object.objectID }
    }

    /// Forgets, after a save, every recorded unique value that no object holds as a pending
    /// change: the saved objects' (the parent's view answers for them now), values objects
    /// gave up for others before the save, and those of objects inserted and deleted before
    /// any save. Without this a long-lived context's record grew with every value its
    /// objects ever held. (Objects with pending changes are never let go, so each value
    /// kept belongs to a registered object.)
    func forgetUnheldUniques() {
        for (entity, values) in pendingUniques {
            guard let unique = schema.layout.entities[entity].uniqueAttribute else { continue }
            let held = values.filter { value, id in
                guard let object = registered[id], object.isLoaded, object.storage[unique] == value else { return false }
                switch object.lifecycle {
                case .inserted: return true
                case .persistent: return !object.changedKeys.isEmpty
                case .deleted, .discarded, .deletedElsewhere: return false
                }
            }
            pendingUniques[entity] = held.isEmpty ? nil : held
        }
    }

    static func targets(_ value: Value) -> [ObjectID] {
        switch value {
        case .object(let id): [id]
        case .objects(let ids): ids
        default: []
        }
    }

    private func setRelationship(_ object: ManagedObject, index: Int, info: RelationshipInfo, value: Value, key: String) throws(StoreError) {
        let destination = schema.entities[info.destination].name
        let new: [ObjectID]
        switch (value, info.isToMany) {
        case (.null, false): new = []
        case (.object(let id), false): new = [id]
        case (.objects(let ids), true): new = ids
        default:
            throw StoreError(.invalidValue, "\(object.objectID).\(key): \(value) does not fit a \(info.isToMany ? "to-many" : "to-one") relationship to \(destination)",
                             object: object.objectID, key: key)
        }
        let newSet = Set(new)
        if newSet.count != new.count {
            throw StoreError(.invalidValue, "\(object.objectID).\(key) would list an object twice", object: object.objectID, key: key)
        }
        let old = Self.targets(object.storage[index])
        let oldSet = Set(old)
        // Check every object joining the relationship before changing anything.
        var added: [ManagedObject] = []
        for id in new where !oldSet.contains(id) {
            guard id.entity == destination else {
                throw StoreError(.invalidValue, "\(object.objectID).\(key) refers to \(destination) objects; \(id) is a \(id.entity)", object: object.objectID, key: key)
            }
            let target = self.object(with: id)
            load(target)
            guard target.lifecycle == .inserted || target.lifecycle == .persistent else {
                throw cannotRefer(from: object, key: key, to: target)
            }
            added.append(target)
        }
        guard old != new else { return }
        setPrimitive(object, index: index, value: value)
        for id in old where !newSet.contains(id) {
            removeInverse(of: object.objectID, from: self.object(with: id), at: info.inverseIndex)
        }
        for target in added {
            addInverse(object, to: target, at: info.inverseIndex, forwardIndex: index)
        }
    }

    /// Why a relationship cannot refer to `target`, which is not alive in this context.
    private func cannotRefer(from object: ManagedObject, key: String, to target: ManagedObject) -> StoreError {
        let id = target.objectID
        if target.missingWhenLoaded {
            return StoreError(.objectNotFound, "\(object.objectID).\(key) cannot refer to \(id): it does not exist in context \"\(link.name)\"'s view (deleted, or never saved where this context can see it, or not yet)",
                              object: object.objectID, key: key)
        }
        return StoreError(target.lifecycle == .deletedElsewhere ? .danglingReference : .objectDeleted,
                          "\(object.objectID).\(key) cannot refer to \(id): it is deleted", object: object.objectID, key: key)
    }

    /// Removes `source` from `target`'s relationship at `inverseIndex`.
    private func removeInverse(of source: ObjectID, from target: ManagedObject, at inverseIndex: Int) {
        load(target)
        if !Self.targets(target.storage[inverseIndex]).contains(source), target.lifecycle == .persistent {
            // The target was read before the source changed elsewhere: it is brought up to
            // date, so that the save changes both sides as they are now (or reports the
            // conflict).
            if target.changedKeys.contains(inverseIndex) {
                catchUpList(of: target, at: inverseIndex)
            } else {
                catchUp(target, at: inverseIndex)
            }
        }
        letGo(of: source, in: target, at: inverseIndex)
    }

    /// Brings `target`, read before what this context reads through changed it, up to date
    /// for its relationship at `index`, which it has not changed here. Without changes of
    /// its own it is read again. With changes, only that key is read again: the others keep
    /// the base they were made on, so that the save reports a key another save changed
    /// meanwhile as a conflict, which its merge policy resolves. (Read again whole, the
    /// object took the newer version as its base, and its own changes overwrote the other
    /// save's without a conflict: an album given to one artist here, read before another
    /// save gave it to a second, stayed in the second's list, and the save was refused as an
    /// inverse violation.)
    private func catchUp(_ target: ManagedObject, at index: Int) {
        guard !target.changedKeys.isEmpty || target.keysSetDuringSave?.isEmpty == false else {
            refresh(target, mergeChanges: true)
            return
        }
        guard let now = readAgain(target, at: index) else { return }
        guard target.storage[index] != now else { return }
        // (Set directly, not as a change made now: it is what the context reads through.)
        target.storage[index] = now
        takeAsRead(now, for: target, at: index)
        touch(target)
        pendingNotification.refreshed.insert(target.objectID)
    }

    /// `target`'s relationship at `index` as the parent shows it now, read as a load reads
    /// it: without the objects the parent holds deleted that are tombstones here, and with
    /// the tombstones it names that the parent shows again noted, to come back at the end of
    /// the turn (see ``tombstonesShownAgain``); `nil` when the parent does not show `target`.
    /// (Taken as the parent showed it, an album's list named a song this context had found
    /// deleted in the parent before the parent rolled the deletion back: the song stayed a
    /// tombstone naming the album, and every save was refused as naming a deleted object.)
    private func readAgain(_ target: ManagedObject, at index: Int) -> Value? {
        let view = link.sourceView()
        guard let row = view.row(target.objectID) else { return nil }
        let value = holdsDeletionsOfParent ? withoutDeletionsHeldByParent(row.values[index], parentView: view) : row.values[index]
        noteTombstones(in: value)
        return value
    }

    /// A to-many list changed here, read before what this context reads through changed it:
    /// the list takes that change under its own (a three-way merge), and its base takes the
    /// list as read now — so that letting go of an object that joined it since is a change
    /// of this context's, which its save sends. (Left on the old base, the list kept an
    /// album that joined it elsewhere and that this context had moved to another artist:
    /// the other save's addition merged back into it, here or at the store, and the save
    /// was refused as an inverse violation.)
    private func catchUpList(of target: ManagedObject, at index: Int) {
        guard relationships[target.entityIndex][index]?.isToMany == true, let read = target.rowMergedLast?[index],
            let now = readAgain(target, at: index)
        else { return }
        guard now != read else { return }
        let merged = Value.mergedList(base: read, ours: target.storage[index], theirs: now)
        takeAsRead(now, for: target, at: index)
        setPrimitive(target, index: index, value: merged)
    }

    /// Makes `value` what `target` was read with at `index`: its base, and the row kept with
    /// a conflict, if it holds one, take it; the rest of both stay as they were.
    private func takeAsRead(_ value: Value, for target: ManagedObject, at index: Int) {
        target.base?[index] = value
        if var kept = target.mergedRowInConflict {
            kept.values[index] = value
            target.mergedRowInConflict = kept
        }
    }

    /// Makes `target`'s relationship at `index` refer to `id` too (a change) where it can
    /// without taking anything from a third object: a to-many list gains it, an empty to-one
    /// is set. Returns whether the relationship refers to `id` now (`false`: a to-one
    /// referring to another object, left as it is).
    @discardableResult
    func referAlso(to id: ObjectID, in target: ManagedObject, at index: Int) -> Bool {
        switch target.storage[index] {
        case let value where value.refers(to: id): return true
        case .objects(let ids): setPrimitive(target, index: index, value: .objects(ids + [id]))
        case .null: setPrimitive(target, index: index, value: .object(id))
        default: return false
        }
        return true
    }

    /// Takes `id` out of `target`'s relationship at `index` (a change), if it refers to it.
    func letGo(of id: ObjectID, in target: ManagedObject, at index: Int) {
        switch target.storage[index] {
        case .object(let other) where other == id:
            setPrimitive(target, index: index, value: .null)
        case .objects(let ids) where ids.contains(id):
            setPrimitive(target, index: index, value: .objects(ids.filter { $0 != id }))
        default:
            break
        }
    }

    /// Makes `target`'s relationship at `inverseIndex` refer to `source`; a to-one inverse
    /// first leaves its previous object (whose relationship at `forwardIndex` loses `target`).
    private func addInverse(_ source: ManagedObject, to target: ManagedObject, at inverseIndex: Int, forwardIndex: Int) {
        if Self.targets(target.storage[inverseIndex]).contains(source.objectID), target.lifecycle == .persistent,
            !target.changedKeys.contains(inverseIndex)
        {
            // The target already refers to a source that did not refer to it: one of them was
            // read before the other changed elsewhere. Bring the target up to date (see
            // removeInverse).
            catchUp(target, at: inverseIndex)
        }
        switch target.storage[inverseIndex] {
        case .objects(let ids):
            if !ids.contains(source.objectID) { setPrimitive(target, index: inverseIndex, value: .objects(ids + [source.objectID])) }
        default:
            let previous = target.storage[inverseIndex].objectID
            guard previous != source.objectID else { return }
            if let previous {
                removeInverse(of: target.objectID, from: object(with: previous), at: forwardIndex)
            }
            setPrimitive(target, index: inverseIndex, value: .object(source.objectID))
        }
    }

    // MARK: - Deleting

    /// Deletes an object, applying its relationships' delete rules: `nullify` removes it from
    /// the related objects, `cascade` deletes them too, `deny` is checked when saving.
    func delete(_ object: ManagedObject) {
        checkAlive(object)
        // A worklist, not recursion: a cascade along a chain of any length (a linked list of
        // ten thousand nodes) must not run out of stack.
        var cascade = [object]
        while let next = cascade.popLast() { deleteOne(next, cascadingInto: &cascade) }
    }

    /// Deletes one object and applies its delete rules; objects its `cascade` rules delete
    /// are added to `cascade`.
    private func deleteOne(_ object: ManagedObject, cascadingInto cascade: inout [ManagedObject]) {
        guard object.lifecycle == .inserted || object.lifecycle == .persistent else { return }
        load(object)
        guard object.lifecycle == .inserted || object.lifecycle == .persistent else { return }
        let wasInserted = object.lifecycle == .inserted
        touch(object)
        if wasInserted {
            inserted.remove(object.objectID)
            if object.keysSetDuringSave != nil { discardedDuringSave.insert(object.objectID) } else { retireNumbers(of: [object.objectID]) }
            object.lifecycle = .discarded
            // Announced as inserted in an earlier turn: announce its deletion too, so that
            // live results and observers let go of it.
            if pendingNotification.inserted.remove(object.objectID) == nil { pendingNotification.deleted.insert(object.objectID) }
            pendingNotification.updated.removeValue(forKey: object.objectID)
        } else {
            updated.remove(object.objectID)
            deleted.insert(object.objectID)
            object.lifecycle = .deleted
            pendingNotification.deleted.insert(object.objectID)
            // Reported as deleted only, whatever changed it earlier in the turn.
            pendingNotification.updated.removeValue(forKey: object.objectID)
        }
        for (index, info) in relationships[object.entityIndex].enumerated() {
            guard let info else { continue }
            applyDeleteRule(info, of: object, wasInserted: wasInserted, to: Self.targets(object.storage[index]), cascadingInto: &cascade)
        }
    }

    /// Applies one relationship's delete rule of a deleted object to `targets`: `nullify`
    /// takes the object out of their inverse, `cascade` adds those that still refer back to
    /// `cascade`, `deny` waits for the save (or nullifies, for an object never saved).
    private func applyDeleteRule(
        _ info: RelationshipInfo, of object: ManagedObject, wasInserted: Bool, to targets: [ObjectID],
        cascadingInto cascade: inout [ManagedObject]
    ) {
        switch info.deleteRule {
        case .deny where !wasInserted:
            return  // checked when saving: the related objects must be gone by then
        case .nullify, .deny:
            for id in targets { removeInverse(of: object.objectID, from: self.object(with: id), at: info.inverseIndex) }
        case .cascade:
            for id in targets {
                let target = self.object(with: id)
                load(target)
                // Read before it joined the object elsewhere (the object read after): read
                // again, it belongs to the object and goes with it. (Left as read, it stayed;
                // merged, it named the deleted object.)
                if target.lifecycle == .persistent, !target.changedKeys.contains(info.inverseIndex),
                    !target.storage[info.inverseIndex].refers(to: object.objectID),
                    link.sourceView().row(id)?.values[info.inverseIndex].refers(to: object.objectID) == true
                {
                    refresh(target, mergeChanges: true)
                }
                // Only what still belongs to the object: a parent applying a child's save
                // can hold a list the child emptied by moving its members elsewhere (the
                // deleted object's own update is not sent), and those members stay.
                guard target.storage[info.inverseIndex].refers(to: object.objectID) else { continue }
                removeInverse(of: object.objectID, from: target, at: info.inverseIndex)
                cascade.append(target)
            }
        }
    }

    /// Applies the delete rules of an object pending deletion to objects that joined its
    /// relationships after it was deleted (by key: the objects joined) — a merged save or a
    /// child's save related them to it: `cascade` deletes them, `nullify` takes the object
    /// out of their relationships, and `deny` is checked when saving, as for the members it
    /// had when deleted. Without this the store refused the save (a cascade or an inverse
    /// not carried out), or a new member stayed behind as an orphan.
    func applyDeleteRules(of object: ManagedObject, toJoined joined: [Int: [ObjectID]]) {
        guard object.lifecycle == .deleted else { return }
        var cascade: [ManagedObject] = []
        for index in joined.keys.sorted() {
            guard let info = relationships[object.entityIndex][index] else { continue }
            // Only objects that refer back: the others are not related to it (nothing to nullify,
            // and reading them again to remove it would change them).
            let related = joined[index]!.filter { id in
                let target = self.object(with: id)
                load(target)
                return (target.lifecycle == .persistent || target.lifecycle == .inserted)
                    && target.storage[info.inverseIndex].refers(to: object.objectID)
            }
            applyDeleteRule(info, of: object, wasInserted: false, to: related, cascadingInto: &cascade)
        }
        while let next = cascade.popLast() { deleteOne(next, cascadingInto: &cascade) }
    }

    /// The objects `new` relates to that none of `old` did, by relationship key.
    func joinedObjects(of entity: Int, from old: [[Value]], to new: [Value]) -> [Int: [ObjectID]] {
        var joined: [Int: [ObjectID]] = [:]
        for (index, info) in relationships[entity].enumerated() where info != nil {
            let before = Set(old.flatMap { $0.indices.contains(index) ? Self.targets($0[index]) : [] })
            let added = Self.targets(new[index]).filter { !before.contains($0) }
            if !added.isEmpty { joined[index] = added }
        }
        return joined
    }

    // MARK: - Uniques

    /// The object holding a unique value in this context: its own pending values first, then
    /// its parent's view, skipping objects this context changed away from the value.
    func uniqueHolder(entity: Int, value: Value, excluding: ObjectID? = nil) -> ObjectID? {
        guard let attribute = schema.layout.entities[entity].uniqueAttribute, !value.isNull else { return nil }
        func holds(_ id: ObjectID) -> Bool {
            guard id != excluding else { return false }
            guard let object = registered[id], object.isLoaded else {
                return link.sourceView().row(id)?.values[attribute] == value  // as the view has it
            }
            return (object.lifecycle == .inserted || object.lifecycle == .persistent) && object.storage[attribute] == value
        }
        if let id = pendingUniques[entity]?[value], holds(id) { return id }
        if let id = link.sourceView().holder(entity: entity, uniqueValue: value), holds(id) { return id }
        return nil
    }

    // MARK: - Publishing

    /// The changes to post at the end of a turn, less keys set back to the value they had
    /// when the turn began; starts the next turn's.
    func takePendingNotification() -> ObjectsDidChange {
        processingScheduled = false
        var notification = pendingNotification
        pendingNotification = ObjectsDidChange()
        for (id, keys) in notification.updated {
            guard let shown = shownBeforeTurn[id], let object = registered[id], object.isLoaded else { continue }
            let names = schema.layout.entities[object.entityIndex].propertyNames
            let unchanged = shown.filter { object.storage[$0.key] == $0.value }.map { names[$0.key] }
            guard !unchanged.isEmpty else { continue }
            let left = keys.subtracting(unchanged)
            notification.updated[id] = left.isEmpty ? nil : left
        }
        shownBeforeTurn = [:]
        return notification
    }

    /// Sets the layer's ``PendingLayer/mergesLeftUnchanged`` (published with the rows).
    func setLayerMerges(_ merges: [(transaction: UInt64, objects: Set<ObjectID>)]) {
        layer.mergesLeftUnchanged = merges
        layerNeedsPublishing = true
    }

    /// Brings the layer children read up to date with the objects changed since the last
    /// call, and returns it.
    func updateLayer() -> PendingLayer {
        guard !unpublished.isEmpty || layerNeedsPublishing else { return layer }
        layerNeedsPublishing = false
        if !hasChanges && discardedDuringSave.isEmpty {
            // Nothing is pending (as after a save or a rollback): the layer is empty, whatever
            // it held — taken whole instead of removing each published row and unique value.
            // (The merges it lists stay: the objects they list may show here as they did.)
            let merges = layer.mergesLeftUnchanged
            layer = emptyLayer
            layer.mergesLeftUnchanged = merges
            unpublished = []
            return layer
        }
        for id in unpublished {
            let entity = entityIndex(of: id)
            let number = id.number
            guard let object = registered[id] else {
                layer.rows[entity][number] = nil
                continue
            }
            switch object.lifecycle {
            case .inserted:
                layer.rows[entity][number] = PendingLayer.Row(values: object.storage, version: 0)
            case .persistent:
                if object.changedKeys.isEmpty {
                    layer.rows[entity][number] = nil
                } else {
                    layer.rows[entity][number] = PendingLayer.Row(values: object.storage, version: object.baseVersion)
                }
            case .deleted:
                layer.rows[entity][number] = PendingLayer.Row(values: nil, version: object.baseVersion)
            case .discarded where discardedDuringSave.contains(id):
                layer.rows[entity][number] = PendingLayer.Row(values: nil, version: 0)
            case .discarded, .deletedElsewhere:
                layer.rows[entity][number] = nil
            }
            if let attribute = schema.layout.entities[entity].uniqueAttribute, object.isLoaded,
                object.lifecycle == .inserted || object.lifecycle == .persistent, !object.storage[attribute].isNull
            {
                layer.uniques[entity]![object.storage[attribute]] = number
            }
        }
        unpublished = []
        return layer
    }

    // MARK: - Bookkeeping used by saving, merging and rollback

    /// Marks an object as changed since the layer was published (after a direct change of its state).
    func noteChanged(_ object: ManagedObject) { touch(object) }

    /// Makes an object a tombstone (deleted elsewhere, nothing pending) and announces it.
    func makeTombstone(_ object: ManagedObject) {
        object.lifecycle = .deletedElsewhere
        object.missingWhenLoaded = false
        object.deletionSavedToParent = false
        object.changedKeys = []
        object.deletedInConflict = false
        setTracking(object)
        touch(object)
        pendingNotification.invalidated.insert(object.objectID)
    }

    func setTracking(_ object: ManagedObject) {
        let id = object.objectID
        inserted.remove(id)
        updated.remove(id)
        deleted.remove(id)
        switch object.lifecycle {
        case .inserted: inserted.insert(id)
        case .persistent: if !object.changedKeys.isEmpty { updated.insert(id) }
        case .deleted: deleted.insert(id)
        case .discarded, .deletedElsewhere: break
        }
    }

    /// Lets go of the objects that only the identity map holds and that have nothing of
    /// their own to keep, as Core Data holds unchanged objects weakly: persistent objects,
    /// loaded or not, with no pending change, not part of a save in flight and no conflict
    /// kept for the next save; and objects that no longer exist — tombstones (deleted by a
    /// save or a merge, or missing when loaded) and objects inserted and deleted before any
    /// save — that the context's view does not hold either, that none of its pending
    /// changes refers to, and that no live results not kept current show. Nobody can tell
    /// an unchanged object was let go: no one refers to the instance, and asking for it again
    /// gives a fresh one loaded from the same view.
    /// Asked for again, an object that no longer exists is one the view does not hold, as
    /// any such ID: a fault that loads as missing (`objectNotFound`, empty values), which
    /// comes back to life if the object appears in the view after all. Runs at the end of a
    /// turn of work (nothing of the context's own is iterating its objects then), only once
    /// the map has doubled since the last pass.
    func releaseUnreferencedObjects() {
        guard registered.count >= releaseThreshold else { return }
        var released: [ObjectID] = []
        var gone: [ObjectID] = []
        var index = registered.values.startIndex
        while index != registered.values.endIndex {
            let object = registered.values[index]
            // `object` is a second reference while it is in scope: check with it gone.
            if object.keysSetDuringSave == nil, object.mergedRowInConflict == nil {
                switch object.lifecycle {
                case .persistent: if object.changedKeys.isEmpty { released.append(object.objectID) }
                case .discarded, .deletedElsewhere: gone.append(object.objectID)
                case .inserted, .deleted: break
                }
            }
            registered.values.formIndex(after: &index)
        }
        if !gone.isEmpty {
            // A fresh instance must give the same verdict: missing. (A tombstone the view still
            // holds — a merged deletion the view has not caught up with — would load alive.) A
            // save checks the references of its changes against the tombstones held here, and
            // live results not kept current show the last values of those they list.
            let view = link.sourceView()
            var kept = referencedByPendingChanges()
            for observer in resultsObservers { kept.formUnion(observer.staleIDs()) }
            released += gone.filter { view.row($0) == nil && !kept.contains($0) }
        }
        var unreferenced: [ObjectID] = []
        unreferenced.reserveCapacity(released.count)
        for id in released {
            guard let position = registered.index(forKey: id) else { continue }
            if isKnownUniquelyReferenced(&registered.values[position]) { unreferenced.append(id) }
        }
        for id in unreferenced { registered.removeValue(forKey: id) }
        releaseThreshold = max(Self.minimumReleaseThreshold, registered.count * 2)
    }

    /// The objects the context's pending changes refer to: every relationship of an inserted
    /// object, the changed relationships of an updated one (what ``validateForSave()``
    /// checks for references to deleted objects).
    private func referencedByPendingChanges() -> Set<ObjectID> {
        var referenced = Set<ObjectID>()
        func note(_ object: ManagedObject, keys: some Sequence<Int>) {
            for index in keys where relationships[object.entityIndex][index] != nil {
                referenced.formUnion(Self.targets(object.storage[index]))
            }
        }
        for id in inserted { if let object = registered[id] { note(object, keys: relationships[object.entityIndex].indices) } }
        for id in updated { if let object = registered[id] { note(object, keys: object.changedKeys) } }
        return referenced
    }

    func unregister(_ id: ObjectID) {
        registered.removeValue(forKey: id)
        inserted.remove(id)
        updated.remove(id)
        deleted.remove(id)
        unpublished.insert(id)
    }

    /// Forgets every object (``ObjectContext/reset()``): the instances become tombstones
    /// keeping their last values; asking the context again gives fresh instances.
    func forgetAll() {
        unappliedWrites = []
        // Objects that showed unsaved values before this turn show their parent's again:
        // live results holding them in place report them updated (a reset's diff reported
        // no update, and a table kept the discarded values). One changed only in this turn
        // showed its parent's values all along.
        var shownChanged: Set<ObjectID> = []
        for id in updated {
            guard let object = registered[id], object.isLoaded, let base = object.base else { continue }
            let before = shownBeforeTurn[id] ?? [:]
            if object.storage.indices.contains(where: { (before[$0] ?? object.storage[$0]) != base[$0] }) { shownChanged.insert(id) }
        }
        tombstonesShownAgain = []
        for object in registered.values {
            object.lifecycle = .deletedElsewhere
            object.missingWhenLoaded = false
            object.deletionSavedToParent = false
            object.changedKeys = []
            unpublished.insert(object.objectID)
        }
        retireNumbers(of: inserted)
        for id in discardedDuringSave { saveEnded(for: id) }
        registered = [:]
        holdsTombstones = false
        inserted = []
        updated = []
        deleted = []
        pendingUniques = [:]
        // Every object is invalidated: what this turn did to them before is moot.
        pendingNotification.inserted = []
        pendingNotification.updated = [:]
        pendingNotification.deleted = []
        pendingNotification.refreshed = []
        pendingNotification.invalidated = []
        pendingNotification.invalidatedAll = true
        pendingNotification.shownChangedBeforeReset = shownChanged
    }

    /// Drops every pending change (``ObjectContext/rollback()``): changed and deleted
    /// objects get the values they were read with; inserted ones are removed.
    func rollback() {
        unappliedWrites = []
        retireNumbers(of: inserted)
        for id in discardedDuringSave { saveEnded(for: id) }
        var gone: [ObjectID] = []
        // The objects whose values go back (see below).
        let restored = updated.union(deleted)
        for object in Array(registered.values) {
            switch object.lifecycle {
            case .inserted, .discarded:
                let wasShown = object.lifecycle == .inserted
                object.lifecycle = .deletedElsewhere
                unregister(object.objectID)
                // Inserted in this turn: never announced, so it is not announced now either
                // (invalidated still, for anything that looked it up). One deleted already
                // was announced gone then, or never.
                pendingNotification.inserted.remove(object.objectID)
                pendingNotification.updated.removeValue(forKey: object.objectID)
                if wasShown { pendingNotification.invalidated.insert(object.objectID) }
            case .persistent, .deleted:
                guard object.lifecycle == .deleted || !object.changedKeys.isEmpty || object.keysSetDuringSave?.isEmpty == false,
                      object.base != nil else { continue }
                if object.deletedInConflict {
                    // Deleted elsewhere while it held the changes rolled back: a tombstone now,
                    // which the objects naming it let go of (below).
                    if object.keysSetDuringSave != nil { object.keysSetDuringSave = [] }
                    makeTombstone(object)
                    gone.append(object.objectID)
                    continue
                }
                if let merged = object.mergedRowInConflict {
                    // A merge kept a conflict for the next save: go back to the merged row.
                    object.base = merged.values
                    object.baseVersion = merged.version
                    object.mergedRowInConflict = nil
                }
                object.storage = object.base!
                object.changedKeys = []
                if object.keysSetDuringSave != nil { object.keysSetDuringSave = [] }
                object.lifecycle = .persistent
                setTracking(object)
                touch(object)
                // Its values go back: refreshed, not (also) deleted or updated in this turn.
                pendingNotification.deleted.remove(object.objectID)
                pendingNotification.updated.removeValue(forKey: object.objectID)
                pendingNotification.refreshed.insert(object.objectID)
            case .deletedElsewhere:
                continue
            }
        }
        pendingUniques = [:]
        // Values back on a base that names a tombstone the parent no longer shows: the base
        // was read before the deletion reached the parent, and this context learned of the
        // deletion first (it merged the commit before its parent did), so its letting go was
        // a change of its own, which the rollback dropped. (An album listed again a song
        // deleted elsewhere, which named it back.)
        // One the parent still shows — it has not merged the deletion yet, or keeps changes
        // to the object in conflict with it — comes back as the parent shows it at the end of
        // the turn, as for a load: after a rollback the context shows what its parent shows.
        // (A song the view had inserted on an album named it again in an editor that had
        // merged the album's deletion, kept in the view for the view's changes; the album
        // stayed a tombstone naming the song.)
        let view = link.sourceView()
        var named = Set<ObjectID>()
        for id in restored {
            guard let object = registered[id], object.isLoaded, object.lifecycle == .persistent else { continue }
            for (index, info) in relationships[object.entityIndex].enumerated() where info != nil {
                named.formUnion(tombstones(in: object.storage[index]) { !$0.missingWhenLoaded && view.row($0.objectID) == nil })
            }
            noteTombstones(namedBy: object.storage, of: object.entityIndex)
        }
        gone += named.sorted()
        // Once every object has its values back. (An artist read before the album was deleted
        // elsewhere, kept while it held changes, still listed the album, now deleted.)
        forgetReferences(toDeleted: gone, pending: true)
    }

    /// Turns an object back into a fault (dropping its changes), or with `mergeChanges`
    /// reloads what it was based on and keeps its changes on top. `source`: what the parent
    /// shows, when the caller reads other objects from the same state (read now otherwise).
    /// `keepingConflicts`, for the reads a save makes on its own (not a refresh the caller
    /// asks for, whose changes take the newer values as their base): a key changed here that
    /// the row changed too keeps the base it was changed on, for the next save to report —
    /// but for the keys in `handed` (saved into the parent, which reported what became of
    /// them), which take the row's values as their base.
    func refresh(
        _ object: ManagedObject, mergeChanges: Bool, from source: ContextView? = nil, keepingConflicts: Bool = false,
        rebasing handed: Set<Int> = []
    ) {
        guard object.isLoaded, object.lifecycle == .persistent || object.lifecycle == .deleted else { return }
        let before = object.storage
        guard let row = (source ?? link.sourceView()).row(object.objectID) else {
            // Deleted where this context reads from: a tombstone, as merging the deletion
            // makes it, and the objects its values name here let go of it — those its
            // changes joined too. (An artist this context had given the album went on listing
            // it, and every save was refused as referring to a deleted object.) What they
            // read let go too: the deletion is not this context's change. (Let go as a
            // change, a song kept "no album" when the parent rolled the deletion back and
            // announced the song as it was; the album, back from its tombstone, had been put
            // in step with the change, and the next save was refused as an inverse violation.)
            makeTombstone(object)
            forgetReferences(toDeleted: [object.objectID], pending: true)
            forgetReferences(to: object)
            return
        }
        // Keys set while a save of the object is in flight: merged changes keep them (one set
        // back to its value from before the save is not in `changedKeys`, and the save's end
        // would otherwise give it the saved value); the other ways drop them.
        let setDuringSave = object.keysSetDuringSave ?? []
        if object.keysSetDuringSave != nil { object.keysSetDuringSave = [] }
        let read = object.rowMergedLast
        object.mergedRowInConflict = nil
        if object.lifecycle == .deleted {
            // A pending deletion stays one (its delete rules changed other objects, which only
            // a rollback takes back): it takes the current values, keeping the base version the
            // store checks the deletion against.
            object.storage = row.values
            object.base = row.values
        } else if mergeChanges && object.lifecycle == .persistent {
            let kept = object.changedKeys.union(setDuringSave).sorted().map { ($0, object.storage[$0]) }
            // Keys changed here that the row changed too since they were read, when the caller
            // keeps conflicts: the base stays, as a merge under `error` keeps it, so that the
            // next save reports them (or its policy resolves them), and a rollback takes the
            // row. (Read again on the row's base, the object's changes overwrote the other
            // side's without a conflict: a name changed here while a save ran replaced the one
            // another save had given the artist meanwhile.)
            let base = object.base
            let conflicting = keepingConflicts && kept.contains { index, _ in
                !handed.contains(index) && relationships[object.entityIndex][index]?.isToMany != true
                    && base.map { row.values[index] != $0[index] } == true
            }
            object.storage = row.values
            if conflicting {
                for index in handed where object.base != nil { object.base![index] = row.values[index] }
                object.mergedRowInConflict = (row.values, row.version)
            } else {
                object.base = row.values
                object.baseVersion = row.version
            }
            object.changedKeys = []
            if object.keysSetDuringSave != nil { object.keysSetDuringSave = setDuringSave }
            for (index, ours) in kept {
                // A to-many list keeps its own additions and removals on top of the row's, as
                // a merge does: kept whole, it listed a song another save had moved away, or
                // dropped an album another save had added, and the save was refused.
                var value = ours
                if relationships[object.entityIndex][index]?.isToMany == true, let read {
                    value = Value.mergedList(base: read[index], ours: ours, theirs: row.values[index])
                }
                guard row.values[index] != value else { continue }
                object.storage[index] = value
                object.changedKeys.insert(index)
            }
        } else {
            // Its relationship changes go, and with them what they did to the other side.
            if object.lifecycle == .persistent { undoInverses(ofRelationshipChangesOf: object, backTo: row.values) }
            object.changedKeys = []
            object.lifecycle = .persistent
            // Objects deleted here stay deleted: the object lets go of them again, as their
            // deletion made it (going back to the parent's row alone, it listed a deleted
            // song, and no save could go through). Otherwise it turns into a fault.
            let deletedHere = relationships[object.entityIndex].indices.filter { index in
                relationships[object.entityIndex][index] != nil
                    && Self.targets(row.values[index]).contains { registered[$0]?.lifecycle == .deleted }
            }
            if deletedHere.isEmpty {
                object.isLoaded = false
                object.storage = []
                object.base = nil
            } else {
                // (Set directly, not as a change made now: what the context shows of these keys
                // did not change, and is not reported as if it had.)
                object.storage = row.values
                object.base = row.values
                object.baseVersion = row.version
                for index in deletedHere {
                    let kept = Self.targets(row.values[index]).filter { registered[$0]?.lifecycle != .deleted }
                    let toMany = relationships[object.entityIndex][index]!.isToMany
                    object.storage[index] = toMany ? .objects(kept) : kept.first.map(Value.object) ?? .null
                    object.changedKeys.insert(index)
                }
            }
        }
        setTracking(object)
        touch(object)
        if (object.isLoaded ? object.storage : row.values) != before { pendingNotification.refreshed.insert(object.objectID) }
        // Read again as the parent shows it, as a load reads it: what it names that is a
        // tombstone here the parent shows again comes back at the end of the turn. (An album
        // read again for a song's inverse named its artist again, which a refresh had found
        // deleted in the parent before the parent rolled the deletion back.)
        if object.isLoaded { noteTombstones(namedBy: row.values, of: object.entityIndex) }
    }

    /// Takes back, on the other side of each relationship `object` changed, what the change
    /// did there: the objects it left get it back and the objects it joined lose it, as if
    /// its relationships were set back to `values` (the row the object goes back to). A
    /// related object whose relationship ends as it began (the same objects) takes its
    /// original order back too, and with it no change. Without this, dropping the object's
    /// changes left the other sides changed, and no save could go through.
    private func undoInverses(ofRelationshipChangesOf object: ManagedObject, backTo values: [Value]) {
        let infos = relationships[object.entityIndex]
        for index in object.changedKeys.sorted() {
            guard let info = infos[index] else { continue }
            let current = Self.targets(object.storage[index])
            let original = Self.targets(values[index])
            let originalSet = Set(original), currentSet = Set(current)
            var touched: [ManagedObject] = []
            for id in current where !originalSet.contains(id) {
                let target = self.object(with: id)
                removeInverse(of: object.objectID, from: target, at: info.inverseIndex)
                touched.append(target)
            }
            for id in original where !currentSet.contains(id) {
                let target = self.object(with: id)
                load(target)
                guard target.lifecycle == .inserted || target.lifecycle == .persistent else { continue }
                addInverse(object, to: target, at: info.inverseIndex, forwardIndex: index)
                touched.append(target)
            }
            for target in touched where target.lifecycle == .persistent {
                guard let base = target.base?[info.inverseIndex], target.storage[info.inverseIndex] != base,
                      Set(Self.targets(target.storage[info.inverseIndex])) == Set(Self.targets(base)) else { continue }
                setPrimitive(target, index: info.inverseIndex, value: base)
            }
        }
    }
}
