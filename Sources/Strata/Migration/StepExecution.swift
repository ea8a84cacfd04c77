/// Runs one migration step over a store's objects: the first pass creates every destination
/// object (inferred copies and custom transforms), the second establishes relationships
/// (carried over, then the step's links), then the result is validated in one pass over the
/// destination.
///
/// The destination objects are written to a temporary file as they are made
/// (``MigrationSpill``), not held in memory, and so is the bookkeeping — the spill's index,
/// the unique values, which objects each source object became — behind a page cache of fixed
/// size: what the step holds in memory is that cache and a batch of rows. Nothing is
/// written to the store here; the caller writes the result (``StepContents``) only once it
/// is valid, and removes the spill.
struct StepExecution {
    let step: MigrationStep
    let source: Generation
    let stepNumber: Int
    let stepCount: Int
    let progress: (@Sendable (MigrationProgress) -> Void)?
    let awakening: AwakeFromInsert?
    /// Where the destination objects are kept while the step runs.
    let spillDirectory: String
    let spillIO: any FileIO
    /// The pages of the step's bookkeeping kept in memory.
    var cachedIndexPages = PagedSlots.defaultCachedPages
    /// Set when the task running the migration is cancelled; looked at where progress is
    /// reported (the step then throws `cancelled`).
    var cancellation: CancellationFlag?
    /// How often progress is reported, in objects.
    static let progressInterval = 10_000
    /// The most validation problems a step reports.
    static let problemLimit = 100

    /// What a step produced and found.
    struct Outcome {
        /// The destination objects; the caller removes its spill when done with it.
        var contents: StepContents
        /// Validation problems (empty when the result is valid), each with its cause.
        var problems: [(problem: Generation.IntegrityProblem, cause: SchemaChange?)]
        /// Source objects a transform made nothing from.
        var dropped: Int
    }

    private func report(_ phase: MigrationProgress.Phase, _ entity: String?, _ completed: Int, _ total: Int) {
        progress?(MigrationProgress(step: step.name, stepNumber: stepNumber, stepCount: stepCount, phase: phase,
                                    entity: entity, completed: completed, total: total))
    }

    /// Whether the task running the migration was cancelled.
    private var isCancelled: Bool { cancellation?.isCancelled ?? false }

    /// Throws `cancelled` if the task running the migration was cancelled.
    private func checkCancellation() throws(MigrationError) {
        if isCancelled { throw MigrationError.cancelled(step: step.name) }
    }

    /// Runs the step; throws only for transform failures (and failures of the spill file),
    /// returns validation problems. On a throw the spill is already removed.
    func run() throws(MigrationError) -> Outcome {
        let spill: MigrationSpill
        do throws(StoreError) {
            spill = try MigrationSpill(directory: spillDirectory, schema: step.destination, io: spillIO, cachedPages: cachedIndexPages)
        } catch {
            throw MigrationError.store(error, step: step.name, "starting the step")
        }
        do throws(MigrationError) {
            return try run(spill)
        } catch {
            spill.remove()
            throw error
        }
    }

    private func run(_ spill: MigrationSpill) throws(MigrationError) -> Outcome {
        let mapping = step.mapping
        let awakened = Set(awakening?.entities(in: step.destination) ?? [])
        let destination = MigrationDestination(step: step, source: source, awakenedEntities: awakened, spill: spill)
        let sourceSchema = step.source
        let isTransformed = sourceSchema.entities.map { step.transforms[$0.name] != nil }
        let remapsInline = !isTransformed.contains(true)
        var dropped = 0

        // Pass 1: every destination object.
        for (s, sourceEntity) in sourceSchema.entities.enumerated() {
            let total = source.tables[s].count
            var done = 0
            var failure: MigrationError?
            if let transform = step.transforms[sourceEntity.name] {
                let name = sourceSchema.layout.entityNames[s]
                source.tables[s].forEach { number, row in
                    guard failure == nil else { return }
                    let object = MigrationSourceObject(id: ObjectID(entityName: name, number: number), values: row.values,
                                                       reader: destination.reader, entityIndex: s)
                    destination.current = object
                    do {
                        try transform(object, destination)
                    } catch let error as MigrationError {
                        failure = error.naming(object.id, entity: sourceEntity.name)
                    } catch {
                        failure = MigrationError(.transformFailed, "the transform threw: \(error)", step: step.name,
                                                 entity: sourceEntity.name, object: object.id)
                    }
                    if failure == nil {
                        do throws(MigrationError) { try destination.checkSpill() } catch { failure = error }
                    }
                    if destination.isDropped(object.id) { dropped += 1 }
                    if failure == nil, let awakening, destination.awaitingAwake.count >= AwakeFromInsert.batchSize {
                        do throws(MigrationError) { try awakening.apply(to: destination) } catch { failure = error }
                    }
                    done += 1
                    if done % Self.progressInterval == 0 {
                        report(.transforming, sourceEntity.name, done, total)
                        if failure == nil, isCancelled { failure = .cancelled(step: step.name) }
                    }
                }
                destination.current = nil
            } else if let d = mapping.destinationOfSource[s] {
                let renames = mapping.renamedEntities
                source.tables[s].forEach { number, row in
                    guard failure == nil else { return }
                    let values = mapping.destinationValues(of: row.values, entity: d, renames: renames,
                                                            relationships: remapsInline ? .renamed : .empty)
                    do throws(MigrationError) { try destination.writeRow(d, number, values, old: nil) } catch { failure = error }
                    done += 1
                    if done % Self.progressInterval == 0 {
                        report(.transforming, sourceEntity.name, done, total)
                        if failure == nil, isCancelled { failure = .cancelled(step: step.name) }
                    }
                }
            }
            if var failure {
                if failure.step == nil { failure.step = step.name }
                throw failure
            }
            report(.transforming, sourceEntity.name, done, total)
            try checkCancellation()
        }
        if let awakening { try awakening.apply(to: destination) }

        // Pass 2: relationships.
        if !remapsInline {
            try carryOverRelationships(destination, isTransformed: isTransformed)
        }
        for (entity, link) in step.links {
            let index = step.destination.entityIndex(named: entity)!
            let name = step.destination.layout.entityNames[index]
            let total = spill.count(of: index)
            for (k, number) in spill.numbers(of: index).enumerated() {
                let id = ObjectID(entityName: name, number: number)
                do {
                    try link(id, destination)
                } catch let error as MigrationError {
                    var error = error.naming(id, entity: entity)
                    if error.step == nil { error.step = step.name }
                    throw error
                } catch {
                    throw MigrationError(.transformFailed, "the link threw: \(error)", step: step.name, entity: entity, object: id)
                }
                try destination.checkSpill()
                if let awakening, destination.awaitingAwake.count >= AwakeFromInsert.batchSize { try awakening.apply(to: destination) }
                if (k + 1) % Self.progressInterval == 0 {
                    report(.linking, entity, k + 1, total)
                    try checkCancellation()
                }
            }
            report(.linking, entity, total, total)
            try checkCancellation()
        }
        // The rest of the objects links inserted.
        if let awakening { try awakening.apply(to: destination) }

        // Validation.
        var problems = try integrityProblems(destination, limit: Self.problemLimit).map { problem in
            (problem, mapping.change(entity: problem.object.entity, key: problem.key, problem: problem.message))
        }
        try checkCancellation()
        // One limit for both kinds: a failure lists at most `problemLimit` problems in all.
        if problems.count < Self.problemLimit { problems += deleteRuleProblems(destination, limit: Self.problemLimit - problems.count) }
        try destination.checkSpill()
        try checkCancellation()
        do throws(StoreError) { try spill.flush() } catch {
            throw MigrationError.store(error, step: step.name, "writing the step's new objects")
        }
        // Numbers are never reused: carry every source entity's highest number over.
        var highest = destination.highestNumbers
        for d in highest.indices { highest[d] = max(highest[d], step.highestNumberCarried(into: d, from: source)) }
        var highestByName: [String: UInt64] = [:]
        for (d, entity) in step.destination.entities.enumerated() where highest[d] > 0 { highestByName[entity.name] = highest[d] }
        let contents = StepContents(spill: spill, schema: step.destination, lastTransaction: source.transaction,
                                    highestObjectNumbers: highestByName)
        return Outcome(contents: contents, problems: problems, dropped: dropped)
    }

    /// The destination objects of entity `d` that the source object `target` became.
    private func remap(_ target: ObjectID, to d: Int, _ destination: MigrationDestination, isTransformed: [Bool]) -> [ObjectID] {
        let name = step.destination.layout.entityNames[d]
        guard let s = step.source.entityIndex(of: target) else { return [] }
        if let made = destination.madeObjects(s, target.number) { return made.filter { $0.entityKey == name.key } }
        guard !isTransformed[s], step.mapping.destinationOfSource[s] == d else { return [] }
        return [ObjectID(entityName: name, number: target.number)]
    }

    /// Fills relationships from the source objects, following the objects related objects became.
    ///
    /// To-many lists keep the source's order. Carried-over objects are written directly (both
    /// sides come from the source, so they agree). Objects a transform made go through
    /// ``MigrationDestination/setRelationship(_:at:of:entity:filledInverse:)``, which keeps
    /// inverses in step and so fills the inverse of a made object not reached yet, in the
    /// order the objects are reached; each such fill is marked, so that when that object is
    /// reached the relationship still counts as one its transform left empty and gets the
    /// source's order (objects that joined it only through an inverse stay, after those).
    private func carryOverRelationships(_ destination: MigrationDestination, isTransformed: [Bool]) throws(MigrationError) {
        let schema = step.destination
        let slots = destination.spill.slots
        // Per destination entity, by number × property count + property: relationships first
        // filled through an inverse in this pass, and made objects' relationships carried over
        // from their source object in it.
        let filledThroughInverse = schema.entities.map { _ in slots.makeArea() }
        func slotIndex(_ entity: Int, _ number: UInt64, _ property: Int) -> UInt64 {
            number * UInt64(schema.entities[entity].propertyCount) + UInt64(property)
        }
        func markFilled(_ entity: Int, _ number: UInt64, _ property: Int) {
            slots.setSlot(filledThroughInverse[entity], slotIndex(entity, number, property), PagedSlots.Slot(first: 1, second: 0))
        }
        func leftEmpty(_ entity: Int, _ number: UInt64, _ property: Int, _ targets: [ObjectID], toMany: Bool) -> Bool {
            targets.isEmpty || (toMany && !slots.slot(filledThroughInverse[entity], slotIndex(entity, number, property)).isEmpty)
        }
        for (d, entity) in schema.entities.enumerated() where !entity.relationships.isEmpty {
            let mapping = step.mapping.entities[d]
            let attributeCount = entity.attributes.count
            let destinations = entity.relationships.map { schema.entityIndex(named: $0.destination)! }
            let numbers = destination.spill.numbers(of: d)
            let inverses = entity.relationships.enumerated().map { r, relationship in
                schema.entities[destinations[r]].propertyIndex(named: relationship.inverse)!
            }
            // Carried-over objects: their relationships, followed to what the related objects became.
            // What a transform set on a made object wins over the source: a made object whose
            // side of the relationship its transform set elsewhere (not filled in this pass,
            // which marks what it fills) is left out, and objects
            // that joined through a transform's inverse (all the carried-over object holds
            // before this pass) stay, after the source's.
            if let s = mapping.source {
                let name = schema.layout.entityNames[d]
                for number in numbers where destination.origin(d, number) == nil {
                    guard let sourceRow = source.tables[s][number], let row = try destination.row(d, number) else { continue }
                    let id = ObjectID(entityName: name, number: number)
                    var changes: [(index: Int, value: Value)] = []
                    for (r, relationship) in entity.relationships.enumerated() {
                        guard case .copy(let i) = mapping.properties[attributeCount + r] else { continue }
                        var targets: [ObjectID] = []
                        for old in CommitPlan.targets(sourceRow.values[i]) {
                            for target in remap(old, to: destinations[r], destination, isTransformed: isTransformed) {
                                let e = destinations[r]
                                if destination.origin(e, target.number) != nil,
                                    slots.slot(filledThroughInverse[e], slotIndex(e, target.number, inverses[r])).isEmpty,
                                    let other = try destination.row(e, target.number)
                                {
                                    let side = CommitPlan.targets(other[inverses[r]])
                                    if !side.isEmpty && !side.contains(id) { continue }
                                }
                                targets.append(target)
                            }
                        }
                        let current = CommitPlan.targets(row[attributeCount + r])
                        if relationship.isToMany {
                            let listed = Set(targets)
                            changes.append((attributeCount + r, .objects(Self.unique(targets + current.filter { !listed.contains($0) }))))
                        } else {
                            changes.append((attributeCount + r, (current.first ?? targets.first).map { .object($0) } ?? .null))
                        }
                    }
                    if !changes.isEmpty { try destination.updateRow(d, number, changes) }
                }
            }
            // Objects a transform made: relationships it left empty follow the source object's
            // relationship, matched as an inferred step matches them (so one taking a renamed
            // relationship's old name starts empty).
            var carriedFrom: [Int: [Int?]] = [:]  // per source entity: per relationship, the old relationship's index
            for number in numbers {
                guard let origin = destination.origin(d, number), let s = step.source.entityIndex(of: origin),
                    let sourceRow = source.tables[s][origin.number]
                else { continue }
                let oldIndexes = carriedFrom[s] ?? {
                    let old = step.source.entities[s]
                    let sources = InferredMapping.propertySources(of: entity, from: old)
                    let indexes = entity.relationships.indices.map { r in sources[attributeCount + r].flatMap { $0 >= old.attributes.count ? $0 : nil } }
                    carriedFrom[s] = indexes
                    return indexes
                }()
                guard oldIndexes.contains(where: { $0 != nil }), let row = try destination.row(d, number) else { continue }
                let id = ObjectID(entityName: schema.layout.entityNames[d], number: number)
                for (r, relationship) in entity.relationships.enumerated() {
                    let index = attributeCount + r
                    guard let oldIndex = oldIndexes[r],
                        leftEmpty(d, number, index, CommitPlan.targets(row[index]), toMany: relationship.isToMany)
                    else { continue }
                    let targets = Self.unique(CommitPlan.targets(sourceRow.values[oldIndex]).flatMap {
                        remap($0, to: destinations[r], destination, isTransformed: isTransformed)
                    })
                    guard !targets.isEmpty else { continue }
                    // Set meanwhile through an inverse (a relationship to its own entity)?
                    let current = CommitPlan.targets(try destination.row(d, number)![index])
                    guard leftEmpty(d, number, index, current, toMany: relationship.isToMany) else { continue }
                    let listed = Set(targets)
                    let list = targets + current.filter { !listed.contains($0) }
                    guard list != current else { continue }
                    try destination.setRelationship(relationship.isToMany ? .objects(list) : .object(list[0]),
                                                    at: index, of: id, entity: d, filledInverse: markFilled)
                    // Carried, not set by the transform: carried-over objects do not defer to it.
                    markFilled(d, number, index)
                }
            }
        }
    }

    private static func unique(_ ids: [ObjectID]) -> [ObjectID] {
        guard ids.count > 1 else { return ids }
        var seen = Set<ObjectID>()
        return ids.filter { seen.insert($0).inserted }
    }

    /// The new schema's rules the destination breaks, in one pass over it (entity by entity,
    /// in number order), as ``Generation/integrityProblems(limit:)`` finds them in a
    /// generation: required values, limits, unique values, objects listed twice, references
    /// and inverses. A relationship's inverse is checked by reading the related object's
    /// newest record.
    private func integrityProblems(_ destination: MigrationDestination, limit: Int) throws(MigrationError) -> [Generation.IntegrityProblem] {
        let schema = step.destination
        let spill = destination.spill
        var problems: [Generation.IntegrityProblem] = []
        let total = schema.entities.indices.reduce(0) { $0 + spill.count(of: $1) }
        report(.validating, nil, 0, total)
        var done = 0
        do throws(StoreError) {
            for (index, entity) in schema.entities.enumerated() {
                let unique = entity.attributes.firstIndex(where: \.isUnique)
                let attributeCount = entity.attributes.count
                let relationships = entity.relationships.map { relationship in
                    let target = schema.entityIndex(named: relationship.destination)!
                    return (relationship, target, schema.entities[target].propertyIndex(named: relationship.inverse)!)
                }
                try spill.forEach(of: index) { number, values throws(StoreError) -> Bool in
                    let id = ObjectID(entityName: schema.layout.entityNames[index], number: number)
                    func add(_ key: String, _ message: String) -> Bool {
                        problems.append(Generation.IntegrityProblem(object: id, key: key, message: message))
                        return problems.count < limit
                    }
                    for (i, attribute) in entity.attributes.enumerated() {
                        if let problem = AttributeCheck.problem(with: values[i], for: attribute), !add(attribute.name, problem) { return false }
                    }
                    if let u = unique, !values[u].isNull, let first = destination.lowestHolder(of: values[u], entity: index, holder: number), first != number {
                        if !add(entity.attributes[u].name, "unique value \(values[u]) is also used by \(entity.name)/\(first)") { return false }
                    }
                    for (offset, (relationship, target, inverse)) in relationships.enumerated() {
                        let targets = CommitPlan.targets(values[attributeCount + offset])
                        if targets.isEmpty && !relationship.isOptional {
                            if !add(relationship.name, "the relationship is required but empty") { return false }
                        }
                        // A link may set any list; the store refuses one naming an object twice.
                        if targets.count > 1, Set(targets).count != targets.count {
                            if !add(relationship.name, "lists an object twice") { return false }
                        }
                        for other in targets {
                            guard other.entity == schema.entities[target].name, let otherValues = try spill.values(target, other.number) else {
                                if !add(relationship.name, "refers to \(other), which does not exist") { return false }
                                continue
                            }
                            if !CommitPlan.targets(otherValues[inverse]).contains(id) {
                                if !add(relationship.name, "refers to \(other), but \(other).\(relationship.inverse) does not refer back") {
                                    return false
                                }
                            }
                        }
                    }
                    done += 1
                    if done % Self.progressInterval == 0 {
                        report(.validating, entity.name, done, total)
                        if isCancelled { return false }  // the caller throws `cancelled`
                    }
                    return true
                }
                if problems.count >= limit || isCancelled { break }
            }
        } catch {
            throw MigrationError.store(error, step: step.name, "reading the step's new objects")
        }
        report(.validating, nil, done, total)
        return problems
    }

    /// Delete rules of source objects a transform dropped: `deny` refuses while they refer
    /// to objects that are kept; `cascade` requires what they refer to be dropped too.
    private func deleteRuleProblems(
        _ destination: MigrationDestination, limit: Int
    ) -> [(problem: Generation.IntegrityProblem, cause: SchemaChange?)] {
        var problems: [(problem: Generation.IntegrityProblem, cause: SchemaChange?)] = []
        for (s, entity) in step.source.entities.enumerated() where step.transforms[entity.name] != nil {
            let rules = entity.relationships.enumerated().filter { $0.element.deleteRule != .nullify }
            guard !rules.isEmpty else { continue }
            source.tables[s].forEach { number, row in
                guard problems.count < limit else { return }
                let id = ObjectID(entityName: step.source.layout.entityNames[s], number: number)
                guard destination.isDropped(id) else { return }
                for (r, relationship) in rules {
                    let kept = CommitPlan.targets(row.values[entity.attributes.count + r]).filter { !destination.isDropped($0) }
                    guard let first = kept.first else { continue }
                    // What kept the target: its entity's transform, or (without one) the step,
                    // which carries every object of such an entity over.
                    let keeper = step.transforms[first.entity] != nil
                        ? "the transform for \(first.entity) kept it"
                        : "\(first.entity) has no transform, so its objects are carried over (give it one that drops \(first))"
                    let message = relationship.deleteRule == .deny
                        ? "the transform dropped the object, but its delete rule is deny and it refers to \(first), which is kept"
                        : "the transform dropped the object, so its cascade delete rule drops \(first) too, but \(keeper)"
                    problems.append((Generation.IntegrityProblem(object: id, key: relationship.name, message: message), nil))
                    if problems.count >= limit { return }
                }
            }
            if problems.count >= limit { break }
        }
        return problems
    }
}
