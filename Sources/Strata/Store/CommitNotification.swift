import Foundation

/// What one committed transaction changed: the value every did-commit (did-save) stream
/// delivers, in transaction order. It is `Sendable`, so it crosses contexts freely.
public struct CommitNotification: Sendable, Hashable {
    /// The transaction's number.
    public var transaction: UInt64
    /// When it was committed.
    public var timestamp: Date
    /// Who committed it.
    public var author: String
    /// Objects created.
    public var inserted: [ObjectID]
    /// Objects changed.
    public var updated: [ObjectID]
    /// Objects deleted.
    public var deleted: [ObjectID]
    /// For each changed object, the names of the keys that changed.
    public var changedKeys: [ObjectID: [String]] {
        get { changes.changedKeys }
        set { changes.changedKeys = newValue }
    }
    /// The new values of every inserted and changed object (all its values, storage order).
    public var values: [ObjectID: [Value]] {
        get { changes.values }
        set { changes.values = newValue }
    }
    /// Keys and values, built when first read for the store's own commits.
    var changes: CommitChanges
    /// The new version of every inserted and changed object (the transaction number).
    public var version: UInt64 { transaction }
    /// The generation the transaction produced (for pinned contexts that merge it).
    /// Not part of equality.
    var generation: Generation?
    /// The context whose save this was (see ``ChangeSet``).
    var origin: ObjectIdentifier?

    init(
        transaction: UInt64, timestamp: Date, author: String, inserted: [ObjectID], updated: [ObjectID], deleted: [ObjectID],
        changes: CommitChanges
    ) {
        self.transaction = transaction
        self.timestamp = timestamp
        self.author = author
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.changes = changes
    }

    init(
        transaction: UInt64, timestamp: Date, author: String, inserted: [ObjectID], updated: [ObjectID], deleted: [ObjectID],
        changedKeys: [ObjectID: [String]], values: [ObjectID: [Value]]
    ) {
        self.init(transaction: transaction, timestamp: timestamp, author: author, inserted: inserted, updated: updated, deleted: deleted,
                  changes: CommitChanges(changedKeys: changedKeys, values: values))
    }

    public static func == (lhs: CommitNotification, rhs: CommitNotification) -> Bool {
        lhs.transaction == rhs.transaction && lhs.timestamp == rhs.timestamp && lhs.author == rhs.author
            && lhs.inserted == rhs.inserted && lhs.updated == rhs.updated && lhs.deleted == rhs.deleted
            && lhs.changedKeys == rhs.changedKeys && lhs.values == rhs.values
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(transaction)
        hasher.combine(author)
        hasher.combine(inserted)
        hasher.combine(updated)
        hasher.combine(deleted)
    }
}
