/// The result of an inferred step, computed row by row while it is written: a
/// ``CheckpointSource`` over the older store's objects, so that an inferred step holds no
/// second copy of the store — its memory is the checkpoint writer's batch.
///
/// Its ``problems(limit:progress:)`` checks, in one pass over the source, what an inferred
/// step can break: required values and limits of the new attributes, unique values where a
/// value could newly repeat, required relationships. Inverses and references need no check:
/// an inferred step keeps every object's number and every relationship's contents, and pairs
/// each relationship with its old inverse (one re-paired is not inferable), so the older
/// store's own checks guarantee they agree. Dry runs run the same check, so that they report
/// what the migration would.
struct InferredContents: CheckpointSource {
    let source: Generation
    let step: MigrationStep

    var lastTransaction: UInt64 { source.transaction }

    /// Every destination entity's highest number: its source entity's (deleted objects
    /// included), or a source entity's of its name (see ``MigrationStep/highestNumberCarried(into:from:)``).
    var highestObjectNumbers: [String: UInt64] {
        var result: [String: UInt64] = [:]
        for d in step.destination.entities.indices {
            let highest = step.highestNumberCarried(into: d, from: source)
            if highest > 0 { result[step.destination.entities[d].name] = highest }
        }
        return result
    }

    func forEachRow(_ body: (RowImage) throws -> Void) rethrows {
        let mapping = step.mapping
        let renames = mapping.renamedEntities
        for d in step.destination.entities.indices {
            guard let s = mapping.entities[d].source else { continue }
            let name = step.destination.layout.entityNames[d]
            try source.tables[s].forEach { number, row in
                try body(RowImage(id: ObjectID(entityName: name, number: number),
                                  values: mapping.destinationValues(of: row.values, entity: d, renames: renames)))
            }
        }
    }

    /// The objects the step writes: those of every entity it keeps (a removed entity's are dropped).
    var objectCount: Int {
        step.mapping.entities.reduce(0) { sum, mapping in sum + (mapping.source.map { source.tables[$0].count } ?? 0) }
    }

    /// Objects per destination entity, in schema order.
    var objectCounts: [Int] { step.mapping.entities.map { $0.source.map { source.tables[$0].count } ?? 0 } }

    /// What would break the new schema's rules, with the change behind each (at most
    /// `limit`), in the order ``Generation/integrityProblems(limit:)`` would list them in the
    /// result — a repeated unique value names the lowest-numbered object holding it.
    ///
    /// `progress` hears (entity, objects done, objects in all) as a custom step's validation
    /// reports it: at the start and the end (no entity), and every
    /// ``StepExecution/progressInterval`` objects. When `cancellation` is set at one of those
    /// moments the pass stops early: the caller must then not use what it returns.
    func problems(
        limit: Int = StepExecution.problemLimit, cancellation: CancellationFlag? = nil, progress: (String?, Int, Int) -> Void
    ) -> [ValidationProblem] {
        var stopped = false
        let mapping = step.mapping
        var problems: [ValidationProblem] = []
        let total = objectCount
        var done = 0
        progress(nil, 0, total)
        defer { progress(nil, done, total) }
        for (d, entity) in step.destination.entities.enumerated() {
            guard let s = mapping.entities[d].source else { continue }
            let sourceEntity = step.source.entities[s]
            let properties = mapping.entities[d].properties
            let attributeCount = entity.attributes.count
            // Attributes whose values may differ from a valid value of the same definition.
            let checked = entity.attributes.indices.filter { a in
                guard case .copy(let i) = properties[a], case .attribute(let old) = sourceEntity.property(at: i) else { return true }
                var same = old
                same.name = entity.attributes[a].name
                same.renamedFrom = entity.attributes[a].renamedFrom
                same.isIndexed = entity.attributes[a].isIndexed
                same.defaultValue = entity.attributes[a].defaultValue
                return same != entity.attributes[a]
            }
            // A unique attribute needs checking unless it copies an attribute that was unique.
            let unique = entity.attributes.firstIndex(where: \.isUnique).flatMap { u -> Int? in
                if case .copy(let i) = properties[u], case .attribute(let old) = sourceEntity.property(at: i), old.isUnique { return nil }
                return u
            }
            let required = entity.relationships.indices.filter { !entity.relationships[$0].isOptional }.map { attributeCount + $0 }
            guard !checked.isEmpty || unique != nil || !required.isEmpty else {
                done += source.tables[s].count
                continue
            }
            var seen: [Value: UInt64] = [:]
            let name = step.destination.layout.entityNames[d]
            source.tables[s].forEach { number, row in
                guard problems.count < limit, !stopped else { return }
                let values = mapping.destinationValues(of: row.values, entity: d, renames: nil, relationships: .asIs)
                let id = ObjectID(entityName: name, number: number)
                func add(_ key: String, _ message: String) {
                    problems.append(ValidationProblem(problem: Generation.IntegrityProblem(object: id, key: key, message: message),
                                                      cause: mapping.change(entity: entity.name, key: key, problem: message)))
                }
                for a in checked {
                    if let problem = AttributeCheck.problem(with: values[a], for: entity.attributes[a]) { add(entity.attributes[a].name, problem) }
                }
                if let u = unique, !values[u].isNull {
                    // Objects are visited in number order: the first holder is the lowest-numbered.
                    if let other = seen[values[u]] {
                        add(entity.attributes[u].name, "unique value \(values[u]) is also used by \(entity.name)/\(other)")
                    } else {
                        seen[values[u]] = number
                    }
                }
                for r in required where CommitPlan.targets(values[r]).isEmpty {
                    add(entity.relationships[r - attributeCount].name, "the relationship is required but empty")
                }
                done += 1
                if done % StepExecution.progressInterval == 0 {
                    progress(entity.name, done, total)
                    stopped = cancellation?.isCancelled ?? false
                }
            }
            if problems.count >= limit || stopped { break }
        }
        return Array(problems.prefix(limit))
    }
}
