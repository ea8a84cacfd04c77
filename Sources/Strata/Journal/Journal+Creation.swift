import Foundation

// MARK: - Creating a store

extension Journal {
    /// Creates a new, empty store directory and opens it for writing.
    ///
    /// The directory is created with mode 0700 (an existing empty directory is used); it gets
    /// a lock file and a first journal segment recording the schema, all synced before this
    /// returns.
    /// - Throws: ``StoreError/Code/alreadyExists`` if `path` is a file or a non-empty
    ///   directory; ``StoreError/Code/io`` if the files cannot be made.
    public static func create(at path: String, schema: Schema, configuration: Configuration = Configuration()) throws(StoreError) -> Journal {
        try create(at: path, schema: schema, configuration: configuration, initialContents: ReplayedState?.none)
    }

    /// Creates a new store whose first checkpoint holds `initialContents` (its rows, its
    /// last transaction and its object numbers); appends continue after its last transaction.
    /// Used to copy a store (salvage, migration to a new location).
    public static func create(
        at path: String, schema: Schema, configuration: Configuration = Configuration(),
        initialContents: (some CheckpointSource)?
    ) throws(StoreError) -> Journal {
        let io = configuration.fileIO
        guard !configuration.readOnly else {
            throw StoreError(.readOnly, "a store cannot be created read-only", path: path)
        }
        if let last = initialContents?.lastTransaction, last > RecordFormat.largestTransaction {
            throw StoreError(.invalidTransaction,
                             "the initial contents claim transaction \(last), past the last a store can reach (\(RecordFormat.largestTransaction)); nothing was created",
                             path: path, transaction: last)
        }
        switch io.storeDirectoryKind(path) {
        case nil:
            do throws(FileIOError) {
                try io.createDirectory(path)
                try io.syncDirectory(StoreLayout.parent(of: path))
            } catch {
                throw StoreError.io(error, "creating the store directory")
            }
        case .directory:
            let names: [String]
            do throws(FileIOError) { names = try io.contentsOfDirectory(path) } catch {
                throw StoreError.io(error, "listing the store directory")
            }
            guard names.isEmpty else {
                throw StoreError(.alreadyExists, "\(path) is not empty; choose a new path, or open the store that is there", path: path)
            }
        case .file, .other:
            throw StoreError(.alreadyExists, "\(path) exists and is not a directory; choose another path", path: path)
        }
        let lock = try StoreLock.acquire(directory: path, io: io, create: true)
        let last = initialContents?.lastTransaction ?? 0
        let journal = Journal(
            path: path, storeID: UUID(), schema: schema, configuration: configuration,
            recovery: RecoveryReport(), lock: lock, lastTransaction: last, segments: [], current: nil, checkpoint: nil)
        do throws(StoreError) {
            if let initialContents {
                let writer = CheckpointWriter(directory: path, storeID: journal.storeID, schema: schema, codec: journal.codec, io: io)
                let written = try writer.write(initialContents)
                journal.state.withLock { $0.checkpoint = (last, written.path) }
            }
            let first = try journal.createSegment(firstTransaction: last + 1)
            if configuration.durability != .full {
                // Creation is always durable: a store that exists must open after any crash.
                do throws(FileIOError) {
                    try io.sync(first.descriptor, path: first.segment.path)
                    try io.syncDirectory(path)
                } catch {
                    io.close(first.descriptor)
                    throw StoreError.io(error, "syncing the new store")
                }
            }
            journal.state.withLock { s in
                s.segments = [first.segment]
                s.current = CurrentSegment(segment: first.segment, descriptor: first.descriptor, size: first.size, allocated: first.size, transactions: 0)
                s.statistics.segmentsStarted = 1
            }
        } catch {
            journal.state.withLock { $0.isClosed = true }
            lock.release(io: io)
            throw StoreError(.io, "creating the store failed: \(error.message)", path: path, underlying: error.underlying)
        }
        lock.recordHolder(io: io)
        return journal
    }
}
