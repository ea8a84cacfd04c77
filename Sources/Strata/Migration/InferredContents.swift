/// The result of an inferred step, computed row by row while it is written: a
/// ``CheckpointSource`` over the older store's objects, so that an inferred step holds no
/// second copy of the store — its memory is the checkpoint writer's batch.
///
/// Its ``problems(limit:)`` checks, in one pass over the source, what an inferred step can
/// break: required values and limits of the new attributes, unique values where a value
/// could newly repeat, required relationships. Inverses and references need no check: an
/// inferred step keeps every object's number and every relationship's contents, and the
/// older store's own checks guarantee they agree.
struct InferredContents: CheckpointSource {
    let source: Generation
    let step: MigrationStep

    var lastTransaction: UInt64 { source.transaction }

    /// Every destination entity's highest number: its source entity's (deleted objects included).
    var highestObjectNumbers: [String: UInt64] {
        var result: [String: UInt64] = [:]
        for (d, mapping) in step.mapping.entities.enumerated() {
            if let s = mapping.source, source.highestNumbers[s] > 0 {
                result[step.destination.entities[d].name] = source.highestNumbers[s]
            }
        }
        return result
    }

    func forEachRow(_ body: (RowImage) throws -> Void) rethrows {
        let mapping = step.mapping
        let renames = mapping.renamedEntities
        for (d, entity) in step.destination.entities.enumerated() {
            guard let s = mapping.entities[d].source else { continue }
            let name = entity.name
            try source.tables[s].forEach { number, row in
                try body(RowImage(id: ObjectID(entity: name, number: number),
                                  values: mapping.destinationValues(of: row.values, entity: d, renames: renames)))
            }
        }
    }

    /// What would break the new schema's rules, with the change behind each (at most `limit`).
    func problems(limit: Int = 100, progress: (String, Int, Int) -> Void) -> [ValidationProblem] {
        let mapping = step.mapping
        var problems: [ValidationProblem] = []
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
            guard !checked.isEmpty || unique != nil || !required.isEmpty else { continue }
            var seen: [Value: UInt64] = [:]
            let total = source.tables[s].count
            var done = 0
            source.tables[s].forEach { number, row in
                guard problems.count < limit else { return }
                let values = mapping.destinationValues(of: row.values, entity: d, renames: nil, relationships: .asIs)
                let id = ObjectID(entity: entity.name, number: number)
                func add(_ key: String, _ message: String) {
                    problems.append(ValidationProblem(problem: Generation.IntegrityProblem(object: id, key: key, message: message),
                                                      cause: mapping.change(entity: entity.name, key: key)))
                }
                for a in checked {
                    if let problem = AttributeCheck.problem(with: values[a], for: entity.attributes[a]) { add(entity.attributes[a].name, problem) }
                }
                if let u = unique, !values[u].isNull {
                    if let other = seen.updateValue(number, forKey: values[u]) {
                        add(entity.attributes[u].name, "unique value \(values[u]) is also used by \(entity.name)/\(other)")
                    }
                }
                for r in required where CommitPlan.targets(values[r]).isEmpty {
                    add(entity.relationships[r - attributeCount].name, "the relationship is required but empty")
                }
                done += 1
                if done % StepExecution.progressInterval == 0 { progress(entity.name, done, total) }
            }
            if problems.count >= limit { break }
        }
        return Array(problems.prefix(limit))
    }
}
