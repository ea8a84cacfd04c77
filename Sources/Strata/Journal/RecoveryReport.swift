/// What opening a store found and did.
public struct RecoveryReport: Sendable, Hashable, CustomStringConvertible {
    /// An incomplete record at the end of the journal, left by an interrupted write and
    /// cut off (or, read-only, skipped).
    public struct TornTail: Sendable, Hashable {
        /// The segment file.
        public var path: String
        /// Where the incomplete record starts; the file is cut here.
        public var offset: Int64
        /// How many bytes were discarded.
        public var discardedBytes: Int64
        /// Why the bytes are not a record.
        public var reason: String
    }

    /// The last transaction covered by the checkpoint that was loaded, if any.
    public var checkpoint: UInt64?
    /// Rows loaded from the checkpoint.
    public var checkpointRows = 0
    /// Transactions replayed from segments after the checkpoint.
    public var replayedTransactions = 0
    /// Bytes of segment files read.
    public var replayedBytes: Int64 = 0
    /// The last transaction in the store.
    public var lastTransaction: UInt64 = 0
    /// The torn tail found, if any.
    public var tornTail: TornTail?
    /// Files removed: leftovers of an interrupted compaction, segments a checkpoint covers,
    /// older checkpoints, a segment whose creation was interrupted.
    public var removedFiles: [String] = []

    public var description: String {
        var parts = ["last transaction \(lastTransaction)"]
        if let checkpoint { parts.append("checkpoint through \(checkpoint) (\(checkpointRows) rows)") }
        parts.append("\(replayedTransactions) transactions replayed from \(replayedBytes) bytes")
        if let torn = tornTail {
            parts.append("torn tail of \(torn.discardedBytes) bytes cut at offset \(torn.offset) of \(torn.path) (\(torn.reason))")
        }
        if !removedFiles.isEmpty { parts.append("removed \(removedFiles.joined(separator: ", "))") }
        return parts.joined(separator: "; ")
    }
}
