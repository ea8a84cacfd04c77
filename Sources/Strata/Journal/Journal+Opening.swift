import Foundation

// MARK: - Opening a store

extension Journal {
    /// Opens a store: loads its newest checkpoint and replays every later transaction into
    /// `target`.
    ///
    /// A torn tail (an incomplete last record, left by a crash) is cut off and reported in
    /// ``recovery``. Damage anywhere else — a bad record followed by intact ones, a damaged
    /// checkpoint, a missing segment — refuses to open with ``StoreError/Code/corrupted``
    /// naming the file, offset and transaction, and leaves every file byte-identical.
    ///
    /// ```swift
    /// var state = ReplayedState()
    /// let journal = try Journal.open(at: "/data/songs.strata", schema: schema, replayingInto: &state)
    /// ```
    /// - Parameters:
    ///   - schema: the schema the caller expects; `nil` to use the one the store records.
    /// - Throws: ``StoreError`` — `notFound`, `notAStore`, `locked`, `schemaMismatch`,
    ///   `unsupportedFormatVersion`, `corrupted`, `io`.
    public static func open<Target: JournalReplayTarget>(
        at path: String, schema expected: Schema? = nil, configuration: Configuration = Configuration(),
        replayingInto target: inout Target
    ) throws(StoreError) -> Journal {
        try open(at: path, schema: expected, configuration: configuration, heldLock: nil, replayingInto: &target)
    }

    /// Opens a store; `heldLock` is the store's write lock when the caller already holds it
    /// (handed over by ``close(releasingLock:)``).
    static func open<Target: JournalReplayTarget>(
        at path: String, schema expected: Schema?, configuration: Configuration, heldLock: StoreLock?,
        replayingInto target: inout Target
    ) throws(StoreError) -> Journal {
        let io = configuration.fileIO
        switch io.storeDirectoryKind(path) {
        case nil: throw StoreError(.notFound, "no store at \(path); create one first", path: path)
        case .directory: break
        case .file, .other: throw StoreError(.notAStore, "\(path) is not a directory, so it is not a Strata store", path: path)
        }
        var lock = heldLock
        if lock == nil && !configuration.readOnly { lock = try StoreLock.acquire(directory: path, io: io, create: false) }
        do throws(StoreError) {
            var replay = StoreReplay(directory: path, io: io, expected: expected, mode: .strict)
            try replay.run(into: &target)
            let journal = try finishOpening(replay, configuration: configuration, lock: lock)
            lock?.recordHolder(io: io)
            return journal
        } catch {
            lock?.release(io: io)
            throw error
        }
    }

    /// Opens a store just to read it, into a ``ReplayedState``.
    public static func read(at path: String, fileIO: any FileIO = POSIXFileIO()) throws(StoreError) -> (Journal, ReplayedState) {
        try againIfFilesVanish(readOnly: true) { () throws(StoreError) in
            var state = ReplayedState()
            let journal = try open(at: path, configuration: Configuration(fileIO: fileIO, readOnly: true), replayingInto: &state)
            return (journal, state)
        }
    }

    /// Runs a read-only open (`body`, with a fresh replay target each time) again when a
    /// file it listed was gone by the time it read it: the store's writer, in another
    /// process, removed the checkpoint and segments a compaction covered — a reader does
    /// not hold the lock, so nothing stops it. The new listing finds the new checkpoint.
    /// (`strata verify` of a store being compacted failed with "No such file".) A file
    /// missing three times over is reported as it is; an open that holds the lock never
    /// retries (nobody else removes its files).
    static func againIfFilesVanish<T>(readOnly: Bool, _ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        var attempts = 1
        while true {
            do throws(StoreError) {
                return try body()
            } catch {
                guard readOnly, attempts < 3, error.code == .io, error.underlying?.errno == ENOENT else { throw error }
                attempts += 1
            }
        }
    }

    /// Applies what replay decided (cleanup, truncation) and builds the open journal.
    private static func finishOpening(_ replay: StoreReplay, configuration: Configuration, lock: StoreLock?) throws(StoreError) -> Journal {
        let io = configuration.fileIO
        let path = replay.directory
        guard let storeID = replay.storeID, let schema = replay.schema else {
            preconditionFailure("replay finished without reading a file header")
        }
        var report = replay.report
        var current: CurrentSegment?
        var segments = replay.liveSegments
        if !configuration.readOnly {
            do throws(FileIOError) {
                for name in replay.removals {
                    try io.remove(StoreLayout.join(path, name))
                    report.removedFiles.append(name)
                }
                if !replay.removals.isEmpty { try io.syncDirectory(path) }
                // A last segment whose creation was interrupted is removed above, not cut.
                if let torn = replay.report.tornTail, !replay.removals.contains(where: { StoreLayout.join(path, $0) == torn.path }) {
                    let fd = try io.open(torn.path, access: .readWrite, creation: .mustExist)
                    defer { io.close(fd) }
                    try io.retryingInterrupts { () throws(FileIOError) in try io.truncate(fd, to: torn.offset) }
                    try io.sync(fd, path: torn.path)
                }
                if let last = segments.last {
                    guard let end = replay.lastSegmentEnd else { preconditionFailure("replay kept a segment without reading it") }
                    let fd = try io.open(last.path, access: .readWrite, creation: .mustExist)
                    let size: Int64
                    do throws(FileIOError) { size = try io.retryingInterrupts { () throws(FileIOError) in try io.size(of: fd) } } catch {
                        io.close(fd)
                        throw error
                    }
                    // Appends continue where the records end; zeros written ahead of them
                    // (the file's size beyond that) are space to write into.
                    current = CurrentSegment(segment: last, descriptor: fd, size: min(size, end), allocated: size,
                                             transactions: replay.transactionsInLastSegment)
                }
            } catch {
                throw StoreError.io(error, "recovering the store")
            }
        }
        let journal = Journal(
            path: path, storeID: storeID, schema: replay.expected ?? schema, configuration: configuration, recovery: report,
            lock: lock, lastTransaction: replay.lastTransaction, segments: segments, current: current,
            checkpoint: replay.checkpoint)
        if !configuration.readOnly && current == nil {
            // Every segment was covered by the checkpoint: start the next one.
            do throws(StoreError) {
                let next = try journal.createSegment(firstTransaction: replay.lastTransaction + 1)
                segments.append(next.segment)
                journal.state.withLock { s in
                    s.segments = segments
                    s.current = CurrentSegment(segment: next.segment, descriptor: next.descriptor, size: next.size, allocated: next.size, transactions: 0)
                }
            } catch {
                journal.state.withLock { $0.isClosed = true }
                throw error
            }
        }
        return journal
    }
}

/// Reads a store's files in order and decides what they hold: the work of opening,
/// without changing anything (the caller applies ``removals`` and the torn-tail cut).
struct StoreReplay {
    enum Mode {
        /// Refuse to open on any damage that is not a torn tail.
        case strict
        /// Stop at the first damage and keep the prefix before it (salvage).
        case prefix
    }

    let directory: String
    let io: any FileIO
    let expected: Schema?
    let mode: Mode

    private(set) var storeID: UUID?
    /// The file ``storeID`` was read from (the first the open read).
    private var storeIDFile: String?
    private(set) var schema: Schema?
    private(set) var codec: RecordCodec?
    private(set) var report = RecoveryReport()
    private(set) var lastTransaction: UInt64 = 0
    private(set) var checkpoint: (through: UInt64, path: String)?
    private(set) var liveSegments: [Journal.Segment] = []
    private(set) var transactionsInLastSegment = 0
    /// Where the records of the last segment in ``liveSegments`` end: its size, less any
    /// torn tail or zero-filled space written ahead of appends.
    private(set) var lastSegmentEnd: Int64?
    /// Files to remove once opening has succeeded.
    private(set) var removals: [String] = []
    /// Where a prefix-mode replay stopped, and why.
    private(set) var stoppedAt: StoreError?
    /// The files to read, opened as soon as they are listed (see ``run(into:)``).
    private var opened: [String: FileDescriptor] = [:]
    /// Whether the last preamble read had a whole schema record (checksum intact), whatever
    /// its text held: such a file's creation was not interrupted.
    private var schemaRecordWhole = false

    init(directory: String, io: any FileIO, expected: Schema?, mode: Mode) {
        self.directory = directory
        self.io = io
        self.expected = expected
        self.mode = mode
    }

    private func corrupted(_ message: String, path: String, offset: Int64? = nil, transaction: UInt64? = nil) -> StoreError {
        StoreError(.corrupted, message, path: path, offset: offset, transaction: transaction)
    }

    mutating func run<Target: JournalReplayTarget>(into target: inout Target) throws(StoreError) {
        let names: [String]
        do throws(FileIOError) { names = try io.contentsOfDirectory(directory) } catch {
            throw StoreError.io(error, "listing the store directory")
        }
        removals = names.filter(StoreLayout.isTemporary)
        let checkpoints = names.compactMap { name in StoreLayout.checkpointTransaction(name).map { ($0, name) } }.sorted { $0.0 < $1.0 }
        let segments = names.compactMap { name in StoreLayout.segmentTransaction(name).map { ($0, name) } }.sorted { $0.0 < $1.0 }
        guard !checkpoints.isEmpty || !segments.isEmpty else {
            throw StoreError(.notAStore, "\(directory) holds no journal or checkpoint files, so it is not a Strata store", path: directory)
        }
        var through: UInt64 = 0
        // Every file to read is opened at once, before any is read: a writer compacting in
        // another process (a read-only open holds no lock) may remove the older checkpoint
        // and the segments it covers, but an open file stays readable. Only a file removed
        // between the listing and these opens is missing (the caller lists again).
        let toRead = (checkpoints.last.map { [$0.1] } ?? []) + segments.map(\.1)
        defer { for fd in opened.values { io.close(fd) }; opened = [:] }
        if toRead.count <= Self.filesOpenedAtOnce {
            for name in toRead {
                let path = StoreLayout.join(directory, name)
                do throws(FileIOError) {
                    opened[path] = try io.open(path, access: .readOnly, creation: .mustExist)
                } catch {
                    throw StoreError.io(error, "reading \(path)")
                }
            }
        }
        if let newest = checkpoints.last {
            let path = StoreLayout.join(directory, newest.1)
            through = try loadCheckpoint(at: path, named: newest.0, into: &target)
            checkpoint = (through, path)
            removals += checkpoints.dropLast().map(\.1)
        }
        lastTransaction = through
        // A segment is needed unless the next one starts at or before the checkpoint's end.
        var needed: [(UInt64, String)] = []
        for (k, segment) in segments.enumerated() {
            if k + 1 < segments.count && segments[k + 1].0 <= through + 1 {
                removals.append(segment.1)
            } else {
                needed.append(segment)
            }
        }
        for (k, segment) in needed.enumerated() {
            let isLast = k == needed.count - 1
            let keepGoing = try replaySegment(named: segment.1, first: segment.0, isLast: isLast, through: through, into: &target)
            if !keepGoing { break }
        }
        report.lastTransaction = lastTransaction
    }

    // MARK: Files

    /// More files than this (a store never compacted) are opened one at a time as they are
    /// read, so as not to run out of file descriptors.
    static var filesOpenedAtOnce: Int { 256 }

    private func readFile(_ path: String) throws(StoreError) -> [UInt8] {
        do throws(FileIOError) {
            if let fd = opened[path] { return try io.readAll(fd, path: path) }
            let fd = try io.open(path, access: .readOnly, creation: .mustExist)
            defer { io.close(fd) }
            return try io.readAll(fd, path: path)
        } catch {
            throw StoreError.io(error, "reading \(path)")
        }
    }

    /// Checks a file's header against the store (same UUID, schema, format) and reads its
    /// schema record; returns the offset after the preamble.
    private mutating func readPreamble<Target: JournalReplayTarget>(
        _ buffer: UnsafeRawBufferPointer, kind: FileHeader.Kind, path: String, target: inout Target
    ) throws(StoreError) -> (header: FileHeader, end: Int) {
        schemaRecordWhole = false
        let header: FileHeader
        let afterHeader: Int
        switch FileHeader.decode(buffer, expecting: kind) {
        case .success(let (h, end)):
            header = h
            afterHeader = end
        case .failure(.futureVersion(let version)):
            throw StoreError(.unsupportedFormatVersion,
                             "the file was written in format version \(version); this library reads up to version \(RecordFormat.version). Open it with a newer Strata",
                             path: path)
        case .failure(.truncated):
            throw corrupted("the file header is incomplete", path: path, offset: 0)
        case .failure(.badMagic):
            throw corrupted("the file does not start with Strata's magic number", path: path, offset: 0)
        case .failure(.damaged(let why)):
            throw corrupted("the file header is damaged: \(why)", path: path, offset: Int64(RecordFormat.magicSize))
        }
        if let storeID, header.storeID != storeID {
            // Either file may be the stray one (a file copied in over or beside the store's
            // own): both are named, and neither is said to be safe to remove.
            let first = storeIDFile.map { ($0 as NSString).lastPathComponent } ?? "the first file read"
            throw corrupted("the file belongs to another store (\(header.storeID)) than \(first) (\(storeID)): the directory holds the files of two stores; find out which of the two belongs here (from the store's other files, or a backup) before moving the other out",
                            path: path, offset: Int64(RecordFormat.magicSize))
        }
        if let schema, header.fingerprint != schema.fingerprint {
            throw corrupted("the file records schema \(header.fingerprint), the store \(schema.fingerprint)",
                            path: path, offset: Int64(RecordFormat.magicSize))
        }
        let seed = RecordFormat.seed(for: header.storeID)
        guard case .success(let frame) = RecordFormat.frame(in: buffer, at: afterHeader, seed: seed),
            frame.type == RecordFormat.RecordType.schema.rawValue
        else {
            throw corrupted("the schema record after the header is missing or damaged", path: path, offset: Int64(afterHeader))
        }
        schemaRecordWhole = true
        if schema == nil {
            let stored: Schema
            do {
                stored = try Schema(modelFile: Data(frame.payload))
            } catch {
                throw corrupted("the stored schema cannot be read: \(error)", path: path, offset: Int64(afterHeader))
            }
            guard stored.fingerprint == header.fingerprint else {
                throw corrupted("the stored schema does not match the header's fingerprint", path: path, offset: Int64(afterHeader))
            }
            if let expected, expected.fingerprint != stored.fingerprint {
                let advice =
                    if expected.version > stored.version {
                        "migrate the store to the new schema (a MigrationPlan, or `strata migrate STORE --model NEW-MODEL.json`)"
                    } else if expected.version < stored.version {
                        "the store is newer than the schema given: open it with its own schema (version \(stored.version)) or a later one (a store is never migrated back)"
                    } else {
                        "the two schemas differ but both say version \(stored.version): give the changed schema a higher version, then migrate the store to it"
                    }
                throw StoreError(.schemaMismatch,
                                 "the store was written with schema \"\(stored.name)\" version \(stored.version) (fingerprint \(stored.fingerprint)), not the schema given (\"\(expected.name)\" version \(expected.version), fingerprint \(expected.fingerprint)); \(advice)",
                                 path: path)
            }
            schema = stored
            storeID = header.storeID
            storeIDFile = path
            codec = RecordCodec(schema: stored, storeID: header.storeID)
            do throws(ReplayError) { try target.prepare(schema: expected ?? stored) } catch {
                throw StoreError(.corrupted, "the store cannot be loaded: \(error.message)", path: path)
            }
        }
        return (header, frame.end)
    }

    // MARK: Checkpoints

    private mutating func loadCheckpoint<Target: JournalReplayTarget>(
        at path: String, named through: UInt64, into target: inout Target
    ) throws(StoreError) -> UInt64 {
        let bytes = try readFile(path)
        let result: Result<UInt64, StoreError> = bytes.withUnsafeBytes { buffer in
            Result { () throws(StoreError) -> UInt64 in try loadCheckpoint(buffer, path: path, named: through, into: &target) }
        }
        return try result.get()
    }

    private mutating func loadCheckpoint<Target: JournalReplayTarget>(
        _ buffer: UnsafeRawBufferPointer, path: String, named: UInt64, into target: inout Target
    ) throws(StoreError) -> UInt64 {
        let (header, start) = try readPreamble(buffer, kind: .checkpoint, path: path, target: &target)
        guard header.transaction == named else {
            throw corrupted("the header says transaction \(header.transaction) but the name says \(named)", path: path, offset: 8)
        }
        guard header.transaction <= RecordFormat.largestTransaction else {
            throw corrupted("the checkpoint claims transaction \(header.transaction), past the last a store can reach (\(RecordFormat.largestTransaction))",
                            path: path, offset: 8)
        }
        let codec = self.codec!
        do throws(ReplayError) { try target.beginCheckpoint(through: header.transaction) } catch {
            throw corrupted("checkpoint: \(error.message)", path: path, offset: 8)
        }
        let decoder = CheckpointDecoder(buffer, from: start, codec: codec, path: path)
        defer { decoder.stop() }
        var rows = 0
        while true {
            let frame: Frame, offset: Int
            switch decoder.next() {
            case .rows(let decoded, let at):
                for row in decoded {
                    do throws(ReplayError) { try target.loadCheckpointRow(row) } catch {
                        throw corrupted("checkpoint row \(row.id): \(error.message)", path: path, offset: Int64(at))
                    }
                }
                rows += decoded.count
                continue
            case .failure(let error):
                throw error
            case .other(let f, let at):
                (frame, offset) = (f, at)
            }
            guard frame.type == RecordFormat.RecordType.checkpointEnd.rawValue else {
                throw corrupted("unexpected record type \(frame.type) in a checkpoint", path: path, offset: Int64(offset))
            }
            var reader = ByteReader(frame.payload)
            let count: UInt64, highest: [String: UInt64], end: UInt64
            do throws(DecodeFailure) {
                count = try reader.readVarint()
                let entries = try reader.readCount("an entity count", limit: codec.schema.entities.count)
                var numbers: [String: UInt64] = [:]
                for _ in 0..<entries {
                    let index = try reader.readCount("an entity index", limit: codec.schema.entities.count - 1)
                    let at = reader.offset
                    let number = try reader.readVarint()
                    guard number <= RecordFormat.largestObjectNumber else {
                        throw DecodeFailure(offset: at, reason: "object number \(number), past the largest (\(RecordFormat.largestObjectNumber))")
                    }
                    numbers[codec.schema.entities[index].name] = number
                }
                highest = numbers
                end = try reader.readUInt64()
            } catch {
                throw corrupted("checkpoint record cannot be decoded: \(error)", path: path, offset: Int64(offset + RecordFormat.frameHeaderSize + error.offset))
            }
            guard count == UInt64(rows), end == header.transaction, reader.isAtEnd, frame.end == buffer.count else {
                throw corrupted("the checkpoint's closing record does not match its contents (\(rows) rows read, \(count) recorded)",
                                path: path, offset: Int64(offset))
            }
            do throws(ReplayError) { try target.finishCheckpoint(through: end, highestObjectNumbers: highest) } catch {
                throw corrupted("checkpoint: \(error.message)", path: path, offset: Int64(offset))
            }
            report.checkpoint = end
            report.checkpointRows = rows
            return end
        }
    }

    // MARK: Segments

    /// Replays one segment; returns `false` when a prefix-mode replay stopped in it.
    private mutating func replaySegment<Target: JournalReplayTarget>(
        named name: String, first: UInt64, isLast: Bool, through: UInt64, into target: inout Target
    ) throws(StoreError) -> Bool {
        let path = StoreLayout.join(directory, name)
        let bytes = try readFile(path)
        if predatesMigration(bytes, first: first, through: through) {
            removals.append(name)
            return true
        }
        let result: Result<Bool, StoreError> = bytes.withUnsafeBytes { buffer in
            Result { () throws(StoreError) -> Bool in
                try replaySegment(buffer, path: path, name: name, first: first, isLast: isLast, through: through, into: &target)
            }
        }
        return try result.get()
    }

    private mutating func replaySegment<Target: JournalReplayTarget>(
        _ buffer: UnsafeRawBufferPointer, path: String, name: String, first: UInt64, isLast: Bool, through: UInt64,
        into target: inout Target
    ) throws(StoreError) -> Bool {
        let preamble: (header: FileHeader, end: Int)
        do throws(StoreError) {
            preamble = try readPreamble(buffer, kind: .segment, path: path, target: &target)
        } catch {
            // A last segment whose creation was interrupted holds no transactions: drop it.
            // (An intact header of another store or schema is no interrupted creation.)
            // (A whole schema record that cannot be read, or does not match the header, was
            // written so: no interrupted creation, and removing the store would not help.)
            if isLast, error.code == .corrupted, !schemaRecordWhole, storeID != nil, !hasForeignHeader(buffer), !containsTransaction(buffer, after: 0) {
                removals.append(name)
                report.tornTail = .init(path: path, offset: 0, discardedBytes: Int64(buffer.count),
                                        reason: "the segment's creation was interrupted (\(error.message))")
                return true
            }
            // An interrupted creation leaves at most a header and the schema record: allow
            // for the schema's size when the caller names the schema.
            let preambleLimit = 4096 + (expected?.modelFileJSON.text.utf8.count ?? 0)
            // A store's transactions after the damage show it is no interrupted creation (which
            // returns before any commit): then the damage is reported where it is.
            if error.code == .corrupted && !schemaRecordWhole && storeID == nil && isLast && buffer.count < preambleLimit && !holdsTransactions(buffer) {
                throw StoreError(.notAStore, "the store's first journal segment is incomplete: its creation was interrupted. Remove \(directory) and create the store again",
                                 path: path)
            }
            return try stop(error)
        }
        let header = preamble.header
        guard header.transaction == first else {
            return try stop(corrupted("the header says the segment starts at transaction \(header.transaction) but the name says \(first)",
                                      path: path, offset: 8))
        }
        guard first <= lastTransaction + 1 else {
            return try stop(corrupted("transactions \(lastTransaction + 1)...\(first - 1) are missing: a journal segment was removed",
                                      path: path, offset: 0, transaction: lastTransaction + 1))
        }
        liveSegments.append(Journal.Segment(firstTransaction: first, path: path))
        let codec = self.codec!
        var expected = first
        var offset = preamble.end
        var count = 0
        defer {
            report.replayedBytes += Int64(offset)
            lastSegmentEnd = Int64(offset)
        }
        while offset < buffer.count {
            let problem: String
            switch RecordFormat.frame(in: buffer, at: offset, seed: codec.seed) {
            case .failure(let frameProblem):
                problem = frameProblem.explanation
            case .success(let frame) where frame.type != RecordFormat.RecordType.transaction.rawValue:
                problem = "a record of type \(frame.type) where a transaction belongs"
            case .success(let frame):
                let record: TransactionRecord
                do throws(DecodeFailure) {
                    record = try codec.decodeTransaction(frame.payload)
                } catch {
                    return try stop(corrupted("a transaction record passes its checksum but cannot be decoded: \(error.reason)",
                                              path: path, offset: Int64(offset + RecordFormat.frameHeaderSize + error.offset),
                                              transaction: expected))
                }
                guard record.number == expected else {
                    problem = "transaction \(record.number) where \(expected) belongs"
                    break
                }
                if record.number > lastTransaction {
                    do throws(ReplayError) { try target.apply(record) } catch {
                        return try stop(corrupted("transaction \(record.number) does not fit the state before it: \(error.message)",
                                                  path: path, offset: Int64(offset), transaction: record.number))
                    }
                    lastTransaction = record.number
                    report.replayedTransactions += 1
                }
                expected += 1
                count += 1
                offset = frame.end
                continue
            }
            // Zeros to the end: space the writer filled ahead of its appends (see
            // ``Journal/Configuration/preallocation``), the segment's clean end.
            if RecordFormat.isZero(buffer, from: offset) { break }
            // No valid transaction at `offset`. At the end of the last segment with nothing
            // valid after it, this is an interrupted write; anywhere else it is damage.
            if isLast && !containsTransaction(buffer, after: offset) {
                report.tornTail = .init(path: path, offset: Int64(offset), discardedBytes: Int64(buffer.count - offset), reason: problem)
                break
            }
            let where_ = isLast ? "intact records follow it" : "later segments follow it"
            return try stop(corrupted("\(problem); \(where_), so this is damage, not an interrupted write. Restore the store from a backup, or copy its readable prefix with Journal.salvage",
                                      path: path, offset: Int64(offset), transaction: expected))
        }
        transactionsInLastSegment = count
        return true
    }

    /// Whether a segment was written under an older schema than the checkpoint loaded: its
    /// header is intact and of this store, but of another schema, and it starts no later than
    /// just after the checkpoint. Only a migration writes such a checkpoint, and only once
    /// every transaction is durable, so the checkpoint covers the whole segment.
    private func predatesMigration(_ bytes: [UInt8], first: UInt64, through: UInt64) -> Bool {
        guard checkpoint != nil, first <= through + 1, let storeID, let schema else { return false }
        return bytes.withUnsafeBytes { buffer in
            guard case .success(let (header, _)) = FileHeader.decode(buffer, expecting: .segment) else { return false }
            return header.storeID == storeID && header.fingerprint != schema.fingerprint
        }
    }

    /// Whether `buffer` starts with an intact segment header of another store or schema.
    private func hasForeignHeader(_ buffer: UnsafeRawBufferPointer) -> Bool {
        guard case .success(let (header, _)) = FileHeader.decode(buffer, expecting: .segment) else { return false }
        return header.storeID != storeID || header.fingerprint != schema?.fingerprint
    }

    /// Whether a first segment whose preamble could not be read holds transaction records:
    /// checked with the seed of the store ID its header gives, read even when the header's
    /// own checksum fails (the UUID follows the magic, the frame header, version and kind).
    /// Failing that (the ID itself damaged), whether anything but zeros follows the end of
    /// the schema record as its frame declares it: a creation writes nothing after it.
    private func holdsTransactions(_ buffer: UnsafeRawBufferPointer) -> Bool {
        let at = RecordFormat.magicSize + RecordFormat.frameHeaderSize + 3
        guard buffer.count >= at + 16 else { return false }
        var reader = ByteReader(UnsafeRawBufferPointer(rebasing: buffer[at..<(at + 16)]))
        if let id = try? reader.readUUID(), containsTransaction(buffer, after: at, seed: RecordFormat.seed(for: id), newerThan: 0) {
            return true
        }
        let schemaFrame = at + 16 + 32 + 8  // the header's fingerprint and transaction follow the ID
        guard buffer.count >= schemaFrame + RecordFormat.frameHeaderSize else { return false }
        let declaredEnd = schemaFrame + RecordFormat.frameHeaderSize + Int(UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: schemaFrame, as: UInt32.self)))
        return declaredEnd < buffer.count && buffer[declaredEnd...].contains { $0 != 0 }
    }

    /// Whether any offset after `start` begins a valid transaction record of this store
    /// numbered after the last one applied.
    private func containsTransaction(_ buffer: UnsafeRawBufferPointer, after start: Int) -> Bool {
        guard let codec else { return false }
        return containsTransaction(buffer, after: start, seed: codec.seed, newerThan: lastTransaction)
    }

    /// Each offset is judged by its frame header and transaction number first, and only then
    /// by its checksum, taken from ``PrefixChecksums`` in constant time: checksumming each
    /// candidate's own bytes cost up to a record's length per offset, so a torn tail of a few
    /// megabytes of incompressible data (or a hostile file) took minutes to open.
    private func containsTransaction(_ buffer: UnsafeRawBufferPointer, after start: Int, seed: UInt32, newerThan last: UInt64) -> Bool {
        let transaction = RecordFormat.RecordType.transaction.rawValue
        var checksums: PrefixChecksums?
        var offset = start
        while true {
            offset += 1
            let payloadStart = offset + RecordFormat.frameHeaderSize
            guard payloadStart <= buffer.count else { return false }
            let length = Int(UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            // A zero length starts no transaction (and zero-filled space is long).
            guard length > 0, length <= RecordFormat.maximumPayload, length <= buffer.count - payloadStart,
                buffer[offset + 8] == transaction
            else { continue }
            let payload = payloadStart..<(payloadStart + length)
            guard let number = RecordCodec.transactionNumber(UnsafeRawBufferPointer(rebasing: buffer[payload])), number > last else {
                continue
            }
            let head = RecordFormat.checksum(length: UInt32(length), type: transaction, payload: UnsafeRawBufferPointer(start: nil, count: 0), seed: seed)
            if checksums == nil { checksums = PrefixChecksums(buffer) }
            let stored = UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
            if checksums!.checksum(payload, continuing: head) == stored { return true }
        }
    }

    /// In strict mode, throws `error`; in prefix mode, records where replay stopped.
    private mutating func stop(_ error: StoreError) throws(StoreError) -> Bool {
        guard mode == .prefix, error.code == .corrupted else { throw error }
        stoppedAt = error
        return false
    }
}
