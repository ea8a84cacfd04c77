/// How a save resolves changes that conflict with what other transactions committed since
/// the saved objects were read. Decided per property, three-way: for each key the save
/// changed, *base* is the value it read, *ours* the value it writes, *theirs* the value
/// committed since. Keys only one side changed never conflict; a key both sides changed
/// does, even to the same value (both were read-modify-writes of the base).
public enum MergePolicy: String, Sendable, Hashable, CaseIterable {
    /// Refuse the save with a report of every conflicting object and key. The default.
    case error
    /// Keep the committed value for every conflicting key; our other changes are saved.
    ///
    /// A to-many relationship both sides changed is merged element by element (the objects
    /// each side added or removed), as under ``contextWins``: each member stands for the
    /// other side's to-one, which only one side set (an album ours inserted into an artist
    /// another transaction gave another album keeps both).
    case storeWins
    /// Save our value for every conflicting key; their changes to other keys are kept.
    ///
    /// At the store, a to-many relationship both sides changed is merged element by
    /// element (the objects each side added or removed), and the object another
    /// transaction gave a to-one relationship ours wins lets go of it, so that both sides of
    /// every pair stay in step.
    case contextWins
    /// Save our whole object as we see it, discarding their changes to any attribute.
    ///
    /// Every attribute of our object is kept, the keys only they changed included;
    /// relationships are kept per key, as under ``contextWins`` (ours where we changed them,
    /// merged element by element where both changed a to-many, theirs elsewhere), so that
    /// both sides of every pair stay in step — at the store, in a child's save into its
    /// parent and in a merge alike.
    case overwrite
    /// Drop all our changes to an object that has a conflict; save the rest.
    ///
    /// A to-many relationship both sides changed is merged element by element, as under
    /// ``storeWins``, and is not alone a reason to drop the object's changes.
    case rollback
}

/// One conflicting key (or a deleted object) found when a save was checked against the
/// store.
public struct Conflict: Sendable, Hashable, CustomStringConvertible {
    /// The object.
    public var object: ObjectID
    /// The key both sides changed, or `nil` when one side deleted the object.
    public var key: String?
    /// The value the save was based on.
    public var base: Value?
    /// The value the save writes (`nil` if the save deletes the object).
    public var ours: Value?
    /// The value committed since (`nil` if another transaction deleted the object).
    public var theirs: Value?
    /// The version of the object now in the store (`nil` if deleted).
    public var theirVersion: UInt64?

    public var description: String {
        guard let key else {
            return theirs == nil && theirVersion == nil
                ? "\(object) was deleted by another transaction"
                : "\(object) was changed by another transaction (version \(theirVersion ?? 0)) and this save deletes it"
        }
        return "\(object).\(key): base \(base.map(\.description) ?? "?"), ours \(ours.map(\.description) ?? "deleted"), theirs \(theirs.map(\.description) ?? "deleted")"
    }
}

extension StoreError {
    /// A `conflict` error listing `conflicts` (at least one): how many, with what changes
    /// (`with`), the first five in the message, every one in ``conflicts``, and `advice`.
    static func conflicting(_ conflicts: [Conflict], with changes: String, advice: String,
                            fileID: StaticString = #fileID, line: UInt = #line) -> StoreError {
        var error = StoreError(.conflict,
                               "\(conflicts.count) conflict(s) with \(changes): "
                               + conflicts.prefix(5).map(\.description).joined(separator: "; ")
                               + (conflicts.count > 5 ? "; ..." : "")
                               + ". \(advice)",
                               object: conflicts[0].object, key: conflicts[0].key, fileID: fileID, line: line)
        error.conflicts = conflicts
        return error
    }
}
