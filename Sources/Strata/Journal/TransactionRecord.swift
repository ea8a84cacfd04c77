import Foundation

/// A whole object as stored: its ID and its values in property order (the entity's
/// attributes, then its relationships).
public struct RowImage: Sendable, Hashable {
    /// The object's identity.
    public var id: ObjectID
    /// One value per property of the entity, in storage order.
    public var values: [Value]

    /// Creates a row image.
    public init(id: ObjectID, values: [Value]) {
        self.id = id
        self.values = values
    }
}

/// New values for some properties of a stored object.
public struct RowUpdate: Sendable, Hashable {
    /// The object changed.
    public var id: ObjectID
    /// The changed properties: storage index and new value, in increasing index order.
    public var changes: [PropertyChange]

    /// Creates an update.
    public init(id: ObjectID, changes: [PropertyChange]) {
        self.id = id
        self.changes = changes
    }
}

/// One property's new value, by storage index.
public struct PropertyChange: Sendable, Hashable {
    /// The property's storage index in its entity.
    public var index: Int
    /// The new value.
    public var value: Value

    /// Creates a change.
    public init(index: Int, value: Value) {
        self.index = index
        self.value = value
    }
}

/// One committed transaction as the journal records it.
public struct TransactionRecord: Sendable, Hashable {
    /// The transaction's number: 1 for the first, one more for each after it.
    public var number: UInt64
    /// When it was committed.
    public var timestamp: Date
    /// Who committed it (a context's name, a tool's name); may be empty.
    public var author: String
    /// Objects created, with every value.
    public var inserted: [RowImage]
    /// Objects changed, with the changed values.
    public var updated: [RowUpdate]
    /// Objects removed.
    public var deleted: [ObjectID]

    /// Creates a transaction record.
    public init(
        number: UInt64, timestamp: Date = Date(), author: String = "", inserted: [RowImage] = [],
        updated: [RowUpdate] = [], deleted: [ObjectID] = []
    ) {
        self.number = number
        self.timestamp = timestamp
        self.author = author
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
    }

    /// Whether the transaction changes nothing.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}
