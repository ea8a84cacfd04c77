import Foundation
import Synchronization

// MARK: - The commit pipeline

extension Store {
    /// Commits a change set: resolves conflicts by its merge policy, checks every
    /// constraint, appends it to the journal and, once it is durable, publishes the new
    /// generation and notifies ``commits()`` subscribers.
    ///
    /// A commit that throws changes nothing. An empty change set commits nothing and
    /// returns the current generation.
    /// - Throws: ``StoreError`` — `conflict` (with ``StoreError/conflicts``) under
    ///   ``MergePolicy/error``; `uniqueViolation`, `inverseViolation`, `missingValue`,
    ///   `invalidValue`, `danglingReference`, `deleteRule`, `objectNotFound`,
    ///   `invalidTransaction` naming the object and key; `poisoned`, `closed`, `readOnly`.
    @discardableResult
    public func commit(_ changes: ChangeSet) async throws(StoreError) -> CommitResult {
        try await commitOnCallersExecutor(changes, mayBlock: false)
    }

    /// ``commit(_:)``, with its processor work (conflicts, constraints, encoding) done on
    /// the caller's executor rather than the global one: a context on a private queue
    /// commits at its queue's priority (``ContextPriority``).
    ///
    /// `mayBlock`: the caller's thread may block on I/O (a private queue's; never the
    /// cooperative pool's or the main actor's). Then a lone committer writes and syncs its
    /// transaction itself instead of waking the journal's writer and waiting to be woken
    /// (see ``Journal/writeAsLeader()``).
    nonisolated(nonsending) func commitOnCallersExecutor(_ changes: ChangeSet, mayBlock: Bool) async throws(StoreError) -> CommitResult {
        try await finish(try stage(changes, mayBlock: mayBlock))
    }

    /// Commits change sets one after the other, each as its own transaction, as many
    /// ``commit(_:)`` calls awaited in turn would — but while the journal makes one durable,
    /// the next is already being checked, so that a bulk load's processor work and its
    /// syncs overlap instead of taking turns. Returns once every transaction is durable and
    /// published, with their results in order.
    ///
    /// Each change set is checked against the generation the one before produced (so it
    /// may refer to the objects they insert). If one fails, the ones before it are
    /// committed — this waits until they are durable — and it and the ones after it are
    /// not: the error is its own, as ``commit(_:)`` would throw it, with
    /// ``StoreError/transaction`` set to the number it would have taken. A sequence that
    /// throws nothing commits as a whole.
    /// - Throws: ``StoreError``, as ``commit(_:)``.
    @discardableResult
    public func commit(inOrder changeSets: some Sequence<ChangeSet>) async throws(StoreError) -> [CommitResult] {
        var results: [CommitResult] = []
        // The transaction staged last, which the journal makes durable while the next one
        // is staged: at most two are in flight.
        var inFlight: StagedCommit?
        for changes in changeSets {
            var staged: StagedCommit
            do throws(StoreError) {
                staged = try stage(changes, mayBlock: false)
                // An empty change set's result is the generation the sets before it made, as
                // after awaited commits (the store has not published it yet).
                if staged.isEmpty, let inFlight { staged = StagedCommit(notification: nil, generation: inFlight.generation, resolved: []) }
            } catch {
                var failure = error
                if failure.transaction == nil { failure.transaction = commitState.withLock { $0.head.transaction } + 1 }
                if let inFlight { results.append(try await finish(inFlight)) }
                throw failure
            }
            if let inFlight { results.append(try await finish(inFlight)) }
            inFlight = staged
        }
        if let inFlight { results.append(try await finish(inFlight)) }
        return results
    }

    /// A change set checked, applied to the head and queued for the journal: it is
    /// committed once the journal makes it durable (see ``finish(_:)``).
    struct StagedCommit {
        /// `nil` when the change set was empty or the merge policy dropped every change.
        var notification: CommitNotification?
        /// The new head; when nothing was committed, the head the change set was resolved
        /// against (or, for an empty one, the current generation).
        var generation: Generation
        var resolved: [Conflict]
        /// The appender's part in writing the transaction (see ``Journal/AppendTurn``).
        var turn: Journal.AppendTurn = .none
        /// Whether the change set was empty: its result does not wait for anything.
        var isEmpty = false
    }

    /// Checks `changes` against the head, applies them and queues the transaction: the
    /// processor's part of a commit, under the commit lock. Throws, changing nothing, when
    /// the change set is refused.
    private func stage(_ changes: ChangeSet, mayBlock: Bool) throws(StoreError) -> StagedCommit {
        guard !changes.isEmpty else {
            return StagedCommit(notification: nil, generation: currentGeneration, resolved: [], isEmpty: true)
        }
        let journal = self.journal
        // A poisoned or closed journal refuses every commit as such, before conflicts are
        // looked for against transactions that were never made durable.
        try journal.checkAccepting()
        let (notification, generation, resolved, turn) = try commitState.withLock {
            (s) throws(StoreError) -> (CommitNotification?, Generation, [Conflict], Journal.AppendTurn) in
            let plan = try CommitPlan(changes: changes, head: s.head, numbers: numbers)
            let record = plan.record(number: s.head.transaction + 1)
            // The merge policy may have dropped every change: then there is nothing to commit.
            if record.isEmpty { return (nil, s.head, plan.resolved, .none) }
            // Checked against the schema as it is encoded, in one pass over its values — for a
            // large transaction, by the two threads that check it, each encoding half of its
            // rows first (one parallel step for both; the encoder's refusal still comes first).
            let halves = CommitPlan.checksInParallel(record) ? try journal.encodingInHalves(record) : nil
            var whole = halves == nil ? try journal.encode(record, validated: false) : nil
            let next: Generation
            do throws(StoreError) {
                // The importer checks the constraints line by line as it stages (and names the
                // line); its change sets skip the second pass. Same in every build, so the tests,
                // which check the store's integrity after imports, cover the path users run.
                next = try plan.apply(record, checkingConstraints: !changes.constraintsChecked, encoding: halves)
            } catch {
                if whole != nil { journal.discard(&whole!) }
                if let halves { journal.discard(halves) }
                throw error
            }
            let encoded: Journal.EncodedTransaction
            if let whole { encoded = whole } else { encoded = try journal.finishEncoding(halves!) }
            // Queued for publication before the journal can make it durable, so the writer
            // always finds it; taken back if the journal refuses it.
            let notification = plan.notification(for: record, in: next)
            pending.withLock { $0.append(PendingCommit(generation: next, notification: notification, announcer: changes.announcer)) }
            let turn: Journal.AppendTurn
            do throws(StoreError) {
                turn = try journal.enqueue(encoded, mayLead: mayBlock)
            } catch {
                pending.withLock { _ = $0.popLast() }
                throw error
            }
            s.head = next
            numbers.withLock { plan.useInsertedNumbers(&$0.unused) }
            return (notification, next, plan.resolved, turn)
        }
        // Outside the commit lock: others commit meanwhile.
        if let notification { journal.takeTurn(turn, for: notification.transaction) }
        return StagedCommit(notification: notification, generation: generation, resolved: resolved, turn: turn)
    }

    /// Waits until a staged transaction is durable, makes sure it is published, and
    /// returns its result.
    nonisolated(nonsending) private func finish(_ staged: StagedCommit) async throws(StoreError) -> CommitResult {
        let generation = staged.generation
        guard let notification = staged.notification else {
            // Nothing committed. The head it was resolved against may hold other committers'
            // transactions not yet durable: it is returned once they are, and published, as
            // a commit's own generation would be (it was returned at once, before the
            // transactions in it were durable or anyone else could see them).
            if !staged.isEmpty {
                try await journal.waitUntilDurable(generation.transaction)
                ensurePublished(generation.transaction)
            }
            return CommitResult(transaction: generation.transaction, generation: generation, resolvedConflicts: staged.resolved, notification: nil)
        }
        let number = notification.transaction
        try await journal.waitUntilDurable(number, after: staged.turn)
        ensurePublished(number)
        return CommitResult(transaction: number, generation: generation, resolvedConflicts: staged.resolved, notification: notification)
    }
}

/// One change set checked against the newest generation: its conflicts resolved, its IDs
/// and values checked, ready to become a transaction.
struct CommitPlan {
    let changes: ChangeSet
    let head: Generation
    let schema: Schema
    /// The change set's inserted rows, as committed (see ``forgetReferences(to:)``).
    private(set) var inserted: [RowImage]
    private(set) var updates: [RowUpdate] = []
    private(set) var deletions: [ObjectID] = []
    private(set) var resolved: [Conflict] = []
    /// The inserted objects' numbers as runs, per entity, when they were checked that way
    /// (see ``insertedRunsIfPlain(unused:)``).
    private var insertedRuns: [[Range<UInt64>]]?

    /// Checks the change set's identities against the numbers handed out (under their
    /// lock, only for that), then resolves its conflicts.
    init(changes: ChangeSet, head: Generation, numbers: Locked<Store.ObjectNumbers>) throws(StoreError) {
        self.changes = changes
        self.inserted = changes.inserted
        self.head = head
        self.schema = head.schema
        try numbers.withLock { (n) throws(StoreError) in try checkIdentities(unused: n.unused) }
        try resolveConflicts()
    }

    private func entityIndex(_ id: ObjectID) throws(StoreError) -> Int {
        guard let index = schema.entityIndex(of: id) else {
            throw StoreError(.invalidTransaction, "the schema has no entity \"\(id.entity)\"; its entities are \(schema.entities.map(\.name))", object: id)
        }
        return index
    }

    /// Marks the numbers of the inserted objects used, once the commit is accepted: none
    /// of them can be inserted again.
    func useInsertedNumbers(_ unused: inout [UnusedNumbers]) {
        if let insertedRuns {
            for (entity, runs) in insertedRuns.enumerated() {
                for run in runs { unused[entity].use(run) }
            }
            return
        }
        do {
            try forEachInsertedID { (id, entity) throws(StoreError) in unused[entity].use(id.number) }
        } catch {
            preconditionFailure("the inserted objects' entities were checked when the plan was made: \(error)")
        }
    }

    /// Calls `body` with the ID and entity index of each inserted object, reading only the
    /// IDs (copying a row retains its values).
    private func forEachInsertedID(_ body: (ObjectID, _ entity: Int) throws(StoreError) -> Void) throws(StoreError) {
        try inserted.withUnsafeBufferPointer { (rows) throws(StoreError) in
            for i in rows.indices {
                let id = rows[i].id
                try body(id, try entityIndex(id))
            }
        }
    }

    /// The numbers of the inserted objects of each entity, as runs of consecutive numbers in
    /// the change set's order — when the change set only inserts, each entity's runs come in
    /// increasing order, and each run lies in one range of numbers handed out and not used
    /// (``UnusedNumbers``): then every object appears once and was handed out for it, checked
    /// per run instead of per object (an importer inserts objects in the order their numbers
    /// were handed out: a change set's objects of one entity are then one run). `nil` when it
    /// does not hold, for the check per object to find the culprit.
    private func insertedRunsIfPlain(unused: [UnusedNumbers]) -> [[Range<UInt64>]]? {
        guard changes.updated.isEmpty, changes.deleted.isEmpty, !inserted.isEmpty else { return nil }
        var runs = [[Range<UInt64>]](repeating: [], count: schema.entities.count)
        let plain = inserted.withUnsafeBufferPointer { rows -> Bool in
            for i in rows.indices {
                let id = rows[i].id
                guard let entity = schema.entityIndex(of: id) else { return false }
                let number = id.number
                if let last = runs[entity].last {
                    if number == last.upperBound {
                        runs[entity][runs[entity].count - 1] = last.lowerBound..<number + 1
                        continue
                    }
                    guard number > last.upperBound, unused[entity].contains(last) else { return false }
                }
                runs[entity].append(number..<number + 1)
            }
            return true
        }
        guard plain, runs.indices.allSatisfy({ entity in runs[entity].last.map { unused[entity].contains($0) } ?? true }) else { return nil }
        return runs
    }

    /// Every object appears once; inserted IDs were handed out by this store and never
    /// inserted before; changed and deleted objects are named correctly.
    private mutating func checkIdentities(unused: [UnusedNumbers]) throws(StoreError) {
        insertedRuns = insertedRunsIfPlain(unused: unused)
        if insertedRuns != nil { return }
        // Passed along rather than captured: a captured variable is checked for exclusive
        // access at run time on every use.
        var seen = [RepeatDetector<UInt64>](repeating: RepeatDetector(), count: schema.entities.count)
        func once(_ id: ObjectID, _ entity: Int, _ seen: inout [RepeatDetector<UInt64>]) throws(StoreError) {
            guard seen[entity].insert(id.number, order: id.number) else {
                throw StoreError(.invalidTransaction, "\(id) appears more than once in the change set; merge its changes into one", object: id)
            }
        }
        try forEachInsertedID { (id, entity) throws(StoreError) in
            try once(id, entity, &seen)
            guard unused[entity].contains(id.number) else {
                if head.tables[entity][id.number] != nil {
                    throw StoreError(.invalidTransaction, "\(id) already exists; insert each object once", object: id)
                }
                throw StoreError(.invalidTransaction,
                                 "\(id) was not handed out by this store, or its object was inserted before (an ID is never reused, even after its object is deleted); get new IDs from allocateObjectIDs(for:)",
                                 object: id)
            }
        }
        for update in changes.updated {
            let entity = try entityIndex(update.id)
            try once(update.id, entity, &seen)
            guard update.baseValues.count == schema.entities[entity].propertyCount else {
                throw StoreError(.invalidTransaction, "\(update.id): \(update.baseValues.count) base values given, \(update.id.entity) has \(schema.entities[entity].propertyCount) properties", object: update.id)
            }
        }
        for deletion in changes.deleted {
            try once(deletion.id, try entityIndex(deletion.id), &seen)
        }
    }

    private mutating func resolveConflicts() throws(StoreError) {
        let policy = changes.mergePolicy
        var conflicts: [Conflict] = []
        var droppedRelationships: [DroppedRelationship] = []
        // Objects that must let go of another (see `letGo(of:)`): the target, the object
        // it lets go of, the latter's entity and key.
        var lettingGo: [(target: ObjectID, id: ObjectID, entity: Int, index: Int)] = []
        // Objects this change set updates that another transaction deleted.
        var gone = Set<ObjectID>()
        for update in changes.updated {
            let entity = schema.entityIndex(of: update.id)!
            let properties = schema.entities[entity]
            guard let current = head.tables[entity][update.id.number] else {
                guard update.baseVersion > 0 else {
                    throw StoreError(.objectNotFound, "\(update.id) does not exist; insert it before changing it", object: update.id)
                }
                conflicts.append(Conflict(object: update.id, key: nil, base: nil, ours: nil, theirs: nil, theirVersion: nil))
                gone.insert(update.id)
                continue  // deleted by another transaction: nothing left to change
            }
            if current.version == update.baseVersion {
                updates.append(RowUpdate(id: update.id, changes: update.changes))
                continue
            }
            var objectConflicts: [Conflict] = []
            var conflicting = Set<Int>()
            for change in update.changes where change.index < properties.propertyCount {
                let base = update.baseValues[change.index]
                let theirs = current.values[change.index]
                // Both sides changed the key: a conflict even when to the same value (two
                // read-modify-writes that agree by chance still lost one of the updates).
                if theirs != base {
                    conflicting.insert(change.index)
                    objectConflicts.append(Conflict(object: update.id, key: properties.property(at: change.index).name,
                                                    base: base, ours: change.value, theirs: theirs, theirVersion: current.version))
                }
            }
            conflicts += objectConflicts
            // A to-many list both sides changed merges element by element under every policy
            // but `error`, as in contexts: each member stands for the other
            // side's to-one, which only one side set. (Kept per key, an album ours inserted
            // into an artist another transaction had given an album pointed at an artist
            // that did not list it, and the save was refused as an inverse violation.) Such a
            // list alone does not make `rollback` drop the object's changes.
            func isToMany(_ index: Int) -> Bool {
                index >= properties.attributes.count && properties.relationships[index - properties.attributes.count].isToMany
            }
            /// The changes with every conflicting list merged; a merged list the store holds
            /// already is left out.
            func mergingLists() -> [PropertyChange] {
                update.changes.compactMap { change in
                    guard conflicting.contains(change.index), isToMany(change.index) else { return change }
                    let theirs = current.values[change.index]
                    let merged = Value.mergedList(base: update.baseValues[change.index], ours: change.value, theirs: theirs)
                    return merged == theirs ? nil : PropertyChange(index: change.index, value: merged)
                }
            }
            switch policy {
            case .error:
                updates.append(RowUpdate(id: update.id, changes: update.changes))
            case .contextWins, .overwrite:
                for change in update.changes where conflicting.contains(change.index) && change.index >= properties.attributes.count {
                    if !isToMany(change.index), case .object(let target) = current.values[change.index], change.value != current.values[change.index] {
                        lettingGo.append((target, update.id, entity, change.index))
                    }
                }
                var changes = mergingLists()
                if policy == .overwrite {
                    // Our whole object's attributes as we see it (the base overlaid with our
                    // changes), their changes to the others included; relationships per key as
                    // under `contextWins`, as a parent context keeps them, so that both sides of
                    // every pair stay in step. (Our whole object, relationships included, was
                    // refused wherever another transaction had changed the other side of one.)
                    let attributes = properties.attributes.count
                    var ours = Array(update.baseValues.prefix(attributes))
                    for change in update.changes where change.index < attributes { ours[change.index] = change.value }
                    changes = ours.indices.filter { ours[$0] != current.values[$0] }.map { PropertyChange(index: $0, value: ours[$0]) }
                        + changes.filter { $0.index >= attributes && $0.value != current.values[$0.index] }
                }
                if !changes.isEmpty { updates.append(RowUpdate(id: update.id, changes: changes)) }
            case .storeWins:
                // Their value of every other key both changed.
                let kept = mergingLists().filter { !conflicting.contains($0.index) || isToMany($0.index) }
                if !kept.isEmpty { updates.append(RowUpdate(id: update.id, changes: kept)) }
                for change in update.changes
                where conflicting.contains(change.index) && change.index >= properties.attributes.count && !isToMany(change.index) {
                    droppedRelationships.append(DroppedRelationship(id: update.id, entity: entity, index: change.index,
                                                                    ours: change.value, theirs: current.values[change.index]))
                }
            case .rollback:
                if conflicting.allSatisfy(isToMany) {
                    let changes = mergingLists()
                    if !changes.isEmpty { updates.append(RowUpdate(id: update.id, changes: changes)) }
                } else {
                    // Every change of the object is dropped, its relationship changes too.
                    for change in update.changes where change.index >= properties.attributes.count && change.index < properties.propertyCount {
                        droppedRelationships.append(DroppedRelationship(id: update.id, entity: entity, index: change.index,
                                                                        ours: change.value, theirs: current.values[change.index]))
                    }
                }
            }
        }
        var kept: [(id: ObjectID, entity: Int, values: [Value])] = []
        for deletion in changes.deleted {
            let entity = schema.entityIndex(of: deletion.id)!
            guard let current = head.tables[entity][deletion.id.number] else { continue }  // already gone
            if current.version != deletion.baseVersion && deletion.baseVersion > 0 {
                conflicts.append(Conflict(object: deletion.id, key: nil, base: nil, ours: nil,
                                          theirs: .objects([]), theirVersion: current.version))
                if policy == .storeWins || policy == .rollback {
                    kept.append((deletion.id, entity, current.values))
                    continue
                }
                if policy != .error {
                    // The deletion wins: what the object refers to now lets go of it, where
                    // its rule is `nullify` (this save let go of what it knew of).
                    let properties = schema.entities[entity]
                    for (offset, relationship) in properties.relationships.enumerated() where relationship.deleteRule == .nullify {
                        let index = properties.attributes.count + offset
                        for target in Self.targets(current.values[index]) { lettingGo.append((target, deletion.id, entity, index)) }
                    }
                }
            }
            deletions.append(deletion.id)
        }
        if !gone.isEmpty && policy != .error { forgetReferences(to: gone) }
        if !kept.isEmpty { restoreReferences(toKept: kept) }
        if !droppedRelationships.isEmpty && !deletions.isEmpty {
            lettingGo += deletedObjectsLetGo(by: Set(droppedRelationships.map(\.id)))
        }
        if !lettingGo.isEmpty { letGo(of: lettingGo) }
        if !droppedRelationships.isEmpty { keepOtherSidesInStep(with: droppedRelationships) }
        if policy == .error && !conflicts.isEmpty {
            throw StoreError.conflicting(conflicts, with: "transactions committed since the objects were read",
                                         advice: "Refresh the objects and save again, or choose a merge policy")
        }
        resolved = conflicts
    }

    /// What `objects` — objects whose relationship changes `storeWins` or `rollback`
    /// dropped — must let go of all the same: the objects this change set deletes that they
    /// refer to in the store, where the deleted object's rule is `nullify`. Their letting go
    /// was part of the deletion, which stands, not of their own changes. (Dropped with them,
    /// the album a song was deleted from still listed the song, and the save was refused as
    /// an inverse violation.)
    private func deletedObjectsLetGo(by objects: Set<ObjectID>) -> [(target: ObjectID, id: ObjectID, entity: Int, index: Int)] {
        var pairs: [(target: ObjectID, id: ObjectID, entity: Int, index: Int)] = []
        for id in deletions {
            let entity = schema.entityIndex(of: id)!
            guard let current = head.tables[entity][id.number] else { continue }
            let properties = schema.entities[entity]
            for (offset, relationship) in properties.relationships.enumerated() where relationship.deleteRule == .nullify {
                let index = properties.attributes.count + offset
                for target in Self.targets(current.values[index]) where objects.contains(target) {
                    pairs.append((target, id, entity, index))
                }
            }
        }
        return pairs
    }

    /// A relationship change `storeWins` or `rollback` dropped: the object, the key, and the
    /// values the change set and the store give it.
    private struct DroppedRelationship {
        let id: ObjectID
        let entity: Int
        let index: Int
        let ours: Value
        let theirs: Value
    }

    /// Relationship changes `storeWins` dropped (keys another transaction changed too), or
    /// `rollback` (every change of an object another transaction changed): the
    /// other sides this change set changed along with them follow the store's value instead
    /// — an object only the dropped value refers to does not list or refer to the object
    /// (its inverse as the store has it, for a to-one; nothing, for an object the change set
    /// inserts), one only the store's value refers to
    /// lists or refers to it again. Without this, the save the policy resolved was refused
    /// as an inverse violation unless the other sides had conflicted too (a context that
    /// merged the other transaction before saving had taken its side of them). An object only
    /// the store's value refers to, which the change set gave another object, goes back to
    /// this one, and that object lets go of it: a pair is kept or dropped whole (it was
    /// refused as an inverse violation). A change left setting the value the store has
    /// already is dropped too.
    private mutating func keepOtherSidesInStep(with dropped: [DroppedRelationship]) {
        var position: [ObjectID: Int] = [:]
        for (i, update) in updates.enumerated() { position[update.id] = i }
        var adjusted: [(update: Int, change: Int, entity: Int)] = []
        for change in dropped {
            let properties = schema.entities[change.entity]
            let relationship = properties.relationships[change.index - properties.attributes.count]
            let destination = schema.entityIndex(named: relationship.destination)!
            let inverseIndex = schema.entities[destination].propertyIndex(named: relationship.inverse)!
            let ours = Self.targets(change.ours), theirs = Self.targets(change.theirs)
            func inverseChange(of target: ObjectID) -> (update: Int, change: Int)? {
                guard let u = position[target], let c = updates[u].changes.firstIndex(where: { $0.index == inverseIndex }) else { return nil }
                adjusted.append((u, c, destination))
                return (u, c)
            }
            for target in ours where !theirs.contains(target) {
                guard let (u, c) = inverseChange(of: target) else {
                    // An object the change set inserts (an artist made for the album): its row
                    // lets go. (It listed the album, and the save was refused.)
                    letGoInChangeSet(of: change.id, in: target, at: inverseIndex, entity: destination, position: position, adjusted: &adjusted)
                    continue
                }
                switch updates[u].changes[c].value {
                case .objects(let ids) where ids.contains(change.id):
                    updates[u].changes[c].value = .objects(ids.filter { $0 != change.id })
                case .object(let id) where id == change.id:
                    updates[u].changes[c].value = head.tables[destination][target.number]?.values[inverseIndex] ?? .null
                default: break
                }
            }
            for target in theirs where !ours.contains(target) {
                guard let (u, c) = inverseChange(of: target) else { continue }
                switch updates[u].changes[c].value {
                case .objects(let ids) where !ids.contains(change.id): updates[u].changes[c].value = .objects(ids + [change.id])
                case .null: updates[u].changes[c].value = .object(change.id)
                case .object(let other) where other != change.id:
                    // The change set gave it another object: a pair is kept or dropped whole,
                    // so it goes back to this one, and the other lets go of it (it was refused
                    // as an inverse violation).
                    updates[u].changes[c].value = .object(change.id)
                    letGoInChangeSet(of: target, in: other, at: change.index, entity: change.entity, position: position, adjusted: &adjusted)
                default: break
                }
            }
        }
        var unchanged: [Int: Set<Int>] = [:]
        for (u, c, entity) in adjusted {
            let change = updates[u].changes[c]
            if head.tables[entity][updates[u].id.number]?.values[change.index] == change.value { unchanged[u, default: []].insert(c) }
        }
        guard !unchanged.isEmpty else { return }
        updates = updates.enumerated().compactMap { u, update in
            guard let drop = unchanged[u] else { return update }
            var update = update
            update.changes = update.changes.enumerated().filter { !drop.contains($0.offset) }.map(\.element)
            return update.changes.isEmpty ? nil : update
        }
    }

    /// Takes `target` out of `owner`'s relationship at `index` as this change set gives it —
    /// an inserted row's value, or an update's change of that key (noted in `adjusted`, so
    /// that a change left setting the store's value is dropped).
    private mutating func letGoInChangeSet(
        of target: ObjectID, in owner: ObjectID, at index: Int, entity: Int, position: [ObjectID: Int],
        adjusted: inout [(update: Int, change: Int, entity: Int)]
    ) {
        guard let u = position[owner] else {
            // An inserted row, or nothing of this change set's.
            guard let r = inserted.firstIndex(where: { $0.id == owner }),
                let value = inserted[r].values[index].removingReferences(where: { $0 == target })
            else { return }
            inserted[r].values[index] = value
            return
        }
        guard let c = updates[u].changes.firstIndex(where: { $0.index == index }),
            let value = updates[u].changes[c].value.removingReferences(where: { $0 == target })
        else { return }
        updates[u].changes[c].value = value
        adjusted.append((u, c, entity))
    }

    /// Objects that must let go of another in a relationship's inverse — a target and the
    /// object it refers to, with the latter's entity and key:
    ///
    /// - To-one changes `contextWins` kept over another object theirs gave (an album ours
    ///   moved to one artist and theirs to another): the object theirs gave lets go of it in
    ///   the inverse — what the other transaction set there along with its side.
    /// - Deletions `contextWins` or `overwrite` made of objects another transaction changed:
    ///   the objects that transaction related to the deleted one (a song ours deletes that
    ///   theirs moved to another album) let go of it, as the deletion's `nullify` rule does
    ///   in a context.
    ///
    /// Each lets go as this save's own change of that key, or a change added for it. Without
    /// this, the save the policy resolved was refused as an inverse violation. (A required
    /// to-one inverse left empty is refused as a missing value, naming it.)
    private mutating func letGo(of pairs: [(target: ObjectID, id: ObjectID, entity: Int, index: Int)]) {
        var position: [ObjectID: Int] = [:]
        for (i, update) in updates.enumerated() { position[update.id] = i }
        let deleted = Set(deletions)
        for (target, id, entity, index) in pairs where !deleted.contains(target) {
            let relationship = schema.entities[entity].relationships[index - schema.entities[entity].attributes.count]
            let destination = schema.entityIndex(named: relationship.destination)!
            let inverseIndex = schema.entities[destination].propertyIndex(named: relationship.inverse)!
            func without(_ value: Value) -> Value? { value.removingReferences { $0 == id } }
            if let u = position[target], let c = updates[u].changes.firstIndex(where: { $0.index == inverseIndex }) {
                if let value = without(updates[u].changes[c].value) { updates[u].changes[c].value = value }
                continue
            }
            guard let row = head.tables[destination][target.number], let value = without(row.values[inverseIndex]) else { continue }
            let change = PropertyChange(index: inverseIndex, value: value)
            if let u = position[target] {
                let at = updates[u].changes.firstIndex { $0.index > inverseIndex } ?? updates[u].changes.count
                updates[u].changes.insert(change, at: at)
            } else {
                position[target] = updates.count
                updates.append(RowUpdate(id: target, changes: [change]))
            }
        }
    }

    /// Objects another transaction deleted whose updates here were dropped (the deletion
    /// won, under every resolving policy: nothing is left to change): what this change set
    /// relates to them lets go of them, as a context merging the deletion forgets its
    /// references to the object — a song moved to an album another transaction deleted is
    /// in neither album. (It was refused as a dangling reference, and the writer of a stack
    /// dropped the whole save.) Only objects the change set updated, and so knew to exist:
    /// a reference to an object that never existed is still refused.
    private mutating func forgetReferences(to gone: Set<ObjectID>) {
        for u in updates.indices {
            for c in updates[u].changes.indices {
                if let value = updates[u].changes[c].value.removingReferences(where: gone.contains) { updates[u].changes[c].value = value }
            }
        }
        for r in inserted.indices {
            for i in inserted[r].values.indices {
                if let value = inserted[r].values[i].removingReferences(where: gone.contains) { inserted[r].values[i] = value }
            }
        }
    }

    /// Deletions the merge policy dropped (`storeWins`, `rollback`): the objects whose
    /// relationship to a kept object this change set emptied — what the deletion's `nullify`
    /// rules did to the other side — refer to it again, as it still refers to them. Without
    /// this, the save the policy resolved was refused as an inverse violation. (An object
    /// this change set gave another one instead still disagrees, and is refused as before.)
    /// A kept object lets go of the objects the change set deletes — what the deletion's
    /// `cascade` rules took — as a parent context keeping a child's deletion does: it listed
    /// them still, and the save was refused as an inverse violation.
    private mutating func restoreReferences(toKept kept: [(id: ObjectID, entity: Int, values: [Value])]) {
        var position: [ObjectID: Int] = [:]
        for (i, update) in updates.enumerated() { position[update.id] = i }
        let deleted = Set(deletions)
        for (id, entity, values) in kept {
            let properties = schema.entities[entity]
            var lettingGo: [PropertyChange] = []
            for (offset, relationship) in properties.relationships.enumerated() {
                let index = properties.attributes.count + offset
                let targets = Self.targets(values[index])
                // A target the change set gives another object in a to-one inverse (a song
                // moved from the album it deletes to another) is let go of too: kept, the
                // album went on listing it, and the save was refused as an inverse violation.
                let inverseIndex = schema.entity(named: relationship.destination)!.propertyIndex(named: relationship.inverse)!
                func movedAway(_ target: ObjectID) -> Bool {
                    guard let u = position[target], let change = updates[u].changes.first(where: { $0.index == inverseIndex }),
                        case .object(let other) = change.value
                    else { return false }
                    return other != id
                }
                if targets.contains(where: { deleted.contains($0) || movedAway($0) }) {
                    let left = targets.filter { !deleted.contains($0) && !movedAway($0) }
                    lettingGo.append(PropertyChange(index: index, value: relationship.isToMany ? .objects(left) : .null))
                }
            }
            if !lettingGo.isEmpty { updates.append(RowUpdate(id: id, changes: lettingGo)) }
            for (offset, relationship) in properties.relationships.enumerated() {
                let inverseIndex = schema.entity(named: relationship.destination)!.propertyIndex(named: relationship.inverse)!
                for target in Self.targets(values[properties.attributes.count + offset]) where !deleted.contains(target) {
                    guard let u = position[target], let c = updates[u].changes.firstIndex(where: { $0.index == inverseIndex }) else { continue }
                    switch updates[u].changes[c].value {
                    case .objects(let ids) where !ids.contains(id): updates[u].changes[c].value = .objects(ids + [id])
                    case .null: updates[u].changes[c].value = .object(id)
                    default: break
                    }
                }
            }
        }
    }

    /// The transaction to append.
    func record(number: UInt64) -> TransactionRecord {
        TransactionRecord(number: number, timestamp: Date(), author: changes.author,
                          inserted: inserted, updated: updates, deleted: deletions)
    }

    /// Change sets of at least this many rows are checked on two threads at once (the
    /// caller's and one other): below it, handing work to another thread costs more than it
    /// saves.
    static var rowsCheckedInParallel: Int { 2_048 }
    private static let processors = ProcessInfo.processInfo.activeProcessorCount

    /// Whether ``apply(_:checkingConstraints:encoding:)`` checks `record` on two threads.
    static func checksInParallel(_ record: TransactionRecord) -> Bool {
        record.inserted.count + record.updated.count >= rowsCheckedInParallel && processors > 1
    }

    /// The generation `record` (checked against the schema) produces from the head, after
    /// checking its unique keys against the head and — when `checkingConstraints` — the
    /// constraints on the result (``checkConstraints(after:insertsOnly:)``).
    ///
    /// A large transaction is checked on two threads at once: one checks (and, for a
    /// transaction that only inserts, indexes) its unique keys while the other fills the
    /// tables; then both check the inserted rows' constraints in chunks, once the tables are
    /// filled (the head does not change meanwhile, and the new generation is thrown away if
    /// anything fails). The failure reported is the one a
    /// single pass would have found first: a unique key's, then the earliest row's.
    ///
    /// `encoding`, when given (only for a transaction ``checksInParallel(_:)``), is `record`
    /// being encoded with its rows left to write: the two threads write them first, and its
    /// refusal of a row comes before any failure here.
    func apply(_ record: TransactionRecord, checkingConstraints: Bool, encoding: Journal.EncodingInHalves? = nil) throws(StoreError) -> Generation {
        // A transaction that only inserts (a bulk import) has its unique keys checked and
        // indexed in one walk each, on one thread, while the other fills the tables; its
        // relationships are checked from one side (``checkInserted(_:in:lists:tally:)``).
        let insertsOnly = record.updated.isEmpty && record.deleted.isEmpty
        guard Self.checksInParallel(record) else {
            precondition(encoding == nil, "a transaction of \(record.inserted.count) rows is checked on one thread: encode it whole, not in halves")
            try checkUniques(record)
            var next = head
            next.applyValidated(record)
            if checkingConstraints { try checkConstraints(after: next, insertsOnly: insertsOnly) }
            return next
        }
        // Grouped once for both sides.
        let rowsByEntity = head.insertedRowsByEntity(record)
        let chunks = checkingConstraints ? (inserted.count + Self.rowsCheckedPerChunk - 1) / Self.rowsCheckedPerChunk : 0
        // Each side's outcome crosses threads under a lock (which ThreadSanitizer sees,
        // unlike the join inside `concurrentPerform`). `filled` is the generation with the
        // tables filled, which both threads check rows in; `tallies` the relationship
        // entries each thread counted in the rows it checked.
        let outcome = Locked<(failure: StoreError?, filled: Generation?, indexes: [UniqueIndex?]?, tallies: [EdgeTally])>((nil, nil, nil, []))
        let nextChunk = Atomic<Int>(0)
        // Set when a chunk fails a check: the rows are then checked again in one pass, for
        // the error that pass meets first.
        let rowsFailed = Atomic<Bool>(false)
        @Sendable func checkRows(in next: Generation) {
            var tally = insertsOnly ? EdgeTally(transaction: record.number, layout: schema.layout) : nil
            checkChunks(of: chunks, in: next, taking: nextChunk, tally: &tally, failed: rowsFailed)
            if let tally { outcome.withLock { $0.tallies.append(tally) } }
        }
        // The tables and the unique keys are taken, not assigned: each thread takes what no
        // thread has taken yet, the tables first (the checks need them), so that one thread
        // alone — when `concurrentPerform` runs both iterations on it — does both.
        let taken = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            if let encoding {
                encoding.write()
                // Refused below, before anything this step would find.
                if encoding.failed { return }
            }
            while true {
                let part = taken.wrappingAdd(1, ordering: .relaxed).oldValue
                if part == 0 {
                    var next = head
                    next.applyValidated(record, indexingUniqueInserts: !insertsOnly, rowsByEntity: rowsByEntity)
                    outcome.withLock { $0.filled = next }
                } else if part == 1 {
                    do throws(StoreError) {
                        if insertsOnly {
                            let indexes = try uniqueIndexesInserting(record, rowsByEntity: rowsByEntity)
                            outcome.withLock { $0.indexes = indexes }
                        } else {
                            try checkUniques(record)
                        }
                    } catch {
                        outcome.withLock { $0.failure = error }
                        return
                    }
                } else {
                    break
                }
            }
            guard chunks > 0 else { return }
            // Rows are checked in the generation with the tables filled: by this thread, or
            // by the other, which took them and is filling them.
            while true {
                let (filled, failed) = outcome.withLock { ($0.filled, $0.failure != nil) }
                if failed { return }
                if let filled {
                    checkRows(in: filled)
                    return
                }
                sched_yield()
            }
        }
        try encoding?.checkRows()
        let (failure, filled, indexes, tallies) = outcome.withLock { ($0.failure, $0.filled, $0.indexes, $0.tallies) }
        if let failure { throw failure }
        guard var next = filled else { preconditionFailure("concurrentPerform returned before applying the transaction") }
        if checkingConstraints, rowsFailed.load(ordering: .relaxed) || (insertsOnly && !EdgeTally.agree(tallies, layout: schema.layout)) {
            try checkInserted(0..<inserted.count, in: next, lists: InverseLists())
        }
        if let indexes { next.uniqueIndexes = indexes }
        if checkingConstraints { try checkChangedAndDeleted(after: next) }
        return next
    }

    /// The rows a thread checks at a time when two check a transaction's inserted rows.
    static var rowsCheckedPerChunk: Int { 512 }

    /// Checks chunks of the inserted rows in `next` (see ``rowsCheckedPerChunk``), taking
    /// each chunk's number from `counter` until `chunks` are taken, counting relationship
    /// entries in `tally` (see ``checkInserted(_:in:lists:tally:)``); sets `failed` and
    /// stops at the first chunk that fails, and when another thread has.
    private func checkChunks(
        of chunks: Int, in next: Generation, taking counter: borrowing Atomic<Int>, tally: inout EdgeTally?, failed: borrowing Atomic<Bool>
    ) {
        let lists = InverseLists()
        let size = Self.rowsCheckedPerChunk
        while !failed.load(ordering: .relaxed) {
            let index = counter.wrappingAdd(1, ordering: .relaxed).oldValue
            guard index < chunks else { return }
            do throws(StoreError) {
                try checkInserted(index * size..<min(inserted.count, (index + 1) * size), in: next, lists: lists, tally: &tally)
            } catch {
                failed.store(true, ordering: .relaxed)
            }
        }
    }

    /// The head's unique indexes with the keys of `record`'s inserted rows (it inserts
    /// only), checking each key as it goes in — one walk for both instead of a lookup and
    /// an insert, entity by entity, a run of consecutive integer keys from where the key
    /// before it went (``UniqueIndex/insertStoppingAtHeld(count:_:)``); `rowsOf` is
    /// ``Generation/insertedRowsByEntity(_:)`` for `record`. The same failures, in the same
    /// order, as ``checkUniques(_:)``.
    private func uniqueIndexesInserting(_ record: TransactionRecord, rowsByEntity rowsOf: [[Int]]) throws(StoreError) -> [UniqueIndex?] {
        var indexes = head.uniqueIndexes
        // Each entity's first refusal; the earliest row's is the one a single pass finds.
        var earliest: (row: Int, error: StoreError)?
        record.inserted.withUnsafeBufferPointer { inserted in
            for entity in rowsOf.indices where !rowsOf[entity].isEmpty {
                guard let attribute = head.uniqueAttributeIndex(entity) else { continue }
                let rows = rowsOf[entity]
                let refused = indexes[entity]!.insertStoppingAtHeld(count: rows.count) { position in
                    let row = inserted[rows[position]]
                    let value = row.values[attribute]
                    return value.isNull ? nil : (value, row.id.number)
                }
                guard let (position, holder) = refused, earliest.map({ rows[position] < $0.row }) ?? true else { continue }
                let row = inserted[rows[position]]
                let value = row.values[attribute]
                let holderID = ObjectID(entity: row.id.entity, number: holder)
                // The holder is the head's, or a row of this transaction that came first.
                let error = head.uniqueIndexes[entity]![value] == holder
                    ? uniqueAlreadyUsed(value, entity: entity, by: holderID, claimedBy: row.id, inserting: true)
                    : uniqueGivenTwice(value, entity: entity, first: holderID, then: row.id)
                earliest = (rows[position], error)
            }
        }
        if let earliest { throw earliest.error }
        return indexes
    }

    /// A unique value's place in a ``RepeatDetector``: integers keep their order (the sign
    /// bit flipped); other values have none here.
    private static func uniqueOrder(_ value: Value) -> UInt64? {
        if case .int(let i) = value { UInt64(bitPattern: i) ^ (1 << 63) } else { nil }
    }

    private func uniqueGivenTwice(_ value: Value, entity: Int, first: ObjectID, then id: ObjectID) -> StoreError {
        let key = schema.entities[entity].attributes[head.uniqueAttributeIndex(entity)!].name
        return StoreError(.uniqueViolation, "unique key \"\(key)\" = \(value) is given to both \(first) and \(id)", object: id, key: key)
    }

    private func uniqueAlreadyUsed(_ value: Value, entity: Int, by holder: ObjectID, claimedBy id: ObjectID, inserting: Bool) -> StoreError {
        let key = schema.entities[entity].attributes[head.uniqueAttributeIndex(entity)!].name
        let advice = inserting ? "change one of them, or update \(holder) instead of adding \(id)" : "give \(id) another value, or change \(holder)'s first"
        return StoreError(.uniqueViolation, "unique key \"\(key)\" = \(value) already used by \(holder); \(advice)", object: id, key: key)
    }

    private func checkUniques(_ record: TransactionRecord) throws(StoreError) {
        var candidates: [(id: ObjectID, entity: Int, value: Value)] = []
        candidates.reserveCapacity(record.inserted.count + record.updated.count)
        for row in record.inserted {
            let entity = schema.entityIndex(of: row.id)!
            if let attribute = head.uniqueAttributeIndex(entity), !row.values[attribute].isNull {
                candidates.append((row.id, entity, row.values[attribute]))
            }
        }
        // Values the transaction takes away from their holders (by update or deletion).
        var released: [Int: Set<Value>] = [:]
        for update in record.updated {
            let entity = schema.entityIndex(of: update.id)!
            guard let attribute = head.uniqueAttributeIndex(entity),
                let change = update.changes.first(where: { $0.index == attribute })
            else { continue }
            let old = head.tables[entity][update.id.number]!.values[attribute]
            if !old.isNull { released[entity, default: []].insert(old) }
            if !change.value.isNull { candidates.append((update.id, entity, change.value)) }
        }
        for id in record.deleted {
            let entity = schema.entityIndex(of: id)!
            if let attribute = head.uniqueAttributeIndex(entity), let row = head.tables[entity][id.number], !row.values[attribute].isNull {
                released[entity, default: []].insert(row.values[attribute])
            }
        }
        guard !candidates.isEmpty else { return }
        let deleted = record.deleted.isEmpty ? [] : Set(record.deleted)
        var claimed = [RepeatDetector<Value>](repeating: RepeatDetector(), count: schema.entities.count)
        for (id, entity, value) in candidates {
            guard claimed[entity].insert(value, order: Self.uniqueOrder(value)) else {
                let first = candidates.first { $0.entity == entity && $0.value == value }!.id
                throw uniqueGivenTwice(value, entity: entity, first: first, then: id)
            }
            if let holder = head.uniqueIndexes[entity]![value], holder != id.number {
                let holderID = ObjectID(entity: id.entity, number: holder)
                let freed = deleted.contains(holderID) || (released[entity]?.contains(value) == true
                    && record.updated.contains { $0.id == holderID })
                if !freed {
                    throw uniqueAlreadyUsed(value, entity: entity, by: holderID, claimedBy: id, inserting: record.inserted.contains { $0.id == id })
                }
            }
        }
    }

    // MARK: Constraints on the result

    /// Checks required values, limits, references, inverses and delete rules of everything
    /// the transaction touched, in the generation it produces.
    func checkConstraints(after next: Generation, insertsOnly: Bool) throws(StoreError) {
        let all = 0..<inserted.count
        var tally = insertsOnly ? EdgeTally(transaction: next.transaction, layout: schema.layout) : nil
        let passed: Bool
        do throws(StoreError) {
            try checkInserted(all, in: next, lists: InverseLists(), tally: &tally)
            passed = tally.map { EdgeTally.agree([$0], layout: schema.layout) } ?? true
        } catch {
            guard tally != nil else { throw error }
            passed = false
        }
        // Looked for again following every relationship, for the error such a pass finds first.
        if !passed { try checkInserted(all, in: next, lists: InverseLists()) }
        try checkChangedAndDeleted(after: next)
    }

    /// ``checkConstraints(after:insertsOnly:)`` for the updated and deleted objects only.
    private func checkChangedAndDeleted(after next: Generation) throws(StoreError) {
        let lists = InverseLists()
        for update in updates {
            let entity = schema.entityIndex(of: update.id)!
            let before = head.tables[entity][update.id.number]!.values
            try checkObject(update.id, entity: entity, keys: update.changes.map(\.index), before: before, in: next, lists: lists)
        }
        let deleted = Set(deletions)
        for id in deletions {
            let entity = schema.entityIndex(of: id)!
            let properties = schema.entities[entity]
            let values = head.tables[entity][id.number]!.values
            for (offset, relationship) in properties.relationships.enumerated() {
                for target in Self.targets(values[properties.attributes.count + offset]) where !deleted.contains(target) {
                    guard let other = next.object(target) else { continue }
                    // A target this save moved elsewhere (its inverse no longer refers back,
                    // which checkObject verified) is no longer related: no rule applies to it.
                    let inverseIndex = schema.entity(named: target.entity)!.propertyIndex(named: relationship.inverse)!
                    guard Self.targets(other.values[inverseIndex]).contains(id) else { continue }
                    switch relationship.deleteRule {
                    case .deny:
                        throw StoreError(.deleteRule, "\(id) cannot be deleted: its relationship \"\(relationship.name)\" (delete rule deny) still refers to \(target); remove that first",
                                         object: id, key: relationship.name)
                    case .cascade:
                        throw StoreError(.deleteRule, "deleting \(id) must delete \(target) too (relationship \"\(relationship.name)\", delete rule cascade)",
                                         object: id, key: relationship.name)
                    case .nullify:
                        throw StoreError(.inverseViolation, "\(target).\(relationship.inverse) still refers to deleted \(id); nullify it in the same save",
                                         object: target, key: relationship.inverse)
                    }
                }
            }
        }
    }

    /// Checks the inserted rows `rows` in `next`, following every relationship to its
    /// targets — or, with a `tally` (a transaction that only inserts), only the side of
    /// each relationship that ``SchemaLayout/EntityLayout/followsTargets`` names, checking
    /// that each target is an object the transaction inserts, and counting every side's
    /// entries in the tally instead.
    ///
    /// That suffices in a transaction that only inserts: an object it inserts can be named
    /// only by objects it inserts (every other keeps its values, which name objects that
    /// existed before). So when each entry of the side followed has its inverse entry, and
    /// the two sides hold as many entries as each other (no list names an object twice),
    /// every entry of the other side is the inverse of one followed (``EdgeTally/agree(_:layout:)``).
    /// A failure of this pass, or tallies that disagree, is not reported as is: the rows
    /// are checked again following every relationship, for the error that pass finds first.
    private func checkInserted(_ rows: Range<Int>, in next: Generation, lists: InverseLists, tally: inout EdgeTally?) throws(StoreError) {
        try inserted.withUnsafeBufferPointer { (inserted) throws(StoreError) in
            for row in rows {
                let id = inserted[row].id
                let entity = try entityIndex(id)
                // An inserted row is in the next generation as sent: no need to look it up there.
                try checkObject(id, entity: entity, values: inserted[row].values, keys: 0..<schema.layout.entities[entity].propertyCount,
                                before: nil, in: next, lists: lists, tally: &tally)
            }
        }
    }

    private func checkInserted(_ rows: Range<Int>, in next: Generation, lists: InverseLists) throws(StoreError) {
        var tally: EdgeTally? = nil
        try checkInserted(rows, in: next, lists: lists, tally: &tally)
    }

    private func checkObject(
        _ id: ObjectID, entity: Int, keys: some Sequence<Int>, before: [Value]?, in next: Generation, lists: InverseLists
    ) throws(StoreError) {
        var tally: EdgeTally? = nil
        try checkObject(id, entity: entity, values: next.tables[entity][id.number]!.values, keys: keys, before: before, in: next, lists: lists,
                        tally: &tally)
    }

    /// Checks the properties `keys` of `id`, whose values in `next` are `values`; with a
    /// `tally`, as ``checkInserted(_:in:lists:tally:)`` says.
    private func checkObject(
        _ id: ObjectID, entity: Int, values: [Value], keys: some Sequence<Int>, before: [Value]?, in next: Generation, lists: InverseLists,
        tally: inout EdgeTally?
    ) throws(StoreError) {
        // Read in place: no copy of the entity, its properties or a single target's array.
        let layout = schema.layout.entities[entity]
        for index in keys {
            guard index >= layout.attributeCount else {
                if let plain = layout.plainChecks[index] {
                    if let type = values[index].attributeType {
                        if type == plain.type && plain.admits(values[index]) { continue }
                    } else if plain.optional && values[index].isNull {
                        continue
                    }
                }
                if let problem = AttributeCheck.problem(with: values[index], for: schema.entities[entity].attributes[index]) {
                    let name = layout.propertyNames[index]
                    let code: StoreError.Code = values[index].isNull ? .missingValue : .invalidValue
                    throw StoreError(code, "\(id).\(name): \(problem)", object: id, key: name)
                }
                continue
            }
            let value = values[index]
            let isEmpty: Bool =
                switch value {
                case .object: false
                case .objects(let ids): ids.isEmpty
                default: true
                }
            if isEmpty {
                let relationship = schema.entities[entity].relationships[index - layout.attributeCount]
                if !relationship.isOptional {
                    throw StoreError(.missingValue, "\(id).\(relationship.name): the relationship is required", object: id, key: relationship.name)
                }
            }
            if case .objects(let ids) = value, Self.hasDuplicates(ids) {
                let name = layout.propertyNames[index]
                throw StoreError(.invalidTransaction, "\(id).\(name) lists an object twice", object: id, key: name)
            }
            if tally != nil {
                let entries: Int =
                    switch value {
                    case .object: 1
                    case .objects(let ids): ids.count
                    default: 0
                    }
                tally!.add(entries, entity: entity, property: index)
                if !layout.followsTargets[index] { continue }
            }
            let inverseIndex = layout.inverseIndexes[index]
            // The encoder has checked that every target is of the relationship's destination,
            // so its table is known without looking the target's entity up by name.
            guard let destination = layout.kinds[index].destination else {
                preconditionFailure("\(layout.propertyNames[index]) of \(layout.name) is laid out as a relationship and an attribute")
            }
            // A target of an inserted object, in a transaction that only inserts, is inserted
            // by it too; its version tells (an error here is looked for again, see above).
            let insertedBy = tally?.transaction
            func check(_ target: ObjectID) throws(StoreError) {
                guard let other = next.tables[destination].value(at: inverseIndex, ofRow: target.number), insertedBy.map({ other.version == $0 }) ?? true else {
                    let name = layout.propertyNames[index]
                    throw StoreError(.danglingReference, "\(id).\(name) refers to \(target), which does not exist", object: id, key: name)
                }
                if !lists.refers(other.value, of: target, inverseIndex, to: id) {
                    let relationship = schema.entities[entity].relationships[index - layout.attributeCount]
                    throw StoreError(.inverseViolation, "\(id).\(relationship.name) refers to \(target), but \(target).\(relationship.inverse) does not refer back; set both sides in the same save",
                                     object: id, key: relationship.name)
                }
            }
            switch value {
            case .object(let target): try check(target)
            case .objects(let ids): for target in ids { try check(target) }
            default: break
            }
            guard let before else { continue }
            // Looked up in a set when the list is long: a save that adds or takes one object
            // of a 200,000-object list once compared every old member with every new one
            // (minutes, under the commit lock).
            let old = before[index].referencedObjects
            let kept: Set<ObjectID>? = old.count > 16 ? Set(value.referencedObjects) : nil
            for target in old where !(kept?.contains(target) ?? value.refers(to: target)) {
                guard let other = next.row(target) else { continue }
                if lists.refers(other.values[inverseIndex], of: target, inverseIndex, to: id) {
                    let relationship = schema.entities[entity].relationships[index - layout.attributeCount]
                    throw StoreError(.inverseViolation, "\(id).\(relationship.name) no longer refers to \(target), but \(target).\(relationship.inverse) still refers to \(id); change both sides in the same save",
                                     object: id, key: relationship.name)
                }
            }
        }
    }

    /// Long to-many lists of the generation being checked, as sets: many new objects that
    /// join one list (20,000 tracks of one album) are then checked in O(1) each, not by
    /// scanning the list. The generation does not change while it is checked, so the sets
    /// stay true. A class so that the checks of one commit share it.
    final class InverseLists {
        private var sets: [ListKey: Set<ObjectID>] = [:]

        struct ListKey: Hashable {
            var object: ObjectID
            var property: Int
        }

        func refers(_ value: Value, of object: ObjectID, _ property: Int, to id: ObjectID) -> Bool {
            guard case .objects(let ids) = value, ids.count > 32 else { return value.refers(to: id) }
            let key = ListKey(object: object, property: property)
            if let set = sets[key] { return set.contains(id) }
            let set = Set(ids)
            sets[key] = set
            return set.contains(id)
        }
    }

    /// The entries of each relationship in the inserted rows one thread checked, for the
    /// check of a transaction that only inserts (``checkInserted(_:in:lists:tally:)``).
    struct EdgeTally {
        /// The transaction checked: the version of the objects it inserts.
        let transaction: UInt64
        /// Per entity and property storage index.
        private(set) var counts: [[Int]]

        init(transaction: UInt64, layout: SchemaLayout) {
            self.transaction = transaction
            counts = layout.entities.map { [Int](repeating: 0, count: $0.propertyCount) }
        }

        mutating func add(_ entries: Int, entity: Int, property: Int) { counts[entity][property] += entries }

        /// Whether the two sides of every relationship (but one that is its own inverse)
        /// hold as many entries as each other, over every thread's tally.
        static func agree(_ tallies: [EdgeTally], layout: SchemaLayout) -> Bool {
            func total(_ entity: Int, _ property: Int) -> Int { tallies.reduce(0) { $0 + $1.counts[entity][property] } }
            for (entity, entityLayout) in layout.entities.enumerated() {
                for property in entityLayout.attributeCount..<entityLayout.propertyCount where entityLayout.followsTargets[property] {
                    guard let destination = entityLayout.kinds[property].destination else { continue }
                    let inverse = entityLayout.inverseIndexes[property]
                    if destination < 0 || inverse < 0 || (destination, inverse) == (entity, property) { continue }
                    if total(entity, property) != total(destination, inverse) { return false }
                }
            }
            return true
        }
    }

    /// Whether a list names an object twice (pairwise for short lists, which need no set).
    static func hasDuplicates(_ ids: [ObjectID]) -> Bool {
        if ids.count < 2 { return false }
        if ids.count <= 16 {
            for i in 1..<ids.count where ids[..<i].contains(ids[i]) { return true }
            return false
        }
        return Set(ids).count != ids.count
    }

    static func targets(_ value: Value) -> [ObjectID] { value.referencedObjects }

    func notification(for record: TransactionRecord, in next: Generation) -> CommitNotification {
        var notification = CommitNotification(transaction: record.number, timestamp: record.timestamp, author: record.author,
                                              inserted: record.inserted.map(\.id), updated: record.updated.map(\.id), deleted: record.deleted,
                                              changes: CommitChanges(record: record, next: next))
        notification.generation = next
        notification.origin = changes.origin
        return notification
    }
}
