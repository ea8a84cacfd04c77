/// A store's rows in a dictionary, built by replaying a journal: the reference model the
/// journal's tests compare against, and a simple ``CheckpointSource``.
///
/// ```swift
/// var state = ReplayedState()
/// let journal = try Journal.open(at: path, replayingInto: &state)
/// print(state.rows.count, "objects as of transaction", state.lastTransaction)
/// ```
public struct ReplayedState: JournalReplayTarget, CheckpointSource, Sendable, Equatable {
    /// Every stored object's values, in property order.
    public var rows: [ObjectID: [Value]] = [:]
    /// The last transaction applied.
    public var lastTransaction: UInt64 = 0
    /// The highest object number seen per entity.
    public var highestObjectNumbers: [String: UInt64] = [:]

    /// Creates an empty state.
    public init() {}

    public mutating func loadCheckpointRow(_ row: RowImage) throws(ReplayError) {
        guard rows.updateValue(row.values, forKey: row.id) == nil else {
            throw ReplayError("the checkpoint holds \(row.id) twice")
        }
        note(row.id)
    }

    public mutating func finishCheckpoint(through transaction: UInt64, highestObjectNumbers: [String: UInt64]) throws(ReplayError) {
        lastTransaction = transaction
        self.highestObjectNumbers.merge(highestObjectNumbers, uniquingKeysWith: max)
    }

    public mutating func apply(_ transaction: TransactionRecord) throws(ReplayError) {
        // Check everything first, so a failed apply changes nothing.
        for row in transaction.inserted where rows[row.id] != nil {
            throw ReplayError("transaction \(transaction.number) inserts \(row.id), which already exists")
        }
        for update in transaction.updated where rows[update.id] == nil {
            throw ReplayError("transaction \(transaction.number) updates \(update.id), which does not exist")
        }
        for id in transaction.deleted where rows[id] == nil {
            throw ReplayError("transaction \(transaction.number) deletes \(id), which does not exist")
        }
        for row in transaction.inserted {
            rows[row.id] = row.values
            note(row.id)
        }
        for update in transaction.updated {
            for change in update.changes { rows[update.id]![change.index] = change.value }
        }
        for id in transaction.deleted { rows[id] = nil }
        lastTransaction = transaction.number
    }

    private mutating func note(_ id: ObjectID) {
        if id.number > highestObjectNumbers[id.entity, default: 0] { highestObjectNumbers[id.entity] = id.number }
    }

    public func forEachRow(_ body: (RowImage) throws -> Void) rethrows {
        for (id, values) in rows { try body(RowImage(id: id, values: values)) }
    }
}
