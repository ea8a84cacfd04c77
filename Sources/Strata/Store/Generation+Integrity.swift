// MARK: - Integrity

extension Generation {
    /// A broken invariant found by ``integrityProblems(limit:)``.
    public struct IntegrityProblem: Sendable, Hashable, CustomStringConvertible {
        /// The object at fault.
        public var object: ObjectID
        /// The key at fault.
        public var key: String
        /// What is wrong.
        public var message: String
        public var description: String { "\(object).\(key): \(message)" }
    }

    /// Checks every object: required values and attribute limits, references to existing
    /// objects, inverse relationships that agree, and unique attributes used once.
    /// - Parameter limit: stop after this many problems.
    /// - Returns: the problems found, in a stable order (empty when the state is sound).
    public func integrityProblems(limit: Int = 100) -> [IntegrityProblem] {
        var problems: [IntegrityProblem] = []
        func add(_ id: ObjectID, _ key: String, _ message: String) -> Bool {
            problems.append(IntegrityProblem(object: id, key: key, message: message))
            return problems.count >= limit
        }
        for (index, entity) in schema.entities.enumerated() {
            var uniqueSeen: [Value: UInt64] = [:]
            let uniqueIndex = entity.attributes.firstIndex(where: \.isUnique)
            for (number, row) in tables[index] {
                let id = ObjectID(entityName: schema.layout.entityNames[index], number: number)
                for (i, attribute) in entity.attributes.enumerated() {
                    if let problem = AttributeCheck.problem(with: row.values[i], for: attribute), add(id, attribute.name, problem) {
                        return problems
                    }
                }
                if let u = uniqueIndex, !row.values[u].isNull {
                    if let other = uniqueSeen[row.values[u]] {
                        if add(id, entity.attributes[u].name, "unique value \(row.values[u]) is also used by \(entity.name)/\(other)") { return problems }
                    } else {
                        uniqueSeen[row.values[u]] = number
                    }
                }
                for (offset, relationship) in entity.relationships.enumerated() {
                    let targets = CommitPlan.targets(row.values[entity.attributes.count + offset])
                    if targets.isEmpty && !relationship.isOptional {
                        if add(id, relationship.name, "the relationship is required but empty") { return problems }
                    }
                    let destination = schema.entity(named: relationship.destination)!
                    let inverseIndex = destination.propertyIndex(named: relationship.inverse)!
                    if targets.count > 1, Set(targets).count != targets.count {
                        if add(id, relationship.name, "lists an object twice") { return problems }
                    }
                    for target in targets {
                        guard let other = object(target) else {
                            if add(id, relationship.name, "refers to \(target), which does not exist") { return problems }
                            continue
                        }
                        if !CommitPlan.targets(other.values[inverseIndex]).contains(id) {
                            if add(id, relationship.name, "refers to \(target), but \(target).\(relationship.inverse) does not refer back") {
                                return problems
                            }
                        }
                    }
                }
            }
        }
        return problems
    }
}
