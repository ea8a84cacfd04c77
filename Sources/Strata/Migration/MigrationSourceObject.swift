/// An object of the older schema, as a custom transform sees it: its ID and every old key,
/// by name.
///
/// ```swift
/// step.transform("Song") { song, destination in
///     let title = try song["title"]                 // any key of the old entity
///     let album = try song.related("album").first   // the old related objects
///     ...
/// }
/// ```
public struct MigrationSourceObject: Sendable {
    /// The object's ID in the older store.
    public let id: ObjectID
    /// The object's values, in the older entity's storage order.
    public let values: [Value]
    let reader: MigrationSourceReader
    let entityIndex: Int

    /// The object's entity in the older schema.
    public var entity: Entity { reader.generation.schema.entities[entityIndex] }

    /// The names of every key the object has.
    public var keys: [String] { entity.propertyNames }

    /// The value of a key (an attribute's value, a relationship's object ID(s)).
    /// - Throws: ``MigrationError/Code/transformFailed`` naming the object and key when the
    ///   old entity has no such key.
    public subscript(key: String) -> Value {
        get throws(MigrationError) { try value(forKey: key) }
    }

    /// The value of a key (an attribute's value, a relationship's object ID(s)).
    /// - Throws: ``MigrationError/Code/transformFailed`` naming the object and key when the
    ///   old entity has no such key.
    public func value(forKey key: String) throws(MigrationError) -> Value {
        guard let index = reader.generation.schema.layout.entities[entityIndex].propertyNames.firstIndex(of: key) else {
            throw MigrationError(.transformFailed, "the old entity \(id.entity) has no key \"\(key)\"; its keys are \(keys)",
                                 entity: id.entity, object: id, key: key)
        }
        return values[index]
    }

    /// The objects a relationship of the old object refers to, in order.
    /// - Throws: ``MigrationError/Code/transformFailed`` when `key` is not a relationship.
    public func related(_ key: String) throws(MigrationError) -> [MigrationSourceObject] {
        let value = try value(forKey: key)
        guard entity.relationships.contains(where: { $0.name == key }) else {
            throw MigrationError(.transformFailed, "\"\(key)\" is an attribute of the old entity \(id.entity), not a relationship",
                                 entity: id.entity, object: id, key: key)
        }
        return CommitPlan.targets(value).compactMap { reader.object($0) }
    }
}

/// Reads the older store's objects for transforms (one per step run).
final class MigrationSourceReader: Sendable {
    let generation: Generation

    init(_ generation: Generation) { self.generation = generation }

    func object(_ id: ObjectID) -> MigrationSourceObject? {
        guard let entity = generation.schema.entityIndex(of: id), let row = generation.tables[entity][id.number] else {
            return nil
        }
        return MigrationSourceObject(id: id, values: row.values, reader: self, entityIndex: entity)
    }
}
