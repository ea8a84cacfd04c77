/// An object as a store generation holds it: its values and the transaction that last
/// wrote it (its version, which optimistic concurrency compares).
public struct StoredObject: Sendable, Hashable {
    /// The object's identity.
    public let id: ObjectID
    /// One value per property of the entity, in storage order.
    public let values: [Value]
    /// The number of the transaction that last inserted or changed the object.
    public let version: UInt64
}

/// A row inside a generation's table (the ID is the table key).
struct StoredRow: Sendable, Hashable {
    var values: [Value]
    var version: UInt64
}
