import Foundation

/// What a save changed, as a `Sendable` value: posted by a context after each save (to the
/// store or to its parent), and what ``ObjectContext/merge(_:)`` takes.
///
/// ```swift
/// for await save in importContext.didSave() {
///     await viewContext.perform { context in _ = context.merge(save) }
/// }
/// ```
public struct DidSave: Sendable, Hashable {
    /// The store transaction, or `nil` for a save into a parent context.
    public var transaction: UInt64?
    /// The saving context's name (or the transaction's author).
    public var author: String
    /// Objects created.
    public var inserted: [ObjectID]
    /// Objects changed.
    public var updated: [ObjectID]
    /// Objects deleted.
    public var deleted: [ObjectID]
    /// For each changed object, the names of the keys that changed.
    public var changedKeys: [ObjectID: [String]] {
        get { changes.changedKeys }
        set { changes.changedKeys = newValue }
    }
    /// The new values of every inserted and changed object (all its values, storage order).
    public var values: [ObjectID: [Value]] {
        get { changes.values }
        set { changes.values = newValue }
    }
    /// Keys and values; for a committed save, built when first read (see ``CommitChanges``).
    var changes: CommitChanges
    /// The context that saved, so that it can skip its own saves when merging.
    var origin: ObjectIdentifier?
    /// The generation a committed save produced, for pinned contexts that merge it.
    var generation: Generation?

    /// Creates a did-save value.
    public init(
        transaction: UInt64?, author: String, inserted: [ObjectID] = [], updated: [ObjectID] = [], deleted: [ObjectID] = [],
        changedKeys: [ObjectID: [String]] = [:], values: [ObjectID: [Value]] = [:]
    ) {
        self.transaction = transaction
        self.author = author
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.changes = CommitChanges(changedKeys: changedKeys, values: values)
    }

    /// The did-save of a committed transaction (from ``Store/commits()`` or ``Coordinator/didSave()``).
    public init(_ commit: CommitNotification) {
        self.init(transaction: commit.transaction, author: commit.author, inserted: commit.inserted, updated: commit.updated,
                  deleted: commit.deleted)
        changes = commit.changes
        generation = commit.generation
        origin = commit.origin
    }

    public static func == (lhs: DidSave, rhs: DidSave) -> Bool {
        lhs.transaction == rhs.transaction && lhs.author == rhs.author && lhs.inserted == rhs.inserted
            && lhs.updated == rhs.updated && lhs.deleted == rhs.deleted && lhs.changedKeys == rhs.changedKeys
            && lhs.values == rhs.values
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(transaction)
        hasher.combine(author)
        hasher.combine(inserted)
        hasher.combine(updated)
        hasher.combine(deleted)
    }

    /// Whether the save changed nothing.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}

/// What changed in a context since its previous objects-did-change notification: posted
/// after each turn of work (``ObjectContext/perform(_:)``, a save, a merge, a rollback),
/// with IDs so that it is `Sendable`; map them to objects with
/// ``ObjectContext/registeredObject(for:)`` inside the context.
public struct ObjectsDidChange: Sendable, Hashable {
    /// Objects inserted.
    public var inserted: Set<ObjectID> = []
    /// Objects whose values changed in this context, with the keys — objects inserted in an
    /// earlier turn and not saved yet included (as in Core Data's notification).
    public var updated: [ObjectID: Set<String>] = [:]
    /// Objects deleted in this context.
    public var deleted: Set<ObjectID> = []
    /// Objects whose values were replaced from outside: merged, refreshed, rolled back.
    public var refreshed: Set<ObjectID> = []
    /// Objects that are no longer valid here (deleted elsewhere, or removed by a rollback).
    /// Like unchanged objects, those nobody holds may be let go at the end of a turn of work
    /// (see ``ObjectContext/registeredObjects``): ``ObjectContext/registeredObject(for:)``
    /// may not find them.
    public var invalidated: Set<ObjectID> = []
    /// Whether every object was invalidated (``ObjectContext/reset()``).
    public var invalidatedAll = false
    /// With ``invalidatedAll``: the objects that showed unsaved values before the reset's
    /// turn, and show their parent's values again — for live results, which report those
    /// they hold in place as updated. (Not public: they are invalidated, not refreshed.)
    var shownChangedBeforeReset: Set<ObjectID> = []
    /// Objects a merged save inserted, changed or deleted, registered here or not (what live
    /// results re-fetch for: an object this context never loaded may now match).
    public var merged: Set<ObjectID> = []
    /// Of the merged objects not registered in a child context, those its parent shows with
    /// other values than the save's for every key the save changed: the parent kept its
    /// own (`contextWins`, `overwrite`), so where the child reads them nothing changed.
    var mergedUnchanged: Set<ObjectID> = []

    /// Creates an empty notification.
    public init() {}

    /// Whether nothing changed.
    public var isEmpty: Bool {
        inserted.isEmpty && updated.isEmpty && deleted.isEmpty && refreshed.isEmpty && invalidated.isEmpty && !invalidatedAll
            && merged.isEmpty
    }

    mutating func noteUpdate(_ id: ObjectID, key: String) {
        guard !inserted.contains(id) else { return }
        updated[id, default: []].insert(key)
    }
}

/// One operation a context ran, for instrumentation: how long it occupied the context's
/// executor (the main actor, for a `.main` context), and how many objects it touched.
///
/// ```swift
/// // The observer is called on the contexts' threads: what it adds up needs a lock.
/// final class Meter: @unchecked Sendable {  // `lock` protects `busy`
///     private let lock = NSLock()
///     private var busy = Duration.zero
///     func add(_ duration: Duration) { lock.withLock { busy += duration } }
/// }
/// let mainActorBusy = Meter()
/// let coordinator = Coordinator(store: store, observer: { event in
///     if event.executor == .main { mainActorBusy.add(event.duration) }
/// })
/// ```
public struct ContextEvent: Sendable, Hashable {
    /// What the context did.
    public enum Operation: String, Sendable, Hashable, CaseIterable {
        /// A save: validating and capturing changes, then applying the result (waiting for
        /// the parent or the disk is not counted).
        case save
        /// Merging a did-save (its end-of-turn processing is a separate ``processPendingChanges`` event).
        case merge
        /// Fetching objects.
        case fetch
        /// Applying a child context's save.
        case applyChildSave
        /// Processing pending changes at the end of a turn (publishing them to children,
        /// posting objects-did-change).
        case processPendingChanges
        /// Bringing the context's live results (``FetchedResults``) up to date after a change.
        case updateResults
    }

    /// The context's name.
    public var context: String
    /// The context's executor kind.
    public var executor: ContextExecutor.Kind
    /// The operation.
    public var operation: Operation
    /// When it started.
    public var start: ContinuousClock.Instant
    /// How long it ran on the context's executor (wall-clock: time the thread was
    /// preempted while running it counts).
    public var duration: Duration
    /// The processor time the thread spent on it (`CLOCK_THREAD_CPUTIME_ID`): the work
    /// itself, without the time other threads held the processor. Zero where the platform
    /// cannot say.
    public var processorTime: Duration
    /// How many objects it touched (for a merge: the registered objects it refreshed or
    /// invalidated, not the size of the save).
    public var objectCount: Int
}

/// Receives every ``ContextEvent``; called on the context's executor, so keep it short.
public typealias ContextObserver = @Sendable (ContextEvent) -> Void
