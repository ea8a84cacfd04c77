import Foundation

/// Writes a checkpoint file the crash-safe way: into a temporary file created exclusively
/// in the store directory, synced, renamed into place, and the directory synced — so a
/// checkpoint file either is complete or does not exist under its final name.
struct CheckpointWriter {
    let directory: String
    let storeID: UUID
    let schema: Schema
    let codec: RecordCodec
    let io: any FileIO
    /// The largest row record: the format's limit (lower only in tests).
    var maximumPayload = RecordFormat.maximumPayload
    /// Row records are flushed to the file when they reach this size.
    static let chunkSize = 1 << 20

    struct Written {
        var path: String
        var rows: Int
        var bytes: Int64
    }

    /// Writes `source` as the checkpoint of its last transaction. With `cancellation`, the
    /// writer looks at the flag after each chunk and before the sync: once it is set, the
    /// temporary file is removed and `cancelled` thrown, and nothing has changed.
    func write(_ source: some CheckpointSource, cancellation: CancellationFlag? = nil) throws(StoreError) -> Written {
        let through = source.lastTransaction
        let finalName = StoreLayout.checkpointName(through: through)
        let finalPath = StoreLayout.join(directory, finalName)
        let temporaryPath = finalPath + StoreLayout.temporarySuffix
        if io.kind(of: temporaryPath) != nil {
            do throws(FileIOError) { try io.remove(temporaryPath) } catch {
                throw StoreError.io(error, "removing a leftover temporary checkpoint")
            }
        }
        let fd: FileDescriptor
        do throws(FileIOError) {
            fd = try io.open(temporaryPath, access: .readWrite, creation: .createExclusive)
        } catch {
            throw StoreError.io(error, "creating a temporary checkpoint")
        }
        var offset: Int64 = 0
        var rows = 0
        do throws(StoreError) {
            var writer = ByteWriter(capacity: CheckpointWriter.chunkSize + 64 * 1024)
            FileHeader(kind: .checkpoint, formatVersion: RecordFormat.version, storeID: storeID,
                       fingerprint: schema.fingerprint, transaction: through).encode(into: &writer)
            let schemaStart = writer.beginFrame(.schema)
            writer.write(Array(schema.modelFileJSON.text.utf8))
            writer.finishFrame(at: schemaStart, seed: codec.seed)

            func flush(_ writer: inout ByteWriter) throws(StoreError) {
                do throws(FileIOError) {
                    let result: Result<Void, FileIOError> = writer.withUnsafeBytes { raw in
                        Result { () throws(FileIOError) in try io.writeAll(fd, raw, at: offset, path: temporaryPath) }
                    }
                    try result.get()
                } catch {
                    throw StoreError.io(error, "writing a checkpoint")
                }
                offset += Int64(writer.count)
                writer.removeAll()
            }

            func checkCancellation() throws(StoreError) {
                guard let cancellation, cancellation.isCancelled else { return }
                throw StoreError(.cancelled,
                                 "the task was cancelled after \(rows) rows of the checkpoint were written; the temporary checkpoint was removed and nothing changed",
                                 path: temporaryPath)
            }

            var frameStart = writer.beginFrame(.checkpointRows)
            var rowsInFrame = 0

            // Ends the current row record before the row written from `rowStart` and starts
            // the next with it.
            func moveToRecordOfItsOwn(from rowStart: Int, of id: ObjectID) throws(StoreError) {
                let size = writer.count - rowStart
                guard size <= maximumPayload else {
                    throw StoreError(.invalidValue,
                                     "\(id) encodes to \(size) bytes, more than the \(maximumPayload) one checkpoint record may hold, so no checkpoint can hold it; nothing changed. Keep values this large outside the store, or spread them over several objects",
                                     path: temporaryPath, object: id)
                }
                let row = writer.withUnsafeBytes { Array($0[rowStart...]) }
                writer.truncate(to: rowStart)
                writer.finishFrame(at: frameStart, seed: codec.seed)
                try flush(&writer)
                try checkCancellation()
                frameStart = writer.beginFrame(.checkpointRows)
                writer.write(row)
                rowsInFrame = 1
            }
            var failure: StoreError?
            do {
                try source.forEachRow { row in
                    let rowStart = writer.count
                    codec.writeRow(row, into: &writer)
                    rows += 1
                    rowsInFrame += 1
                    if writer.count - frameStart - RecordFormat.frameHeaderSize > maximumPayload {
                        // A reader takes a longer record for damage: the row starts a record of
                        // its own, or, too large for any, fails the checkpoint.
                        do throws(StoreError) {
                            try moveToRecordOfItsOwn(from: rowStart, of: row.id)
                        } catch {
                            failure = error
                            throw error
                        }
                    }
                    if writer.count >= CheckpointWriter.chunkSize {
                        writer.finishFrame(at: frameStart, seed: codec.seed)
                        do throws(StoreError) {
                            try flush(&writer)
                            try checkCancellation()
                        } catch {
                            failure = error
                            throw error  // ends `forEachRow` early
                        }
                        frameStart = writer.beginFrame(.checkpointRows)
                        rowsInFrame = 0
                    }
                }
            } catch {
                // The error thrown above: `failure` holds it.
            }
            if let failure { throw failure }
            if let fallible = source as? any FallibleCheckpointSource, let failure = fallible.readFailure { throw failure }
            if rowsInFrame > 0 {
                writer.finishFrame(at: frameStart, seed: codec.seed)
            } else {
                writer.truncate(to: frameStart)  // drop the empty frame begun last
            }
            let endStart = writer.beginFrame(.checkpointEnd)
            writer.writeVarint(rows)
            let highest = source.highestObjectNumbers.compactMap { name, number in
                schema.entityIndex(named: name).map { ($0, number) }
            }.sorted { $0.0 < $1.0 }
            writer.writeVarint(highest.count)
            for (index, number) in highest {
                writer.writeVarint(index)
                writer.writeVarint(number)
            }
            writer.writeUInt64(through)
            writer.finishFrame(at: endStart, seed: codec.seed)
            try flush(&writer)
            try checkCancellation()
            do throws(FileIOError) {
                try io.sync(fd, path: temporaryPath)
            } catch {
                throw StoreError.io(error, "syncing a checkpoint")
            }
        } catch {
            io.close(fd)
            try? io.remove(temporaryPath)
            throw error
        }
        io.close(fd)
        do throws(FileIOError) {
            try io.rename(temporaryPath, to: finalPath)
            try io.syncDirectory(directory)
        } catch {
            try? io.remove(temporaryPath)
            throw StoreError.io(error, "putting a checkpoint in place")
        }
        return Written(path: finalPath, rows: rows, bytes: offset)
    }
}
