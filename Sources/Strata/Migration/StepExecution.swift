/// Runs one migration step over a store's objects, in memory: the first pass creates every
/// destination object (inferred copies and custom transforms), the second establishes
/// relationships (carried over, then the step's links), then the result is validated.
/// Nothing is written here; the caller writes the result only once it is valid.
struct StepExecution {
    let step: MigrationStep
    let source: Generation
    let stepNumber: Int
    let stepCount: Int
    let progress: (@Sendable (MigrationProgress) -> Void)?
    let awakening: AwakeFromInsert?
    /// How often progress is reported, in objects.
    static let progressInterval = 10_000

    /// What a step produced and found.
    struct Outcome {
        var generation: Generation
        /// Validation problems (empty when the result is valid), each with its cause.
        var problems: [(problem: Generation.IntegrityProblem, cause: SchemaChange?)]
        /// Source objects a transform made nothing from.
        var dropped: Int
    }

    private func report(_ phase: MigrationProgress.Phase, _ entity: String?, _ completed: Int, _ total: Int) {
        progress?(MigrationProgress(step: step.name, stepNumber: stepNumber, stepCount: stepCount, phase: phase,
                                    entity: entity, completed: completed, total: total))
    }

    /// Runs the step; throws only for transform failures, returns validation problems.
    func run() throws(MigrationError) -> Outcome {
        let mapping = step.mapping
        let awakened = Set(awakening?.entities(in: step.destination) ?? [])
        let destination = MigrationDestination(step: step, source: source, awakenedEntities: awakened)
        let sourceSchema = step.source
        let isTransformed = sourceSchema.entities.map { step.transforms[$0.name] != nil }
        let remapsInline = !isTransformed.contains(true)
        var dropped: [ObjectID] = []

        // Pass 1: every destination object.
        for (s, sourceEntity) in sourceSchema.entities.enumerated() {
            let total = source.tables[s].count
            var done = 0
            if let transform = step.transforms[sourceEntity.name] {
                var failure: MigrationError?
                source.tables[s].forEach { number, row in
                    guard failure == nil else { return }
                    let object = MigrationSourceObject(id: ObjectID(entity: sourceEntity.name, number: number), values: row.values,
                                                       reader: destination.reader, entityIndex: s)
                    destination.current = object
                    do {
                        try transform(object, destination)
                    } catch let error as MigrationError {
                        failure = error
                    } catch {
                        failure = MigrationError(.transformFailed, "the transform threw: \(error)", step: step.name,
                                                 entity: sourceEntity.name, object: object.id)
                    }
                    if destination.madeFrom[object.id] == nil { dropped.append(object.id) }
                    done += 1
                    if done % Self.progressInterval == 0 { report(.transforming, sourceEntity.name, done, total) }
                }
                destination.current = nil
                if var failure {
                    if failure.step == nil { failure.step = step.name }
                    throw failure
                }
            } else if let d = mapping.destinationOfSource[s] {
                let name = step.destination.entities[d].name
                let renames = mapping.renamedEntities
                source.tables[s].forEach { number, row in
                    let values = mapping.destinationValues(of: row.values, entity: d, renames: renames,
                                                            relationships: remapsInline ? .renamed : .empty)
                    destination.generation.insertRow(ObjectID(entity: name, number: number), entity: d, values: values, version: 0)
                    done += 1
                    if done % Self.progressInterval == 0 { report(.transforming, sourceEntity.name, done, total) }
                }
            }
            report(.transforming, sourceEntity.name, done, total)
        }
        if let awakening { try awakening.apply(to: destination) }

        // Pass 2: relationships.
        if !remapsInline {
            try carryOverRelationships(destination, isTransformed: isTransformed)
        }
        for (entity, link) in step.links {
            let ids = destination.objects(of: entity)
            for (k, id) in ids.enumerated() {
                do {
                    try link(id, destination)
                } catch let error as MigrationError {
                    var error = error
                    if error.step == nil { error.step = step.name }
                    throw error
                } catch {
                    throw MigrationError(.transformFailed, "the link threw: \(error)", step: step.name, entity: entity, object: id)
                }
                if (k + 1) % Self.progressInterval == 0 { report(.linking, entity, k + 1, ids.count) }
            }
            report(.linking, entity, ids.count, ids.count)
        }

        // Validation.
        report(.validating, nil, 0, destination.generation.totalCount)
        var problems = destination.generation.integrityProblems(limit: 100).map { problem in
            (problem, mapping.change(entity: problem.object.entity, key: problem.key))
        }
        problems += deleteRuleProblems(dropped, destination)
        var generation = destination.generation
        generation.transaction = source.transaction
        // Numbers are never reused: carry every source entity's highest number over.
        for (s, d) in mapping.destinationOfSource.enumerated() {
            if let d, source.highestNumbers[s] > generation.highestNumbers[d] { generation.highestNumbers[d] = source.highestNumbers[s] }
        }
        return Outcome(generation: generation, problems: problems, dropped: dropped.count)
    }

    /// The destination objects of entity `d` that the source object `target` became.
    private func remap(_ target: ObjectID, to d: Int, _ destination: MigrationDestination, isTransformed: [Bool]) -> [ObjectID] {
        let name = step.destination.entities[d].name
        if let made = destination.madeFrom[target] { return made.filter { $0.entity == name } }
        guard let s = step.source.entityIndex(named: target.entity), !isTransformed[s], step.mapping.destinationOfSource[s] == d else {
            return []
        }
        return [ObjectID(entity: name, number: target.number)]
    }

    /// Fills relationships from the source objects, following the objects related objects became.
    private func carryOverRelationships(_ destination: MigrationDestination, isTransformed: [Bool]) throws(MigrationError) {
        let schema = step.destination
        for (d, entity) in schema.entities.enumerated() where !entity.relationships.isEmpty {
            let mapping = step.mapping.entities[d]
            let attributeCount = entity.attributes.count
            let destinations = entity.relationships.map { schema.entityIndex(named: $0.destination)! }
            var updates: [(ObjectID, [PropertyChange])] = []
            var created: [(ObjectID, ObjectID)] = []
            destination.generation.tables[d].forEach { number, row in
                let id = ObjectID(entity: entity.name, number: number)
                if let origin = destination.origin[id] {
                    created.append((id, origin))
                    return
                }
                var changes: [PropertyChange] = []
                for (r, relationship) in entity.relationships.enumerated() {
                    guard case .copy(let i) = mapping.properties[attributeCount + r], let s = mapping.source else { continue }
                    guard let sourceRow = source.tables[s][number] else { continue }
                    let targets = CommitPlan.targets(sourceRow.values[i]).flatMap {
                        remap($0, to: destinations[r], destination, isTransformed: isTransformed)
                    }
                    changes.append(PropertyChange(index: attributeCount + r,
                                                  value: relationship.isToMany ? .objects(Self.unique(targets)) : (targets.first.map { .object($0) } ?? .null)))
                }
                if !changes.isEmpty { updates.append((id, changes)) }
            }
            for (id, changes) in updates { destination.generation.updateRow(id, entity: d, changes: changes, version: 0) }
            // Objects a transform made: relationships it left empty follow the source object's
            // relationship of the same name (or the one it was renamed from).
            // Per source entity: its relationships' names and storage indexes.
            let oldRelationships = step.source.entities.map { old in
                Dictionary(uniqueKeysWithValues: old.relationships.enumerated().map { ($1.name, old.attributes.count + $0) })
            }
            for (id, origin) in created {
                guard let s = step.source.entityIndex(named: origin.entity), !oldRelationships[s].isEmpty,
                    let sourceRow = source.tables[s][origin.number]
                else { continue }
                let row = destination.generation.tables[d][id.number]!
                for (r, relationship) in entity.relationships.enumerated() where CommitPlan.targets(row.values[attributeCount + r]).isEmpty {
                    let oldIndex = relationship.renamedFrom.flatMap { oldRelationships[s][$0] } ?? oldRelationships[s][relationship.name]
                    guard let oldIndex else { continue }
                    let value = sourceRow.values[oldIndex]
                    let targets = Self.unique(CommitPlan.targets(value).flatMap {
                        remap($0, to: destinations[r], destination, isTransformed: isTransformed)
                    })
                    guard !targets.isEmpty else { continue }
                    let current = CommitPlan.targets(destination.generation.tables[d][id.number]!.values[attributeCount + r])
                    guard current.isEmpty else { continue }  // set meanwhile through an inverse
                    try destination.setRelationship(relationship.isToMany ? .objects(targets) : .object(targets[0]),
                                                    at: attributeCount + r, of: id, entity: d)
                }
            }
        }
    }

    private static func unique(_ ids: [ObjectID]) -> [ObjectID] {
        guard ids.count > 1 else { return ids }
        var seen = Set<ObjectID>()
        return ids.filter { seen.insert($0).inserted }
    }

    /// Delete rules of source objects a transform dropped: `deny` refuses while they refer
    /// to objects that are kept; `cascade` requires what they refer to be dropped too.
    private func deleteRuleProblems(
        _ dropped: [ObjectID], _ destination: MigrationDestination
    ) -> [(problem: Generation.IntegrityProblem, cause: SchemaChange?)] {
        guard !dropped.isEmpty else { return [] }
        let droppedSet = Set(dropped)
        var problems: [(problem: Generation.IntegrityProblem, cause: SchemaChange?)] = []
        for id in dropped {
            guard let object = destination.reader.object(id) else { continue }
            let entity = object.entity
            for (r, relationship) in entity.relationships.enumerated() where relationship.deleteRule != .nullify {
                let kept = CommitPlan.targets(object.values[entity.attributes.count + r]).filter { !droppedSet.contains($0) }
                guard let first = kept.first else { continue }
                let message = relationship.deleteRule == .deny
                    ? "the transform dropped the object, but its delete rule is deny and it refers to \(first), which is kept"
                    : "the transform dropped the object, so its cascade delete rule drops \(first) too, but the transform for \(first.entity) kept it"
                problems.append((Generation.IntegrityProblem(object: id, key: relationship.name, message: message), nil))
                if problems.count >= 100 { return problems }
            }
        }
        return problems
    }
}
