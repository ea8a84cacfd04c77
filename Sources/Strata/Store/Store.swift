import Dispatch
import Foundation
import Synchronization

/// A store: the committed state of an object graph as immutable generations, over a
/// crash-safe journal.
///
/// Readers take ``currentGeneration`` (O(1)) and keep it as long as they like: commits
/// never wait for them and they never see a commit half-applied. Writers submit a
/// ``ChangeSet`` to ``commit(_:)``, which checks it against everything committed since its
/// objects were read (conflicts, per property, resolved by its ``MergePolicy``), checks
/// unique attributes, required values, inverse relationships and delete rules, appends it
/// to the journal (concurrent commits share one `fsync`), and publishes the new generation
/// once it is durable. A commit that fails changes nothing, in memory or on disk.
///
/// ```swift
/// let store = try Store.create(at: "/data/songs.strata", schema: schema)
/// let artist = store.allocateObjectIDs(for: "Artist")[0]
/// try await store.commit(ChangeSet(author: "importer", inserted: [
///     RowImage(id: artist, values: [.int(1), .string("AC/DC"), .objects([])])
/// ]))
/// print(store.currentGeneration.count(of: "Artist"))   // 1
/// ```
public final class Store: Sendable {
    /// How the store writes (durability, file system, read-only).
    public typealias Configuration = Journal.Configuration

    /// The journal underneath.
    public let journal: Journal

    /// What commits change; taken before the journal's lock, `numbers` and `pending`.
    let commitState: Locked<CommitState>
    /// The object numbers handed out and not yet inserted: its own lock (taken after
    /// `commitState` by committers, briefly, and alone by everyone handing out IDs), so that
    /// a context inserting an object never waits for another's commit being checked — on a
    /// virtual machine a thread put to sleep on a lock takes as long to wake as a small
    /// commit takes to check.
    let numbers: Locked<ObjectNumbers>
    /// Generations waiting for durability before they are published, oldest first. Its own
    /// lock (taken after `commitState` by committers, alone by the publisher), so that the
    /// journal's writer publishing a batch never waits for a commit being checked.
    let pending = Locked<[PendingCommit]>([])

    /// A commit waiting for durability: its generation, its notification, and who else is
    /// to be told when it is published.
    struct PendingCommit {
        var generation: Generation
        var notification: CommitNotification
        var announcer: Broadcast<CommitNotification>?
    }
    /// What readers see. Never held while anything else is done.
    private let published: Locked<Generation>
    private let subscribers = Broadcast<CommitNotification>()
    /// What runs when the store closes (see ``whenClosed(_:)``), and whether it has.
    private let closeHooks = Locked(CloseHooks())

    private struct CloseHooks {
        var closed = false
        var lastID = 0
        var hooks: [(id: Int, body: @Sendable () -> Void)] = []
    }
    /// The last transaction published. Held while generations are published and their
    /// notifications delivered, so that they go out in transaction order whichever thread
    /// publishes (the journal's writer, or a committer under `.none`). Taken before
    /// `pending` and `published`.
    private let publishing: Locked<UInt64>
    /// The last transaction published and announced (`publishing`'s value once its
    /// notifications are out), for a commit to see without taking the lock that its own
    /// is out.
    private let publishedThrough: Atomic<UInt64>

    struct CommitState: Sendable {
        /// The newest generation, including commits not yet durable (what commits are checked against).
        var head: Generation
    }

    /// The object numbers a store has handed out.
    struct ObjectNumbers: Sendable {
        /// The highest object number handed out per entity (by storage index).
        var allocated: [UInt64]
        /// Per entity, the numbers this store handed out that no commit has inserted yet:
        /// the only ones an insert may take.
        var unused: [UnusedNumbers]

        /// Hands out `count` numbers of the entity at `index`; returns the first.
        mutating func allocate(_ count: UInt64, entity index: Int) -> UInt64 {
            // Past the end of 64 bits only after numbers given by "id" near it (an importer
            // leaves room for 2^32 after any it gives) and that many objects more.
            precondition(count < UInt64.max - allocated[index],
                         "the store has handed out object numbers up to \(allocated[index]) for the entity at storage index \(index); \(count) more do not fit in 64 bits")
            let first = allocated[index] + 1
            allocated[index] += count
            unused[index].add(first..<first + count)
            return first
        }
    }

    private init(journal: Journal, generation: Generation) {
        self.journal = journal
        self.commitState = Locked(CommitState(head: generation))
        self.numbers = Locked(ObjectNumbers(allocated: generation.highestNumbers,
                                            unused: Array(repeating: UnusedNumbers(), count: generation.highestNumbers.count)))
        self.published = Locked(generation)
        self.publishing = Locked(generation.transaction)
        self.publishedThrough = Atomic(generation.transaction)
        // Publish on the journal's writer queue as soon as a batch is durable, right after
        // its committers are let go: a committer finds its generation published (and its
        // notification out), or publishes it itself — no hop to another queue either way.
        journal.observeDurability { [weak self] durable in self?.publish(through: durable) }
    }

    // Nothing can commit to a store that is gone (its journal's deinit closes its files):
    // its did-commit streams end, and so does whatever waits for it to close.
    deinit {
        subscribers.finish()
        let hooks = closeHooks.withLock { state in
            defer { state.hooks = [] }
            return state.closed ? [] : state.hooks
        }
        for hook in hooks { hook.body() }
    }

    /// Creates a new, empty store.
    /// - Throws: ``StoreError`` (see ``Journal/create(at:schema:configuration:)``).
    public static func create(at path: String, schema: Schema, configuration: Configuration = Configuration()) throws(StoreError) -> Store {
        let journal = try Journal.create(at: path, schema: schema, configuration: configuration)
        return Store(journal: journal, generation: Generation(schema: journal.schema))
    }

    /// Opens a store, loading its newest checkpoint and replaying the journal after it.
    /// - Parameter schema: the schema the caller expects; `nil` to use the stored one.
    /// - Throws: ``StoreError`` (see ``Journal/open(at:schema:configuration:replayingInto:)``).
    public static func open(at path: String, schema: Schema? = nil, configuration: Configuration = Configuration()) throws(StoreError) -> Store {
        try open(at: path, schema: schema, configuration: configuration, heldLock: nil)
    }

    /// Opens a store with the write lock the caller already holds, if any.
    static func open(at path: String, schema: Schema?, configuration: Configuration, heldLock: StoreLock?) throws(StoreError) -> Store {
        try Journal.againIfFilesVanish(readOnly: configuration.readOnly) { () throws(StoreError) in
            var target = DeferredGeneration()
            let journal = try Journal.open(at: path, schema: schema, configuration: configuration, heldLock: heldLock, replayingInto: &target)
            return Store(journal: journal, generation: target.prepared ? target.generation : Generation(schema: journal.schema))
        }
    }

    /// The store directory.
    public var path: String { journal.path }
    /// The schema the store was written with.
    public var schema: Schema { journal.schema }
    /// What opening found and did.
    public var recovery: RecoveryReport { journal.recovery }

    /// The newest durable generation. O(1); hold it as long as you like.
    public var currentGeneration: Generation { published.withLock { $0 } }

    /// Hands out new, permanent object IDs for an entity (a block, for importers).
    ///
    /// While the store is open an ID is handed out once, committed or not; an object's ID,
    /// once committed, is never given to another object, even after the object is deleted.
    /// Across a reopen the counters continue from the highest number committed, so a number
    /// handed out and never committed may be handed out again then.
    public func allocateObjectIDs(for entity: String, count: Int = 1) -> [ObjectID] {
        guard let index = schema.entityIndex(named: entity) else {
            preconditionFailure("allocateObjectIDs: schema \"\(schema.name)\" has no entity \"\(entity)\"; its entities are \(schema.entities.map(\.name))")
        }
        precondition(count >= 0, "allocateObjectIDs: count \(count) is negative")
        let name = schema.layout.entityNames[index]
        let first = numbers.withLock { n in n.allocate(UInt64(count), entity: index) }
        return (0..<UInt64(count)).map { ObjectID(entityName: name, number: first + $0) }
    }

    /// Hands out one new object ID (the fast path of ``allocateObjectIDs(for:count:)``).
    func allocateObjectID(entity index: Int) -> ObjectID {
        let number = numbers.withLock { n in n.allocate(1, entity: index) }
        return ObjectID(entityName: schema.layout.entityNames[index], number: number)
    }

    /// Hands out a chosen object number (an importer keeping the numbers of a dump), if no
    /// number at or above it has been handed out for the entity: the numbers skipped are
    /// never used. Returns the entity's highest number handed out before it, or `nil`.
    func reserveObjectNumber(_ number: UInt64, entity index: Int) -> UInt64? {
        numbers.withLock { n in
            guard number > n.allocated[index] else { return nil }
            defer {
                n.allocated[index] = number
                n.unused[index].add(number..<number + 1)
            }
            return n.allocated[index]
        }
    }

    /// Numbers handed out one at a time (to an import's lines), kept as runs per entity: a
    /// number right after the one before, handed out when that one was its entity's
    /// highest, extends its run (an import of a million new objects keeps a run, not a
    /// million entries).
    struct HandedOutNumbers: Sendable {
        /// Consecutive numbers `first...last`, handed out while the entity's highest was
        /// `previous` and then each one before.
        struct Run: Sendable {
            var previous: UInt64
            var first: UInt64
            var last: UInt64
        }

        /// Per entity (storage index), in the order handed out.
        private(set) var runs: [Int: [Run]] = [:]

        var isEmpty: Bool { runs.isEmpty }

        /// Records `number`, handed out for `entity` when its highest was `previous`.
        mutating func record(entity: Int, number: UInt64, previous: UInt64) {
            if let last = runs[entity]?.last, last.last == previous, number == previous + 1 {
                runs[entity]![runs[entity]!.count - 1].last = number
            } else {
                runs[entity, default: []].append(Run(previous: previous, first: number, last: number))
            }
        }
    }

    /// Forgets numbers handed out that will never be inserted — those of objects a context
    /// inserted and let go of unsaved (rolled back, reset, deleted, or gone with the
    /// context) — so that what the store keeps of its unused numbers does not grow with
    /// every cancelled insert. A number retired stays handed out: no insert may take it.
    func retire(_ ids: [ObjectID]) {
        guard !ids.isEmpty else { return }
        numbers.withLock { n in
            for id in ids {
                guard let entity = schema.entityIndex(of: id), n.unused[entity].contains(id.number) else { continue }
                n.unused[entity].use(id.number)
            }
        }
    }

    /// How many disjoint ranges hold an entity's unused numbers (for tests).
    func unusedNumberRanges(of entity: String) -> Int {
        numbers.withLock { $0.unused[schema.entityIndex(named: entity)!].rangeCount }
    }

    /// Takes back numbers handed out one at a time that no commit used, newest first, as
    /// long as each is still its entity's highest: an import that fails gives back what its
    /// uncommitted lines took, so that the same lines imported again through this store keep
    /// their `"id"`s. A number anything was handed out after stays handed out, and so do the
    /// entity's earlier ones.
    func takeBack(_ handedOut: HandedOutNumbers) {
        guard !handedOut.isEmpty else { return }
        numbers.withLock { n in
            for (entity, runs) in handedOut.runs {
                for run in runs.reversed() {
                    guard n.allocated[entity] == run.last else { break }
                    // Out of the unused numbers, and below the counter again: handed out anew.
                    for number in run.first...run.last where n.unused[entity].contains(number) { n.unused[entity].use(number) }
                    n.allocated[entity] = run.previous
                }
            }
        }
    }

    // MARK: - Notifications

    /// A stream of every transaction committed from now on, in order, each delivered once
    /// its generation is published. It ends when the store is closed (at once if it already
    /// is), or goes away unclosed.
    ///
    /// The stream keeps every notification until it is read, and each notification the
    /// generation its commit made: a stream held and not read keeps every later generation
    /// alive (about 2 KB a small commit). Read it, or let it go.
    public func commits() -> AsyncStream<CommitNotification> {
        subscribers.subscribe()
    }

    /// How many ``commits()`` streams are listening (for tests: a merge subscription that
    /// ended is gone).
    var commitSubscriberCount: Int { subscribers.subscriberCount }

    /// Publishes every pending generation up to transaction `durable`, in order, and
    /// delivers their notifications: on the journal's writer queue as batches become
    /// durable (`.full`, `.relaxed`), and by committers themselves under `.none`.
    private func publish(through durable: UInt64) {
        // What publishing lets go of — the generation it replaces, and the queue's hold on
        // the ones it publishes — is freed after the locks are released (freeing the nodes
        // a generation alone held is most of the work): whoever waits to publish, or to see
        // its commit published, does not wait for it.
        var released: (replaced: Generation?, commits: [PendingCommit]) = (nil, [])
        publishing.withLock { last in
            guard durable > last else { return }
            let ready = pending.withLock { queue -> [PendingCommit] in
                let count = queue.prefix { $0.generation.transaction <= durable }.count
                defer { queue.removeFirst(count) }
                return Array(queue.prefix(count))
            }
            guard let newest = ready.last else { return }
            released.replaced = published.withLock { current in
                defer { current = newest.generation }
                return current
            }
            last = newest.generation.transaction
            subscribers.yield(contentsOf: ready.map(\.notification))
            // Under the same lock: each announcer hears its commits in transaction order.
            for commit in ready { commit.announcer?.yield(commit.notification) }
            released.commits = ready
            publishedThrough.store(last, ordering: .releasing)
        }
        withExtendedLifetime(released) {}
    }

    /// Makes sure transaction `number` is published before a commit returns it (the
    /// writer queue normally has; under `.none` nothing else does).
    func ensurePublished(_ number: UInt64) {
        // Published *and announced*: a commit returns after its did-commit notification has
        // gone out (the writer may be publishing it right now: then this waits for it).
        guard publishedThrough.load(ordering: .acquiring) < number else { return }
        publish(through: journal.lastDurableTransaction)
    }

    // MARK: - Maintenance

    /// Writes a checkpoint of the current generation and removes the journal segments it
    /// covers, while commits continue. Cancelling the calling task before the checkpoint is
    /// in place stops it with ``StoreError/Code/cancelled`` and changes nothing (see
    /// ``Journal/compact(from:)``).
    @discardableResult
    public func compact() async throws(StoreError) -> Journal.CompactionReport {
        try await journal.compact(from: currentGeneration)
    }

    /// Closes the store: waits for pending commits, syncs, releases the write lock, and
    /// ends every notification stream.
    public func close() async {
        _ = await close(releasingLock: true)
    }

    /// Closes the store; unless `releasingLock`, keeps the write lock and returns it.
    func close(releasingLock: Bool) async -> StoreLock? {
        let lock = await journal.close(releasingLock: releasingLock)
        ensurePublished(journal.lastDurableTransaction)
        subscribers.finish()
        let hooks = closeHooks.withLock { state in
            defer {
                state.closed = true
                state.hooks = []
            }
            return state.hooks
        }
        for hook in hooks { hook.body() }
        return lock
    }

    /// How many hooks wait for the store to close (for tests: an owner that went away took
    /// its hook with it).
    var closeHookCount: Int { closeHooks.withLock { $0.hooks.count } }

    /// Runs `body` when the store closes (at once if it has): how streams fed by its
    /// commits — a coordinator's ``Coordinator/didSave()`` — end with it. Returns what
    /// ``removeCloseHook(_:)`` takes, or `nil` if the store had closed and `body` ran.
    ///
    /// The hook's owner removes it when it goes away first: a long-lived store kept one for
    /// every coordinator and stack ever made on it.
    @discardableResult
    func whenClosed(_ body: @escaping @Sendable () -> Void) -> Int? {
        let id = closeHooks.withLock { state -> Int? in
            guard !state.closed else { return nil }
            state.lastID += 1
            state.hooks.append((state.lastID, body))
            return state.lastID
        }
        if id == nil { body() }
        return id
    }

    /// Forgets a hook of ``whenClosed(_:)`` whose owner went away.
    func removeCloseHook(_ id: Int) {
        closeHooks.withLock { $0.hooks.removeAll { $0.id == id } }
    }
}

/// Builds a generation during replay, once the journal has said which schema it holds.
///
/// The generation is a plain stored property (not an optional) so that every row is
/// inserted in place: mutating through an optional's unwrap could copy the generation and
/// defeat the tables' in-place updates.
struct DeferredGeneration: JournalReplayTarget {
    var generation = Generation(schema: Generation.placeholderSchema)
    var prepared = false

    mutating func prepare(schema: Schema) throws(ReplayError) {
        generation = Generation(schema: schema)
        prepared = true
    }

    mutating func beginCheckpoint(through transaction: UInt64) throws(ReplayError) {
        try generation.beginCheckpoint(through: transaction)
    }

    mutating func loadCheckpointRow(_ row: RowImage) throws(ReplayError) {
        try generation.loadCheckpointRow(row)
    }

    mutating func finishCheckpoint(through transaction: UInt64, highestObjectNumbers: [String: UInt64]) throws(ReplayError) {
        try generation.finishCheckpoint(through: transaction, highestObjectNumbers: highestObjectNumbers)
    }

    mutating func apply(_ transaction: TransactionRecord) throws(ReplayError) {
        try generation.apply(transaction)
    }
}
