/// Receives a store's contents while a journal is opened: the rows of the newest
/// checkpoint, then every later transaction in order.
///
/// The store's in-memory state implements it; ``ReplayedState`` is a simple one.
public protocol JournalReplayTarget {
    /// Receives the schema the store was written with, before any row or transaction.
    mutating func prepare(schema: Schema) throws(ReplayError)
    /// Receives the last transaction the checkpoint covers, before its rows.
    mutating func beginCheckpoint(through transaction: UInt64) throws(ReplayError)
    /// Receives one row of the checkpoint.
    mutating func loadCheckpointRow(_ row: RowImage) throws(ReplayError)
    /// Receives the checkpoint's closing facts: the last transaction it covers and the
    /// highest object number ever allocated per entity (deleted objects included).
    mutating func finishCheckpoint(through transaction: UInt64, highestObjectNumbers: [String: UInt64]) throws(ReplayError)
    /// Receives one transaction after the checkpoint.
    mutating func apply(_ transaction: TransactionRecord) throws(ReplayError)
}

extension JournalReplayTarget {
    public mutating func prepare(schema: Schema) throws(ReplayError) {}
    public mutating func beginCheckpoint(through transaction: UInt64) throws(ReplayError) {}
}

/// A replayed record that does not fit the state before it (an insert of an existing
/// object, an update of a missing one).
public struct ReplayError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What does not fit.
    public var message: String
    /// Creates an error.
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// What a checkpoint is written from: every row as of one transaction.
public protocol CheckpointSource: Sendable {
    /// The last transaction the rows include.
    var lastTransaction: UInt64 { get }
    /// The highest object number allocated per entity, deleted objects included, so that
    /// numbers are never reused.
    var highestObjectNumbers: [String: UInt64] { get }
    /// Calls `body` with every row, in any order.
    func forEachRow(_ body: (RowImage) throws -> Void) rethrows
}

/// A checkpoint source that reads its rows from a file: a failed read ends
/// ``CheckpointSource/forEachRow(_:)`` early and is reported here, and the checkpoint writer
/// then removes its temporary file instead of putting an incomplete checkpoint in place.
protocol FallibleCheckpointSource: CheckpointSource {
    var readFailure: StoreError? { get }
}
