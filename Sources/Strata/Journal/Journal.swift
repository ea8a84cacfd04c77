import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A store's durable history: an append-only log of transactions in segment files, with
/// checkpoints that fold old segments away. The lowest layer of a store.
///
/// A store is a directory. ``create(at:schema:configuration:)`` makes one;
/// ``open(at:schema:configuration:replayingInto:)`` reads the newest checkpoint and
/// replays every later transaction into a ``JournalReplayTarget``, truncating a torn tail
/// left by a crash and refusing to open (with the file, offset and transaction named, and
/// the files left byte-identical) when damage is followed by intact records.
///
/// Appends are group-committed: concurrent appends share one write and one `fsync`.
/// ``enqueue(_:)`` queues a transaction without waiting; ``waitUntilDurable(_:)`` returns
/// once it is durable under the journal's ``Durability``. A failed write or sync poisons
/// the journal: everything waiting and every later append throws ``StoreError/Code/poisoned``.
///
/// ```swift
/// let journal = try Journal.create(at: "/data/songs.strata", schema: schema)
/// try await journal.append(TransactionRecord(number: 1, author: "importer", inserted: rows))
/// try await journal.compact(from: state)       // checkpoint while appends continue
/// await journal.close()
/// ```
public final class Journal: Sendable {
    /// How a journal writes and what it may do.
    public struct Configuration: Sendable {
        /// When appends are acknowledged. Default ``Durability/full``.
        public var durability: Durability
        /// A segment is closed and a new one started once it reaches this size. Default 64 MiB.
        public var segmentSize: Int
        /// The file system. Default ``POSIXFileIO``.
        public var fileIO: any FileIO
        /// Open without taking the write lock; appends and compaction throw. Torn tails are
        /// skipped, not truncated. Default `false`.
        public var readOnly: Bool
        /// Under ``Durability/full``, how many bytes of segment space the writer fills with
        /// zeros (and syncs) at a time, ahead of the appends that will overwrite them. A sync
        /// after writing into space that already exists writes the data alone; a sync after
        /// growing the file must also write the file's new size and blocks. On ext4 that made
        /// one-row appends 30–45 % faster (docs/PERFORMANCE.md). Zeros past the last record
        /// are the segment's clean end when it is read back; a segment is cut to its records
        /// when the journal moves on from it or closes. `0` turns it off. Default 4 MiB.
        public var preallocation: Int
        /// Called after every acknowledged write with the file and the size now durable
        /// (used by ``IOOrderingChecker`` to verify nothing is acknowledged too early).
        public var acknowledgementObserver: (@Sendable (_ path: String, _ durableThrough: Int64) -> Void)?

        /// Creates a configuration.
        public init(
            durability: Durability = .full, segmentSize: Int = 64 << 20, fileIO: any FileIO = POSIXFileIO(),
            readOnly: Bool = false, preallocation: Int = 4 << 20,
            acknowledgementObserver: (@Sendable (_ path: String, _ durableThrough: Int64) -> Void)? = nil
        ) {
            precondition(preallocation >= 0, "Journal.Configuration.preallocation must not be negative (it is \(preallocation))")
            self.durability = durability
            self.segmentSize = segmentSize
            self.preallocation = preallocation
            self.fileIO = fileIO
            self.readOnly = readOnly
            self.acknowledgementObserver = acknowledgementObserver
        }
    }

    /// Counters of what the journal has done since it was opened.
    public struct Statistics: Sendable, Hashable {
        /// Transactions enqueued.
        public var appends = 0
        /// `write` batches issued (each holds one or more transactions).
        public var writes = 0
        /// File `fsync`s issued for appends.
        public var syncs = 0
        /// Of the `write` batches, those an appender wrote itself (see ``Journal/append(_:callerMayBlock:)``).
        public var writesByAppenders = 0
        /// Bytes appended.
        public var bytes: Int64 = 0
        /// Bytes of zeros written ahead of appends (see ``Configuration/preallocation``).
        public var bytesPreallocated: Int64 = 0
        /// Segments started.
        public var segmentsStarted = 0
        /// Checkpoints written.
        public var checkpoints = 0
    }

    /// The store directory.
    public let path: String
    /// The store's UUID, recorded in every file.
    public let storeID: UUID
    /// The schema the store was written with.
    public let schema: Schema
    /// How the journal writes.
    public let configuration: Configuration
    /// What opening found and did: checkpoint used, transactions replayed, torn tail cut.
    public let recovery: RecoveryReport

    let codec: RecordCodec
    var io: any FileIO { configuration.fileIO }
    let lock: StoreLock?
    private let writerQueue: DispatchQueue
    private let compactionQueue: DispatchQueue
    /// Encoding buffers kept for reuse by ``enqueue(_:)``.
    private let encodeBuffers = Locked<[ByteWriter]>([])
    /// Buffers larger than this are not kept.
    private static var largestPooledBuffer: Int { 16 << 20 }
    /// Bumped by every append and segment-roll request: a writer polling for more work
    /// (see ``pollForWork(after:until:)``) watches it without taking the lock from appenders.
    private let arrivals = Atomic<UInt64>(0)
    /// The last transaction acknowledged as durable (mirrors ``State/lastDurable`` once
    /// written): appenders waiting on their own threads (see ``takeTurn(_:for:)``) watch it
    /// without taking the lock from the writer.
    private let durableThrough: Atomic<UInt64>
    /// How long an idle writer polls for the next append before it lets its thread sleep,
    /// when appends have been following acknowledgements closely (see ``State/pollWhenIdle``).
    static var idlePollNanoseconds: UInt64 { 200_000 }
    /// The shortest and longest a task completing a group watches for its sync (see
    /// ``AppendTurn/watchSync(until:)``): twice the last sync, within these bounds.
    static var shortestSyncWatch: UInt64 { 50_000 }
    static var longestSyncWatch: UInt64 { 1_000_000 }
    /// Called on the writer queue each time transactions become durable (with the last
    /// one), once their waiters are on their way — the store publishes generations here.
    private let durabilityObserver = Locked<DurabilityObserver?>(nil)
    let state: Locked<State>

    /// A segment file of the store.
    struct Segment: Sendable {
        var firstTransaction: UInt64
        var path: String
    }

    /// The segment appends go to. Only the writer queue changes it.
    struct CurrentSegment: Sendable {
        var segment: Segment
        var descriptor: FileDescriptor
        /// Where the next record goes: the end of the records.
        var size: Int64
        /// The file's size: `size` plus zero-filled space written ahead of appends.
        var allocated: Int64
        var transactions: Int
        /// Whether writing zeros ahead failed (say for want of space): the segment is
        /// appended to without.
        var preallocationFailed = false
    }

    struct State: Sendable {
        var lastEnqueued: UInt64
        var lastWritten: UInt64
        var lastDurable: UInt64
        /// The encoded transactions waiting for the writer. When it is empty, an append
        /// hands over its encoding buffer instead of copying the bytes.
        var pending = ByteWriter(capacity: 16)
        /// A written batch's buffer, emptied, kept for the next batch (see ``enqueue(_:)``).
        var spareBatch = ByteWriter(capacity: 16)
        var pendingLast: UInt64 = 0
        var pendingCount = 0
        /// How many of the pending transactions' appenders wait on their own threads
        /// (``AppendTurn/lead`` or ``AppendTurn/waitInGroup(deadline:)``), each certain to
        /// write what is pending if nobody else has by its deadline.
        var pendingOnThreads = 0
        /// Transactions in each of the last eight batches written (oldest overwritten first):
        /// the writer waits (briefly) for as many as the largest of them before syncing
        /// again — see ``gatherGroup()``.
        var recentBatchCounts = [Int](repeating: 0, count: 8)
        var batchesWritten = 0
        /// How long the last batch's sync took.
        var lastSyncNanoseconds: UInt64 = 0
        /// When the last batch's sync ended (its appenders were woken then).
        var lastSyncEnded: UInt64 = 0
        /// How long groups have been taking to re-form after a sync (a moving average).
        var regroupNanoseconds: UInt64 = 0

        /// When the group forming since the last sync should be written even if incomplete:
        /// after as long as that sync took or one and a half times as long as groups have
        /// been taking to re-form, whichever is longer, and never more than 2 ms after it.
        var gatherDeadline: UInt64 {
            lastSyncEnded + min(max(lastSyncNanoseconds, regroupNanoseconds * 3 / 2), 2_000_000)
        }

        /// Whether recent batches held several transactions: several appenders are active.
        var batchesShared: Bool { groupSize > 1 }

        /// How many transactions a group gathers: as many as the largest of the recent batches.
        var groupSize: Int { recentBatchCounts.max() ?? 0 }

        /// Folds the time since the last sync ended into ``regroupNanoseconds``.
        mutating func noteRegroup() {
            let took = DispatchTime.now().uptimeNanoseconds - lastSyncEnded
            regroupNanoseconds = regroupNanoseconds == 0 ? took : (regroupNanoseconds * 7 + took) / 8
        }
        var writerScheduled = false
        /// When the writer last let its thread go idle.
        var idleSince: UInt64 = 0
        /// Whether the writer, finding nothing pending after a batch, polls for the next
        /// append instead of going idle: set when the append that restarted an idle writer
        /// came within ``Journal/idlePollNanoseconds`` of it going idle while appenders have
        /// been sharing batches, cleared when a poll finds nothing. A group whose members wait
        /// for each acknowledgement then finds the writer running instead of paying a thread
        /// wake-up for every batch. (A lone appender gains nothing from it: its own task's
        /// wake-up dominates, and the poll would only spend a processor.)
        var pollWhenIdle = false
        var waiters: [(number: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
        var failure: StoreError?
        var isClosed = false
        /// Set when ``Journal/close()`` begins: appends and compactions are refused from then
        /// on, while those already accepted finish.
        var isClosing = false
        /// Compactions between their start and their end: closing waits for them (they
        /// write, rename and remove files, which must not happen once the lock is released).
        var compactionsInFlight = 0
        /// Closings waiting for ``compactionsInFlight`` to reach zero.
        var closeWaiters: [CheckedContinuation<Void, Never>] = []
        var segments: [Segment]
        var current: CurrentSegment?
        var checkpoint: (through: UInt64, path: String)?
        var rollWaiters: [CheckedContinuation<Void, any Error>] = []
        /// Callers of ``Journal/flush()`` waiting until the transaction numbered `target` is
        /// written.
        var flushWaiters: [(target: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
        var statistics = Statistics()
    }

    init(
        path: String, storeID: UUID, schema: Schema, configuration: Configuration, recovery: RecoveryReport,
        lock: StoreLock?, lastTransaction: UInt64, segments: [Segment], current: CurrentSegment?,
        checkpoint: (through: UInt64, path: String)?
    ) {
        self.path = path
        self.storeID = storeID
        self.schema = schema
        self.configuration = configuration
        self.recovery = recovery
        self.codec = RecordCodec(schema: schema, storeID: storeID)
        self.lock = lock
        self.writerQueue = DispatchQueue(label: "strata.journal.writer")
        self.durableThrough = Atomic(lastTransaction)
        self.compactionQueue = DispatchQueue(label: "strata.journal.compaction")
        self.state = Locked(
            State(lastEnqueued: lastTransaction, lastWritten: lastTransaction, lastDurable: lastTransaction,
                  segments: segments, current: current, checkpoint: checkpoint))
    }

    deinit {
        let (current, isClosed) = state.withLock { ($0.current, $0.isClosed) }
        if !isClosed, let current { io.close(current.descriptor) }
        if !isClosed { lock?.release(io: io) }
    }

    // MARK: - Facts

    /// The number of the last transaction enqueued (0 for an empty store).
    public var lastTransaction: UInt64 { state.withLock { $0.lastEnqueued } }

    /// The number of the last transaction acknowledged as durable.
    public var lastDurableTransaction: UInt64 { state.withLock { $0.lastDurable } }

    /// What the journal has done since it was opened.
    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// The error that poisoned the journal, if a write or sync has failed.
    public var failure: StoreError? { state.withLock { $0.failure } }

    /// The segment files, oldest first.
    public var segmentPaths: [String] { state.withLock { $0.segments.map(\.path) } }

    // MARK: - Appending

    /// Queues a transaction for writing and returns at once.
    ///
    /// The record must be numbered one more than the last transaction enqueued, and its
    /// rows must fit the schema. Call ``waitUntilDurable(_:)`` before treating it as saved.
    /// - Throws: ``StoreError/Code/invalidTransaction`` (nothing queued),
    ///   ``StoreError/Code/poisoned``, ``StoreError/Code/closed``, ``StoreError/Code/readOnly``.
    public func enqueue(_ record: TransactionRecord) throws(StoreError) {
        try enqueue(record, validated: false)
    }

    /// Queues a transaction; `validated` says the caller has already checked it against the
    /// schema with ``RecordCodec/validate(_:)`` (the store does, before applying it), so it
    /// is only encoded.
    ///
    /// With `mayLead`, a caller whose thread may block (a private queue's, never the
    /// cooperative pool's) offers to write batches itself, and `enqueue` returns its part in
    /// writing this one, which it must take with ``takeTurn(_:for:)`` once it has released
    /// any lock of its own (see ``AppendTurn``).
    @discardableResult
    func enqueue(_ record: TransactionRecord, validated: Bool, mayLead: Bool = false) throws(StoreError) -> AppendTurn {
        try enqueue(encode(record, validated: validated), mayLead: mayLead)
    }

    /// A transaction encoded as its journal record, ready for ``enqueue(_:mayLead:)``.
    struct EncodedTransaction {
        let number: UInt64
        fileprivate var frame: ByteWriter
    }

    /// Encodes a transaction as its journal record (checking it against the schema unless
    /// `validated`), without queuing it: a caller may encode while it does other work, then
    /// enqueue in order.
    func encode(_ record: TransactionRecord, validated: Bool) throws(StoreError) -> EncodedTransaction {
        var writer = try encodingBuffer()
        do throws(StoreError) {
            if validated {
                codec.encodeFrame(record, into: &writer)
            } else {
                try codec.encodeValidating(record, into: &writer)
            }
        } catch {
            recycle(&writer)
            throw error
        }
        return try encoded(record.number, in: writer)
    }

    /// A transaction being encoded whose inserted rows two threads write at once, each
    /// calling ``write()`` — the threads that check a large commit, first thing, so that
    /// encoding and checking take one parallel step (see ``RecordCodec/RowsInHalves``).
    /// Then ``Journal/finishEncoding(_:)`` gives the encoded transaction, or `discard(_:)`
    /// drops it.
    struct EncodingInHalves: Sendable {
        fileprivate let record: TransactionRecord
        fileprivate let writer: ByteWriter
        fileprivate let frame: RecordCodec.Frame

        /// The rows left to write (a frame begun for halves always has them).
        private var rows: RecordCodec.RowsInHalves { frame.rows! }

        /// Writes the halves no thread has taken yet; returns once both are written.
        func write() { rows.write() }

        /// Whether a row does not fit the schema (once both halves are written).
        var failed: Bool { rows.failed }

        /// Throws the refusal of the first row that does not fit the schema, once both
        /// halves are written.
        func checkRows() throws(StoreError) {
            if let refusal = rows.refusal { throw refusal }
        }
    }

    /// Begins encoding `record`, checking it against the schema, with its rows left for two
    /// threads to write (see ``EncodingInHalves``); `nil` when it has too few rows for that
    /// (``encode(_:validated:)`` it whole instead).
    func encodingInHalves(_ record: TransactionRecord) throws(StoreError) -> EncodingInHalves? {
        guard RecordCodec.encodesInHalves(record) else { return nil }
        var writer = try encodingBuffer()
        do throws(StoreError) {
            let frame = try codec.beginFrame(record, validating: true, into: &writer)
            precondition(frame.rows != nil, "a transaction of \(record.inserted.count) rows began without its rows in halves")
            return EncodingInHalves(record: record, writer: writer, frame: frame)
        } catch {
            recycle(&writer)
            throw error
        }
    }

    /// The encoded transaction, once both halves of `encoding` are written; throws the
    /// refusal of its first row that does not fit, or when it is too large for a record.
    /// Either way `encoding` is used up.
    func finishEncoding(_ encoding: EncodingInHalves) throws(StoreError) -> EncodedTransaction {
        var writer = encoding.writer
        do throws(StoreError) {
            try codec.finishFrame(encoding.frame, of: encoding.record, into: &writer)
        } catch {
            recycle(&writer)
            throw error
        }
        return try encoded(encoding.record.number, in: writer)
    }

    /// Drops a transaction being encoded that will not be enqueued (its buffer is reused).
    func discard(_ encoding: EncodingInHalves) {
        var writer = encoding.writer
        recycle(&writer)
    }

    /// A buffer to encode into. Reused: large fresh buffers come from mmap and cost a page
    /// fault per 4 KiB every time.
    private func encodingBuffer() throws(StoreError) -> ByteWriter {
        guard !configuration.readOnly else {
            throw StoreError(.readOnly, "the store was opened read-only; open it for writing to append", path: path)
        }
        return encodeBuffers.withLock { $0.popLast() } ?? ByteWriter(capacity: 4096)
    }

    /// `writer`'s frame as an encoded transaction, unless it is larger than a record may be
    /// (then the buffer is reused and the commit refused).
    private func encoded(_ number: UInt64, in writer: ByteWriter) throws(StoreError) -> EncodedTransaction {
        guard writer.count - RecordFormat.frameHeaderSize <= RecordFormat.maximumPayload else {
            let size = writer.count
            var spent = writer
            recycle(&spent)
            throw StoreError(.invalidTransaction,
                             "the transaction encodes to \(size) bytes, more than the \(RecordFormat.maximumPayload) one record may hold; save in smaller batches",
                             transaction: number)
        }
        return EncodedTransaction(number: number, frame: writer)
    }

    /// Drops an encoded transaction that will not be enqueued (its buffer is reused).
    func discard(_ encoded: inout EncodedTransaction) {
        recycle(&encoded.frame)
    }

    /// Returns an encoding buffer to the pool.
    private func recycle(_ writer: inout ByteWriter) {
        guard writer.capacity <= Self.largestPooledBuffer else { return }
        writer.removeAll()
        let spent = writer
        encodeBuffers.withLock { pool in if pool.count < 4 { pool.append(spent) } }
    }

    /// Queues an encoded transaction (see ``enqueue(_:validated:mayLead:)``).
    @discardableResult
    func enqueue(_ encoded: consuming EncodedTransaction, mayLead: Bool = false) throws(StoreError) -> AppendTurn {
        let number = encoded.number
        var writer = encoded.frame
        // (After a hand-over, `writer` is the emptied batch buffer: it is pooled in turn.)
        defer { recycle(&writer) }
        let role = try state.withLock { (s) throws(StoreError) -> EnqueueOutcome in
            if s.isClosed || s.isClosing { throw Self.closedError(s, path: path) }
            if let failure = s.failure { throw Self.poisoned(by: failure, path: path) }
            guard number == s.lastEnqueued + 1 else {
                throw StoreError(.invalidTransaction,
                                 "transactions are numbered in order: expected \(s.lastEnqueued + 1), got \(number)",
                                 path: path, transaction: number)
            }
            s.lastEnqueued = number
            if s.pending.count == 0 {
                // Take the encoding as the batch; the empty batch buffer goes to the pool.
                swap(&s.pending, &writer)
            } else {
                writer.withUnsafeBytes { s.pending.write($0) }
            }
            s.pendingLast = number
            s.pendingCount += 1
            s.statistics.appends += 1
            if configuration.durability == .none { s.lastDurable = number }
            let shared = s.batchesShared
            let now = DispatchTime.now().uptimeNanoseconds
            if mayLead, configuration.durability == .full, shared {
                // One of a group: wait on the caller's thread; the arrival that completes the
                // group (or the first waiter past its deadline) writes it.
                s.pendingOnThreads += 1
                if s.writerScheduled { return .turn(.waitInGroup(deadline: now + s.lastSyncNanoseconds)) }
                let deadline = s.gatherDeadline
                guard s.pendingCount >= s.groupSize || now >= deadline || !s.rollWaiters.isEmpty else {
                    return .turn(.waitInGroup(deadline: deadline))
                }
                s.noteRegroup()
                s.writerScheduled = true
                return .turn(.lead)
            }
            if mayLead, configuration.durability == .relaxed {
                // A write without a sync takes microseconds: there is no group to wait for.
                // Write what is pending now, or wait on the caller's thread for whoever is
                // writing (it writes what arrives meanwhile before it stops).
                s.pendingOnThreads += 1
                if s.writerScheduled { return .turn(.waitInGroup(deadline: now)) }
                s.writerScheduled = true
                return .turn(.lead)
            }
            if s.writerScheduled {
                // This append completes the group the writer is gathering: its sync starts now.
                if configuration.durability == .full, shared, s.pendingCount >= s.groupSize {
                    let watch = min(2 * max(s.lastSyncNanoseconds, Self.shortestSyncWatch), Self.longestSyncWatch)
                    return .turn(.watchSync(until: now + watch))
                }
                return .turn(.none)
            }
            s.writerScheduled = true
            if mayLead, !shared, configuration.durability != .none {
                s.pendingOnThreads += 1
                return .turn(.lead)
            }
            s.pollWhenIdle = shared && now - s.idleSince <= Self.idlePollNanoseconds
            return .startWriter
        }
        arrivals.add(1, ordering: .releasing)
        switch role {
        case .startWriter:
            writerQueue.async { self.runWriter() }
            return .none
        case .turn(let turn):
            return turn
        }
    }

    /// What `enqueue` does after queuing a transaction.
    private enum EnqueueOutcome {
        /// Start the writer's queue (the caller has no part in writing).
        case startWriter
        /// Leave the writing to the writer already scheduled, or to the caller's turn.
        case turn(AppendTurn)
    }

    /// An appender's part in writing its transaction, returned by an ``enqueue(_:mayLead:)``
    /// that offered to lead, and taken with ``takeTurn(_:for:)``.
    ///
    /// A lone appender (appends have lately come one at a time) writes and syncs its own
    /// transaction: no thread wake-up to the writer and none back. Appenders that share
    /// syncs under `.full` each wait on their own thread (yielding the processor between
    /// looks) rather than parking, and the arrival that completes a group writes it: a
    /// group of appenders that each wait for their acknowledgement re-forms after every
    /// sync, and a parked waiter must first be woken — on a virtual machine a thread
    /// wake-up costs about as much as a small commit — while the next sync waits for the
    /// slowest of them. Under `.relaxed` an unsynced write takes microseconds: such an
    /// appender writes what is pending when nobody is writing, and otherwise waits for the
    /// writer, which takes what arrives meanwhile.
    enum AppendTurn: Equatable {
        /// Nothing: the writer's queue writes the transaction (or, under `.none`, it is
        /// already acknowledged).
        case none
        /// Write (and sync) everything pending, now, on the caller's thread.
        case lead
        /// Wait for the rest of the group on the caller's thread; if nobody has written the
        /// transaction by `deadline` (uptime nanoseconds) and nobody is writing, write
        /// what is pending.
        case waitInGroup(deadline: UInt64)
        /// The append completed a group the writer syncs now, and its caller cannot block
        /// (a task on the cooperative pool): ``waitUntilDurable(_:after:)`` watches for the
        /// acknowledgement until `until` (uptime nanoseconds), yielding the caller's
        /// executor between looks, before it parks. One of the group's threads stays awake
        /// through the sync — otherwise every pool thread sleeps then, and the
        /// acknowledged appenders wait for one to be woken (about as long as a small
        /// commit's own work, on a virtual machine) before their next commits can form the
        /// next group. Only the appender completing a group watches, and only under
        /// `.full` while batches are shared: a lone appender's latency is not changed, and
        /// nobody spins while a group is still forming (the others need the processors).
        case watchSync(until: UInt64)
    }

    /// Takes an appender's turn (see ``AppendTurn``) on the calling thread, which may block:
    /// returns when transaction `number` is written and acknowledged, or when the wait has
    /// gone on for 2 ms past its deadline with a writer busy (the caller then parks in
    /// ``waitUntilDurable(_:)`` — which it calls afterwards in any case: it reports
    /// failures and returns at once for a durable transaction).
    func takeTurn(_ turn: AppendTurn, for number: UInt64) {
        let deadline: UInt64
        switch turn {
        case .none, .watchSync: return
        case .lead: return writeAsLeader()
        case .waitInGroup(let until): deadline = until
        }
        enum Look { case stop, lead, again(at: UInt64) }
        let parkAt = max(deadline, DispatchTime.now().uptimeNanoseconds) + 2_000_000
        var nextLook = deadline
        while durableThrough.load(ordering: .acquiring) < number {
            let now = DispatchTime.now().uptimeNanoseconds
            if now >= nextLook {
                let look = state.withLock { s -> Look in
                    if s.lastDurable >= number || s.failure != nil || s.isClosed || s.lastWritten >= number { return .stop }
                    if !s.writerScheduled {
                        // Nobody writes the pending group: write it once it is complete or
                        // its time is up (the waiter that gets here first).
                        let deadline = configuration.durability == .full ? s.gatherDeadline : now
                        guard s.pendingCount >= s.groupSize || now >= deadline else { return .again(at: deadline) }
                        s.noteRegroup()
                        s.writerScheduled = true
                        return .lead
                    }
                    guard now >= parkAt else { return .again(at: now + 20_000) }
                    // Parking: if the transaction is still pending, whoever is writing must
                    // not leave it to this thread.
                    if s.pendingCount > 0, number > s.pendingLast - UInt64(s.pendingCount) { s.pendingOnThreads -= 1 }
                    return .stop
                }
                switch look {
                case .stop: return
                case .lead: writeAsLeader()
                case .again(let at): nextLook = at
                }
                continue
            }
            sched_yield()
        }
    }

    /// Writes (and under `.full` syncs) what is pending on the calling thread, as the
    /// writer: an appender's ``AppendTurn/lead`` turn. It runs through the writer's queue —
    /// `sync` on an idle serial queue runs the block on the calling thread — so the writer's
    /// work stays serial. Transactions that arrive while it syncs are left to their own
    /// appenders when they all wait on their threads, and handed to the writer's queue
    /// otherwise; the caller writes one batch.
    func writeAsLeader() {
        writerQueue.sync { self.runWriter(leading: true) }
    }

    /// Waits until the transaction numbered `number` is durable under the journal's
    /// ``Durability`` (immediately for one already durable).
    /// - Throws: ``StoreError/Code/poisoned`` if a write or sync failed before it was durable.
    nonisolated(nonsending) public func waitUntilDurable(_ number: UInt64) async throws(StoreError) {
        try await waitUntilDurable(number, after: .none)
    }

    /// ``waitUntilDurable(_:)`` after an append whose turn was `turn`: a
    /// ``AppendTurn/watchSync(until:)`` turn watches for the acknowledgement first.
    nonisolated(nonsending) func waitUntilDurable(_ number: UInt64, after turn: AppendTurn) async throws(StoreError) {
        if case .watchSync(let until) = turn {
            while durableThrough.load(ordering: .acquiring) < number, DispatchTime.now().uptimeNanoseconds < until {
                await Task.yield()
            }
        }
        // Already durable (always so under `.none`): no suspension.
        if state.withLock({ $0.lastDurable >= number }) { return }
        do {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let immediate: Result<Void, StoreError>? = state.withLock { s in
                    if s.lastDurable >= number { return .success(()) }
                    if let failure = s.failure { return .failure(Self.poisoned(by: failure, path: path)) }
                    if s.isClosed || number > s.lastEnqueued {
                        return .failure(StoreError(.invalidTransaction, "transaction \(number) was never enqueued", path: path, transaction: number))
                    }
                    s.waiters.append((number, continuation))
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } catch let error as StoreError {
            throw error
        } catch {
            preconditionFailure("journal waits only fail with StoreError, not \(error)")
        }
    }

    /// Waits until every transaction enqueued before the call is written to its segment
    /// file (not synced).
    ///
    /// Under ``Durability/full`` and ``Durability/relaxed`` a transaction is written once it
    /// is durable. Under ``Durability/none`` appends are acknowledged before they are
    /// written: flush before reading ``transactions(after:)`` or copying the store's files.
    ///
    /// It also waits for whatever the writer's queue was given before the call (writing
    /// zeros ahead of the appends, for one). It returns at once if the journal has failed
    /// or closed.
    public func flush() async {
        let target = state.withLock { $0.lastEnqueued }
        // The writer drains everything pending before its queue runs anything queued after
        // the append that scheduled it.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            writerQueue.async { continuation.resume() }
        }
        // But an appender writing on its own thread hands what arrived meanwhile to the
        // queue only when it is done, which may be after the step above was queued: wait
        // for the transactions themselves.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s -> Bool in
                if s.lastWritten >= target || s.failure != nil || s.isClosed { return true }
                s.flushWaiters.append((target, continuation))
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// Takes the ``State/flushWaiters`` whose transactions are written (all of them if
    /// `all`), for the caller to resume once it has unlocked the state.
    private static func takeFlushWaiters(_ s: inout State, all: Bool = false) -> [CheckedContinuation<Void, Never>] {
        guard !s.flushWaiters.isEmpty else { return [] }
        let written = s.lastWritten
        let ready = s.flushWaiters.filter { all || $0.target <= written }.map(\.continuation)
        s.flushWaiters.removeAll { all || $0.target <= written }
        return ready
    }

    /// Registers the closure called on the writer's queue whenever transactions become
    /// durable under `.full` or `.relaxed` (with the number of the last), after the journal
    /// has recorded them as durable and let their waiters go on (so a waiter may get there
    /// first: the store's commits publish their own transaction if it has not been), and
    /// before ``flush()`` returns for them. It must not block or call back into the journal.
    func observeDurability(_ observer: @escaping @Sendable (UInt64) -> Void) {
        durabilityObserver.withLock { $0 = DurabilityObserver(call: observer) }
    }

    /// Enqueues a transaction and waits until it is durable.
    public func append(_ record: TransactionRecord) async throws(StoreError) {
        try await append(record, callerMayBlock: false)
    }

    /// Enqueues a transaction and waits until it is durable, on the caller's executor.
    ///
    /// With `callerMayBlock` — the caller runs on a thread that may block on I/O: a private
    /// serial queue's executor, a thread of its own; never the cooperative pool or the main
    /// actor — the append may be written on the caller's thread instead of waking the
    /// writer's queue and waiting to be woken (see ``AppendTurn``): a lone append that finds
    /// the writer idle writes and syncs its transaction itself; under `.full`, appends that
    /// share syncs wait for their group on their threads and the one completing it writes
    /// it; under `.relaxed`, an append writes what is pending, or waits for whoever is
    /// writing to take it.
    nonisolated(nonsending) public func append(_ record: TransactionRecord, callerMayBlock: Bool) async throws(StoreError) {
        let turn = try enqueue(record, validated: false, mayLead: callerMayBlock)
        takeTurn(turn, for: record.number)
        try await waitUntilDurable(record.number, after: turn)
    }

    /// Throws `closed` or `poisoned` if the journal accepts no more appends (cheap; lets a
    /// caller refuse early, before work that assumes the append can happen).
    func checkAccepting() throws(StoreError) {
        try state.withLock { (s) throws(StoreError) in
            if s.isClosed || s.isClosing { throw Self.closedError(s, path: path) }
            if let failure = s.failure { throw Self.poisoned(by: failure, path: path) }
        }
    }

    /// The error for a call that a closed (or closing) journal refuses.
    static func closedError(_ s: State, path: String) -> StoreError {
        StoreError(.closed, s.isClosed ? "the journal was closed" : "the journal is closing", path: path)
    }

    static func poisoned(by failure: StoreError, path: String) -> StoreError {
        if failure.code == .poisoned { return failure }
        return StoreError(.poisoned,
                          "an earlier write or sync failed, so nothing more is acknowledged; reopen the store (every acknowledged transaction is intact): \(failure.message)",
                          path: failure.path ?? path, transaction: failure.transaction, underlying: failure.underlying)
    }

    // MARK: - The writer

    /// Group commit's gathering step: when recent batches held several transactions (so
    /// several appenders are active) but fewer are pending now, wait for as many as the
    /// largest of the last eight batches held to arrive, so they share the next sync
    /// instead of each paying for one. The wait ends, counted
    /// from the end of the last sync (when the appenders it acknowledged were woken), after
    /// as long as that sync took or one and a half times as long as groups have been taking
    /// to re-form, whichever is longer, and never after 2 ms. A lone appender never waits:
    /// its batches hold one. (The largest recent batch, not the last: when one appender of
    /// a group falls behind by a sync, a group sized by the last batch stays one short for
    /// good, each sync leaving a straggler for the next.)
    ///
    /// The writer polls (yielding the processor between looks) rather than sleeping: the
    /// appenders it waits for are running, and waking a sleeping writer when the last of
    /// them arrives would cost as much as their own work.
    private func gatherGroup() {
        guard configuration.durability == .full else { return }
        let plan = state.withLock { s -> (target: Int, deadline: UInt64)? in
            let group = s.groupSize
            guard s.failure == nil, s.rollWaiters.isEmpty, group > 1, s.pendingCount > 0, s.pendingCount < group
            else { return nil }
            return (group, s.gatherDeadline)
        }
        guard let plan else { return }
        var seen = arrivals.load(ordering: .acquiring)
        while let now = pollForWork(after: seen, until: plan.deadline) {
            seen = now
            let complete = state.withLock { s in
                guard s.pendingCount >= plan.target || !s.rollWaiters.isEmpty else { return false }
                s.noteRegroup()
                return true
            }
            if complete { return }
        }
        // The group did not re-form in time: allow longer next time (the average moves
        // towards the allowance just spent, which is above it), up to the 2 ms limit.
        state.withLock { $0.noteRegroup() }
    }

    /// Writes pending transactions in batches until none are left. Runs on the writer queue.
    /// `leading`: on a leading appender's thread (see ``writeAsLeader()``), which writes one
    /// batch, then hands anything more to the queue.
    private func runWriter(leading: Bool = false) {
        var mayPoll = !leading
        var wrote = false
        var batchesForOthers = 0
        while true {
            if !leading { gatherGroup() }
            let step = state.withLock { s -> WriterStep in
                let roll = !s.rollWaiters.isEmpty
                // Unsynced writes are cheap: under `.relaxed` a leader writes what came
                // meanwhile from appenders waiting on their threads (a few batches at most,
                // so that its own caller is not held up for long), rather than have them
                // look again.
                let keepLeading = configuration.durability == .relaxed && !roll && s.pendingOnThreads == s.pendingCount
                    && batchesForOthers < 4
                if leading, wrote, s.failure == nil, s.pending.count > 0 || roll, !keepLeading {
                    if !roll, s.pendingOnThreads == s.pendingCount {
                        // Every appender of what is pending waits on its own thread and will
                        // write it: no need to wake the writer's queue.
                        s.writerScheduled = false
                        return .idle
                    }
                    return .handOff  // `writerScheduled` stays set: the queue takes over
                }
                guard s.failure == nil, let current = s.current, s.pending.count > 0 || roll else {
                    if mayPoll, s.pollWhenIdle, s.failure == nil, s.current != nil {
                        return .poll(arrivals.load(ordering: .acquiring))
                    }
                    s.writerScheduled = false
                    s.idleSince = DispatchTime.now().uptimeNanoseconds
                    return .idle
                }
                let batch = s.pending
                // The buffer the last batch was written from becomes the next pending one.
                s.pending = s.spareBatch
                s.spareBatch = ByteWriter(capacity: 16)
                defer {
                    s.pendingCount = 0
                    s.pendingOnThreads = 0
                }
                return .write(batch: batch, last: s.pendingLast, count: s.pendingCount, current: current, roll: roll)
            }
            switch step {
            case .idle:
                return
            case .handOff:
                writerQueue.async { self.runWriter() }
                return
            case .poll(let seen):
                let arrived = pollForWork(after: seen, until: DispatchTime.now().uptimeNanoseconds + Self.idlePollNanoseconds) != nil
                // After a fruitless poll the writer goes idle at its next look; the next
                // append that finds it idle decides whether it polls again.
                if !arrived { state.withLock { $0.pollWhenIdle = false } }
                mayPoll = arrived
            case .write(let batch, let last, let count, var current, let rolling):
                mayPoll = !leading
                if leading, wrote { batchesForOthers += 1 }
                wrote = true
                do throws(StoreError) {
                    if batch.count > 0 {
                        try write(batch, count: count, through: last, to: &current)
                        if leading { state.withLock { $0.statistics.writesByAppenders += 1 } }
                        if needsSpace(current) {
                            if leading {
                                // Off the appender's thread: its append is acknowledged.
                                writerQueue.async { self.preallocateCurrentSegment() }
                            } else {
                                try preallocate(&current)
                            }
                        }
                        var spent = batch
                        if spent.capacity <= Self.largestPooledBuffer {
                            spent.removeAll()
                            state.withLock { s in if s.spareBatch.capacity < spent.capacity { s.spareBatch = spent } }
                        }
                    }
                    if rolling || current.size >= Int64(configuration.segmentSize) {
                        if current.transactions > 0 { current = try roll(from: current) }
                        let waiters = state.withLock { s in
                            defer { s.rollWaiters = [] }
                            return s.rollWaiters
                        }
                        for waiter in waiters { waiter.resume() }
                    }
                } catch {
                    poison(error)
                    return
                }
            }
        }
    }

    /// What the writer does next.
    private enum WriterStep {
        /// Nothing pending: the writer has marked itself idle and returns.
        case idle
        /// Nothing pending, but an append is likely soon: poll for it (`arrivals` was this).
        case poll(UInt64)
        /// A leading appender has written its batch; more is pending: the queue takes it.
        case handOff
        /// Write (and sync) this batch, and start a new segment if asked or full.
        case write(batch: ByteWriter, last: UInt64, count: Int, current: CurrentSegment, roll: Bool)
    }

    /// Polls `arrivals` until it differs from `seen` (returning it) or until `deadline`
    /// (returning `nil`), yielding the processor between looks: the appenders the writer
    /// waits for may need it. Spending a fraction of a millisecond of one thread this way
    /// saves them the writer thread's wake-up — on the project's virtual machines as long
    /// as a commit's own work.
    private func pollForWork(after seen: UInt64, until deadline: UInt64) -> UInt64? {
        repeat {
            let now = arrivals.load(ordering: .acquiring)
            if now != seen { return now }
            sched_yield()
        } while DispatchTime.now().uptimeNanoseconds < deadline
        let now = arrivals.load(ordering: .acquiring)
        return now != seen ? now : nil
    }

    private func write(_ batch: ByteWriter, count: Int, through last: UInt64, to current: inout CurrentSegment) throws(StoreError) {
        let durability = configuration.durability
        var syncNanoseconds: UInt64 = 0
        do throws(FileIOError) {
            let size = current.size, path = current.segment.path
            try batch.withUnsafeBytes { (bytes) throws(FileIOError) in try io.writeAll(current.descriptor, bytes, at: size, path: path) }
            if durability == .full {
                let start = DispatchTime.now().uptimeNanoseconds
                try io.sync(current.descriptor, path: current.segment.path)
                syncNanoseconds = DispatchTime.now().uptimeNanoseconds - start
            }
        } catch {
            throw StoreError(.io, "appending transactions through \(last) failed: \(error)",
                             path: current.segment.path, offset: current.size, transaction: last, underlying: error)
        }
        current.size += Int64(batch.count)
        current.allocated = max(current.allocated, current.size)
        current.transactions += count
        if durability == .full { configuration.acknowledgementObserver?(current.segment.path, current.size) }
        let (ready, flushers) = state.withLock { s in
            s.current = current
            s.lastWritten = last
            if durability != .none { s.lastDurable = last }
            durableThrough.store(last, ordering: .releasing)
            s.statistics.writes += 1
            s.statistics.bytes += Int64(batch.count)
            if durability == .full { s.statistics.syncs += 1 }
            s.recentBatchCounts[s.batchesWritten % s.recentBatchCounts.count] = count
            s.batchesWritten += 1
            s.lastSyncNanoseconds = syncNanoseconds
            s.lastSyncEnded = DispatchTime.now().uptimeNanoseconds
            let durable = s.lastDurable
            let ready = s.waiters.filter { $0.number <= durable }.map(\.continuation)
            s.waiters.removeAll { $0.number <= durable }
            return (ready, Self.takeFlushWaiters(&s))
        }
        // The appenders go on first (those waiting on their threads already have): the
        // observer's work — the store publishing the batch — is not theirs to wait for; one
        // that needs its commit published before it returns publishes it itself, if it gets
        // there first (see `Store.ensurePublished`).
        for continuation in ready { continuation.resume() }
        if durability != .none, let observer = durabilityObserver.withLock({ $0?.call }) { observer(last) }
        for flusher in flushers { flusher.resume() }
    }

    /// Starts a new segment after `current` and makes it the one appends go to.
    private func roll(from current: CurrentSegment) throws(StoreError) -> CurrentSegment {
        let first = state.withLock { $0.lastWritten } + 1
        let next = try createSegment(firstTransaction: first)
        trimPreallocation(current)
        io.close(current.descriptor)
        let started = CurrentSegment(segment: next.segment, descriptor: next.descriptor, size: next.size, allocated: next.size, transactions: 0)
        state.withLock { s in
            s.segments.append(next.segment)
            s.current = started
            s.statistics.segmentsStarted += 1
        }
        return started
    }

    /// Creates a segment file holding only its header and schema, durably.
    func createSegment(firstTransaction: UInt64) throws(StoreError) -> (segment: Segment, descriptor: FileDescriptor, size: Int64) {
        let segmentPath = StoreLayout.join(path, StoreLayout.segmentName(firstTransaction: firstTransaction))
        var writer = ByteWriter(capacity: 4096)
        FileHeader(kind: .segment, formatVersion: RecordFormat.version, storeID: storeID, fingerprint: schema.fingerprint,
                   transaction: firstTransaction).encode(into: &writer)
        writeSchemaRecord(into: &writer)
        let fd: FileDescriptor
        do throws(FileIOError) {
            fd = try io.open(segmentPath, access: .readWrite, creation: .createExclusive)
        } catch {
            throw StoreError(.io, "creating a journal segment failed: \(error)", path: segmentPath, underlying: error)
        }
        do throws(FileIOError) {
            try io.writeAll(fd, writer.bytes, at: 0, path: segmentPath)
            if configuration.durability == .full {
                try io.sync(fd, path: segmentPath)
                try io.syncDirectory(path)
            }
        } catch {
            io.close(fd)
            // Nothing refers to the segment yet: removed, the next open finds no torn tail to
            // report (if removing fails too, that open cuts it as it cuts a crash's).
            try? io.remove(segmentPath)
            throw StoreError(.io, "writing a new journal segment failed: \(error)", path: segmentPath, underlying: error)
        }
        return (Segment(firstTransaction: firstTransaction, path: segmentPath), fd, Int64(writer.count))
    }

    func writeSchemaRecord(into writer: inout ByteWriter) {
        let start = writer.beginFrame(.schema)
        writer.write(Array(schema.modelFileJSON.text.utf8))
        writer.finishFrame(at: start, seed: codec.seed)
    }

    func poison(_ error: StoreError) {
        let (waiters, flushers) = state.withLock { s in
            if s.failure == nil { s.failure = error }
            s.writerScheduled = false
            defer {
                s.waiters = []
                s.rollWaiters = []
            }
            return (s.waiters.map(\.continuation) + s.rollWaiters, Self.takeFlushWaiters(&s, all: true))
        }
        let failure = Self.poisoned(by: error, path: path)
        for waiter in waiters { waiter.resume(throwing: failure) }
        for flusher in flushers { flusher.resume() }
    }

    /// Asks the writer to start a new segment and waits until it has (used by compaction,
    /// so that every older segment becomes whole and removable).
    func rollSegment() async throws(StoreError) {
        do {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Bool, StoreError> = state.withLock { s in
                    if let failure = s.failure { return .failure(Self.poisoned(by: failure, path: path)) }
                    if s.isClosed { return .failure(StoreError(.closed, "the journal was closed", path: path)) }
                    s.rollWaiters.append(continuation)
                    arrivals.add(1, ordering: .releasing)
                    guard !s.writerScheduled else { return .success(false) }
                    s.writerScheduled = true
                    return .success(true)
                }
                switch outcome {
                case .failure(let error): continuation.resume(throwing: error)
                case .success(let schedule): if schedule { writerQueue.async { self.runWriter() } }
                }
            }
        } catch let error as StoreError {
            throw error
        } catch {
            preconditionFailure("journal waits only fail with StoreError, not \(error)")
        }
    }

    /// Runs blocking file work on the compaction queue without blocking the caller's thread.
    func onCompactionQueue<T: Sendable>(_ body: @escaping @Sendable () throws(StoreError) -> T) async throws(StoreError) -> T {
        let result: Result<T, StoreError> = await withCheckedContinuation { continuation in
            compactionQueue.async {
                continuation.resume(returning: Result { () throws(StoreError) -> T in try body() })
            }
        }
        return try result.get()
    }

    // MARK: - Closing

    /// Writes what is pending, syncs, closes the files and releases the write lock.
    ///
    /// From the moment it is called, appends and compactions are refused with
    /// ``StoreError/Code/closed``; those accepted before finish first (transactions are
    /// written and acknowledged, or fail; a compaction under way completes). Afterwards
    /// every call throws ``StoreError/Code/closed``.
    public func close() async {
        _ = await close(releasingLock: true)
    }

    /// Closes the journal; unless `releasingLock`, keeps the write lock and returns it, for
    /// the next handle on the same store (a migration reopening a store under a new schema
    /// never lets another writer in between).
    func close(releasingLock: Bool) async -> StoreLock? {
        // Refuse new appends and compactions; let those accepted finish: compactions first
        // (they may still need the writer to roll a segment), then every transaction
        // enqueued is written (under `.full` and `.relaxed`: acknowledged).
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { s -> Bool in
                s.isClosing = true
                if s.compactionsInFlight == 0 { return true }
                s.closeWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
        await flush()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            writerQueue.async {
                self.compactionQueue.sync {
                    let (wasOpen, current, flushers, waiters) = self.state.withLock {
                        s -> (Bool, CurrentSegment?, [CheckedContinuation<Void, Never>], [CheckedContinuation<Void, any Error>]) in
                        defer {
                            s.isClosed = true
                            // Nothing writes after this: a writer queued behind this step
                            // finds no segment and goes idle.
                            s.current = nil
                            s.waiters = []
                            s.rollWaiters = []
                        }
                        return (!s.isClosed, s.current, Self.takeFlushWaiters(&s, all: true),
                                s.waiters.map(\.continuation) + s.rollWaiters)
                    }
                    for flusher in flushers { flusher.resume() }
                    // None should be left (every transaction enqueued was written, or a
                    // failure resumed its waiters); one that is is told the journal closed
                    // rather than left waiting.
                    for waiter in waiters { waiter.resume(throwing: StoreError(.closed, "the journal was closed before the transaction was written", path: self.path)) }
                    guard wasOpen else { return }
                    if let current {
                        if self.configuration.durability != .full, self.failure == nil { try? self.io.sync(current.descriptor) }
                        if self.failure == nil { self.trimPreallocation(current) }
                        self.io.close(current.descriptor)
                    }
                    if releasingLock { self.lock?.release(io: self.io) }
                }
                continuation.resume()
            }
        }
        return releasingLock ? nil : lock
    }
}

/// The durability observer, boxed in a struct: a closure held directly as a lock's generic
/// state was re-abstracted by the `inout` access of each read, every read wrapping it in
/// more thunks — a store called its observer through a chain that grew with every batch it
/// wrote (15 % of a small-commit workload's processor time; `JournalGroupCommitTests`).
struct DurabilityObserver: Sendable {
    let call: @Sendable (UInt64) -> Void
}
