/// An entity name interned for the life of the process: one instance per distinct name, so
/// that an ``ObjectID`` holds a single word for its entity (an ID is two words, and a
/// ``Value`` three instead of four) and two IDs compare their entities by identity.
///
/// Instances are never freed (the table below keeps each one), which lets IDs refer to
/// them without reference counting: copying an ID costs what copying two integers does.
/// A process meets few distinct entity names, so the table stays small.
final class EntityName: Sendable {
    /// The name.
    let string: String

    /// This name's identity, which every ID of the name holds (``ObjectID/entityKey``).
    var key: EntityKey { EntityKey(Unmanaged.passUnretained(self)) }

    private init(_ string: String) {
        self.string = string
    }

    /// Every name interned so far.
    private static let table = Locked<[String: EntityName]>([:])

    /// Whether `string` has been interned (for tests).
    static func isInterned(_ string: String) -> Bool {
        table.withLock { $0[string] != nil }
    }

    /// The one instance for `string`.
    static func interned(_ string: String) -> EntityName {
        table.withLock { table in
            if let name = table[string] { return name }
            let name = EntityName(string)
            table[string] = name
            return name
        }
    }
}

/// An interned entity name's identity (its address): the same for every ID of an entity,
/// compared and hashed as a plain integer.
struct EntityKey: Hashable, Sendable {
    let address: UInt

    init(_ name: Unmanaged<EntityName>) { address = UInt(bitPattern: name.toOpaque()) }
}
