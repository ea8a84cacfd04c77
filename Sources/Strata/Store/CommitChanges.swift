/// The changed keys and the new values of a transaction's objects, as notifications carry
/// them: given, or — for a store's own commits — built from the transaction and the
/// generation it produced the first time either is read, on the reader's thread.
///
/// A commit of 10,000 objects spent an eighth of its time building these dictionaries for
/// its notification, inside the store's commit lock, whether or not anyone read them; now a
/// context merging the commit builds them off its executor before the merge (see
/// ``build()``), and a bulk import nobody observes never does.
struct CommitChanges: Sendable {
    private enum Storage: Sendable {
        case built(changedKeys: [ObjectID: [String]], values: [ObjectID: [Value]])
        case deferred(Builder)
    }

    private var storage: Storage

    init(changedKeys: [ObjectID: [String]], values: [ObjectID: [Value]]) {
        storage = .built(changedKeys: changedKeys, values: values)
    }

    /// Changes built on first read from `record` and the generation `next` it produced.
    init(record: TransactionRecord, next: Generation) {
        storage = .deferred(Builder(record: record, next: next))
    }

    private var parts: (changedKeys: [ObjectID: [String]], values: [ObjectID: [Value]]) {
        switch storage {
        case .built(let changedKeys, let values): (changedKeys, values)
        case .deferred(let builder): builder.parts
        }
    }

    /// Builds the keys and values now, on the calling thread, if they are built on first
    /// read: a context merging a commit calls this before it hops to its own executor, so
    /// that a view context's merge does not build them on the main actor.
    func build() {
        if case .deferred(let builder) = storage { _ = builder.parts }
    }

    /// For each changed object, the names of the keys that changed.
    var changedKeys: [ObjectID: [String]] {
        get { parts.changedKeys }
        set { storage = .built(changedKeys: newValue, values: parts.values) }
    }

    /// The new values of every inserted and changed object (all its values, storage order).
    var values: [ObjectID: [Value]] {
        get { parts.values }
        set { storage = .built(changedKeys: parts.changedKeys, values: newValue) }
    }

    /// Builds the dictionaries once, for whichever reader comes first.
    final class Builder: Sendable {
        private let record: TransactionRecord
        private let next: Generation
        private let built = Locked<(changedKeys: [ObjectID: [String]], values: [ObjectID: [Value]])?>(nil)

        init(record: TransactionRecord, next: Generation) {
            self.record = record
            self.next = next
        }

        var parts: (changedKeys: [ObjectID: [String]], values: [ObjectID: [Value]]) {
            built.withLock { built in
                if let built { return built }
                let parts = build()
                built = parts
                return parts
            }
        }

        private func build() -> (changedKeys: [ObjectID: [String]], values: [ObjectID: [Value]]) {
            let schema = next.schema
            var changedKeys: [ObjectID: [String]] = [:]
            var values: [ObjectID: [Value]] = Dictionary(minimumCapacity: record.inserted.count + record.updated.count)
            for row in record.inserted { values[row.id] = row.values }
            for update in record.updated {
                let entity = schema.entity(named: update.id.entity)!
                changedKeys[update.id] = update.changes.map { entity.property(at: $0.index).name }
                values[update.id] = next.object(update.id)?.values
            }
            return (changedKeys, values)
        }
    }
}
