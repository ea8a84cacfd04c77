import Foundation

// MARK: - History

extension Journal {
    /// The transactions after `transaction` that are still in journal segments (older ones
    /// have been folded into a checkpoint by compaction), oldest first.
    ///
    /// Reads the segment files; safe while appends continue (a record being written is not
    /// returned). Under ``Durability/none`` the newest transactions may not be written yet:
    /// ``flush()`` first.
    /// - Throws: ``StoreError`` if a segment cannot be read or is damaged.
    public func transactions(after transaction: UInt64 = 0) throws(StoreError) -> [TransactionRecord] {
        // A checkpoint taken while commits continued may leave the transactions it folded in
        // at the start of a segment that also holds newer ones: those are not history.
        var (segments, folded) = state.withLock { ($0.segments, $0.checkpoint?.through ?? 0) }
        var attempts = 0
        while true {
            do throws(StoreError) {
                return try readHistory(segments: segments, after: max(transaction, folded))
            } catch where configuration.readOnly && attempts < 5 && error.code == .io && error.underlying?.errno == ENOENT {
                // A read-only handle takes no lock: a writer in another process compacted
                // since it opened, and removed segments it had listed (their transactions are
                // folded into a checkpoint now). The directory is listed again.
                attempts += 1
                (segments, folded) = try listSegments()
            }
        }
    }

    /// The store directory's segments and the newest checkpoint's last transaction, as they
    /// are now.
    private func listSegments() throws(StoreError) -> (segments: [Segment], folded: UInt64) {
        let names: [String]
        do throws(FileIOError) { names = try io.contentsOfDirectory(path) } catch {
            throw StoreError.io(error, "listing the store directory")
        }
        let folded = names.compactMap(StoreLayout.checkpointTransaction).max() ?? 0
        let segments = names.compactMap(StoreLayout.segmentTransaction).sorted()
            .map { Segment(firstTransaction: $0, path: StoreLayout.join(path, StoreLayout.segmentName(firstTransaction: $0))) }
        return (segments, folded)
    }

    private func readHistory(segments: [Segment], after transaction: UInt64) throws(StoreError) -> [TransactionRecord] {
        var records: [TransactionRecord] = []
        for (k, segment) in segments.enumerated() {
            // (Not `transaction + 1`, which overflows for the largest number; a later segment
            // starts at 1 or more.)
            if k + 1 < segments.count && segments[k + 1].firstTransaction - 1 <= transaction { continue }
            let bytes: [UInt8]
            do throws(FileIOError) {
                let fd = try io.open(segment.path, access: .readOnly, creation: .mustExist)
                defer { io.close(fd) }
                bytes = try io.readAll(fd, path: segment.path)
            } catch {
                throw StoreError.io(error, "reading history from \(segment.path)")
            }
            let isLast = k == segments.count - 1
            let result: Result<[TransactionRecord], StoreError> = bytes.withUnsafeBytes { buffer in
                Result { () throws(StoreError) -> [TransactionRecord] in
                    try readTransactions(buffer, path: segment.path, first: segment.firstTransaction, after: transaction, isLast: isLast)
                }
            }
            records += try result.get()
        }
        return records
    }

    /// The transactions after `transaction` in one segment, whose first is `first`: they
    /// follow on from it without a gap, as an open replays them. In the last segment, a
    /// record that does not — a stale copy of an older one, as a torn tail may hold — ends
    /// the history there (a read-only handle reads past the tail its open did not cut).
    private func readTransactions(
        _ buffer: UnsafeRawBufferPointer, path: String, first: UInt64, after transaction: UInt64, isLast: Bool
    ) throws(StoreError) -> [TransactionRecord] {
        guard case .success(let (_, headerEnd)) = FileHeader.decode(buffer, expecting: .segment),
            case .success(let schemaFrame) = RecordFormat.frame(in: buffer, at: headerEnd, seed: codec.seed)
        else {
            throw StoreError(.corrupted, "the segment header cannot be read", path: path, offset: 0)
        }
        var offset = schemaFrame.end
        var records: [TransactionRecord] = []
        var expected = first
        while offset < buffer.count {
            guard case .success(let frame) = RecordFormat.frame(in: buffer, at: offset, seed: codec.seed),
                frame.type == RecordFormat.RecordType.transaction.rawValue
            else {
                // The record being appended right now, or a torn tail the next open cuts; or
                // zero-filled space written ahead of appends.
                if isLast || RecordFormat.isZero(buffer, from: offset) { break }
                throw StoreError(.corrupted, "a damaged record while reading history", path: path, offset: Int64(offset))
            }
            let record: TransactionRecord
            do throws(DecodeFailure) {
                record = try codec.decodeTransaction(frame.payload)
            } catch {
                throw StoreError(.corrupted, "a transaction cannot be decoded: \(error)", path: path, offset: Int64(offset))
            }
            guard record.number == expected else {
                if isLast { break }
                throw StoreError(.corrupted, "transaction \(record.number) where \(expected) belongs while reading history",
                                 path: path, offset: Int64(offset), transaction: expected)
            }
            if record.number > transaction { records.append(record) }
            expected &+= 1
            offset = frame.end
        }
        return records
    }
}
