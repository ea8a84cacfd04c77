/// The changes of one save, captured from a graph: what is sent, and the objects to
/// update when it succeeds. Stays in the context's isolation.
struct SaveCapture {
    let stamp: UInt64
    let inserted: [ManagedObject]
    let insertedRows: [RowImage]
    let updated: [ManagedObject]
    let updates: [ObjectUpdate]
    let deleted: [ManagedObject]

    var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
    var objectCount: Int { inserted.count + updated.count + deleted.count }

    func changeSet(author: String, mergePolicy: MergePolicy, origin: ObjectIdentifier) -> ChangeSet {
        var changes = ChangeSet(author: author, inserted: insertedRows, updated: updates,
                                deleted: deleted.map { ObjectDeletion(id: $0.objectID, baseVersion: $0.baseVersion) }, mergePolicy: mergePolicy)
        changes.origin = origin
        return changes
    }

    func childSave(author: String, origin: ObjectIdentifier, mergePolicy: MergePolicy) -> ChildSave {
        ChildSave(author: author, origin: origin, inserted: insertedRows, updated: updates, deleted: deleted.map(\.objectID),
                  deletedBases: deleted.map { $0.base ?? [] }, mergePolicy: mergePolicy)
    }
}

/// A child context's save, as its parent applies it: each update with the values it was
/// based on, so that the parent finds keys it changed meanwhile (conflicts, resolved by the
/// child's merge policy, as the store does).
struct ChildSave: Sendable {
    let author: String
    let origin: ObjectIdentifier
    let inserted: [RowImage]
    let updated: [ObjectUpdate]
    let deleted: [ObjectID]
    /// The values each deleted object was read with: a parent that changed the object since
    /// finds a conflict, as the store does for a deletion based on an older version.
    let deletedBases: [[Value]]
    let mergePolicy: MergePolicy
}

extension ObjectGraph {
    // MARK: - Validation

    /// Checks every pending change as the store would, before anything is sent: `deny`
    /// rules, required values and limits, relationships to deleted objects, custom
    /// validation and unique attributes (against this context's objects and its parent's view).
    /// Every problem is found: the first is thrown, with all of them in
    /// ``StoreError/validationProblems`` (as Core Data's multiple-errors error lists them).
    func validateForSave() throws(StoreError) {
        var problems: [StoreError] = []
        // Delete rules first: an object that keeps a deleted one from being deleted is named as
        // such, even when it has changes of its own (a new song still on a deleted album was
        // reported as a dangling reference of the song's).
        for id in deleted.sorted() {
            let object = registered[id]!
            for (index, info) in relationships[object.entityIndex].enumerated() {
                guard let info, info.deleteRule == .deny else { continue }
                for target in Self.targets(object.storage[index]) {
                    let other = self.object(with: target)
                    load(other)
                    if other.lifecycle == .inserted || other.lifecycle == .persistent,
                        Self.targets(other.storage[info.inverseIndex]).contains(id)
                    {
                        problems.append(StoreError(.deleteRule, "\(id) cannot be deleted: its relationship \"\(info.name)\" (delete rule deny) still refers to \(target); remove or delete that first",
                                                   object: id, key: info.name))
                        break
                    }
                }
            }
        }
        let changed = (inserted.union(updated)).sorted()
        var claims: [Int: [Value: ObjectID]] = [:]
        for id in changed {
            let object = registered[id]!
            let entity = schema.entities[object.entityIndex]
            let keys = object.lifecycle == .inserted ? Array(0..<entity.propertyCount) : object.changedKeys.sorted()
            for index in keys {
                switch entity.property(at: index) {
                case .attribute(let attribute):
                    if let problem = AttributeCheck.problem(with: object.storage[index], for: attribute) {
                        problems.append(StoreError(object.storage[index].isNull ? .missingValue : .invalidValue,
                                                   "\(id).\(attribute.name): \(problem)", object: id, key: attribute.name))
                    }
                case .relationship(let relationship):
                    let targets = Self.targets(object.storage[index])
                    if targets.isEmpty && !relationship.isOptional {
                        problems.append(StoreError(.missingValue, "\(id).\(relationship.name): the relationship is required", object: id, key: relationship.name))
                    }
                    if let target = targets.first(where: { registered[$0].map { $0.lifecycle != .inserted && $0.lifecycle != .persistent } ?? false }) {
                        problems.append(StoreError(.danglingReference, "\(id).\(relationship.name) refers to \(target), which is deleted; remove it from the relationship",
                                                   object: id, key: relationship.name))
                    }
                }
            }
            do throws(StoreError) { try object.validateForSave() } catch { problems.append(error) }
            for rule in link.coordinator.validationRules[entity.name] ?? [] {
                do throws(StoreError) { try rule.check(object) } catch { problems.append(error) }
            }
            if let attribute = schema.layout.entities[object.entityIndex].uniqueAttribute, keys.contains(attribute),
                !object.storage[attribute].isNull
            {
                let value = object.storage[attribute]
                let key = entity.attributes[attribute].name
                if let other = claims[object.entityIndex]?[value] {
                    problems.append(StoreError(.uniqueViolation, "unique key \"\(key)\" = \(value) is given to both \(other) and \(id)", object: id, key: key))
                    continue
                }
                claims[object.entityIndex, default: [:]][value] = id
                // Another object of this save claiming the value is reported when it is reached ("given to both").
                if let holder = uniqueHolder(entity: object.entityIndex, value: value, excluding: id), !claimsInThisSave(holder, attribute) {
                    problems.append(StoreError(.uniqueViolation, "unique key \"\(key)\" = \(value) already used by \(holder); change one of them, or use findOrCreate to reuse \(holder)",
                                               object: id, key: key))
                }
            }
        }
        guard var first = problems.first else { return }
        if problems.count > 1 {
            first.message += " (and \(problems.count - 1) more problem(s) in this save: every one is in validationProblems)"
            first.validationProblems = problems
        }
        throw first
    }

    /// Whether `id` is saved with a (possibly new) value of its unique attribute.
    private func claimsInThisSave(_ id: ObjectID, _ attribute: Int) -> Bool {
        guard let object = registered[id] else { return false }
        return object.lifecycle == .inserted || (object.lifecycle == .persistent && object.changedKeys.contains(attribute))
    }

    // MARK: - Capturing and finishing

    func captureSave() -> SaveCapture {
        let insertedObjects = inserted.sorted().map { registered[$0]! }
        let updatedObjects = updated.sorted().map { registered[$0]! }
        let deletedObjects = deleted.sorted().map { registered[$0]! }
        for object in insertedObjects { object.keysSetDuringSave = [] }
        for object in updatedObjects { object.keysSetDuringSave = [] }
        return SaveCapture(
            stamp: changeCounter,
            inserted: insertedObjects,
            insertedRows: insertedObjects.map { RowImage(id: $0.objectID, values: $0.storage) },
            updated: updatedObjects,
            updates: updatedObjects.map { object in
                ObjectUpdate(id: object.objectID, baseVersion: object.baseVersion, baseValues: object.base!,
                             changes: object.changedKeys.sorted().map { PropertyChange(index: $0, value: object.storage[$0]) })
            },
            deleted: deletedObjects)
    }

    /// A captured save failed: its objects are no longer part of a save in flight (they keep
    /// their changes, including those made while it ran).
    func abandonSave(_ capture: SaveCapture) {
        var discarded: [ObjectID] = []
        for object in capture.inserted {
            object.keysSetDuringSave = nil
            object.mergedWhileInserting = nil
            saveEnded(for: object.objectID)
            if object.lifecycle == .discarded { discarded.append(object.objectID) }
        }
        // Deleted while the save ran, which took them nowhere: never to be inserted.
        retireNumbers(of: discarded)
        for object in capture.updated { object.keysSetDuringSave = nil }
    }

    /// The parent dropped changes this context had saved into it (a stack's writer whose save
    /// to the store was refused): the objects named show the parent's state again — saved
    /// values reloaded under this context's own pending changes, saved insertions gone,
    /// saved deletions undone (see ``reloadFromParent(_:unheld:handed:)``). `handed`: the
    /// keys of each object the parent held changed (what this context had saved into it).
    func parentDropped(_ ids: [ObjectID], handed: [ObjectID: Set<Int>] = [:]) -> DidSave {
        reloadFromParent(ids, unheld: \.invalidated, handed: handed)
    }

    /// The parent holds other values than this context saved into it for conflicting keys (a
    /// stack's writer whose save to the store kept another commit's values for them): their
    /// objects, and those a conflicting relationship's values refer to, show the parent's
    /// values again, under this context's own pending changes — keys changed again since
    /// they were saved keep the newer values, for the next save (see
    /// ``reloadFromParent(_:unheld:handed:)``). `handed`: the keys of each object the parent
    /// held changed when its save met the conflicts (what this context had saved into it).
    func parentKept(_ conflicts: [Conflict], handed: [ObjectID: Set<Int>] = [:]) -> DidSave {
        var ids = Set(conflicts.map(\.object))
        var handed = handed
        for conflict in conflicts {
            for value in [conflict.base, conflict.ours, conflict.theirs] { ids.formUnion(value.map(Self.targets) ?? []) }
            if let key = conflict.key, let entity = schema.entityIndex(of: conflict.object),
               let index = schema.entities[entity].propertyIndex(named: key) {
                handed[conflict.object, default: []].insert(index)
            }
        }
        return reloadFromParent(ids.sorted(), unheld: \.merged, handed: handed)
    }

    /// The keys changed here and not yet saved, by object: what a parent hands
    /// ``parentKept(_:handed:)`` and ``parentDropped(_:handed:)`` of a child.
    func pendingKeys() -> [ObjectID: Set<Int>] {
        var keys: [ObjectID: Set<Int>] = [:]
        for id in updated {
            if let object = registered[id], !object.changedKeys.isEmpty { keys[id] = object.changedKeys }
        }
        return keys
    }

    /// One side of a relationship to put in step with an object back from a tombstone.
    private struct InverseFix {
        let index: Int
        let other: ObjectID
        /// Refer to `other` (or let go of it).
        let refers: Bool
    }

    /// Reads the objects named again from the parent, as ``refresh(_:mergeChanges:)`` does
    /// with `mergeChanges` (an object gone from the parent becomes a tombstone; one this
    /// context deleted there and the parent still has comes back), and then every object held
    /// here that one of their relationships referred to before or refers to now: both sides
    /// of each relationship stay in step (an album showing the artist the parent kept is
    /// listed by that artist, and no longer by the one it showed). Objects not held here are
    /// announced in `unheld` (live results may show them without holding them).
    ///
    /// `handed`, when the parent dropped or resolved changes this context had saved into it:
    /// the keys of each object the parent held changed. Those take the parent's values as
    /// their base, changes made here since kept on top (what became of the handed values was
    /// reported with the parent's save). A key changed here since, which the parent did not
    /// hold changed and whose row another commit changed meanwhile, keeps the base it was
    /// changed on, as a merge under ``MergePolicy/error`` keeps it: the next save reports the
    /// conflict. (Rebased on the parent's row, the next save wrote the change over the other
    /// commit's value without a word.)
    /// - Returns: what the objects held here took, as a save for the children that follow
    ///   this context's merges (they read through it, and may hold what it showed before).
    private func reloadFromParent(
        _ ids: [ObjectID], unheld: WritableKeyPath<ObjectsDidChange, Set<ObjectID>>, handed: [ObjectID: Set<Int>]? = nil
    ) -> DidSave {
        /// Lets go of `other` (or refers to it again) at key `index`, as a change of the
        /// object's own: where that is its base, nothing is pending.
        func apply(_ fixes: [InverseFix], to object: ManagedObject) {
            guard object.isLoaded, object.lifecycle == .persistent || object.lifecycle == .inserted else { return }
            for fix in fixes {
                // (A to-one referring to a third object is left as it is: that pair is not this one's.)
                if fix.refers { referAlso(to: fix.other, in: object, at: fix.index) } else { letGo(of: fix.other, in: object, at: fix.index) }
            }
        }
        var work = Array(ids.reversed())
        var seen = Set<ObjectID>()
        var updated: [ObjectID] = [], deleted: [ObjectID] = []
        var changedKeys: [ObjectID: [String]] = [:], values: [ObjectID: [Value]] = [:]
        // Per object: the objects it is to let go of or to refer to again, by key — those an
        // object back from a tombstone no longer refers to, or refers to now (see below).
        var inverseFixes: [ObjectID: [InverseFix]] = [:]
        while let id = work.popLast() {
            guard seen.insert(id).inserted else { continue }
            guard let object = registered[id] else {
                pendingNotification[keyPath: unheld].insert(id)
                continue
            }
            let before = object.isLoaded ? object.storage : nil
            let wasGone = object.lifecycle == .deletedElsewhere
            switch object.lifecycle {
            case .persistent, .deleted:
                if let handed {
                    refresh(object, mergeChanges: true, keepingConflicts: true, rebasing: handed[id] ?? [])
                } else {
                    refresh(object, mergeChanges: true)
                }
            case .deletedElsewhere:
                object.missingWhenLoaded = true  // the deletion is undone: back when in the view
                reviveIfPresent(object)
            case .inserted, .discarded:
                break
            }
            if let fixes = inverseFixes.removeValue(forKey: id) { apply(fixes, to: object) }
            guard let before, object.isLoaded else { continue }
            let gone = object.lifecycle == .deletedElsewhere
            let after = gone ? emptyValues(of: object.entityIndex) : object.storage
            if gone {
                if !wasGone { deleted.append(id) }
            } else if before != after {
                let names = schema.layout.entities[object.entityIndex].propertyNames
                updated.append(id)
                changedKeys[id] = before.indices.filter { before[$0] != after[$0] }.map { names[$0] }
                values[id] = after
            }
            // An object back from a deletion (or gone now): every object on the other side of its
            // relationships, which let go of it when it went even where its own values stayed
            // (a song that let go of an album the parent's cascade took kept "no album" once
            // the parent dropped the deletion).
            let cameOrWent = wasGone != gone
            for (index, info) in relationships[object.entityIndex].enumerated() where info != nil && (cameOrWent || before[index] != after[index]) {
                for target in Self.targets(before[index]) + Self.targets(after[index]) where registered[target]?.isLoaded == true {
                    work.append(target)
                }
                // An object back from a tombstone names what the parent has: an object it named
                // when it went and no longer names lets go of it, and every object it names now
                // refers to it again — those it named before too, which let go of it if a
                // refresh made the tombstone (see `refresh`). (An editor's move of an album to
                // another artist was lost when the album went — its parent's pending deletion
                // of the album's artist took it — while both artists kept the move's other
                // sides; the parent's rollback brought the album back naming its old artist,
                // and the artists, reloaded with their changes on top, kept them: the next save
                // sent one side only.)
                if wasGone, !gone, let info {
                    let was = Self.targets(before[index]), now = Self.targets(after[index])
                    for target in was where !now.contains(target) {
                        inverseFixes[target, default: []].append(InverseFix(index: info.inverseIndex, other: id, refers: false))
                    }
                    for target in now {
                        inverseFixes[target, default: []].append(InverseFix(index: info.inverseIndex, other: id, refers: true))
                    }
                }
            }
        }
        // Those reloaded before the object they refer to was (named in `ids` ahead of it).
        for (id, fixes) in inverseFixes {
            guard let object = registered[id], object.isLoaded else { continue }
            let before = object.storage
            apply(fixes, to: object)
            guard object.storage != before else { continue }
            let names = schema.layout.entities[object.entityIndex].propertyNames
            if !updated.contains(id) { updated.append(id) }
            changedKeys[id] = Array(Set(changedKeys[id] ?? []).union(before.indices.filter { before[$0] != object.storage[$0] }.map { names[$0] }))
            values[id] = object.storage
        }
        return DidSave(transaction: nil, author: link.name, updated: updated, deleted: deleted, changedKeys: changedKeys, values: values)
    }

    /// Objects the parent no longer has — deleted there after this context read them, their
    /// changes dropped by the merge policy, or taken by the parent's delete rules as it
    /// applied the save — become tombstones, as merging the deletion would have made them;
    /// one changed here since the save was captured is deleted in conflict instead. The
    /// objects here that refer to the gone ones let go of them, as merging the parent's
    /// deletion makes them.
    func markDeletedElsewhere(_ ids: [ObjectID]) {
        var gone: [ObjectID] = []
        for id in ids {
            guard let object = registered[id] else {
                pendingNotification.invalidated.insert(id)  // live results may show it without holding it
                gone.append(id)
                continue
            }
            guard object.lifecycle == .persistent else { continue }
            guard object.changedKeys.isEmpty else {
                // Changed again while the save was in flight: its changes stay for the next
                // save, which reports the deletion as a conflict its merge policy resolves — as
                // a merged deletion under `error` keeps them — and a rollback makes it a
                // tombstone. (Left as it was, a rollback showed it again, with nothing pending,
                // while neither the parent nor the store had it.)
                object.deletedInConflict = true
                continue
            }
            makeTombstone(object)
            gone.append(id)
        }
        // (Left naming them, an artist the child had read still listed the album the parent
        // had deleted — a deleted object — and a song on it still showed it.)
        forgetReferences(toDeleted: gone, pending: true)
    }

    /// Makes the saved objects clean, based on what was saved: the committed rows (a save
    /// to the store, whose merge policy may have kept other values) or the values sent (a
    /// save to the parent). Objects changed while the save was in flight keep those changes.
    /// `held`: for a save to the parent, the values it holds of the objects inserted and
    /// updated (its merge policy may have kept its own, a to-many list it changed too is
    /// merged, a reference to an object deleted there let go).
    /// - Returns: what the save kept other than it sent, which the children that follow
    ///   this context's changes must take (they skip its own saves, having seen the values
    ///   sent through it): the objects whose deletion the merge policy dropped (they stay),
    ///   and, for a save to the store, the objects whose committed values differ from those
    ///   sent (the merge policy kept the store's for conflicting keys), with those keys.
    @discardableResult
    func finishSave(_ capture: SaveCapture, committed: Generation?, held: [ObjectID: [Value]] = [:])
        -> (deletions: [ObjectID], values: [ObjectID: [Int]])
    {
        var keptValues: [ObjectID: [Int]] = [:]
        /// Objects the store no longer has, their changes dropped by the merge policy.
        var deletedConcurrently: [ObjectID] = []
        /// Adds objects that took other values here, with the keys, to what children take.
        func noteKept(_ changed: [ObjectID: [Int]]) {
            for (id, keys) in changed {
                for key in keys where !(keptValues[id]?.contains(key) ?? false) { keptValues[id, default: []].append(key) }
            }
        }
        /// `sent`: the values the save's outcome stands on (the parent's or what was sent);
        /// `asSent`: what the save sent.
        func rebase(_ object: ManagedObject, sent: [Value], asSent: [Value], keys: Set<Int>) {
            let setDuringSave = object.keysSetDuringSave ?? []
            object.keysSetDuringSave = nil
            object.mergedRowInConflict = nil
            let mergedWhileInserting = object.mergedWhileInserting
            object.mergedWhileInserting = nil
            var values = sent
            var version = object.baseVersion
            if let committed {
                guard let row = committed.object(object.objectID) else {
                    object.lifecycle = .deletedElsewhere  // the merge policy let a concurrent deletion win
                    setTracking(object)
                    // Out of the layer too: children read through it (its row of the changes
                    // sent stayed there, and a child reloading the object kept it alive).
                    noteChanged(object)
                    pendingNotification.invalidated.insert(object.objectID)
                    deletedConcurrently.append(object.objectID)
                    return
                }
                values = row.values
                version = row.version
                // An insert another transaction changed once the store had it, merged while the
                // save ran: its values as of that transaction (keys set here during the save
                // keep theirs, below).
                if let merged = mergedWhileInserting, merged.version > version {
                    for (index, value) in merged.values { values[index] = value }
                    version = merged.version
                }
                // (An insert is committed as sent: only updates meet merge policies.)
                if object.lifecycle != .inserted {
                    let differing = values.indices.filter { values[$0] != sent[$0] }
                    if !differing.isEmpty { keptValues[object.objectID] = differing }
                }
            }
            if object.lastChange > capture.stamp, object.lifecycle == .persistent || object.lifecycle == .inserted {
                // Changed while the save ran. If a merge based it on a state newer than the
                // save, keys outside its changes hold those merged values, which become part
                // of its base; otherwise (a rollback, a refresh) they take what was saved.
                // (Keys set during the save keep their values, even one set back to its value
                // from before the save, which took it out of `changedKeys`.) Keys the save
                // sent and nothing set since are saved: they take what was saved too — the
                // merge policy may have kept another value than the one sent (`storeWins` on a
                // conflicting key), which stayed a pending change of the old value before.
                var newBase = values
                let mergedNewer = object.baseVersion > version
                let shown = object.storage
                let saved = keys.intersection(object.changedKeys).subtracting(setDuringSave)
                for index in newBase.indices where !object.changedKeys.contains(index) || saved.contains(index) {
                    if saved.contains(index) {
                        object.storage[index] = values[index]
                    } else if mergedNewer {
                        newBase[index] = object.storage[index]
                    } else if !setDuringSave.contains(index) {
                        object.storage[index] = values[index]
                    }
                }
                // A to-many list the save sent and a merge changed while it ran (a member
                // deleted): the change goes onto the list as saved, which may hold members
                // the save did not send (the parent's). (The list from during the save stood
                // whole, a pending change without them, while they named the object: the
                // next save took them off the list.)
                for index in keys.intersection(setDuringSave) where relationships[object.entityIndex][index]?.isToMany == true {
                    object.storage[index] = Value.mergedList(base: asSent[index], ours: object.storage[index], theirs: values[index])
                }
                // A key changed while the save ran that the save did not send was changed on the
                // value read before it; where what was saved holds another (a commit since the
                // read changed it, or the parent did), the next save must report that conflict
                // or resolve it by its policy: the key's base stays, and so does the base
                // version, so that the store compares it; a rollback takes the saved row. A list
                // takes the other side's change under its own instead, and a key set back to
                // what was read is no change: it takes what was saved. (Based on what was saved,
                // a name changed here while the save ran overwrote, without a conflict, the name
                // another save had given the artist since this context read it.)
                let outcome = newBase
                var inConflict = false
                if let read = object.base {
                    for index in object.changedKeys.union(setDuringSave).subtracting(keys).sorted() where newBase[index] != read[index] {
                        if object.storage[index] == read[index] {
                            object.storage[index] = newBase[index]  // set back to what was read: no change of its own
                        } else if relationships[object.entityIndex][index]?.isToMany == true {
                            object.storage[index] = Value.mergedList(base: read[index], ours: object.storage[index], theirs: newBase[index])
                        } else {
                            newBase[index] = read[index]
                            inConflict = true
                        }
                    }
                }
                if inConflict {
                    object.mergedRowInConflict = (outcome, max(version, object.baseVersion))
                } else {
                    object.baseVersion = max(version, object.baseVersion)
                }
                object.base = newBase
                object.lifecycle = .persistent
                object.changedKeys = object.changedKeys.union(setDuringSave).filter { object.storage[$0] != newBase[$0] }
                setTracking(object)
                noteChanged(object)
                // Keys it had rolled back (or refreshed) take the saved values: a change to see.
                if object.storage != shown { pendingNotification.refreshed.insert(object.objectID) }
                return
            }
            object.base = values
            object.baseVersion = version
            switch object.lifecycle {
            case .inserted, .persistent:
                object.lifecycle = .persistent
                if object.storage != values { pendingNotification.refreshed.insert(object.objectID) }
                object.storage = values
                object.changedKeys = []
            case .discarded:
                object.lifecycle = .deleted  // inserted, saved, and deleted while the save ran
            case .deleted, .deletedElsewhere:
                break
            }
            setTracking(object)
            noteChanged(object)
        }
        // Objects a relationship refers to, or no longer, as the parent holds it and as it was
        // sent (its merge policy kept its own value, or put back the other side of one), with
        // the saved object and the relationship's index in it, and the inverse's in theirs.
        var stale = Set<ObjectID>()
        var membership: [ObjectID: [(inverse: Int, member: ObjectID, index: Int)]] = [:]
        func noteStale(_ object: ManagedObject, index: Int, info: RelationshipInfo, held: Value, sent: Value) {
            let heldTargets = Set(Self.targets(held)), sentTargets = Set(Self.targets(sent))
            for target in heldTargets.symmetricDifference(sentTargets) {
                stale.insert(target)
                membership[target, default: []].append((info.inverseIndex, object.objectID, index))
            }
        }
        for (object, row) in zip(capture.inserted, capture.insertedRows) {
            // An insert takes what the parent holds of it too: the parent may have let go of
            // an object it refers to that was deleted there since this context read it. (Based
            // on the values sent, it went on referring to it: a merge of the deletion while the
            // save ran left the reference's removal as a pending change of this context's, and
            // a rollback brought the deleted object back.)
            if let kept = held[row.id] {
                for (index, info) in relationships[object.entityIndex].enumerated() where kept[index] != row.values[index] {
                    if let info { noteStale(object, index: index, info: info, held: kept[index], sent: row.values[index]) }
                }
            }
            rebase(object, sent: held[row.id] ?? row.values, asSent: row.values, keys: Set(row.values.indices))
            saveEnded(for: object.objectID)
        }
        for (object, update) in zip(capture.updated, capture.updates) {
            var sent = update.baseValues
            for change in update.changes { sent[change.index] = change.value }
            if let kept = held[update.id] {
                for (index, info) in relationships[object.entityIndex].enumerated() where kept[index] != sent[index] {
                    if let info { noteStale(object, index: index, info: info, held: kept[index], sent: sent[index]) }
                }
            }
            rebase(object, sent: held[update.id] ?? sent, asSent: sent, keys: Set(update.changes.map(\.index)))
        }
        if let committed { noteKept(followKeptRelationships(capture, committed: committed)) }
        // Those this save did not name show what this context read of them before: read them
        // again from the parent, where both sides are in step (the child showed a person at a
        // desk the parent kept for them, and the desk without them).
        if !stale.isEmpty {
            let captured = Set((capture.inserted + capture.updated + capture.deleted).map(\.objectID))
            // One state of the parent's for every read: it goes on merging meanwhile.
            let parentView = link.sourceView()
            for id in stale.subtracting(captured).sorted() {
                guard let target = registered[id], target.isLoaded, target.lifecycle == .persistent else { continue }
                refresh(target, mergeChanges: true, from: parentView, keepingConflicts: true)
                // A list this context changed while the save ran keeps its changes on top of
                // the parent's, but not about the saved object: it lists it exactly when the
                // parent's value of the object names it. (A merge during the save had taken a
                // song off an album's list because the song was moving to another album here;
                // the parent kept the song on the album, and the list's change outlived the
                // save: the next save took the song off, and the parent's was refused as an
                // inverse violation.) The parent's value as it is now, not as it held it when
                // it applied the save: it may have merged another move since. A list with no
                // change of this context's is the parent's, and stays so: the parent's value
                // of the saved object can be older than what it shows of the list (it had not
                // merged a commit moving the object again, while its reads were as of that
                // commit), and a list given the object as a change of its own went on naming
                // it after that move reached here — the next save sent it, and the parent's
                // was refused, losing what that save carried.
                for (inverse, member, index) in membership[id] ?? [] where target.changedKeys.contains(inverse) {
                    guard relationships[target.entityIndex][inverse]?.isToMany == true else { continue }
                    let belongs = parentView.row(member)?.values[index].refers(to: id) ?? false
                    let listed = Self.targets(target.storage[inverse])
                    if belongs, !listed.contains(member) {
                        var list = listed + [member]
                        // In the parent's order, when that is what the list comes back to.
                        if let base = target.base, Set(Self.targets(base[inverse])) == Set(list) { list = Self.targets(base[inverse]) }
                        setPrimitive(target, index: inverse, value: .objects(list))
                    } else if !belongs, listed.contains(member) {
                        letGo(of: member, in: target, at: inverse)
                    }
                }
            }
        }
        var kept: [ObjectID] = []
        for object in capture.deleted where object.lifecycle == .deleted {
            let stays: (values: [Value], version: UInt64)? =
                if let committed { committed.object(object.objectID).map { ($0.values, $0.version) } }
                else { held[object.objectID].map { ($0, object.baseVersion) } }
            if let stays {
                // The merge policy dropped the deletion: the object stays, as committed (or as
                // the parent holds it).
                bringBack(object, values: stays.values, version: stays.version)
                kept.append(object.objectID)
                continue
            }
            object.lifecycle = .deletedElsewhere
            // Saved into the parent: deleted while the parent holds the deletion.
            object.deletionSavedToParent = committed == nil
            setTracking(object)
            noteChanged(object)
        }
        // Objects a merge related to the deleted ones while a save into the parent was in
        // flight let go of them as a change of their own (the deletion was pending here); the
        // parent, which now holds the deletion, has let go of them too, so that change is no
        // longer this context's: their bases take the parent's values. (Left as a pending
        // change on a base still naming the deleted object, a rollback brought it back.) A
        // save to the store meeting such a merge is refused instead (the store's row names
        // the object the save deletes), or its merge policy keeps the object.
        if !kept.isEmpty {
            // Rows as the store committed them, or as the parent holds them after the save.
            let rows: (ObjectID) -> (values: [Value], version: UInt64)?
            if let committed {
                rows = { committed.object($0).map { ($0.values, $0.version) } }
            } else {
                let view = link.sourceView()
                rows = { view.row($0).map { ($0.values, $0.version) } }
            }
            let taken = takeBackRules(ofKept: kept, capture: capture, rows: rows)
            kept += taken.back
            noteKept(taken.changed)
        }
        // What here names an object the store no longer has lets go of it, as merging the
        // deletion makes it (an artist read before still listed an album another transaction
        // had deleted, a deleted object, in a context that does not merge).
        forgetReferences(toDeleted: deletedConcurrently, pending: true)
        if committed == nil {
            let gone = capture.deleted.filter { $0.lifecycle == .deletedElsewhere }.map(\.objectID)
            if !gone.isEmpty { forgetReferences(toDeleted: gone) }
            // Objects a merge deleted here while the save was in flight, by the delete rules of
            // an object the save deleted (an album added elsewhere to an artist the save
            // deleted, which the artist's cascade took): the parent, which holds the deletion
            // now, applies the same rules. Where it has deleted them too, the deletion is no
            // longer this context's change — left pending, the context showed unsaved changes
            // nobody made, and they were never merged away (a child skips its parent's saves).
            let captured = Set(capture.deleted.map(\.objectID))
            let view = link.sourceView()
            for id in Array(deleted) where !captured.contains(id) {
                guard let object = registered[id], object.lifecycle == .deleted, view.row(id) == nil else { continue }
                object.lifecycle = .deletedElsewhere
                object.deletionSavedToParent = true
                object.changedKeys = []
                setTracking(object)
                noteChanged(object)
            }
        }
        forgetUnheldUniques()
        return (kept, keptValues)
    }

    /// After a save into the parent: the tombstones that the saved objects name now — they
    /// took the parent's values — are noted, to come back at the end of the turn if the parent
    /// shows them (``tombstonesShownAgain``). This context learned of a deletion the parent
    /// held (a refresh found the object gone there) and the parent dropped it since; a context
    /// that does not follow its parent was never told. (An artist took the parent's list
    /// naming an album again while the album stayed a tombstone here.)
    func noteTombstones(namedBy capture: SaveCapture) {
        for object in capture.inserted + capture.updated where object.isLoaded && (object.lifecycle == .persistent || object.lifecycle == .inserted) {
            noteTombstones(namedBy: object.storage, of: object.entityIndex)
        }
    }

    /// Brings back the ``tombstonesShownAgain`` that the parent still shows, as the parent
    /// shows them, with the objects on the other side (``reloadFromParent(_:unheld:handed:)``).
    /// Returns what the objects held here took, for the children that follow this
    /// context's changes; `nil` when there are none.
    func bringBackTombstonesShownAgain() -> DidSave? {
        guard !tombstonesShownAgain.isEmpty else { return nil }
        let view = link.sourceView()
        let back = tombstonesShownAgain.sorted().filter { registered[$0]?.lifecycle == .deletedElsewhere && view.row($0) != nil }
        tombstonesShownAgain = []
        guard !back.isEmpty else { return nil }
        return reloadFromParent(back, unheld: \.invalidated)
    }

    /// After a save into the parent: objects the save did not carry that the parent's
    /// did-save lists — the other sides it kept in step while applying the save — and that
    /// hold changes here. A key whose pending value is what the parent holds now is no
    /// longer a change: the base takes the parent's value. Such a change can come from a
    /// merge that ran while the save was in flight: an album moved here, saved, while a
    /// commit merged meanwhile put it on another artist — the merge kept the move and had
    /// that artist let go of it, a change of this context's that the save did not carry.
    /// The parent let go too when it applied the move; left a change here, a rollback took
    /// the artist back to the commit's list, naming the album while the parent, and then
    /// the store, did not.
    func adoptParentValues(of didSave: DidSave, beyond capture: SaveCapture) {
        guard !didSave.updated.isEmpty, !updated.isEmpty else { return }
        var carried = Set(capture.updated.map(\.objectID))
        carried.formUnion(capture.inserted.map(\.objectID))
        carried.formUnion(capture.deleted.map(\.objectID))
        let values = didSave.values, changedKeys = didSave.changedKeys
        for id in didSave.updated where !carried.contains(id) {
            guard let object = registered[id], object.isLoaded, object.lifecycle == .persistent, !object.changedKeys.isEmpty,
                object.mergedRowInConflict == nil, object.keysSetDuringSave == nil, var base = object.base,
                let theirs = values[id], let keys = changedKeys[id]
            else { continue }
            let names = schema.layout.entities[object.entityIndex].propertyNames
            var adopted = false
            for key in keys {
                guard let index = names.firstIndex(of: key), object.changedKeys.contains(index), object.storage[index] == theirs[index]
                else { continue }
                base[index] = theirs[index]
                object.changedKeys.remove(index)
                adopted = true
            }
            guard adopted else { continue }
            object.base = base
            setTracking(object)
            noteChanged(object)
        }
    }

    /// The keys whose values `object` shows now differ from `before` (none when it is no
    /// longer loaded).
    private static func keysChanged(in object: ManagedObject, from before: [Value]) -> [Int] {
        guard object.isLoaded, object.storage.count == before.count else { return [] }
        return before.indices.filter { object.storage[$0] != before[$0] }
    }

    /// Whether `object`'s key at `index` is as this context read it: not changed here, nor
    /// set while a save of the object runs.
    private static func onlyRead(_ object: ManagedObject, _ index: Int) -> Bool {
        object.lifecycle == .persistent && !object.changedKeys.contains(index) && object.keysSetDuringSave?.contains(index) != true
    }

    /// An object pending deletion here whose deletion did not happen after all: it shows
    /// `values` (as of `version`) again, with nothing pending, announced as inserted.
    private func bringBack(_ object: ManagedObject, values: [Value], version: UInt64) {
        object.lifecycle = .persistent
        object.storage = values
        object.base = values
        object.baseVersion = version
        object.changedKeys = []
        object.deletedInConflict = false
        setTracking(object)
        noteChanged(object)
        pendingNotification.deleted.remove(object.objectID)
        pendingNotification.inserted.insert(object.objectID)
    }

    /// Deletions the merge policy kept — the store's, or the parent's for a save into it (the
    /// objects changed since they were read): what their delete rules did here to objects a
    /// merge related to them while the save was in flight is taken back. Objects their
    /// `cascade` rules deleted then (pending) come back as `rows` gives them (as committed,
    /// or as the parent holds them), with what their own rules did — they had been deleted only because
    /// the kept ones were; objects their `nullify` rules made let go of them refer to them
    /// again. (An album another context gave an artist whose deletion was being saved stayed
    /// a pending deletion while the artist came back listing it; an album given a song whose
    /// deletion was being saved kept a change without it while the song named the album: a
    /// stack's writer kept that change, and its next save was refused as an inverse violation.)
    /// - Returns: the objects brought back beyond `kept`, and the objects held here whose
    ///   values that changed, with the keys — for the children that follow this context's
    ///   changes: they followed the merge that took them (a view under a stack's writer went
    ///   on without the album, or showed the album without the song the store lists there).
    private func takeBackRules(ofKept kept: [ObjectID], capture: SaveCapture, rows: (ObjectID) -> (values: [Value], version: UInt64)?)
        -> (back: [ObjectID], changed: [ObjectID: [Int]])
    {
        let captured = Set(capture.deleted.map(\.objectID))
        var owners = kept
        var back = kept
        while let ownerID = owners.popLast() {
            guard let owner = registered[ownerID], owner.lifecycle == .persistent, owner.isLoaded else { continue }
            for (index, info) in relationships[owner.entityIndex].enumerated() {
                guard let info, info.deleteRule == .cascade else { continue }
                for id in Self.targets(owner.storage[index]) where !captured.contains(id) {
                    guard let target = registered[id], target.lifecycle == .deleted, let row = rows(id),
                        row.values[info.inverseIndex].refers(to: ownerID)
                    else { continue }
                    bringBack(target, values: row.values, version: row.version)
                    owners.append(id)
                    back.append(id)
                }
            }
        }
        // Once every object taken back is: the other sides refer to them again.
        var others: [ObjectID: (object: ManagedObject, before: [Value])] = [:]
        for id in back {
            guard let object = registered[id], object.isLoaded else { continue }
            for (index, info) in relationships[object.entityIndex].enumerated() where info != nil {
                for target in Self.targets(object.storage[index]) where others[target] == nil {
                    if let other = registered[target], other.isLoaded { others[target] = (other, other.storage) }
                }
            }
        }
        // An object held here as read, which the store (or the parent) gave to one taken back
        // while the save ran, takes that value; so do the objects it named here, which let go
        // of it. (Made to let go of it instead, the object taken back kept a pending change
        // without it: an artist whose deletion the store kept, given an album meanwhile, came
        // back listing no album.)
        for id in back {
            guard let object = registered[id], object.lifecycle == .persistent else { continue }
            for (index, info) in relationships[object.entityIndex].enumerated() {
                guard let info else { continue }
                let inverse = info.inverseIndex
                for targetID in Self.targets(object.storage[index]) {
                    guard let target = registered[targetID], target.isLoaded, Self.onlyRead(target, inverse),
                        !target.storage[inverse].refers(to: id), rows(targetID)?.values[inverse].refers(to: id) == true
                    else { continue }
                    let previous = Self.targets(target.storage[inverse])
                    refresh(target, mergeChanges: true, keepingConflicts: true)
                    for ownerID in previous where others[ownerID] == nil {
                        guard let owner = registered[ownerID], owner.isLoaded, owner.lifecycle == .persistent,
                            owner.storage[index].refers(to: targetID)
                        else { continue }
                        others[ownerID] = (owner, owner.storage)
                        refresh(owner, mergeChanges: true, keepingConflicts: true)
                    }
                }
            }
        }
        for id in back { if let object = registered[id] { restoreKeptInverses(object) } }
        var changed: [ObjectID: [Int]] = [:]
        for (id, other) in others {
            let keys = Self.keysChanged(in: other.object, from: other.before)
            guard !keys.isEmpty else { continue }
            changed[id] = keys
            // Referring again is what the parent (or the store) holds, not a change of this
            // context's: the base takes it. (Left a change, the album a song was moved to
            // before the song's deletion was dropped listed it on a base that did not; once
            // the song moved on, the next save listed it there again, and the parent took
            // the list while the song named another album.)
            refresh(other.object, mergeChanges: true, keepingConflicts: true)
        }
        return (Array(back.dropFirst(kept.count)), changed)
    }

    /// After a save to the store: objects the commit changed that the save did not send —
    /// the store's merge policy made them let go of, or refer again to, what the save
    /// changed (an album that another transaction gave a song this save deletes no longer
    /// lists it) — take the committed values here, as a merge of those objects would give
    /// them (keys changed here too are conflicts, resolved by `policy`). The context showed
    /// them as before, and never learned otherwise: it does not merge its own saves.
    /// - Returns: the objects held here that took new values, with the keys, for the
    ///   children that follow this context's changes.
    func takeChangesBeyondSave(_ commit: CommitNotification, capture: SaveCapture, policy: MergePolicy) -> [ObjectID: [Int]] {
        let sent = Set((capture.inserted + capture.updated + capture.deleted).map(\.objectID))
        let beyond = commit.updated.filter { !sent.contains($0) && registered[$0]?.isLoaded == true }
        guard !beyond.isEmpty else { return [:] }
        let named = Set(beyond)
        var save = DidSave(transaction: commit.transaction, author: commit.author, updated: beyond,
                           changedKeys: commit.changedKeys.filter { named.contains($0.key) }, values: commit.values.filter { named.contains($0.key) })
        save.generation = commit.generation
        let before = Dictionary(beyond.compactMap { id in registered[id].map { (id, $0.storage) } }, uniquingKeysWith: { first, _ in first })
        _ = merge(save, policy: policy)
        var taken: [ObjectID: [Int]] = [:]
        for id in beyond {
            guard let object = registered[id], let old = before[id] else { continue }
            let keys = Self.keysChanged(in: object, from: old)
            if !keys.isEmpty { taken[id] = keys }
        }
        return taken
    }

    /// After a save to the store whose merge policy kept the store's value of a relationship
    /// it sent (`storeWins`, `rollback`): objects on the other side that this save did not
    /// send refer back as the store has it. A merge made while the save was in flight kept
    /// them in step with the value sent — an artist no longer listing the album the save
    /// took from it, which the store gave that artist after all — and left that as a pending
    /// change of theirs: the context showed the album with the artist and the artist
    /// without it, and the next save wrote the stale list (or the view reading through this
    /// context showed it).
    /// - Returns: the objects that took other values, with the keys, for the children that
    ///   follow this context's changes (they followed the merge too).
    private func followKeptRelationships(_ capture: SaveCapture, committed: Generation) -> [ObjectID: [Int]] {
        var changed: [ObjectID: [Int]] = [:]
        for (object, update) in zip(capture.updated, capture.updates) {
            guard object.isLoaded, object.lifecycle == .persistent, let row = committed.object(update.id) else { continue }
            for change in update.changes {
                // A key set again while the save ran keeps that value; its other sides follow it.
                guard let info = relationships[object.entityIndex][change.index], row.values[change.index] != change.value,
                    !object.changedKeys.contains(change.index)
                else { continue }
                let kept = Self.targets(row.values[change.index]), dropped = Self.targets(change.value)
                let relationship = DroppedRelationship(source: update.id, index: change.index, info: info,
                                                       lost: dropped.filter { !kept.contains($0) }, gained: kept.filter { !dropped.contains($0) })
                let others = (relationship.lost + relationship.gained).compactMap { registered[$0] }.filter(\.isLoaded)
                let before = others.map(\.storage)
                let inverse = info.inverseIndex
                let read = others.map { Self.onlyRead($0, inverse) }
                // The objects those held as read named: they follow below.
                var owners: [ObjectID: (object: ManagedObject, before: [Value], read: Bool)] = [:]
                func noteOwners(of other: ManagedObject) {
                    for id in Self.targets(other.storage[inverse]) where id != update.id && owners[id] == nil {
                        guard let owner = registered[id], owner.isLoaded, owner.lifecycle == .persistent else { continue }
                        owners[id] = (owner, owner.storage, Self.onlyRead(owner, change.index))
                    }
                }
                for (other, wasRead) in zip(others, read) where wasRead { noteOwners(of: other) }
                restoreInverses(of: relationship)
                // Where that made them what the store has, they are not changed.
                for ((other, storage), wasRead) in zip(zip(others, before), read) where other.storage != storage {
                    if wasRead {
                        // A key this context had only read takes the store's value, not the one
                        // put back here: another commit, not merged here yet, may have given
                        // the object another owner. (Put back as a change, an album the store
                        // had moved to a third artist kept "no artist" pending; the merge of
                        // that commit kept it too, and the third artist let go of the album.)
                        other.changedKeys.remove(inverse)
                        other.keysSetDuringSave?.remove(inverse)
                    }
                    refresh(other, mergeChanges: true, keepingConflicts: true)
                    let keys = Self.keysChanged(in: other, from: storage)
                    if !keys.isEmpty { changed[other.objectID, default: []] += keys }
                    if wasRead { noteOwners(of: other) }
                }
                // Its owners, held here as read — the one it had, which may have let go of it
                // as a change here, and the one the store gave it — refer to it as the store has it.
                for (id, owner) in owners.sorted(by: { $0.key < $1.key }) {
                    let disagrees = others.contains { other in
                        other.storage[inverse].refers(to: id) != owner.object.storage[change.index].refers(to: other.objectID)
                    }
                    guard owner.object.storage != owner.before || disagrees else { continue }
                    if owner.read {
                        owner.object.changedKeys.remove(change.index)
                        owner.object.keysSetDuringSave?.remove(change.index)
                    }
                    let storage = owner.object.storage
                    refresh(owner.object, mergeChanges: true, keepingConflicts: true)
                    let keys = Self.keysChanged(in: owner.object, from: storage)
                    if !keys.isEmpty { changed[id, default: []] += keys }
                }
            }
        }
        return changed
    }

    // MARK: - Applying a child's save

    /// Applies a child context's save as pending changes of this context. Checks
    /// everything first: a refused save changes nothing.
    /// - Returns: what was applied (the did-save: only the keys written, with the values this
    /// context now holds — a merged to-many list, not the child's), the conflicts resolved,
    /// the objects the delete rules took beyond the child's deletions, and the values this
    /// context holds of every object the child inserted or updated, which the child takes.
    func applyChildSave(_ save: ChildSave) throws(StoreError)
        -> (didSave: DidSave, resolved: [Conflict], alsoDeleted: [ObjectID], held: [ObjectID: [Value]])
    {
        for row in save.inserted {
            guard let existing = registered[row.id] else { continue }
            // Asked for here before the child saved it (a fault, or a tombstone of an object
            // that was missing when loaded): that instance becomes the object.
            load(existing)
            if existing.lifecycle == .deletedElsewhere, existing.missingWhenLoaded { continue }
            throw StoreError(.invalidTransaction, "\(row.id) is inserted by the child but already exists in \(link.name)", object: row.id)
        }
        // `nil` for an object deleted here since the child read it: a conflict, as in the store.
        var updatedObjects: [ManagedObject?] = []
        for update in save.updated {
            let object = self.object(with: update.id)
            load(object)
            updatedObjects.append(object.lifecycle == .inserted || object.lifecycle == .persistent ? object : nil)
        }
        let (updates, deletions, kept, dropped, joinedDeleted, resolved) = try resolveConflicts(of: save, against: updatedObjects)
        try checkUniques(inserted: save.inserted, updated: updates.map(\.update), deleted: deletions)
        try checkDeleteRules(deleting: deletions, after: updates, inserting: save.inserted)
        // Apply.
        var changedKeys: [ObjectID: [String]] = [:]
        var values: [ObjectID: [Value]] = [:]
        for row in save.inserted {
            let object: ManagedObject
            if let placeholder = registered[row.id] {
                object = placeholder
                object.missingWhenLoaded = false
                object.base = nil
            } else {
                let entity = entityIndex(of: row.id)
                let type = modelClass(for: entity) ?? ManagedObject.self
                object = type.init(ObjectToken(id: row.id, graph: self, entityIndex: entity))
                registerDirectly(object)
            }
            object.storage = row.values
            object.isLoaded = true
            object.lifecycle = .inserted
            object.changedKeys = Set(row.values.indices)
            adopt(object)
            values[row.id] = row.values
        }
        // The relationship values the child's updates replace here, for `keepOtherSidesInStep`.
        var replaced: [(object: ManagedObject, index: Int, old: Value)] = []
        for (object, update) in updates {
            let entity = schema.entities[object.entityIndex]
            for change in update.changes {
                if relationships[object.entityIndex][change.index] != nil { replaced.append((object, change.index, object.storage[change.index])) }
                setPrimitive(object, index: change.index, value: change.value)
            }
            changedKeys[update.id] = update.changes.map { entity.property(at: $0.index).name }
            values[update.id] = object.storage
        }
        // Through this context's own delete rules: objects it changed since the child read
        // them (a pending insert in a cascaded list, a new reference to nullify) follow the
        // deletion here as they would have in the child.
        let (deletedBefore, insertedBefore) = (deleted, inserted)
        let notedBefore = pendingNotification.updated
        for id in deletions {
            let object = self.object(with: id)
            load(object)
            delete(object)
        }
        // The other sides of the child's relationship changes the merge policy dropped (or
        // whose object is deleted here), which its updates of the related objects changed:
        // accepted as they were, the two sides disagreed, and this context could not save.
        // Those the merge policy dropped come before the delete rules below: a pair is kept or
        // dropped whole, so an object the dropped side still names goes back to it, and no
        // longer joins an object deleted here. (An album the child moved to an artist deleted
        // here, while `rollback` dropped the changes of the artist it left, was taken by the
        // deleted artist's cascade while the artist it left still listed it: the save to the
        // store was refused as an inverse violation.) Those of an object deleted here come
        // after: what the child related to it follows its delete rules first.
        for change in dropped where !change.sourceDeleted { restoreInverses(of: change) }
        // Objects the child related to one deleted here follow its delete rules here too (a
        // new album for an artist deleted here is deleted by its cascade, not left an orphan).
        for (object, joined) in joinedDeleted { applyDeleteRules(of: object, toJoined: joined) }
        for object in kept { restoreKeptInverses(object) }
        for change in dropped where change.sourceDeleted { restoreInverses(of: change) }
        keepOtherSidesInStep(of: replaced)
        // What the rules took here beyond the child's deletions: the child must let go too.
        let named = Set(deletions)
        // (Including the child's own inserts the rules took.)
        let insertsTaken = save.inserted.map(\.id).filter { registered[$0]?.lifecycle != .inserted }
        let alsoDeleted = deleted.subtracting(deletedBefore).union(insertedBefore.subtracting(inserted)).union(insertsTaken)
            .subtracting(named).sorted()
        // What the rules changed (references nullified): part of what was applied, which
        // the child's siblings merge.
        var updatedIDs = updates.map(\.update.id)
        for (id, keys) in pendingNotification.updated where keys != notedBefore[id] {
            guard let object = registered[id], object.lifecycle == .persistent || object.lifecycle == .inserted else { continue }
            if changedKeys[id] == nil { updatedIDs.append(id) }
            changedKeys[id] = Array(Set(changedKeys[id] ?? []).union(keys)).sorted()
            values[id] = object.storage
        }
        // Read again: the rules may have changed the child's updated objects too.
        for (object, update) in updates { values[update.id] = object.storage }
        let gone = Set(alsoDeleted)
        var didSave = DidSave(transaction: nil, author: save.author, inserted: save.inserted.map(\.id).filter { !gone.contains($0) },
                              updated: updatedIDs.filter { !gone.contains($0) }, deleted: deletions + alsoDeleted, changedKeys: changedKeys, values: values)
        didSave.origin = save.origin
        var held: [ObjectID: [Value]] = [:]
        // The child's inserts as they are here: a rule or a dropped relationship may have
        // changed them (a reference to an object deleted here since the child read it let go).
        for row in save.inserted {
            if let object = registered[row.id], object.lifecycle == .inserted { held[row.id] = object.storage }
        }
        for (object, update) in zip(updatedObjects, save.updated) {
            if let object, object.lifecycle == .persistent || object.lifecycle == .inserted { held[update.id] = object.storage }
        }
        // Deletions the merge policy dropped: the child shows these objects again, as held here.
        for object in kept where object.lifecycle == .persistent || object.lifecycle == .inserted { held[object.objectID] = object.storage }
        return (didSave, resolved, alsoDeleted, held)
    }

    /// The child's updates and deletions as they apply here: keys this context changed since
    /// the child read them are conflicts, resolved by the child's merge policy; to-many lists
    /// merge element by element (their additions and removals, then the child's). Deleting
    /// an object whose attributes or to-one relationships this context changed since the
    /// child read it is a conflict too (as the store reports one): `storeWins` and `rollback`
    /// keep the object (`kept`), the other policies delete it.
    ///
    /// `dropped`: the child's relationship changes that are not applied (their keys kept
    /// here, or their object deleted here), whose other sides the child's updates of the
    /// related objects changed: ``restoreInverses(of:)`` brings those back in step.
    ///
    /// `joinedDeleted`: objects pending deletion here that the child related to others, which
    /// their delete rules reach once the save is applied (a `deny` rule they meet refuses the
    /// save here).
    private func resolveConflicts(of save: ChildSave, against objects: [ManagedObject?]) throws(StoreError)
        -> (updates: [(object: ManagedObject, update: RowUpdate)], deletions: [ObjectID], kept: [ManagedObject],
            dropped: [DroppedRelationship], joinedDeleted: [(object: ManagedObject, joined: [Int: [ObjectID]])], resolved: [Conflict])
    {
        var result: [(object: ManagedObject, update: RowUpdate)] = []
        var conflicts: [Conflict] = []
        var deletions: [ObjectID] = []
        var kept: [ManagedObject] = []
        var dropped: [DroppedRelationship] = []
        var joinedDeleted: [(object: ManagedObject, joined: [Int: [ObjectID]])] = []
        for (object, update) in zip(objects, save.updated) {
            guard let object else {
                // Deleted here after the child read it: nothing left to change, whatever the
                // policy (as the store does with an update of an object deleted since). What
                // the child related to it lets go of it — or, for a deletion pending here,
                // follows its delete rules. It is not put back where it was before the child
                // related it: the store lets go (a song moved to an album another transaction
                // deleted is in neither album), and so does the child merging the deletion.
                conflicts.append(Conflict(object: update.id, key: nil, base: nil, ours: nil, theirs: nil, theirVersion: nil))
                let entity = entityIndex(of: update.id)
                for change in update.changes {
                    guard let info = relationships[entity][change.index] else { continue }
                    dropped.append(DroppedRelationship(source: update.id, index: change.index, info: info,
                                                       lost: Self.targets(change.value), gained: [], sourceDeleted: true))
                }
                if let deletedHere = registered[update.id], deletedHere.lifecycle == .deleted, deletedHere.isLoaded {
                    var values = deletedHere.storage
                    for change in update.changes where change.index < values.count { values[change.index] = change.value }
                    let joined = joinedObjects(of: entity, from: [deletedHere.storage, deletedHere.base ?? []], to: values)
                    try checkDenyRules(of: deletedHere, joined: joined, in: save)
                    if !joined.isEmpty { joinedDeleted.append((deletedHere, joined)) }
                }
                continue
            }
            let entity = schema.entities[object.entityIndex]
            var changes: [PropertyChange] = []
            var conflicting = Set<Int>()
            for change in update.changes {
                let base = update.baseValues[change.index]
                let theirs = object.storage[change.index]
                guard theirs != base else {
                    changes.append(change)
                    continue
                }
                if relationships[object.entityIndex][change.index]?.isToMany == true {
                    changes.append(PropertyChange(index: change.index, value: Value.mergedList(base: base, ours: change.value, theirs: theirs)))
                    continue
                }
                conflicting.insert(change.index)
                conflicts.append(Conflict(object: update.id, key: entity.property(at: change.index).name, base: base, ours: change.value,
                                          theirs: theirs, theirVersion: nil))
                changes.append(change)
            }
            let applied = changes
            switch save.mergePolicy {
            case .error, .contextWins: break
            case .overwrite:
                // The child's whole object as it saw it, as at the store: attributes this
                // context changed since and the child did not go back to the child's values.
                // (Relationships stay per key: taking one side back alone would break the pair.)
                let sent = Set(update.changes.map(\.index))
                for index in 0..<schema.layout.entities[object.entityIndex].attributeCount
                    where !sent.contains(index) && index < update.baseValues.count && object.storage[index] != update.baseValues[index]
                {
                    changes.append(PropertyChange(index: index, value: update.baseValues[index]))
                }
                changes.sort { $0.index < $1.index }
            case .storeWins: changes.removeAll { conflicting.contains($0.index) }
            case .rollback: if !conflicting.isEmpty { changes = [] }
            }
            for change in applied {
                guard let info = relationships[object.entityIndex][change.index] else { continue }
                let ours = Self.targets(change.value), theirs = Self.targets(object.storage[change.index])
                if !changes.contains(where: { $0.index == change.index }) {
                    dropped.append(DroppedRelationship(source: update.id, index: change.index, info: info,
                                                       lost: ours.filter { !theirs.contains($0) }, gained: theirs.filter { !ours.contains($0) }))
                } else if conflicting.contains(change.index) {
                    // The child's value replaces one this context set since: what only that
                    // value referred to stops referring back.
                    dropped.append(DroppedRelationship(source: update.id, index: change.index, info: info,
                                                       lost: theirs.filter { !ours.contains($0) }, gained: ours.filter { !theirs.contains($0) }))
                }
            }
            if !changes.isEmpty { result.append((object, RowUpdate(id: update.id, changes: changes))) }
        }
        for (id, base) in zip(save.deleted, save.deletedBases) {
            let object = self.object(with: id)
            load(object)
            // An attribute or a to-one relationship changed here since the child read it. (Not a
            // to-many list: members this context added or removed since follow the deletion
            // through its own delete rules, below. An object deleted here already stays deleted.)
            let info = relationships[object.entityIndex]
            guard object.lifecycle == .inserted || object.lifecycle == .persistent, base.count == object.storage.count,
                base.indices.contains(where: { info[$0]?.isToMany != true && base[$0] != object.storage[$0] })
            else {
                deletions.append(id)
                continue
            }
            conflicts.append(Conflict(object: id, key: nil, base: nil, ours: nil, theirs: .objects([]), theirVersion: object.baseVersion))
            if save.mergePolicy == .storeWins || save.mergePolicy == .rollback {
                kept.append(object)
            } else {
                deletions.append(id)
            }
        }
        if save.mergePolicy == .error && !conflicts.isEmpty {
            throw StoreError.conflicting(conflicts, with: "changes made in \(link.name) since the child read the objects",
                                         advice: "Refresh the child's objects and save again, or choose a merge policy")
        }
        return (result, deletions, kept, dropped, joinedDeleted, conflicts)
    }

    /// The other sides of the relationship values a child's save replaced here, as this context
    /// holds them: the child changed both sides as it read them, but an object on the other
    /// side may hold here what the child never saw — a member added to its list since the
    /// child read the list (the child's change of the list, merged, kept it), or the object was
    /// missing from the child's view when it changed the relationship and is back here (a
    /// deletion rolled back). An object the new value no longer refers to that still refers back
    /// lets go; one it refers to now that does not refer back, and refers to nothing else,
    /// refers back. (Without this the parent held a list naming a song whose album was another,
    /// and its save was refused as an inverse violation.)
    private func keepOtherSidesInStep(of replaced: [(object: ManagedObject, index: Int, old: Value)]) {
        func isAlive(_ object: ManagedObject) -> Bool { object.lifecycle == .persistent || object.lifecycle == .inserted }
        for (object, index, old) in replaced where isAlive(object) {
            // A to-one the child set names its object for certain; a list of the child's may be
            // stale on its own (the other sides keep what this context holds: the next save
            // checks them).
            let info = relationships[object.entityIndex][index]!
            guard !info.isToMany else { continue }
            let source = object.objectID
            let now = Self.targets(object.storage[index]), was = Self.targets(old)
            for id in was where !now.contains(id) {
                let target = self.object(with: id)
                load(target)
                guard isAlive(target) else { continue }
                letGo(of: source, in: target, at: info.inverseIndex)
            }
            for id in now where !was.contains(id) {
                let target = self.object(with: id)
                load(target)
                guard isAlive(target) else { continue }
                switch target.storage[info.inverseIndex] {
                case .objects(let ids) where !ids.contains(source):
                    setPrimitive(target, index: info.inverseIndex, value: .objects(ids + [source]))
                case .null:
                    setPrimitive(target, index: info.inverseIndex, value: .object(source))
                default:
                    break  // refers to another object: the next save checks it
                }
            }
        }
    }

    /// Refuses a child's save that relates an object to one pending deletion here through a
    /// relationship whose delete rule is `deny`: the deletion could not be saved then.
    private func checkDenyRules(of deletedHere: ManagedObject, joined: [Int: [ObjectID]], in save: ChildSave) throws(StoreError) {
        for index in joined.keys.sorted() {
            guard let info = relationships[deletedHere.entityIndex][index], info.deleteRule == .deny else { continue }
            for id in joined[index]! {
                // The target's side as the child's save leaves it.
                let inverse: Value
                if let row = save.inserted.first(where: { $0.id == id }) {
                    inverse = row.values[info.inverseIndex]
                } else if let change = save.updated.first(where: { $0.id == id })?.changes.first(where: { $0.index == info.inverseIndex }) {
                    inverse = change.value
                } else {
                    let target = self.object(with: id)
                    load(target)
                    guard target.lifecycle == .inserted || target.lifecycle == .persistent else { continue }
                    inverse = target.storage[info.inverseIndex]
                }
                guard inverse.refers(to: deletedHere.objectID) else { continue }
                throw StoreError(.deleteRule, "\(deletedHere.objectID) is deleted in \(link.name), and its relationship \"\(info.name)\" (delete rule deny) would refer to \(id), which the child's save relates to it; remove that from the child's save, or save the deletion first",
                                 object: deletedHere.objectID, key: info.name)
            }
        }
    }

    /// Refuses a child's deletions that this context's delete rules cannot carry out over
    /// what it holds — what it related to a deleted object since the child read it, which
    /// the child never saw: an object still in a `deny` relationship, or a required
    /// relationship that `nullify` would leave empty. Accepted, such a save left this context
    /// unable to save. Checked before anything is applied, on the values the child's updates
    /// give, following the cascades as ``delete(_:)`` will.
    private func checkDeleteRules(
        deleting ids: [ObjectID], after updates: [(object: ManagedObject, update: RowUpdate)], inserting inserted: [RowImage]
    ) throws(StoreError) {
        guard !ids.isEmpty else { return }
        var pending: [ObjectID: [Int: Value]] = [:]
        for (_, update) in updates {
            for change in update.changes { pending[update.id, default: [:]][change.index] = change.value }
        }
        // An object as the rules meet it, read without registering anything here: the
        // child's new objects are not registered until the save is applied (registering one
        // while checking left a fault in their place, and applying the save trapped).
        struct Related {
            var id: ObjectID
            var entity: Int
            var values: [Value]
            var isAlive: Bool
            var isPersistent: Bool
        }
        let insertedValues = Dictionary(inserted.map { ($0.id, $0.values) }, uniquingKeysWith: { first, _ in first })
        func value(_ object: Related, _ index: Int) -> Value { pending[object.id]?[index] ?? object.values[index] }
        func related(_ id: ObjectID) -> Related {
            if let values = insertedValues[id] {
                return Related(id: id, entity: entityIndex(of: id), values: values, isAlive: true, isPersistent: false)
            }
            if let object = registered[id] {
                if object.mayReappear { reviveIfPresent(object) }
                load(object)
                return Related(id: id, entity: object.entityIndex, values: object.storage,
                               isAlive: object.lifecycle == .inserted || object.lifecycle == .persistent, isPersistent: object.lifecycle == .persistent)
            }
            let entity = entityIndex(of: id)
            guard let row = link.sourceView().row(id) else {
                return Related(id: id, entity: entity, values: [], isAlive: false, isPersistent: false)
            }
            return Related(id: id, entity: entity, values: row.values, isAlive: true, isPersistent: true)
        }
        // Everything the deletions take here.
        var doomed = Set<ObjectID>()
        var taken: [Related] = []
        var work = ids.map(related)
        while let next = work.popLast() {
            guard next.isAlive, doomed.insert(next.id).inserted else { continue }
            taken.append(next)
            for (index, info) in relationships[next.entity].enumerated() where info?.deleteRule == .cascade {
                for id in Self.targets(value(next, index)) {
                    let target = related(id)
                    if target.isAlive, value(target, info!.inverseIndex).refers(to: next.id) { work.append(target) }
                }
            }
        }
        for object in taken {
            for (index, info) in relationships[object.entity].enumerated() {
                guard let info, info.deleteRule != .cascade else { continue }
                for id in Self.targets(value(object, index)) where !doomed.contains(id) {
                    let target = related(id)
                    guard target.isAlive, value(target, info.inverseIndex).refers(to: object.id) else { continue }
                    if info.deleteRule == .deny && object.isPersistent {
                        throw StoreError(.deleteRule, "\(object.id) cannot be deleted: its relationship \"\(info.name)\" (delete rule deny) still refers to \(id) in \(link.name); remove or delete that first",
                                         object: object.id, key: info.name)
                    }
                    // Nullified (as `deny` is for an object never saved).
                    let inverse = relationships[target.entity][info.inverseIndex]!
                    if !inverse.isOptional, Self.targets(value(target, info.inverseIndex)).allSatisfy(doomed.contains) {
                        throw StoreError(.missingValue, "\(id).\(inverse.name): the relationship is required, and deleting \(object.id) would leave it empty in \(link.name)",
                                         object: id, key: inverse.name)
                    }
                }
            }
        }
    }

    private func checkUniques(inserted: [RowImage], updated: [RowUpdate], deleted: [ObjectID]) throws(StoreError) {
        var claims: [(ObjectID, Int, Int, Value)] = []
        var released = Set<ObjectID>(deleted)
        for row in inserted {
            let entity = entityIndex(of: row.id)
            if let attribute = schema.layout.entities[entity].uniqueAttribute, !row.values[attribute].isNull {
                claims.append((row.id, entity, attribute, row.values[attribute]))
            }
        }
        for update in updated {
            let entity = entityIndex(of: update.id)
            guard let attribute = schema.layout.entities[entity].uniqueAttribute,
                let change = update.changes.first(where: { $0.index == attribute })
            else { continue }
            released.insert(update.id)
            if !change.value.isNull { claims.append((update.id, entity, attribute, change.value)) }
        }
        var seen: [Int: [Value: ObjectID]] = [:]
        for (id, entity, attribute, value) in claims {
            let key = schema.entities[entity].attributes[attribute].name
            if let other = seen[entity]?[value] {
                throw StoreError(.uniqueViolation, "unique key \"\(key)\" = \(value) is given to both \(other) and \(id)", object: id, key: key)
            }
            seen[entity, default: [:]][value] = id
            if let holder = uniqueHolder(entity: entity, value: value, excluding: id), !released.contains(holder) {
                throw StoreError(.uniqueViolation, "unique key \"\(key)\" = \(value) already used by \(holder) in \(link.name); change one of them, or use findOrCreate to reuse \(holder)",
                                 object: id, key: key)
            }
        }
    }

    // MARK: - Merging

    /// Records in the layer what the merge of `transaction` left as it was of the objects it
    /// holds changes of (see ``PendingLayer/mergesLeftUnchanged``).
    /// `candidates`: the objects the save changed that held changes here, with their values
    /// before the merge.
    private func noteMerge(of transaction: UInt64, candidates: [ObjectID: [Value]]) {
        // None held here: a child reads the save's values through this context.
        guard !candidates.isEmpty else { return }
        // Showing the values they showed — still as changes of this context's, or no longer,
        // their values now the store's (inverses put back at the end of the merge may have
        // changed them after all).
        let unchanged = candidates.compactMap { id, before -> ObjectID? in
            guard let object = registered[id], object.lifecycle == .persistent, object.storage == before else { return nil }
            return id
        }
        var merges = layer.mergesLeftUnchanged
        merges.append((transaction, Set(unchanged)))
        if merges.count > PendingLayer.mergesKept { merges.removeFirst(merges.count - PendingLayer.mergesKept) }
        setLayerMerges(merges)
    }

    /// The objects a save updated that this context does not hold and that show here, where
    /// it reads them (through its ancestors' changes), the values they showed before: the
    /// ancestor's merge left the object showing what it showed (it lists them in its layer:
    /// its change kept, or equal to the save's value and so no longer a change); or the
    /// ancestor holding the object's row has not merged the save (the row shows its own
    /// values, whatever the save did); or, for merges no longer listed, the row differs from
    /// the save's values in every key the save changed (the merge kept the ancestor's own).
    func updatesKeptFromView(of save: DidSave) -> [ObjectID] {
        let view = link.sourceView()
        // Only an ancestor's pending changes can show other values than the save's (the
        // generation underneath has the save, or not yet): with none, nothing to look at —
        // a view context merging an import's large saves pays nothing.
        let layers = view.layers.filter { !$0.isEmpty || !$0.mergesLeftUnchanged.isEmpty }
        guard !layers.isEmpty else { return [] }
        let values = save.values, changedKeys = save.changedKeys
        return save.updated.filter { id in
            guard let entity = schema.entityIndex(of: id),
                  registered[id] == nil, let theirs = values[id], let keys = changedKeys[id], !keys.isEmpty
            else { return false }
            let holder = layers.first { $0.rows[entity][id.number] != nil }
            if let transaction = save.transaction {
                // The nearest ancestor whose merge of the save decided what shows here. (Its
                // list first: a merge under `error` that kept a conflict for the next save
                // keeps the row's version but gives its other keys the save's values.)
                let listing = holder.map { [$0] } ?? layers
                if let merge = listing.lazy.compactMap({ $0.mergesLeftUnchanged.last { $0.transaction == transaction } }).first {
                    return merge.objects.contains(id)
                }
                if let row = holder?.rows[entity][id.number], row.version < transaction { return true }
            }
            guard holder != nil, let row = view.row(entity: entity, number: id.number) else { return false }
            let names = schema.layout.entities[entity].propertyNames
            return keys.allSatisfy { key in names.firstIndex(of: key).map { row.values[$0] != theirs[$0] } ?? false }
        }
    }

    /// The objects holding changes of their own (a child's saves among them), with their
    /// values: a merge may change them beyond what the merged save says — its policy
    /// dropping ours, inverses put back, a pending deletion dropped — which the children
    /// following this context cannot tell from the save (see ``pendingChanged(since:author:)``).
    func pendingValues() -> [ObjectID: [Value]?] {
        var values: [ObjectID: [Value]?] = [:]
        for id in inserted.union(updated) { if let object = registered[id], object.isLoaded { values[id] = object.storage } }
        for id in deleted { values[id] = .some(nil) }
        return values
    }

    /// `before` (from ``pendingValues()``) with the objects pending deletion now and not
    /// then, as the children following this context read them: their base, which took the
    /// merged save's values. A merge's delete rules reach such objects (an album an import
    /// gave to an artist deleted here, which the artist's cascade takes); unannounced, the
    /// children showed the album on the artist while this context saved its deletion, a
    /// save they skip as their own. (Objects a merge only changed are not added: an artist
    /// whose list a conflict kept here took back, announced so, reached a child after the
    /// child had read the store's outcome of the save again, and undid it there.)
    func addingNewlyDeleted(to before: [ObjectID: [Value]?]) -> [ObjectID: [Value]?] {
        var all = before
        for id in deleted where all[id] == nil {
            guard let base = registered[id]?.base else { continue }
            all[id] = .some(base)
        }
        return all
    }

    /// What a merge, a rollback or a reset changed of the objects that held changes of their own
    /// (`before`, from ``pendingValues()``), as a did-save of them as they are now: updated
    /// with the keys whose values changed, inserted where a pending deletion was dropped,
    /// deleted where a pending insert (or a changed object) is gone; `nil` if none changed.
    ///
    /// `shownNow` gives an object's values as it is shown now, `nil` if it is not (by
    /// default: the registered instance, alive and loaded; after a reset, which holds none,
    /// the parent's view).
    func pendingChanged(since before: [ObjectID: [Value]?], author: String,
                        shownNow: ((ObjectID) -> [Value]?)? = nil) -> DidSave? {
        let shownNow = shownNow ?? { [registered] id in
            guard let object = registered[id], object.isLoaded, object.lifecycle == .persistent || object.lifecycle == .inserted else { return nil }
            return object.storage
        }
        var rows: [ObjectID: [Value]] = [:]
        var updated: [ObjectID: [Int]] = [:], inserted: [ObjectID] = [], deleted: [ObjectID] = []
        for (id, old) in before {
            guard let now = shownNow(id) else {
                if old != nil { deleted.append(id) }  // shown before, gone now (an insert rolled back)
                continue
            }
            rows[id] = now
            guard let old else {
                inserted.append(id)  // deleted here before, and no longer
                continue
            }
            let changed = now.indices.filter { now[$0] != old[$0] }
            if !changed.isEmpty { updated[id] = changed }
        }
        guard !updated.isEmpty || !inserted.isEmpty || !deleted.isEmpty else { return nil }
        return announcement(author: author, inserted: inserted, updated: updated, deleted: deleted) { rows[$0] }
    }

    /// A did-save (no transaction) of objects as this context shows them now, for the
    /// children that follow its changes: `updated` with the storage indexes of the keys
    /// that changed; the values of the inserted and updated ones as they are here (or as
    /// `shown` gives them).
    func announcement(author: String, inserted: [ObjectID], updated: [ObjectID: [Int]], deleted: [ObjectID] = [],
                      shown: ((ObjectID) -> [Value]?)? = nil) -> DidSave {
        let shown = shown ?? { [registered] in registered[$0]?.storage }
        var changedKeys: [ObjectID: [String]] = [:], values: [ObjectID: [Value]] = [:]
        for (id, indexes) in updated {
            guard let entity = schema.entityIndex(of: id) else { continue }
            let names = schema.layout.entities[entity].propertyNames
            changedKeys[id] = indexes.map { names[$0] }
        }
        for id in inserted + updated.keys { if let row = shown(id) { values[id] = row } }
        return DidSave(transaction: nil, author: author, inserted: inserted.sorted(), updated: updated.keys.sorted(), deleted: deleted.sorted(),
                       changedKeys: changedKeys, values: values)
    }

    /// Merges another context's save into the objects this context holds: unchanged objects
    /// take the new values; objects with pending changes keep them on top, and keys both
    /// sides changed to different values are conflicts resolved by `policy`. Deleted objects
    /// become tombstones. Objects not registered here are not touched.
    /// - Returns: the conflicting keys found, and how many registered objects were touched.
    func merge(_ save: DidSave, policy: MergePolicy) -> (conflicts: [Conflict], touched: Int) {
        var conflicts: [Conflict] = []
        var touched = 0
        // Objects holding changes here (rows of this context's layer) whose values the merge
        // leaves as they were: for the children reading them here (see `noteMerge`).
        var leftUnchanged: [ObjectID: [Value]] = [:]
        defer { if let transaction = save.transaction { noteMerge(of: transaction, candidates: leftUnchanged) } }
        for id in save.deleted {
            guard let object = registered[id], object.lifecycle != .deletedElsewhere else { continue }
            touched += 1
            if object.lifecycle == .persistent, !object.changedKeys.isEmpty {
                // Changes to an object deleted elsewhere: a conflict, as the store reports one
                // (never dropped without a word). Under `error` the changes stay, so that the
                // next save reports it too; every other policy lets the deletion win.
                conflicts.append(Conflict(object: id, key: nil, base: nil, ours: nil, theirs: nil, theirVersion: nil))
                if policy == .error {
                    object.deletedInConflict = true
                    continue
                }
            }
            makeTombstone(object)
        }
        // The objects held here that the save changed: found from whichever side is smaller,
        // so that a merge into a context holding few objects costs what it holds.
        var changed: [(id: ObjectID, object: ManagedObject)] = []
        // Read once: each read of a committed save's values goes through a lock (see
        // `CommitChanges`).
        let values = save.values, changedKeys = save.changedKeys
        if registered.count < save.updated.count + save.inserted.count {
            for (id, object) in registered where values[id] != nil { changed.append((id, object)) }
            changed.sort { $0.id < $1.id }
        } else {
            for id in save.updated { if let object = registered[id] { changed.append((id, object)) } }
            for id in save.inserted { if let object = registered[id] { changed.append((id, object)) } }
        }
        var dropped: [DroppedRelationship] = []
        // Objects holding no change that took the save's values, with the values they held.
        var takenWhole: [(object: ManagedObject, before: [Value])] = []
        // Objects pending deletion here that the save related to other objects.
        var joinedDeleted: [(object: ManagedObject, joined: [Int: [ObjectID]])] = []
        // Objects the parent shows again, not committed (a pending deletion it dropped): a
        // tombstone here comes back. The parent's announcement of the deletion can reach this
        // context after its word that it dropped it (`parentDropped`, which the stack sends
        // directly when the writer's save is refused): the album a writer's cascade had taken
        // stayed a tombstone here while its artist, reloaded, listed it again. (Only on the
        // parent's word: a tombstone that came back whenever the parent showed it came back
        // while the parent still held the deletion, without the objects that had let go of it.)
        // Reloaded as a parent's dropped change is (`reloadFromParent`): with the objects on the
        // other side of its relationships, which let go of it when it went.
        let shownAgain: Set<ObjectID> = save.transaction == nil && !save.inserted.isEmpty ? Set(save.inserted) : []
        var cameBack: [ObjectID] = []
        // While deletions are pending here: the objects the save changed, with the values
        // they held, to find those it related to a pending deletion (see below).
        var heldBefore: [(object: ManagedObject, values: [Value])] = []
        for (id, object) in changed {
            if object.lifecycle == .deletedElsewhere, !object.mayReappear, shownAgain.contains(id) {
                cameBack.append(id)
                continue
            }
            // Deleted by a save into the parent that the parent has undone: back as a dropped
            // deletion is, with the objects on the other side, which a merge may have made let
            // go of it meanwhile (see `letGoOfDeletionsHeldByParent`; revived alone, an album
            // whose deletion a writer's refused save dropped listed a song that named no album).
            if object.lifecycle == .deletedElsewhere, object.deletionSavedToParent, link.sourceView().row(id) != nil {
                cameBack.append(id)
                continue
            }
            if object.mayReappear {
                // Looked for before it was saved, or deleted by a save into the parent that
                // the parent has undone: here now (see `reviveIfPresent`).
                if reviveIfPresent(object) { touched += 1 }
                continue
            }
            guard object.isLoaded, var row = values[id] else { continue }
            // A child whose parent has merged this commit already takes the values the parent
            // kept (its merge policy may have kept its own), not the commit's.
            if !link.isRoot, let transaction = save.transaction, let seen = link.sourceView().row(id), seen.version >= transaction {
                row = seen.values
            }
            if object.lifecycle == .inserted {
                // Inserted here, and a transaction changed it: the store holds the insert, so a
                // save of it is in flight (the save has not ended here yet). The save's end
                // takes the transaction's values, as an updated object keeps what merged while
                // its save ran. (Passed over, it ended the save with the values its own commit
                // gave it: a writer's new artist listed no album while the store listed one.)
                if object.keysSetDuringSave != nil, let transaction = save.transaction {
                    let names = schema.layout.entities[object.entityIndex].propertyNames
                    let keys = changedKeys[id].map(Set.init)
                    var merged = object.mergedWhileInserting?.values ?? [:]
                    for index in row.indices where keys?.contains(names[index]) ?? true { merged[index] = row[index] }
                    object.mergedWhileInserting = (merged, max(transaction, object.mergedWhileInserting?.version ?? 0))
                    touched += 1
                }
                continue
            }
            guard object.lifecycle == .persistent || object.lifecycle == .deleted else { continue }
            if !deleted.isEmpty, object.lifecycle == .persistent { heldBefore.append((object, object.storage)) }
            // Only the keys the save changed: the rest of its row may be older than what this
            // context holds (a state it handed to its parent that is not committed yet). The
            // other keys are the row merged last: under `error` an object keeping a conflict
            // for its next save keeps its old base, and a second merge built on it undid what
            // the first had merged — in the values shown and in the row a rollback takes (an
            // artist lost the album a first merge had listed).
            var theirs = row
            if let keys = changedKeys[id], let base = object.rowMergedLast {
                theirs = base
                let names = schema.layout.entities[object.entityIndex].propertyNames
                for key in keys { if let index = names.firstIndex(of: key) { theirs[index] = row[index] } }
            }
            // Never go back: the object may already hold a newer state (read after this
            // transaction, or rebased by a save that followed it, or merged from a later one
            // while it keeps a conflict, whose base stays older).
            if let transaction = save.transaction, max(object.baseVersion, object.mergedRowInConflict?.version ?? 0) >= transaction {
                if object.lifecycle == .persistent, !object.changedKeys.isEmpty { leftUnchanged[id] = object.storage }
                continue
            }
            touched += 1
            let version = save.transaction ?? object.baseVersion
            if object.lifecycle == .deleted || object.changedKeys.isEmpty {
                // Nothing of ours to keep. A pending deletion keeps its base version (it is
                // checked against the store's when saved) but takes the values, so that
                // rolling it back shows the current ones.
                // Its base too when its values already agree: a delete rule here may have set
                // them as the save did (an album its artist's cascade took lets go of the
                // artist), and a rollback goes back to the base.
                if object.lifecycle == .deleted, object.isLoaded, object.storage != theirs || object.base != theirs {
                    // Every object the merged values relate it to, not only those it was not
                    // related to when deleted: its rules reached those then, but the save may
                    // have related one to it again (a song moved here to an album, then deleted,
                    // which the album let go of; a save moving it to that album listed it there
                    // again). Those that do not refer back are left alone (applyDeleteRules).
                    let joined = joinedObjects(of: object.entityIndex, from: [], to: theirs)
                    if !joined.isEmpty { joinedDeleted.append((object, joined)) }
                    if object.storage != theirs { pendingNotification.refreshed.insert(id) }
                    object.storage = theirs
                    object.base = theirs
                }
                // Deleted while keeping a conflict from an earlier merge: a rollback takes the
                // merged row over the base, so it is this one now (it took the earlier merge's
                // row back: a song on the album that save had moved it to, whose songs no
                // longer listed it).
                if object.lifecycle == .deleted, object.mergedRowInConflict != nil {
                    object.mergedRowInConflict = (theirs, version)
                }
                if object.lifecycle == .persistent {
                    guard object.storage != theirs || object.baseVersion != version else { continue }
                    let valuesChanged = object.storage != theirs
                    if valuesChanged { takenWhole.append((object, object.storage)) }
                    object.storage = theirs
                    object.base = theirs
                    object.baseVersion = version
                    object.mergedRowInConflict = nil
                    noteChanged(object)
                    if valuesChanged { pendingNotification.refreshed.insert(id) }  // a newer version of the same values shows nothing new
                }
                continue
            }
            leftUnchanged[id] = object.storage
            conflicts += mergeChanged(object, theirs: theirs, version: version, policy: policy, dropped: &dropped)
        }
        // Objects the save related to one pending deletion here, found from their own side
        // too: the deleted object's values may already show the relation, read newer than
        // this transaction (a child takes the row its parent merged since), and then the
        // transaction's merge finds nothing new on that side. (A view's artist pending
        // deletion had taken an import's list naming an album before the import's commit
        // moving the album there was merged; the album joined the artist untouched by its
        // cascade, the writer's cascade took it, and the view kept it.)
        for (object, before) in heldBefore where object.lifecycle == .persistent && object.storage != before {
            for (index, targets) in joinedObjects(of: object.entityIndex, from: [before], to: object.storage) {
                guard let info = relationships[object.entityIndex][index] else { continue }
                for target in targets {
                    guard let deletedHere = registered[target], deletedHere.lifecycle == .deleted, deletedHere.isLoaded else { continue }
                    joinedDeleted.append((deletedHere, [info.inverseIndex: [object.objectID]]))
                }
            }
        }
        if !cameBack.isEmpty { _ = reloadFromParent(cameBack, unheld: \.invalidated) }
        // Inverses last, once every object the save changed holds its merged values: what
        // is left pointing the old way was put there by this context's own changes.
        for change in dropped { restoreInverses(of: change) }
        yieldToPendingInverses(takenWhole)
        forgetReferences(toDeleted: save.deleted.filter { registered[$0]?.deletedInConflict != true }, pending: save.transaction == nil)
        if holdsDeletionsOfParent { letGoOfDeletionsHeldByParent(in: changed) }
        for id in save.deleted { if let object = registered[id], !object.deletedInConflict { forgetReferences(to: object) } }
        // The delete rules of a pending deletion reach what the save related to the object (an
        // album added to an artist deleted here is deleted by its cascade), as they reached
        // what it was related to when it was deleted.
        for (object, joined) in joinedDeleted { applyDeleteRules(of: object, toJoined: joined) }
        return (conflicts, touched)
    }

    /// Lets `objects`, just merged, let go of tombstones of objects the parent holds deleted —
    /// deletions this context saved into it or merged from it, or objects this context's save
    /// found gone there: a commit made before the deletion reached the store still relates
    /// objects to them, and merged here they would name a tombstone. The parent's own merge of
    /// that commit let go of them (its pending deletion's rules), so letting go is not this
    /// context's change: the merged value and the base both lose them. Should the parent drop
    /// the deletion, the object comes back with the objects on the other side
    /// (`reloadFromParent`). (An editor's album listed again a song the editor had deleted and
    /// saved into the view, and an editor's artist an album its save had found deleted in the
    /// view, once an import's commit naming them was merged; the editor follows only the
    /// imports, so nothing took them out again.)
    private func letGoOfDeletionsHeldByParent(in objects: [(id: ObjectID, object: ManagedObject)]) {
        let parentView = link.sourceView()
        for (id, object) in objects where object.isLoaded && (object.lifecycle == .persistent || object.lifecycle == .inserted) {
            for (index, info) in relationships[object.entityIndex].enumerated() where info != nil {
                let held = deletionsHeldByParent(in: object.storage[index], parentView: parentView)
                guard !held.isEmpty, let kept = Self.value(object.storage[index], without: held) else { continue }
                if let read = object.base?[index], let lessHeld = Self.value(read, without: held) { object.base![index] = lessHeld }
                object.storage[index] = kept
                if object.lifecycle == .persistent, object.base?[index] == kept { object.changedKeys.remove(index) }
                setTracking(object)
                noteChanged(object)
                pendingNotification.refreshed.insert(id)
            }
        }
    }

    /// The objects a relationship's `value` names that are tombstones here of objects the
    /// parent holds deleted (`parentView` is the parent's view): deletions this context saved
    /// into it or merged from it, or objects this context found gone there.
    func deletionsHeldByParent(in value: Value, parentView: ContextView) -> Set<ObjectID> {
        Set(tombstones(in: value) { !$0.missingWhenLoaded && parentView.row($0.objectID) == nil })
    }

    /// `values`, just read from the parent for an object of `entity`, without the tombstones
    /// here of objects the parent holds deleted (see ``letGoOfDeletionsHeldByParent(in:)``):
    /// the parent can show an object naming one it deletes — a pending deletion whose `deny`
    /// rule leaves the object in place until the parent's save is refused — and read so here,
    /// the object would name a tombstone. Letting go is not this context's change: the
    /// values become its base as well.
    func withoutDeletionsHeldByParent(_ values: [Value], of entity: Int, parentView: ContextView) -> [Value] {
        var result = values
        for (index, info) in relationships[entity].enumerated() where info != nil {
            result[index] = withoutDeletionsHeldByParent(values[index], parentView: parentView)
        }
        return result
    }

    /// A relationship's `value`, just read from the parent, without the tombstones here of
    /// objects the parent holds deleted (see above).
    func withoutDeletionsHeldByParent(_ value: Value, parentView: ContextView) -> Value {
        let held = deletionsHeldByParent(in: value, parentView: parentView)
        guard !held.isEmpty else { return value }
        return Self.value(value, without: held) ?? value
    }

    /// Objects holding no change that took a merged save's values (`taken`, with the values
    /// they held): a member the save added to one of their lists that holds a change of its
    /// own here, naming another object, is let go of — the change pending here decides, as
    /// the next save will send it. So is an object a to-one of theirs now names whose list
    /// holds a change here that leaves them out. (A child's album, whose move the parent's
    /// announcement had made its base, went back to its artist when the parent rolled back;
    /// the artist kept its pending list without the album, the next save sent it, and the
    /// parent's save was refused as an inverse violation.) A change can name another object
    /// while the list held here never listed the member: a child read both objects through
    /// this context after the commit, which this context had not merged yet, and moved the
    /// member away; its save took the member out of a list that did not hold it — no change
    /// here — and the merge then listed it again on the object it had left.
    private func yieldToPendingInverses(_ taken: [(object: ManagedObject, before: [Value])]) {
        // No object holds a change here (a view merging an import, mostly): nothing to yield to.
        guard !updated.isEmpty else { return }
        for (object, before) in taken where object.lifecycle == .persistent {
            for (index, info) in relationships[object.entityIndex].enumerated() {
                guard let info, object.storage[index] != before[index] else { continue }
                if case .object(let id) = object.storage[index] {
                    guard let owner = registered[id], owner.isLoaded, owner.lifecycle == .persistent,
                        owner.changedKeys.contains(info.inverseIndex),
                        !owner.storage[info.inverseIndex].refers(to: object.objectID)
                    else { continue }
                    letGo(of: id, in: object, at: index)
                    continue
                }
                guard case .objects(let ids) = object.storage[index] else { continue }
                // Looked up in a set when the list is long (a list of 200,000 songs gaining one).
                let old = before[index].referencedObjects
                let oldSet: Set<ObjectID>? = old.count > 16 ? Set(old) : nil
                for id in ids where !(oldSet?.contains(id) ?? old.contains(id)) {
                    guard let member = registered[id], member.isLoaded, member.lifecycle == .persistent,
                        member.changedKeys.contains(info.inverseIndex),
                        !member.storage[info.inverseIndex].refers(to: object.objectID)
                    else { continue }
                    letGo(of: id, in: object, at: index)
                }
            }
        }
    }

    /// An object whose deletion by a child the merge policy dropped: objects the child's
    /// delete rules made let go of it refer to it again — or, if the child gave them another
    /// object since, it lets go of them.
    private func restoreKeptInverses(_ object: ManagedObject) {
        guard object.lifecycle == .persistent || object.lifecycle == .inserted else { return }  // taken by a rule here after all
        for (index, info) in relationships[object.entityIndex].enumerated() {
            guard let info else { continue }
            for id in Self.targets(object.storage[index]) {
                let target = self.object(with: id)
                load(target)
                let alive = target.lifecycle == .persistent || target.lifecycle == .inserted
                // Refers to another object now (or is gone): this one lets go of it.
                if !alive || !referAlso(to: object.objectID, in: target, at: info.inverseIndex) { letGo(of: id, in: object, at: index) }
            }
        }
    }

    /// A relationship value that a merge policy replaced by the other side's — this context's
    /// change replaced by a merged save's value or kept over it, a child's change dropped or
    /// applied over this context's: the objects only the replaced value referred to (`lost`),
    /// and those only the value kept refers to (`gained`).
    struct DroppedRelationship {
        let source: ObjectID
        let index: Int
        let info: RelationshipInfo
        let lost: [ObjectID]
        let gained: [ObjectID]
        /// The source is deleted here: objects it was related to let go of it, without going
        /// back to what they referred to before.
        var sourceDeleted = false
    }

    /// Brings the other side of a dropped relationship change in step: objects the dropped
    /// value referred to no longer refer back (a to-one goes back to its base value when that
    /// is another object, which refers to it again — a to-many lists it, an empty to-one
    /// takes it back: one-to-one pairs are put back on both sides; one given another object
    /// since leaves it empty), objects the value kept refers to refer back.
    private func restoreInverses(of change: DroppedRelationship) {
        let inverse = change.info.inverseIndex
        func isAlive(_ object: ManagedObject) -> Bool { object.lifecycle == .persistent || object.lifecycle == .inserted }
        for id in change.lost {
            // Loaded if need be: a value replaced by a merge may refer to objects this context
            // never read, which its view shows referring back.
            let target = object(with: id)
            load(target)
            guard isAlive(target) else { continue }
            switch target.storage[inverse] {
            case .objects(let ids) where ids.contains(change.source):
                setPrimitive(target, index: inverse, value: .objects(ids.filter { $0 != change.source }))
            case .object(let source) where source == change.source:
                let before = change.sourceDeleted ? .null : target.base?[inverse] ?? .null
                var back = Value.null
                if let previousID = before.objectID, previousID != change.source {
                    let previous = object(with: previousID)
                    load(previous)
                    if isAlive(previous) {
                        switch previous.storage[change.index] {
                        case .objects(let ids):
                            if !ids.contains(id) { setPrimitive(previous, index: change.index, value: .objects(ids + [id])) }
                            back = before
                        case .null:
                            setPrimitive(previous, index: change.index, value: .object(id))
                            back = before
                        case .object(let other) where other == id:
                            back = before
                        default:
                            break  // given another object since: this one stays without
                        }
                    }
                }
                setPrimitive(target, index: inverse, value: back)
            default:
                break
            }
            // A pair is dropped whole: another change this merge kept (the other side's, kept
            // by the policy) may have listed the target here again — it now lets go.
            if change.info.isToMany, let source = registered[change.source], source.isLoaded, isAlive(source),
                !target.storage[inverse].refers(to: change.source)
            {
                letGo(of: id, in: source, at: change.index)
            }
        }
        // Only what the source still refers to: a dropped change of the other side's may
        // have taken the source back since (an album whose move here a merge kept, while
        // `rollback` dropped every change of the artist it moved to, conflicting on its name:
        // listed on that artist again, the album had gone back to no artist, and the writer's
        // next save was refused as an inverse violation).
        let source = registered[change.source].flatMap { $0.isLoaded ? $0 : nil }
        let referred = source.map { Self.targets($0.storage[change.index]) } ?? []
        let referredSet: Set<ObjectID>? = referred.count > 16 ? Set(referred) : nil
        for id in change.gained {
            guard let target = registered[id], target.isLoaded, isAlive(target) else { continue }
            if source != nil, !(referredSet?.contains(id) ?? referred.contains(id)) { continue }
            switch target.storage[inverse] {
            case .objects(let ids) where !ids.contains(change.source):
                setPrimitive(target, index: inverse, value: .objects(ids + [change.source]))
            case .null:
                setPrimitive(target, index: inverse, value: .object(change.source))
            case .object(let other) where other != change.source:
                // Refers to another object by a change of its own, while the value kept refers
                // to it: a pair is kept or dropped whole, so it goes back to the source and the
                // other object lets go of it. (Left pointing elsewhere — an album moved here away
                // from an artist that `rollback` took back — the next save was refused as an
                // inverse violation.)
                let previous = object(with: other)
                load(previous)
                if isAlive(previous) { letGo(of: id, in: previous, at: change.index) }
                setPrimitive(target, index: inverse, value: .object(change.source))
            default:
                break
            }
        }
    }

    /// An object another context deleted: objects here that this context's own changes made
    /// refer to it let go of it (the store nullified the references it held).
    func forgetReferences(to deleted: ManagedObject) {
        guard deleted.isLoaded else { return }
        for (index, info) in relationships[deleted.entityIndex].enumerated() {
            guard let info else { continue }
            for id in Self.targets(deleted.storage[index]) {
                guard let target = registered[id], target.isLoaded, target.lifecycle == .persistent || target.lifecycle == .inserted else { continue }
                letGo(of: deleted.objectID, in: target, at: info.inverseIndex)
            }
        }
    }

    /// Objects deleted elsewhere that objects here refer to through values the store never
    /// held — this context's own changes, or its ancestors' (an object a child saved into its
    /// parent): they let go of them, as the store nullified the references it held, also
    /// where this context never read the deleted object. Their bases let go too where what
    /// this context reads through lets go (the parent merged the deletion before the child,
    /// and did not keep it as a conflict): a rollback must not bring back an object deleted
    /// elsewhere that the parent no longer shows (it once did, in a child only, and the
    /// child's fetches followed it).
    ///
    /// `pending`: deletions the parent holds, not committed (what it announces to the
    /// children following it, saves into it): the bases let go in any case, as the parent
    /// reads them — it may show no row of the object (deleted there too), or one that names
    /// the deleted object again (a rollback since, announced next).
    func forgetReferences(toDeleted ids: [ObjectID], pending: Bool = false) {
        guard !ids.isEmpty else { return }
        let gone = Set(ids)
        // Objects pending deletion here too: what a rollback brings back must not name an
        // object deleted elsewhere (see below).
        var candidates = inserted.union(updated).union(deleted)
        // And the objects the deleted ones refer to here, which may hold no change here or in
        // the parent: where the parent shows them letting go, letting go is not this context's
        // change either. (Read through a parent's pending change that the parent has since
        // taken back, an album listed a song the store had on no album; merging the song's
        // deletion, it let go of it as a change of the child's, on a base still naming it,
        // and the child's rollback listed the deleted song again.) Under `pending` the bases
        // let go in any case: the parent may still show them referring to it — its `deny`
        // rule does not let go, and refuses its save. (Let go as a change here, a song kept
        // "no album" after the parent dropped the deletion, and the view's next save sent it.)
        for id in ids {
            guard let object = registered[id], object.isLoaded else { continue }
            for (index, info) in relationships[object.entityIndex].enumerated() where info != nil {
                for target in Self.targets(object.storage[index]) where registered[target] != nil { candidates.insert(target) }
            }
        }
        let view = link.sourceView()
        for layer in view.layers {
            for (entity, rows) in layer.rows.enumerated() where !rows.isEmpty {
                let name = schema.layout.entityNames[entity]
                rows.forEach { number, _ in
                    let id = ObjectID(entityName: name, number: number)
                    if registered[id] != nil { candidates.insert(id) }
                }
            }
        }
        func without(_ value: Value) -> Value? { Self.value(value, without: gone) }
        for id in candidates {
            guard let object = registered[id], object.isLoaded else { continue }
            if object.lifecycle == .deleted {
                // A pending deletion lets go where a rollback would bring it back: its base (and
                // the row kept with a conflict) as the parent reads it. (Left naming the deleted
                // object, a song the view deleted while the writer's save of it was on its way
                // came back, after the writer's save met the album's deletion and the view rolled
                // back, on the album the store had deleted; nothing pending, nothing reloaded it.)
                forgetReferences(toDeleted: gone, inPendingDeletion: object)
                continue
            }
            guard object.lifecycle == .persistent || object.lifecycle == .inserted else { continue }
            var shown: [Value]?? = .none
            for (index, info) in relationships[object.entityIndex].enumerated() where info != nil {
                if let base = object.base, let readLessGone = without(base[index]) {
                    if shown == nil { shown = .some(view.row(id)?.values) }
                    // A deletion the parent holds pending: what the key lets go of is the parent's
                    // doing, not a change of this context's. (Left as one — a list less an album
                    // the parent's cascade had taken — it outlived the parent's rollback, and the
                    // next save sent the removal: the parent's artist no longer listed an album
                    // naming it, and the parent's save was refused as an inverse violation.)
                    let shownValue = shown!.flatMap { without($0[index]) == nil ? $0[index] : nil } ?? (pending ? readLessGone : nil)
                    if let value = shownValue {
                        let read = base[index]
                        object.base![index] = value
                        if object.lifecycle == .persistent {
                            // The key shows the parent's value on top of which its own changes
                            // stay: unchanged, it takes the row's; a list changed here merges them.
                            // (It kept the value it was read with, less the deleted object, while its
                            // base took the parent's other changes too: an album the parent had
                            // added since became a removal of this context's, which its next save
                            // sent, and the parent's save was refused as an inverse violation.)
                            if object.storage[index] == read {
                                object.storage[index] = value
                                pendingNotification.refreshed.insert(id)
                            } else if info!.isToMany {
                                let merged = Value.mergedList(base: read, ours: object.storage[index], theirs: value)
                                // What the list shows changed too: reported, as a merge's is.
                                if merged != object.storage[index] { pendingNotification.refreshed.insert(id) }
                                object.storage[index] = merged
                            }
                            if object.storage[index] == value { object.changedKeys.remove(index) }
                            setTracking(object)
                        }
                    }
                }
                if let kept = without(object.storage[index]) { setPrimitive(object, index: index, value: kept) }
            }
        }
    }

    /// `value` less the objects in `gone`, or `nil` when it names none of them.
    private static func value(_ value: Value, without gone: Set<ObjectID>) -> Value? {
        switch value {
        case .object(let id) where gone.contains(id): .null
        case .objects(let list) where list.contains(where: gone.contains): .objects(list.filter { !gone.contains($0) })
        default: nil
        }
    }

    /// The part of ``forgetReferences(toDeleted:pending:)`` for an object pending deletion
    /// here: what it goes back to on a rollback — its base and the row kept with a conflict —
    /// lets go of the objects in `gone`, and only of them (what else the parent's row holds
    /// is for the merges to bring, with the other sides of its relationships).
    private func forgetReferences(toDeleted gone: Set<ObjectID>, inPendingDeletion object: ManagedObject) {
        for (index, info) in relationships[object.entityIndex].enumerated() where info != nil {
            if let read = object.base?[index], let lessGone = Self.value(read, without: gone) { object.base![index] = lessGone }
            if var kept = object.mergedRowInConflict, let lessGone = Self.value(kept.values[index], without: gone) {
                kept.values[index] = lessGone
                object.mergedRowInConflict = kept
            }
        }
    }

    private func mergeChanged(_ object: ManagedObject, theirs: [Value], version: UInt64, policy: MergePolicy,
                              dropped: inout [DroppedRelationship]) -> [Conflict] {
        let base = object.base ?? theirs
        let entity = schema.entities[object.entityIndex]
        // What the object showed before the merge: a to-many list merges into storage below,
        // and that is a change to report too.
        let before = object.storage
        var conflicting: [Int] = []
        for index in object.changedKeys.sorted() where theirs[index] != base[index] {
            if relationships[object.entityIndex][index]?.isToMany == true {
                object.storage[index] = Value.mergedList(base: base[index], ours: object.storage[index], theirs: theirs[index])
                continue
            }
            conflicting.append(index)
        }
        let conflicts = conflicting.map {
            Conflict(object: object.objectID, key: entity.property(at: $0).name, base: base[$0], ours: object.storage[$0],
                     theirs: theirs[$0], theirVersion: version)
        }
        // To-ones whose value ours keeps against theirs: what only their value refers to stops
        // referring back (took it from the save, or shows it in the view), as a value of ours
        // the policy replaces is taken back on both sides below. Those both sides changed,
        // under the policies keeping ours; and, under every policy, those changed here only
        // (the save holds the base value), as for a conflict kept. (An artist whose list a
        // first merge had brought in step with ours lost its pending change; a second merge,
        // moving the album back to the base value, listed it there again while the album
        // named another artist.)
        let keptAgainstTheirs = (policy == .error || policy == .contextWins || policy == .overwrite ? conflicting : [])
            + object.changedKeys.sorted().filter { theirs[$0] == base[$0] && object.storage[$0] != theirs[$0] }
        for index in keptAgainstTheirs {
            guard let info = relationships[object.entityIndex][index], !info.isToMany else { continue }
            let ours = Self.targets(object.storage[index]), replaced = Self.targets(theirs[index])
            dropped.append(DroppedRelationship(source: object.objectID, index: index, info: info,
                                               lost: replaced.filter { !ours.contains($0) }, gained: ours.filter { !replaced.contains($0) }))
        }
        let keepOurs: Set<Int>
        switch policy {
        case .error:
            // Keep ours and the old base version: the save will report the conflict.
            if !conflicting.isEmpty {
                // The keys we did not change take their values; the base stays, for the
                // conflict, and a rollback takes the merged row.
                for index in theirs.indices where !object.changedKeys.contains(index) { object.storage[index] = theirs[index] }
                object.mergedRowInConflict = (theirs, version)
                noteChanged(object)
                // Keeping every value shown here (only the base moved) shows nothing new.
                if object.storage != before { pendingNotification.refreshed.insert(object.objectID) }
                return conflicts
            }
            keepOurs = object.changedKeys
        case .contextWins:
            keepOurs = object.changedKeys
        case .overwrite:
            // Our whole object as we see it, as at the store: attributes the save changed and
            // we did not keep our values too, and are saved as changes of ours. (Relationships
            // stay per key: keeping one side alone would break the pair.)
            let attributes = schema.layout.entities[object.entityIndex].attributeCount
            keepOurs = object.changedKeys.union((0..<attributes).filter { theirs[$0] != object.storage[$0] })
        case .storeWins:
            keepOurs = object.changedKeys.subtracting(conflicting)
        case .rollback:
            keepOurs = conflicting.isEmpty ? object.changedKeys : []
        }
        var values = theirs
        for index in keepOurs { values[index] = object.storage[index] }
        // A relationship change the policy drops may have been a pending deletion's delete
        // rule taking the deleted object out (an album deleted here leaving its artist's
        // list): the deletion stays pending, so the object stays out — back in, the next
        // save sent the deletion with the list still naming it, and the store refused it.
        var keptOut: [Int] = []
        for index in object.changedKeys.subtracting(keepOurs) where relationships[object.entityIndex][index] != nil {
            let pruned = withoutPendingDeletions(values[index])
            if pruned != values[index] {
                values[index] = pruned
                keptOut.append(index)
            }
        }
        let valuesChanged = values != before
        for index in object.changedKeys.subtracting(keepOurs) {
            guard let info = relationships[object.entityIndex][index], object.storage[index] != values[index] else { continue }
            let ours = Self.targets(object.storage[index]), theirs = Self.targets(values[index])
            dropped.append(DroppedRelationship(source: object.objectID, index: index, info: info,
                                               lost: ours.filter { !theirs.contains($0) }, gained: theirs.filter { !ours.contains($0) }))
        }
        object.storage = values
        object.base = theirs
        object.baseVersion = version
        object.mergedRowInConflict = nil
        object.changedKeys = Set((Array(keepOurs) + keptOut).filter { values[$0] != theirs[$0] })
        setTracking(object)
        noteChanged(object)
        if valuesChanged { pendingNotification.refreshed.insert(object.objectID) }
        return conflicts
    }

    /// A relationship value without the objects pending deletion in this context.
    private func withoutPendingDeletions(_ value: Value) -> Value {
        func pending(_ id: ObjectID) -> Bool { registered[id]?.lifecycle == .deleted }
        switch value {
        case .object(let id) where pending(id): return .null
        case .objects(let ids) where ids.contains(where: pending): return .objects(ids.filter { !pending($0) })
        default: return value
        }
    }

    /// Tracks a registered object as inserted by a child's save.
    private func adopt(_ object: ManagedObject) {
        setTracking(object)
        noteChanged(object)
        pendingNotification.inserted.insert(object.objectID)
        notePendingUnique(of: object)
    }
}
