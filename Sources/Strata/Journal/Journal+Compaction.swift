
// MARK: - Compaction

extension Journal {
    /// What a compaction did.
    public struct CompactionReport: Sendable, Hashable {
        /// The last transaction the new checkpoint covers.
        public var checkpoint: UInt64
        /// The checkpoint file.
        public var path: String
        /// Rows written.
        public var rows: Int
        /// The checkpoint's size in bytes.
        public var bytes: Int64
        /// Segment and checkpoint files removed because the new checkpoint covers them.
        public var removedFiles: [String]
        /// Whether a checkpoint was written: `false` when the store's checkpoint already
        /// covered every transaction (then ``rows`` and ``bytes`` are 0 and ``checkpoint``
        /// and ``path`` are the existing checkpoint's).
        public var wroteCheckpoint = true
    }

    /// Writes a checkpoint of `source` and removes the segments it covers, while appends
    /// continue.
    ///
    /// `source` must hold the store's rows as of its ``CheckpointSource/lastTransaction``,
    /// which must have been enqueued. The journal first waits for that transaction to be
    /// durable and starts a new segment, then writes the checkpoint on its own queue
    /// (temporary file, sync, rename, directory sync) and only then removes the segments
    /// the checkpoint covers. A crash at any point leaves a store that opens to the same state.
    ///
    /// Cancelling the calling task stops the compaction before the checkpoint is put in
    /// place (the writer looks after every chunk it writes): the temporary file is removed,
    /// nothing else changes, and `cancelled` is thrown. Once the checkpoint is in place the
    /// compaction completes.
    /// - Throws: ``StoreError`` — `io` if the checkpoint cannot be written (nothing is
    ///   removed then), `invalidValue` naming an object whose row encodes to more than one
    ///   record may hold (256 MiB; updates of its values each fit a transaction, the whole row
    ///   no record: nothing is removed), `cancelled`, `poisoned`, `closed`, `readOnly`.
    @discardableResult
    public func compact(from source: some CheckpointSource) async throws(StoreError) -> CompactionReport {
        guard !configuration.readOnly else {
            throw StoreError(.readOnly, "the store was opened read-only; open it for writing to compact", path: path)
        }
        let through = source.lastTransaction
        guard through <= lastTransaction else {
            throw StoreError(.invalidTransaction,
                             "the checkpoint source is at transaction \(through) but the journal's last is \(lastTransaction)",
                             path: path, transaction: through)
        }
        if Task.isCancelled {
            throw StoreError(.cancelled, "the task was cancelled before the compaction began; nothing changed", path: path)
        }
        try beginCompaction()
        defer { endCompaction() }
        try await waitUntilDurable(through)
        try await rollSegment()
        return try await CancellationFlag.watching { (cancellation) throws(StoreError) -> CompactionReport in
            try await onCompactionQueue { () throws(StoreError) -> CompactionReport in
                try self.writeCheckpoint(source, cancellation: cancellation)
            }
        }
    }

    /// Counts a compaction in, so that closing waits for it; refused once closing began.
    private func beginCompaction() throws(StoreError) {
        try state.withLock { (s) throws(StoreError) in
            if s.isClosed || s.isClosing { throw Self.closedError(s, path: path) }
            s.compactionsInFlight += 1
        }
    }

    /// Counts a compaction out, resuming a closing that waits for the last one.
    private func endCompaction() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.compactionsInFlight -= 1
            guard s.compactionsInFlight == 0 else { return [] }
            defer { s.closeWaiters = [] }
            return s.closeWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The blocking part of compaction; runs on the compaction queue.
    private func writeCheckpoint(_ source: some CheckpointSource, cancellation: CancellationFlag) throws(StoreError) -> CompactionReport {
        let through = source.lastTransaction
        if let existing = state.withLock({ $0.checkpoint }), existing.through >= through {
            return CompactionReport(checkpoint: existing.through, path: existing.path, rows: 0, bytes: 0, removedFiles: [], wroteCheckpoint: false)
        }
        let writer = CheckpointWriter(directory: path, storeID: storeID, schema: schema, codec: codec, io: io)
        let written = try writer.write(source, cancellation: cancellation)
        // The checkpoint is durable under its final name: what it covers can go.
        let covered = state.withLock { s -> [String] in
            var covered: [String] = []
            var kept: [Segment] = []
            for (k, segment) in s.segments.enumerated() {
                let isCurrent = segment.path == s.current?.segment.path
                if !isCurrent, k + 1 < s.segments.count, s.segments[k + 1].firstTransaction <= through + 1 {
                    covered.append(segment.path)
                } else {
                    kept.append(segment)
                }
            }
            s.segments = kept
            if let old = s.checkpoint { covered.append(old.path) }
            s.checkpoint = (through, written.path)
            s.statistics.checkpoints += 1
            return covered
        }
        do throws(FileIOError) {
            for file in covered { try io.remove(file) }
            if !covered.isEmpty { try io.syncDirectory(path) }
        } catch {
            throw StoreError.io(error, "removing journal segments covered by checkpoint \(through) (the next open removes them)")
        }
        return CompactionReport(checkpoint: through, path: written.path, rows: written.rows, bytes: written.bytes, removedFiles: covered)
    }
}
