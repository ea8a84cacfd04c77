// MARK: - Migration checkpoints

extension Journal {
    /// Replaces the store's contents with `contents`, written under a new schema, in one
    /// atomic rename.
    ///
    /// The checkpoint is named after the store's last transaction *T*: it is written to a
    /// temporary file, synced, renamed over `checkpoint-T.strata` (replacing a checkpoint of
    /// the same transaction in the old schema, if there is one) and the directory synced.
    /// Before the rename the store opens as it was; after it, it opens under the new schema,
    /// and the segments of the old schema — every one of them covered by the checkpoint — are
    /// removed by that open. The handle must be closed afterwards: its schema is the old one.
    /// With `cancellation`, a flag set before the checkpoint is synced stops it: the temporary
    /// file is removed and `cancelled` thrown.
    /// - Throws: ``StoreError`` — `readOnly`, `invalidTransaction` if `contents` is not at the
    ///   last transaction, `io`, `cancelled`, `poisoned`, `closed`.
    func writeMigrationCheckpoint(
        _ contents: some CheckpointSource, schema: Schema, cancellation: CancellationFlag? = nil
    ) async throws(StoreError) {
        guard !configuration.readOnly else {
            throw StoreError(.readOnly, "the store was opened read-only; open it for writing to migrate it", path: path)
        }
        let last = lastTransaction
        guard contents.lastTransaction == last else {
            throw StoreError(.invalidTransaction,
                             "the migrated contents are at transaction \(contents.lastTransaction) but the journal's last is \(last)",
                             path: path, transaction: contents.lastTransaction)
        }
        try await waitUntilDurable(last)
        try await onCompactionQueue { () throws(StoreError) in
            let codec = RecordCodec(schema: schema, storeID: self.storeID)
            let writer = CheckpointWriter(directory: self.path, storeID: self.storeID, schema: schema, codec: codec, io: self.io)
            _ = try writer.write(contents, cancellation: cancellation)
        }
    }
}
