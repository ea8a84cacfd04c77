import Foundation
import Testing
@testable import Strata

/// What a context shows of one registered object, for the notification property test.
struct Shown: Equatable, Sendable {
    enum Kind: Sendable, Equatable { case alive, deletedHere, gone, fault }
    var kind: Kind
    /// Alive or deleted here: its values; a fault: its row in the context's view (`nil` if missing).
    var values: [Value]?
}

extension ObjectContext {
    /// Every registered object as the context shows it, without loading any fault.
    func shownSnapshot() -> [ObjectID: Shown] {
        var shown: [ObjectID: Shown] = [:]
        let view = graph.link.sourceView()
        for (id, object) in graph.registered where id.number != 0 {
            if object.lifecycle == .deletedElsewhere || object.lifecycle == .discarded {
                shown[id] = Shown(kind: .gone, values: nil)
                continue
            }
            guard object.isLoaded else {
                shown[id] = Shown(kind: .fault, values: view.row(id)?.values)
                continue
            }
            switch object.lifecycle {
            case .inserted, .persistent: shown[id] = Shown(kind: .alive, values: object.storage)
            case .deleted: shown[id] = Shown(kind: .deletedHere, values: object.storage)
            case .discarded, .deletedElsewhere: shown[id] = Shown(kind: .gone, values: nil)
            }
        }
        return shown
    }
}

/// What the notifications posted for one operation must say, given what the
/// context showed before and after it.
func notificationProblems(_ label: String, before: [ObjectID: Shown], after: [ObjectID: Shown], posted: [ObjectsDidChange],
                          oneTurn: Bool) -> [String] {
    var problems: [String] = []
    if oneTurn && posted.count > 1 { problems.append("\(label): \(posted.count) notifications for one turn") }
    var all = ObjectsDidChange()
    for change in posted {
        all.inserted.formUnion(change.inserted)
        all.deleted.formUnion(change.deleted)
        all.refreshed.formUnion(change.refreshed)
        all.invalidated.formUnion(change.invalidated)
        all.merged.formUnion(change.merged)
        all.invalidatedAll = all.invalidatedAll || change.invalidatedAll
        for (id, keys) in change.updated { all.updated[id, default: []].formUnion(keys) }
    }
    func end(_ id: ObjectID) -> Shown.Kind { after[id]?.kind ?? .gone }
    // Each set agrees with what the object is after the turn.
    for id in all.inserted where end(id) != .alive { problems.append("\(label): \(id) reported inserted, is \(end(id))") }
    for id in all.updated.keys where end(id) != .alive { problems.append("\(label): \(id) reported updated \(all.updated[id]!.sorted()), is \(end(id))") }
    for id in all.deleted where end(id) == .alive { problems.append("\(label): \(id) reported deleted, is alive") }
    for id in all.invalidated where end(id) != .gone { problems.append("\(label): \(id) reported invalidated, is \(end(id))") }
    for id in all.refreshed where end(id) == .gone { problems.append("\(label): \(id) reported refreshed, is gone") }
    let reported = reported(all)
    for (id, b) in before {
        let a = after[id] ?? Shown(kind: .gone, values: nil)
        let changed: Bool
        if b.kind == .fault {
            changed = a.kind == .deletedHere  // a fault loading is no change (nor finding it missing)
        } else if a.kind == .fault {
            changed = !(b.kind == .alive && b.values == a.values)
        } else if b.kind == .deletedHere && a.kind != .alive {
            continue  // a deletion saved or merged: it was reported when it was made
        } else {
            changed = b != a
        }
        if changed && !all.invalidatedAll && !reported.contains(id) {
            var detail = ""
            if let old = b.values, let new = a.values, old.count == new.count {
                let names = Fixtures.songbook.entity(named: id.entity)!.propertyNames
                detail = old.indices.filter { old[$0] != new[$0] }.map { "\(names[$0]): \(old[$0]) → \(new[$0])" }.joined(separator: "; ")
            }
            problems.append("\(label): \(id) changed (\(b.kind) → \(a.kind) \(detail)), not reported")
        }
        if !changed && b.kind != .fault && reported.contains(id) {
            problems.append("\(label): \(id) reported (\(describe(id, all))) without a visible change")
        }
        if b.kind == .alive, a.kind == .alive, let keys = all.updated[id], let old = b.values, let new = a.values {
            let names = Fixtures.songbook.entity(named: id.entity)!.propertyNames
            let differing = Set(old.indices.filter { old[$0] != new[$0] }.map { names[$0] })
            if !keys.isSubset(of: differing) {
                problems.append("\(label): \(id) updated keys \(keys.sorted()) include unchanged \(keys.subtracting(differing).sorted())")
            }
            if !all.refreshed.contains(id), !differing.isSubset(of: keys) {
                problems.append("\(label): \(id) changed keys \(differing.subtracting(keys).sorted()) not reported")
            }
        }
    }
    return problems
}

private func describe(_ id: ObjectID, _ change: ObjectsDidChange) -> String {
    var sets: [String] = []
    if change.inserted.contains(id) { sets.append("inserted") }
    if let keys = change.updated[id] { sets.append("updated \(keys.sorted())") }
    if change.deleted.contains(id) { sets.append("deleted") }
    if change.refreshed.contains(id) { sets.append("refreshed") }
    if change.invalidated.contains(id) { sets.append("invalidated") }
    return sets.joined(separator: ", ")
}

/// Random edits in a context over known objects: attribute changes (some set back within the
/// turn), to-one moves, to-many reorders, inserts, deletions (cascading), change-then-delete.
/// Returns the IDs inserted.
func randomEdits(_ c: isolated ObjectContext, ids: [ObjectID], seed: UInt64, fresh: Int64) -> [ObjectID] {
    var r = SeededGenerator(seed: seed)
    var new: [ObjectID] = []
    func alive(_ entity: String) -> [ManagedObject] {
        ids.filter { $0.entity == entity }.map { c.object(with: $0) }.filter { o in
            _ = o[o.entity.propertyNames[0]]
            return !o.isDeleted
        }
    }
    let names: [Value] = [.string("One"), .string("Two"), .string("N1"), .string("N2"), .null]
    for step in 0..<Int.random(in: 1...3, using: &r) {
        let fresh = fresh * 10 + Int64(step)
        switch Int.random(in: 0..<11, using: &r) {
        case 0:
            if let a = alive("Artist").randomElement(using: &r) { try? a.setValue(names.randomElement(using: &r)!, forKey: "name") }
        case 1:
            if let a = alive("Album").randomElement(using: &r) { try? a.setValue(.string(["Album", "T1", "T2"].randomElement(using: &r)!), forKey: "title") }
        case 2:  // changed and changed back within the turn
            if let a = alive("Artist").randomElement(using: &r) {
                let old = a["name"]
                try? a.setValue(.string("temporary"), forKey: "name")
                try? a.setValue(old, forKey: "name")
            }
        case 3:  // to-one move
            if let album = alive("Album").randomElement(using: &r) {
                let artist = Bool.random(using: &r) ? alive("Artist").randomElement(using: &r) : nil
                try? album.setRelatedObject(artist, forKey: "artist")
            }
        case 4:  // to-many reorder
            if let artist = alive("Artist").first(where: { $0.relatedObjects(forKey: "albums").count > 1 }) {
                try? artist.setRelatedObjects(artist.relatedObjects(forKey: "albums").reversed(), forKey: "albums")
            }
        case 5:
            let album = c.insert(Album.self)
            album.albumID = Int(fresh)
            album.title = "new"
            if let artist = alive("Artist").randomElement(using: &r) { try? album.setRelatedObject(artist, forKey: "artist") }
            new.append(album.objectID)
        case 6:
            let artist = c.insert(Artist.self)
            artist.artistID = Int(fresh)
            new.append(artist.objectID)
        case 7:
            let song = c.insert(Song.self)
            song.songID = UUID(uuid: (UInt8(truncatingIfNeeded: fresh), UInt8(truncatingIfNeeded: fresh >> 8), UInt8(truncatingIfNeeded: fresh >> 16),
                                      0x77, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 1))
            song.title = "new"
            song.milliseconds = 1
            if let album = alive("Album").randomElement(using: &r) { try? song.setRelatedObject(album, forKey: "album") }
            new.append(song.objectID)
        case 8, 9:  // deletion (an album's songs first, mostly, so that `deny` holds)
            let entity = ["Artist", "Album", "Song"].randomElement(using: &r)!
            if let object = alive(entity).randomElement(using: &r) {
                if Int.random(in: 0..<4, using: &r) > 0 {
                    let albums = entity == "Artist" ? object.relatedObjects(forKey: "albums") : entity == "Album" ? [object] : []
                    for album in albums { for song in album.relatedObjects(forKey: "songs") { c.delete(song) } }
                }
                c.delete(object)
            }
        default:  // changed, then deleted
            if let a = alive("Song").randomElement(using: &r) {
                try? a.setValue(.string("doomed"), forKey: "title")
                c.delete(a)
            }
        }
    }
    return new
}

/// What a did-save says against what its target holds after it: for a save to the store, a
/// new transaction whose rows have the values listed; for a save into a parent, the parent
/// showing the listed keys with the listed values, the insertions alive and the deletions gone.
@Sendable func names(_ id: ObjectID) -> [String] { Fixtures.songbook.entity(named: id.entity)!.propertyNames }

func didSaveProblems(_ label: String, _ save: DidSave, context: ObjectContext, store: Store, since: UInt64) async -> [String] {
    var problems: [String] = []
    if let parent = context.parentContext {
        let shown = await parent.perform { p in
            Dictionary(uniqueKeysWithValues: (save.inserted + save.updated + save.deleted).map { id in
                let o = p.object(with: id)
                _ = o[names(id)[0]]
                return (id, o.isDeleted ? nil : o.storage)
            })
        }
        for id in save.inserted where shown[id]! == nil { problems.append("\(label): \(id) listed inserted, not in the parent") }
        for id in save.deleted where shown[id]! != nil { problems.append("\(label): \(id) listed deleted, alive in the parent") }
        for id in save.updated {
            guard let values = shown[id]!, let listed = save.values[id] else { problems.append("\(label): \(id) listed updated, gone in the parent"); continue }
            for key in save.changedKeys[id] ?? [] {
                let i = names(id).firstIndex(of: key)!
                if values[i] != listed[i] { problems.append("\(label): \(id).\(key) listed as \(listed[i]), the parent holds \(values[i])") }
            }
        }
    } else {
        let generation = store.currentGeneration
        guard let transaction = save.transaction, transaction > since else {
            problems.append("\(label): did-save of transaction \(save.transaction.map(String.init) ?? "nil"), committed before the save (\(since)), lists \(save.updated.count) updated")
            return problems
        }
        for id in save.inserted + save.updated {
            guard let row = generation.object(id) else { problems.append("\(label): \(id) listed, not in the store"); continue }
            if row.version != transaction { problems.append("\(label): \(id) listed, not written by transaction \(transaction)") }
            if let listed = save.values[id], listed != row.values { problems.append("\(label): \(id) values listed differ from the store's") }
        }
        for id in save.deleted where generation.object(id) != nil { problems.append("\(label): \(id) listed deleted, in the store") }
    }
    return problems
}

/// Objects-did-change and did-save checked against what a context shows before and after
/// each of many random operations (edits, saves, rollbacks, resets, refreshes, merges of
/// commits and of siblings' saves, the parent's saves), in root and child contexts.
@Suite struct ContextNotificationPropertyTests {
    enum Op: String, CaseIterable { case edit, save, rollback, reset, refresh, refreshMerging, mergeCommit, mergeSibling, parentSave }

    @Test("objects-did-change agrees with what the context shows, turn by turn, over random operations",
          arguments: [(Tier.root, UInt64(1)), (.root, 2), (.root, 3), (.child, 4), (.child, 5), (.child, 6)])
    func randomOperations(tier: Tier, seed: UInt64) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let c = f.context
        var ids = [o.a1, o.a2, o.a3, o.x, o.y, o.s]
        var rng = SeededGenerator(seed: seed)
        let policy = [MergePolicy.error, .storeWins, .contextWins].randomElement(using: &rng)!
        await c.perform { $0.mergePolicy = policy }
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        let otherSaves = other.didSave()
        let sibling = tier == .child ? ObjectContext(parent: f.ancestors[0], name: "sibling") : nil
        let siblingSaves = sibling?.didSave()
        let changes = c.objectsDidChange()
        let ownSaves = c.didSave()
        var problems: [String] = []
        var fresh: Int64 = 1_000
        for step in 0..<150 {
            var op = Op.allCases.randomElement(using: &rng)!
            if op == .edit || (op == .reset && Int.random(in: 0..<3, using: &rng) > 0) { op = .edit }
            if tier == .root && (op == .mergeSibling || op == .parentSave) { op = .mergeCommit }
            fresh += 1
            let (seedNow, freshNow, known) = (rng.next(), fresh, ids)
            // Work elsewhere first: it must not show in this context.
            var merging: DidSave?
            if op == .mergeCommit || op == .mergeSibling {
                let (source, saves) = op == .mergeCommit ? (other, otherSaves) : (sibling!, siblingSaves!)
                await source.reset()
                ids += await source.perform { randomEdits($0, ids: known, seed: seedNow ^ 0x5555, fresh: freshNow + 500_000) }
                if await source.perform({ $0.hasChanges }) {
                    do {
                        try await source.save()
                        merging = await firstElement(of: saves, timeout: .seconds(10))
                    } catch {
                        await source.rollback()
                    }
                }
                if merging == nil { continue }
            }
            let before = await c.perform { $0.shownSnapshot() }
            switch op {
            case .edit:
                ids += await c.perform { randomEdits($0, ids: known, seed: seedNow, fresh: freshNow) }
            case .save:
                let had = await c.perform { $0.hasChanges }
                let generationBefore = f.store.currentGeneration.transaction
                var saved = false
                do { try await c.save(); saved = had } catch {}
                if saved {
                    if let save = await firstElement(of: ownSaves, timeout: .seconds(10)) {
                        problems += await didSaveProblems("step \(step) save", save, context: c, store: f.store, since: generationBefore)
                    } else {
                        problems.append("step \(step) save: no did-save")
                    }
                }
            case .rollback:
                await c.rollback()
            case .reset:
                await c.reset()
            case .refresh, .refreshMerging:
                let merging = op == .refreshMerging
                await c.perform { c in
                    var r = SeededGenerator(seed: seedNow)
                    if let object = c.registeredObjects.filter({ $0.isLoaded && $0.objectID.number != 0 }).randomElement(using: &r) {
                        c.refresh(object, mergeChanges: merging)
                    }
                }
            case .mergeCommit, .mergeSibling:
                await c.merge(merging!)
            case .parentSave:
                do { try await f.ancestors[0].save() } catch { await f.ancestors[0].rollback() }
            }
            let after = await c.perform { $0.shownSnapshot() }
            let posted = try await postedChanges(changes, of: c)
            problems += notificationProblems("step \(step) \(op)", before: before, after: after, posted: posted, oneTurn: true)
        }
        #expect(problems.isEmpty, "\(problems.count) problems (policy \(policy)):\n\(problems.prefix(40).joined(separator: "\n"))")
        await f.close()
    }

    @Test("quick successive commits merged automatically: one notification each, in order, none lost", arguments: [Tier.root, .mainRoot])
    func automaticMergesInOrder(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        _ = try await seedSongbook(f.store)
        let writer = ObjectContext(coordinator: f.coordinator, name: "writer")
        await f.context.perform { $0.automaticallyMergesChanges = true }
        let changes = f.context.objectsDidChange()
        var inserted: [ObjectID] = []
        for i in 0..<40 {
            inserted.append(await writer.perform { c in
                let artist = c.insert(Artist.self)
                artist.artistID = 2_000 + i
                return artist.objectID
            })
            try await writer.save()
        }
        let last = inserted.last!
        let seen = try await withTimeout(30, "the merges") {
            var seen: [ObjectsDidChange] = []
            for await change in changes {
                seen.append(change)
                if change.merged.contains(last) { break }
            }
            return seen
        }
        #expect(seen.map(\.merged) == inserted.map { Set([$0]) })
        await f.close()
    }
}
