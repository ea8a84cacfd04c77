/// An object of the graph, bound to one ``ObjectContext``.
///
/// A managed object is not `Sendable`: it lives in its context's isolation, and the compiler
/// rejects handing it to another context. Pass its ``objectID`` instead and ask the other
/// context for its own instance with ``ObjectContext/object(with:)``.
///
/// Subclass it for typed properties, naming each stored key once:
///
/// ```swift
/// final class Song: ManagedObject {
///     @Managed("title") var title: String
///     @Managed("duration") var duration: Double?
///     @ToOne("artist") var artist: Artist?
/// }
/// song.title = "Thunderstruck"          // typed
/// song["title"] = .string("T.N.T.")     // dynamic, for every key
/// ```
///
/// An object may be a *fault*: its values are loaded from the parent the first time one is
/// read. An object deleted by another context becomes a tombstone (``isDeletedElsewhere``):
/// reading it gives its last snapshot, and ``value(forKey:)`` throws ``StoreError/Code/objectDeleted``.
/// A context keeps a tombstone only while someone holds the instance (see
/// ``ObjectContext/registeredObjects``): asked for again by ID once it was let go, the
/// object is one the context's view does not hold, a fault that loads as missing —
/// ``value(forKey:)`` throws ``StoreError/Code/objectNotFound`` and its properties read empty.
///
/// An object does not outlive its context. Once the context is gone, values already loaded
/// still read as they were, but setting a value, or reading one of a fault, traps naming the
/// object ("belongs to a context that was discarded"); so does reading a
/// ``FetchedResults``' objects. Keep the context (a stack keeps its view context) for as
/// long as its objects are used, or keep their ``objectID``s.
open class ManagedObject {
    /// The object's permanent identity.
    public let objectID: ObjectID
    /// The context's graph. Strong; the context breaks the cycle when it goes away.
    final let graph: ObjectGraph
    final let entityIndex: Int

    /// The values, in storage order; empty while the object is a fault.
    final var storage: [Value] = []
    final var isLoaded = false
    /// The row the object was read as (its parent's values and store version); `nil` for an
    /// object inserted in this context.
    final var base: [Value]?
    final var baseVersion: UInt64 = 0
    /// Storage indexes changed since ``base`` (every key, for an inserted object).
    final var changedKeys: Set<Int> = []
    final var lifecycle: Lifecycle = .persistent {
        didSet { if lifecycle == .deletedElsewhere { graph.holdsTombstones = true } }
    }
    /// The graph's change counter when the object last changed.
    final var lastChange: UInt64 = 0
    /// While a save that captured the object is in flight: the storage indexes set since the
    /// capture (a key set back to its value from before the save leaves ``changedKeys`` but
    /// is still a change to what the save makes the base). Emptied by a rollback or refresh.
    final var keysSetDuringSave: Set<Int>?
    /// The newest row merged into the object while it holds a conflict kept for its next
    /// save (merge policy `error`): its base stays the old row, so that the save reports
    /// the conflict, and a rollback takes this one instead.
    final var mergedRowInConflict: (values: [Value], version: UInt64)?
    /// Inserted, in a save to the store in flight: the keys another transaction changed
    /// since the store committed the insert (merged meanwhile), with the newest such
    /// transaction. The save's end takes them over the values it committed.
    final var mergedWhileInserting: (values: [Int: Value], version: UInt64)?
    /// The row its changes stand on as merged last: the one kept with a conflict, or else
    /// its base.
    final var rowMergedLast: [Value]? { mergedRowInConflict?.values ?? base }
    /// Another context's save deleted the object while it held changes here, under merge
    /// policy `error`: the changes stay for the next save to report the conflict, and a
    /// rollback makes the object the tombstone it would have become.
    final var deletedInConflict = false
    /// Loaded and found missing from the context's view — never seen there, unlike an object
    /// whose deletion was merged: another context's unsaved insert, say, or a deleted object
    /// asked for again after the context let go of its tombstone. A tombstone until the
    /// object appears in the view; then the context's instance comes back to life
    /// (``ObjectGraph/reviveIfPresent(_:)``).
    final var missingWhenLoaded = false
    /// Deleted by this context's own save into its parent context: a tombstone while the
    /// parent holds the deletion, back to life when the parent shows the object again —
    /// its save to the store (or to its own parent) kept the object after all (its merge
    /// policy dropped the deletion), or it rolled the deletion back. A fetch, which reads
    /// through the parent, returns the object then, and the instance must agree with it
    /// (``ObjectGraph/reviveIfPresent(_:)``).
    final var deletionSavedToParent = false
    /// Whether this tombstone comes back when the object is in the context's view again:
    /// one missing when loaded or deleted by a save into the parent, not one whose deletion
    /// the context learned of from a merge.
    final var mayReappear: Bool { missingWhenLoaded || deletionSavedToParent }

    enum Lifecycle: Equatable {
        case inserted
        case persistent
        /// Deleted in this context; the deletion is pending.
        case deleted
        /// Inserted and then deleted before any save: nothing to save.
        case discarded
        /// No longer exists: deleted by another context (merged), by a save, or missing
        /// from the store when it was loaded. Its last snapshot stays readable.
        case deletedElsewhere
    }

    /// The entity a model class stands for: the class's name unless overridden.
    open class var entityName: String { String(describing: self) }

    /// Created by contexts only.
    public required init(_ token: ObjectToken) {
        self.objectID = token.id
        self.graph = token.graph
        self.entityIndex = token.entityIndex
    }

    /// Called once when the object is inserted — in a context, and for every object a
    /// migration creates when its plan is given the model classes (the transform's values
    /// win over those it sets) — not when it is loaded: set defaults that depend on code
    /// here. Call `super`.
    open func awakeFromInsert() {}

    /// Custom validation, run for every inserted or changed object when it is saved (to a
    /// parent context or to the store). Throw ``StoreError`` with code
    /// ``StoreError/Code/validationFailed`` (see ``ManagedObject/validationError(_:key:)``) to refuse the save.
    open func validateForSave() throws(StoreError) {}

    /// An error for ``validateForSave()`` that names this object and key.
    public final func validationError(_ message: String, key: String? = nil) -> StoreError {
        StoreError(.validationFailed, "\(objectID)\(key.map { ".\($0)" } ?? ""): \(message)", object: objectID, key: key)
    }

    // MARK: - State

    /// The entity this object belongs to.
    public final var entity: Entity { graph.schema.entities[entityIndex] }

    /// Whether the object was inserted and not yet saved.
    public final var isInserted: Bool { lifecycle == .inserted }
    /// Whether the object is deleted in this context (pending save) or was deleted elsewhere.
    /// Like Core Data's, it does not fire a fault: a fault made for a deleted object (asked
    /// for by ID after its tombstone was let go) is not deleted until it loads.
    public final var isDeleted: Bool { lifecycle == .deleted || lifecycle == .discarded || lifecycle == .deletedElsewhere }
    /// Whether the object no longer exists: another context deleted it (merged), a save of
    /// its deletion completed, or it was missing when it was loaded. Its properties give its
    /// last snapshot; ``value(forKey:)`` throws. (A fault made for the ID of an object that
    /// no longer exists is not one until it loads: then it is missing.)
    public final var isDeletedElsewhere: Bool { lifecycle == .deletedElsewhere }
    /// Whether the object has changes that a save would write.
    public final var hasChanges: Bool {
        switch lifecycle {
        case .inserted, .deleted: true
        case .persistent: !changedKeys.isEmpty
        case .discarded, .deletedElsewhere: false
        }
    }
    /// Whether the values are not loaded yet.
    public final var isFault: Bool { !isLoaded }

    /// The keys changed since the object was read (every set key, for an inserted object),
    /// with their new values.
    public final var changedValues: [String: Value] {
        graph.load(self)
        var result: [String: Value] = [:]
        for index in changedKeys { result[entity.property(at: index).name] = storage[index] }
        return result
    }

    /// The values the object was read with, for the keys changed since (`nil` for an inserted object).
    public final var committedValues: [String: Value]? {
        guard let base else { return nil }
        var result: [String: Value] = [:]
        for index in changedKeys { result[entity.property(at: index).name] = base[index] }
        return result
    }

    // MARK: - Dynamic access

    /// The value of a key. Setting one traps for an unknown key, a value of the wrong type or
    /// an object this context deleted; use ``setValue(_:forKey:)`` to get a thrown error
    /// instead. A value that cannot be set because another context deleted the object (or
    /// the object a relationship is set to) changes nothing, and the next
    /// ``ObjectContext/save()`` throws the error — as typed properties do.
    public final subscript(key: String) -> Value {
        get { graph.read(self, index: graph.index(of: key, in: self)) }
        set { graph.writeOrTrap(self, index: graph.index(of: key, in: self), value: newValue) }
    }

    /// The value of a key, or an error naming the object if it was deleted elsewhere or does
    /// not exist in the context's view (`objectNotFound`).
    public final func value(forKey key: String) throws(StoreError) -> Value {
        let index = try graph.checkedIndex(of: key, in: self)
        let value = graph.read(self, index: index)
        if lifecycle == .deletedElsewhere, missingWhenLoaded {
            throw StoreError(.objectNotFound, "\(objectID) does not exist in this context's view (deleted, or never saved where the context can see it, or not yet)",
                             object: objectID, key: key)
        }
        if lifecycle == .deletedElsewhere {
            let by = deletionSavedToParent ? "by this context's save into its parent" : "by another context"
            throw StoreError(.objectDeleted, "\(objectID) was deleted \(by); its last snapshot is still readable through its properties",
                             object: objectID, key: key)
        }
        return value
    }

    /// Sets the value of a key, keeping inverse relationships in step.
    /// - Throws: ``StoreError`` naming the object and key: `invalidValue` (unknown key,
    ///   wrong type, a relationship target of another entity), `objectDeleted`, `objectNotFound`.
    public final func setValue(_ value: Value, forKey key: String) throws(StoreError) {
        try graph.write(self, index: try graph.checkedIndex(of: key, in: self), value: value)
    }

    /// The object a to-one relationship refers to (a fault if not loaded).
    public final func relatedObject(forKey key: String) -> ManagedObject? {
        guard case .object(let id) = self[key] else { return nil }
        return graph.object(with: id)
    }

    /// The objects a to-many relationship refers to, in order.
    public final func relatedObjects(forKey key: String) -> [ManagedObject] {
        guard case .objects(let ids) = self[key] else { return [] }
        return ids.map { graph.object(with: $0) }
    }

    /// Sets a to-one relationship.
    /// - Throws: ``StoreError`` `wrongContext` if `object` belongs to another context, and
    ///   the errors of ``setValue(_:forKey:)``.
    public final func setRelatedObject(_ object: ManagedObject?, forKey key: String) throws(StoreError) {
        try setValue(try graph.checkedReference(to: object, from: self, key: key), forKey: key)
    }

    /// Sets a to-many relationship (an ordered list without duplicates).
    /// - Throws: like ``setRelatedObject(_:forKey:)``.
    public final func setRelatedObjects(_ objects: [ManagedObject], forKey key: String) throws(StoreError) {
        var ids: [ObjectID] = []
        for object in objects { ids.append(try graph.checkedReference(to: object, from: self, key: key).objectID!) }
        try setValue(.objects(ids), forKey: key)
    }
}

extension ManagedObject: CustomStringConvertible {
    public var description: String {
        var text = "<\(objectID)"
        switch lifecycle {
        case .inserted: text += " inserted"
        case .deleted, .discarded: text += " deleted"
        case .deletedElsewhere: text += " deleted elsewhere"
        case .persistent: if !changedKeys.isEmpty { text += " changed" }
        }
        if !isLoaded { return text + " fault>" }
        let names = entity.propertyNames
        return text + " " + zip(names, storage).map { "\($0)=\($1)" }.joined(separator: " ") + ">"
    }
}

/// What a context passes to ``ManagedObject/init(_:)``. Only contexts make one.
public struct ObjectToken {
    let id: ObjectID
    let graph: ObjectGraph
    let entityIndex: Int
}

extension Value {
    /// The object ID of a to-one value, or `nil`.
    var objectID: ObjectID? { if case .object(let id) = self { id } else { nil } }
}
