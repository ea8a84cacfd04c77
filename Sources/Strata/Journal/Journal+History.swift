
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
        let (segments, folded) = state.withLock { ($0.segments, $0.checkpoint?.through ?? 0) }
        let transaction = max(transaction, folded)
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
                    try readTransactions(buffer, path: segment.path, after: transaction, isLast: isLast)
                }
            }
            records += try result.get()
        }
        return records
    }

    private func readTransactions(
        _ buffer: UnsafeRawBufferPointer, path: String, after transaction: UInt64, isLast: Bool
    ) throws(StoreError) -> [TransactionRecord] {
        guard case .success(let (_, headerEnd)) = FileHeader.decode(buffer, expecting: .segment),
            case .success(let schemaFrame) = RecordFormat.frame(in: buffer, at: headerEnd, seed: codec.seed)
        else {
            throw StoreError(.corrupted, "the segment header cannot be read", path: path, offset: 0)
        }
        var offset = schemaFrame.end
        var records: [TransactionRecord] = []
        while offset < buffer.count {
            guard case .success(let frame) = RecordFormat.frame(in: buffer, at: offset, seed: codec.seed),
                frame.type == RecordFormat.RecordType.transaction.rawValue
            else {
                // The record being appended right now, or a torn tail the next open cuts; or
                // zero-filled space written ahead of appends.
                if isLast || RecordFormat.isZero(buffer, from: offset) { break }
                throw StoreError(.corrupted, "a damaged record while reading history", path: path, offset: Int64(offset))
            }
            do throws(DecodeFailure) {
                let record = try codec.decodeTransaction(frame.payload)
                if record.number > transaction { records.append(record) }
            } catch {
                throw StoreError(.corrupted, "a transaction cannot be decoded: \(error)", path: path, offset: Int64(offset))
            }
            offset = frame.end
        }
        return records
    }
}
