/// The changes a save submits to a store: new objects, changed properties and deletions,
/// each with the version it was based on.
///
/// ```swift
/// let id = store.allocateObjectIDs(for: "Artist").first!
/// var changes = ChangeSet(author: "importer")
/// changes.inserted.append(RowImage(id: id, values: [.int(1), .string("AC/DC"), .objects([])]))
/// let result = try await store.commit(changes)
/// ```
public struct ChangeSet: Sendable {
    /// Who saves (a context's name); recorded in the transaction.
    public var author: String
    /// New objects, with every value. Their IDs come from ``Store/allocateObjectIDs(for:count:)``.
    public var inserted: [RowImage]
    /// Changed objects.
    public var updated: [ObjectUpdate]
    /// Deleted objects.
    public var deleted: [ObjectDeletion]
    /// How conflicts with transactions committed since the base versions are resolved.
    public var mergePolicy: MergePolicy
    /// The context that saves, so that it can recognise its own commits in the store's stream.
    var origin: ObjectIdentifier?
    /// Told of the commit when it is published, in transaction order with every other
    /// commit (a coordinator's did-save stream).
    var announcer: Broadcast<CommitNotification>?
    /// Set by ``JSONLinesImporter`` only, which establishes while staging everything the
    /// commit's final constraint pass checks — types, required values and relationships,
    /// limits, references to existing objects, inverses agreeing from both sides, no object
    /// listed twice — so the commit skips that pass for its change sets (a fifth of an
    /// import's time), in every build: the tests, which check the store's integrity after
    /// imports, cover the path users run. Conflicts, identities and unique keys are checked
    /// for every change set.
    var constraintsChecked = false

    /// Creates a change set.
    public init(
        author: String = "", inserted: [RowImage] = [], updated: [ObjectUpdate] = [], deleted: [ObjectDeletion] = [],
        mergePolicy: MergePolicy = .error
    ) {
        self.author = author
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.mergePolicy = mergePolicy
    }

    /// Whether the change set changes nothing.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}

/// Changed properties of one object, with what they were based on.
public struct ObjectUpdate: Sendable, Hashable {
    /// The object.
    public var id: ObjectID
    /// The version the changes are based on (the object's version when it was read).
    public var baseVersion: UInt64
    /// Every value of the object as it was read, in storage order (the *base* of the
    /// three-way comparison).
    public var baseValues: [Value]
    /// The new values: property storage index and value, in increasing index order.
    public var changes: [PropertyChange]

    /// Creates an update.
    public init(id: ObjectID, baseVersion: UInt64, baseValues: [Value], changes: [PropertyChange]) {
        self.id = id
        self.baseVersion = baseVersion
        self.baseValues = baseValues
        self.changes = changes
    }
}

/// A deleted object, with the version the deletion is based on.
public struct ObjectDeletion: Sendable, Hashable {
    /// The object.
    public var id: ObjectID
    /// The version the deletion is based on.
    public var baseVersion: UInt64

    /// Creates a deletion.
    public init(id: ObjectID, baseVersion: UInt64) {
        self.id = id
        self.baseVersion = baseVersion
    }
}

/// What a successful commit produced.
public struct CommitResult: Sendable {
    /// The transaction's number.
    public var transaction: UInt64
    /// The generation that includes it.
    public var generation: Generation
    /// Conflicts that the merge policy resolved (empty under ``MergePolicy/error``).
    public var resolvedConflicts: [Conflict]
    /// What the transaction changed (as ``Store/commits()`` delivers it); `nil` when the
    /// merge policy left nothing to commit.
    public var notification: CommitNotification?
}
