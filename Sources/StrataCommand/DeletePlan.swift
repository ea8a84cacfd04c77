import Strata

/// The change set that deletes objects with their relationships' delete rules applied:
/// `cascade` deletes the related objects too (with their own rules), `nullify` takes the
/// deleted objects out of the related objects' inverses, `deny` refuses the whole delete
/// while the relationship refers to an object that is not deleted with it.
struct DeletePlan {
    /// Every object deleted (those asked for, then those cascaded to), in order.
    private(set) var deleted: [ObjectID] = []
    /// The deletions and the related objects' updates.
    private(set) var changes = ChangeSet(author: "strata delete")

    /// - Throws: ``StoreError/Code/deleteRule`` naming the rule, the object and every object
    ///   in the way when a `deny` rule forbids the delete.
    init(deleting ids: [ObjectID], in generation: Generation) throws(StoreError) {
        let schema = generation.schema
        var doomed = Set(ids)
        var queue = ids
        var objects: [ObjectID: StoredObject] = [:]
        var k = 0
        while k < queue.count {
            let id = queue[k]
            k += 1
            guard let object = generation.object(id) else { continue }
            objects[id] = object
            deleted.append(id)
            let entity = schema.entity(named: id.entity)!
            for (offset, relationship) in entity.relationships.enumerated() where relationship.deleteRule == .cascade {
                for target in object.values[entity.attributes.count + offset].referencedObjects where doomed.insert(target).inserted {
                    queue.append(target)
                }
            }
        }
        // Deny: a relationship that still refers to an object that stays.
        for id in deleted {
            let entity = schema.entity(named: id.entity)!
            for (offset, relationship) in entity.relationships.enumerated() where relationship.deleteRule == .deny {
                let blocking = objects[id]!.values[entity.attributes.count + offset].referencedObjects.filter { !doomed.contains($0) }
                if !blocking.isEmpty {
                    let listed = blocking.prefix(10).map(\.description).joined(separator: ", ") + (blocking.count > 10 ? ", ..." : "")
                    throw StoreError(.deleteRule, "\(id).\(relationship.name) (delete rule deny) still refers to \(listed); delete or detach \(blocking.count == 1 ? "it" : "them") first. Nothing was deleted",
                                     object: id, key: relationship.name)
                }
            }
        }
        // Nullify: the related objects that stay lose their references to deleted ones.
        var updates: [ObjectID: (base: StoredObject, values: [Value])] = [:]
        for id in deleted {
            let entity = schema.entity(named: id.entity)!
            for (offset, relationship) in entity.relationships.enumerated() {
                for target in objects[id]!.values[entity.attributes.count + offset].referencedObjects where !doomed.contains(target) {
                    guard let base = updates[target]?.base ?? generation.object(target) else { continue }
                    var values = updates[target]?.values ?? base.values
                    let inverse = schema.entity(named: target.entity)!.propertyIndex(named: relationship.inverse)!
                    switch values[inverse] {
                    case .object(let other) where other == id: values[inverse] = .null
                    case .objects(let others): values[inverse] = .objects(others.filter { $0 != id })
                    default: break
                    }
                    updates[target] = (base, values)
                }
            }
        }
        changes.deleted = deleted.map { id in ObjectDeletion(id: id, baseVersion: objects[id]!.version) }
        changes.updated = updates.keys.sorted().map { id in
            let (base, values) = updates[id]!
            let changed = values.indices.filter { values[$0] != base.values[$0] }.map { PropertyChange(index: $0, value: values[$0]) }
            return ObjectUpdate(id: id, baseVersion: base.version, baseValues: base.values, changes: changed)
        }
    }
}
