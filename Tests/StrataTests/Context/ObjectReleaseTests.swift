import Foundation
import Testing
@testable import Strata

/// A context lets go of unchanged objects nothing else refers to (as Core Data holds them
/// weakly), so a long-lived context that walks many objects stays bounded; objects someone
/// holds keep their identity, and objects with changes are never let go. So are objects that
/// no longer exist — tombstones, and objects inserted and deleted before any save — which,
/// asked for again, are missing.
@Suite struct ObjectReleaseTests {
    static let count = 3 * ObjectGraph.minimumReleaseThreshold

    /// A store of `count` artists, through the store directly.
    static func seed(_ store: Store) async throws -> [ObjectID] {
        let ids = store.allocateObjectIDs(for: "Artist", count: count)
        try await store.commit(ChangeSet(author: "seed", inserted: ids.enumerated().map { i, id in
            Songbook.artist(id, artistID: Int64(i + 1), name: "Artist \(i + 1)")
        }))
        return ids
    }

    @Test("a context walking many objects in turns of work holds a bounded number", arguments: [Tier.root, .child])
    func walkingStaysBounded(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let ids = try await Self.seed(f.store)
        let batch = 1_000
        var largest = 0
        for start in stride(from: 0, to: ids.count, by: batch) {
            let slice = Array(ids[start..<min(start + batch, ids.count)])
            largest = max(largest, await f.context.perform { c in
                for id in slice { _ = c.object(with: id, as: Artist.self).name }
                return c.registeredObjects.count
            })
        }
        let held = await f.context.perform { $0.registeredObjects.count }
        #expect(held < ids.count, "every object walked is still registered")
        #expect(largest <= 2 * ObjectGraph.minimumReleaseThreshold + batch)
        // A fresh instance reads what the store has.
        let name = await f.context.perform { c in c.object(with: ids[0], as: Artist.self).name }
        #expect(name == "Artist 1")
        await f.close()
    }

    @Test("objects someone holds keep their identity; changed objects are never let go")
    func heldAndChangedObjectsStay() async throws {
        let f = try ContextFixture(.root)
        let ids = try await Self.seed(f.store)
        let (identical, pending) = await f.context.perform { c -> (Bool, Int) in
            let held = ids.prefix(100).map { c.object(with: $0, as: Artist.self) }
            for id in ids.dropFirst(100) { c.object(with: id, as: Artist.self).name = "Renamed" }  // not held
            c.processPendingChanges()  // the end of a turn: a release pass runs
            for id in ids.dropFirst(100) { _ = c.object(with: id, as: Artist.self) }
            c.processPendingChanges()
            let identical = zip(held, ids.prefix(100)).allSatisfy { $0.0 === c.object(with: $0.1, as: Artist.self) }
            return (identical, c.updatedObjects.count)
        }
        #expect(identical, "an object held by its user was let go and made again")
        #expect(pending == ids.count - 100)
        try await f.context.save()
        let renamed = f.store.currentGeneration.objects(of: "Artist").filter { $0.values[1] == .string("Renamed") }.count
        #expect(renamed == ids.count - 100, "changes of objects nobody held were lost")
        await f.close()
    }

    @Test("an object let go and asked for again after a merge shows the merged values")
    func releasedObjectsReloadMergedValues() async throws {
        let p = try ContextMergeTests.Pair()
        let ids = try await Self.seed(p.store)
        await p.a.perform { c in for id in ids { _ = c.object(with: id, as: Artist.self).name } }
        let released = await p.a.perform { c in c.registeredObject(for: ids[0]) == nil }
        #expect(released)
        let saves = p.b.didSave()
        await p.b.perform { c in c.object(with: ids[0], as: Artist.self).name = "Merged" }
        try await p.b.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await p.a.merge(save)
        let name = await p.a.perform { c in c.object(with: ids[0], as: Artist.self).name }
        #expect(name == "Merged")
        await p.close()
    }

    @Test("a unique key changed by a merge is not found on an object let go since")
    func uniqueLookupAfterRelease() async throws {
        let p = try ContextMergeTests.Pair()
        let ids = try await Self.seed(p.store)
        // a renames the first artist's key and saves; then walks every artist, letting go.
        await p.a.perform { c in c.object(with: ids[0], as: Artist.self).artistID = 1_000_000 }
        try await p.a.save()
        await p.a.perform { c in for id in ids { _ = c.object(with: id, as: Artist.self).name } }
        let saves = p.b.didSave()
        await p.b.perform { c in c.object(with: ids[0], as: Artist.self).artistID = 2_000_000 }
        try await p.b.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await p.a.merge(save)
        let (old, new) = await p.a.perform { c in
            (c.find(Artist.self, uniqueKey: .int(1_000_000))?.objectID, c.find(Artist.self, uniqueKey: .int(2_000_000))?.objectID)
        }
        #expect(old == nil, "a key the object no longer has still finds it")
        #expect(new == ids[0])
        await p.close()
    }
}

extension ObjectReleaseTests {
    @Test("a context that retains its registered objects keeps every one until reset")
    func retainingContextKeepsEverything() async throws {
        let f = try ContextFixture(.root)
        let ids = try await Self.seed(f.store)
        await f.context.perform { $0.retainsRegisteredObjects = true }
        for start in stride(from: 0, to: ids.count, by: 1_000) {
            let slice = Array(ids[start..<min(start + 1_000, ids.count)])
            await f.context.perform { c in for id in slice { _ = c.object(with: id, as: Artist.self).name } }
        }
        let held = await f.context.perform { $0.registeredObjects.count }
        #expect(held == ids.count)
        await f.close()
    }
}

extension ObjectReleaseTests {
    /// A context inserting objects with unique keys and saving them, over and over, keeps no
    /// record of the saved ones' keys (its parent's view answers for them), and still finds
    /// them by key.
    @Test("the unique keys of saved objects are not kept by the context that saved them", arguments: [Tier.root, .child])
    func savedUniqueKeysAreForgotten(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        for round in 0..<20 {
            try await f.context.perform { c in
                for k in 0..<50 {
                    let artist = c.insert(Artist.self)
                    artist.artistID = round * 50 + k + 1
                    artist.name = "Artist \(round * 50 + k + 1)"
                }
                try await c.save()
            }
        }
        let (recorded, found) = await f.context.perform { c in
            (c.graph.pendingUniques.values.reduce(0) { $0 + $1.count },
             c.find(Artist.self, uniqueKey: .int(1))?.name)
        }
        #expect(recorded == 0, "\(recorded) keys of saved objects still recorded")
        #expect(found == "Artist 1")
        await f.close()
    }
}

extension ObjectReleaseTests {
    /// Keys an object set and then gave up, and keys of objects inserted and deleted before
    /// any save, are not kept either: after a save the record holds only keys of objects
    /// that still hold them as pending changes, and lookups by key agree with the objects.
    @Test("after a save, the context keeps no unique key its objects no longer hold", arguments: [Tier.root, .child])
    func abandonedUniqueKeysAreForgotten(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        for round in 0..<10 {
            try await f.context.perform { c in
                let base = round * 1_000
                for k in 0..<20 {
                    // Inserted and deleted before any save: nothing to save.
                    let discarded = c.insert(Artist.self)
                    discarded.artistID = base + k + 1
                    c.delete(discarded)
                    // Its key changed twice before the save.
                    let renamed = c.insert(Artist.self)
                    renamed.artistID = base + 100 + k
                    renamed.artistID = base + 200 + k
                    renamed.artistID = base + 300 + k
                }
                try await c.save()
                // Saved objects deleted and saved again.
                for artist in c.objects(of: Artist.self) where artist.artistID >= base + 300 && artist.artistID < base + 310 {
                    c.delete(artist)
                }
                try await c.save()
            }
        }
        let (recorded, pendingKey, deletedKey, renamedKey, abandonedKey) = await f.context.perform { c in
            let pending = c.insert(Artist.self)
            pending.artistID = 5_000
            return (c.graph.pendingUniques.values.reduce(0) { $0 + $1.count },
                    c.find(Artist.self, uniqueKey: .int(5_000))?.artistID,
                    c.find(Artist.self, uniqueKey: .int(300))?.artistID,
                    c.find(Artist.self, uniqueKey: .int(315))?.artistID,
                    c.find(Artist.self, uniqueKey: .int(115))?.artistID)
        }
        #expect(recorded == 1, "\(recorded) unique keys recorded; one object holds one as a pending change")
        #expect(pendingKey == 5_000)
        #expect(deletedKey == nil)
        #expect(renamedKey == 315)
        #expect(abandonedKey == nil)
        await f.close()
    }
}

extension ObjectReleaseTests {
    /// Tombstones — objects whose deletion a context saved or merged — and objects inserted
    /// and deleted before any save are let go like unchanged objects when nothing outside the
    /// context holds them: a long-lived context (a stack's view or writer context, following
    /// imports that delete) does not keep an instance of every object it saw deleted.
    @Test("tombstones and discarded inserts nobody holds are let go like unchanged objects")
    func tombstonesAreLetGo() async throws {
        let p = try ContextMergeTests.Pair()
        let ids = try await Self.seed(p.store)
        // a holds 4,000 artists; b deletes them and a merges the deletions; a deletes 4,000
        // others itself and discards 4,096 inserts. (a keeps every object until the pass
        // below, so that the tombstones can be counted first.)
        let merged = ids.prefix(4_000), own = ids.dropFirst(4_000).prefix(4_000)
        await p.a.perform { c in
            c.retainsRegisteredObjects = true
            for id in merged { _ = c.object(with: id, as: Artist.self).name }
        }
        let saves = p.b.didSave()
        try await p.b.perform { c in
            for id in merged { c.delete(c.object(with: id)) }
            try await c.save()
        }
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await p.a.merge(save)
        try await p.a.perform { c in
            for id in own { c.delete(c.object(with: id)) }
            for n in 0..<ObjectGraph.minimumReleaseThreshold { c.delete(c.insert(Artist.self)); _ = n }
            try await c.save()
        }
        let (tombstones, discarded) = await p.a.perform { c in
            (c.registeredObjects.filter(\.isDeletedElsewhere).count,
             c.registeredObjects.filter { $0.isDeleted && !$0.isDeletedElsewhere }.count)
        }
        #expect(tombstones == merged.count + own.count, "precondition: the deleted artists are tombstones")
        #expect(discarded == ObjectGraph.minimumReleaseThreshold, "precondition: the discarded inserts are registered")
        let held = await p.a.perform { c in
            c.retainsRegisteredObjects = false
            c.processPendingChanges()  // the end of a turn: a release pass runs
            return c.registeredObjects.count
        }
        #expect(held < ObjectGraph.minimumReleaseThreshold, "\(held) tombstones and discarded inserts nobody holds are still registered")
        await p.close()
    }

    /// The code of the error `body` throws, or `nil`.
    static func code(_ body: () throws -> Void) -> StoreError.Code? {
        do {
            try body()
            return nil
        } catch {
            return (error as? StoreError)?.code
        }
    }

    /// A tombstone someone holds keeps its identity, its last values and `objectDeleted`. One
    /// nobody holds is let go; asked for again by ID, the object is one the context's view
    /// does not hold — missing, as any such ID: `objectNotFound` from `value(forKey:)`,
    /// `existingObject(with:)` and setters, and empty values. So is an object inserted and
    /// deleted before any save.
    @Test("a held tombstone stays itself; one nobody holds is let go, and asked for again is missing")
    func heldAndReleasedTombstones() async throws {
        let p = try ContextMergeTests.Pair()
        let ids = try await Self.seed(p.store)
        let (kept, gone) = (ids[0], ids[1])
        // a reads as of before the deletions until it merges them.
        await p.a.perform { _ = $0.pinQueryGeneration() }
        let saves = p.b.didSave()
        try await p.b.perform { c in
            c.delete(c.object(with: kept))
            c.delete(c.object(with: gone))
            try await c.save()
        }
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        let failures = await p.a.perform { c -> [String] in
            var failures: [String] = []
            let held = c.object(with: kept, as: Artist.self)
            _ = held.name
            _ = c.object(with: gone, as: Artist.self).name
            let discarded = { () -> ObjectID in
                let artist = c.insert(Artist.self)
                artist.name = "Discarded"
                c.delete(artist)
                return artist.objectID
            }()
            c.merge(save)
            if !held.isDeletedElsewhere || c.registeredObject(for: gone)?.isDeletedElsewhere != true {
                failures.append("precondition: the merged deletions made tombstones")
            }
            for id in ids.dropFirst(2) { _ = c.object(with: id, as: Artist.self).name }
            c.processPendingChanges()  // the end of a turn: a release pass runs
            // Held: the same instance, still a tombstone with its last values.
            if c.object(with: kept) !== held { failures.append("a held tombstone was made again") }
            if Self.code({ _ = try held.value(forKey: "name") }) != .objectDeleted { failures.append("a held tombstone does not throw objectDeleted") }
            if held.name != "Artist 1" { failures.append("a held tombstone lost its last values: \(held)") }
            // Not held: let go, and missing when asked for again.
            for (id, what) in [(gone, "tombstone"), (discarded, "discarded insert")] {
                if c.registeredObject(for: id) != nil { failures.append("a \(what) nobody holds is still registered"); continue }
                let again = c.object(with: id, as: Artist.self)
                if Self.code({ _ = try again.value(forKey: "name") }) != .objectNotFound { failures.append("a \(what) let go is not missing: \(again)") }
                if again.name != nil || !again.isDeletedElsewhere { failures.append("a \(what) let go does not read as missing: \(again)") }
                if Self.code({ try again.setValue(.string("x"), forKey: "name") }) != .objectNotFound { failures.append("a \(what) let go can be changed") }
                if Self.code({ _ = try c.existingObject(with: id) }) != .objectNotFound { failures.append("existingObject finds a \(what) let go") }
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures)")
        await p.close()
    }

    /// A child with a pending change to an object its parent deleted, saved and let go:
    /// the child's save is the conflict it is while the parent holds the tombstone, and a
    /// policy that lets the deletion win makes the child's object a tombstone, leaving
    /// nothing of it in the parent.
    @Test("a child's save changing an object its parent deleted, saved and let go is the conflict it was")
    func childChangeToReleasedTombstone() async throws {
        let f = try ContextFixture(.child)
        let ids = try await Self.seed(f.store)
        let (parent, child, target) = (f.ancestors[0], f.context, ids[0])
        await child.perform { c in c.object(with: target, as: Artist.self).name = "Child" }
        try await parent.perform { c in
            c.delete(c.object(with: target))
            try await c.save()
        }
        let released = await parent.perform { c in
            for id in ids.dropFirst() { _ = c.object(with: id, as: Artist.self).name }
            c.processPendingChanges()  // the end of a turn: a release pass runs
            return c.registeredObject(for: target) == nil
        }
        #expect(released, "precondition: the parent let its tombstone go")
        let error = await #expect(throws: StoreError.self) { try await child.save() }
        #expect(error?.code == .conflict)
        #expect(error?.conflicts.map(\.object) == [target] && error?.conflicts.first?.key == nil)
        await child.perform { $0.mergePolicy = .storeWins }
        try await child.save()
        let (tombstone, childPending) = await child.perform { c in
            (c.registeredObject(for: target)?.isDeletedElsewhere == true, c.hasChanges)
        }
        #expect(tombstone, "the child's object is not a tombstone after its parent's deletion won")
        #expect(!childPending)
        let (parentPending, parentHolds) = await parent.perform { c in
            (c.hasChanges, c.registeredObject(for: target).map { !$0.isDeleted } ?? false)
        }
        #expect(!parentPending && !parentHolds, "the child's change brought the deleted object back in its parent")
        #expect(f.store.currentGeneration.object(target) == nil)
        await f.close()
    }

    /// Merges naming deleted objects a context let go — the same save merged again, later
    /// saves — bring nothing back: fetches, live results and lookups by ID agree that the
    /// objects are gone.
    @Test("merges naming deleted objects a context let go neither fail nor bring them back", arguments: [Tier.root, .child])
    func mergesAfterTombstonesAreLetGo(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let ids = try await Self.seed(f.store)
        let deleted = Array(ids.prefix(10))
        // The context reads as of before the deletions until it merges them.
        await (f.ancestors.last ?? f.context).perform { _ = $0.pinQueryGeneration() }
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        let saves = other.didSave()
        try await other.perform { c in
            for id in deleted { c.delete(c.object(with: id)) }
            try await c.save()
        }
        let first = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        let more = other.didSave()
        try await other.perform { c in
            c.object(with: ids[10], as: Artist.self).name = "Merged"
            let artist = c.insert(Artist.self)
            artist.artistID = 1_000_000
            artist.name = "New"
            try await c.save()
        }
        let second = try #require(await firstElement(of: more, timeout: .seconds(10)))
        let ancestors = f.ancestors
        let failures = await f.context.perform { c -> [String] in
            var failures: [String] = []
            let request = FetchRequest(entity: "Artist", sortBy: [SortKey("artistID")])
            let results = try! c.fetchedResults(Artist.self, request: request)
            for id in deleted { _ = c.object(with: id, as: Artist.self).name }
            for ancestor in ancestors.reversed() { await ancestor.merge(first); await ancestor.merge(second) }
            c.merge(first)
            if deleted.contains(where: { c.registeredObject(for: $0)?.isDeletedElsewhere != true }) {
                failures.append("precondition: the merged deletions made tombstones")
            }
            for id in ids.dropFirst(10) { _ = c.object(with: id, as: Artist.self).name }
            c.processPendingChanges()  // the end of a turn: a release pass runs
            if deleted.contains(where: { c.registeredObject(for: $0) != nil }) { failures.append("precondition: the tombstones were let go") }
            c.merge(first)
            c.merge(second)
            c.processPendingChanges()
            let back = deleted.filter { c.registeredObject(for: $0).map { !$0.isDeleted } ?? false }
            if !back.isEmpty { failures.append("merges brought back \(back)") }
            let fetched = try! c.fetchIDs(request)
            if fetched.count != ids.count - deleted.count + 1 || fetched.contains(where: deleted.contains) {
                failures.append("a fetch finds \(fetched.count) artists, deleted ones among them: \(fetched.filter(deleted.contains))")
            }
            if results.snapshot.sections.flatMap(\.ids) != fetched { failures.append("live results disagree with a fetch") }
            if Self.code({ _ = try c.existingObject(with: deleted[0]) }) != .objectNotFound { failures.append("existingObject finds a deleted object") }
            if c.object(with: ids[10], as: Artist.self).name != "Merged" { failures.append("the merged change is not shown") }
            return failures
        }
        #expect(failures.isEmpty, "\(failures)")
        await f.close()
    }
}

extension ObjectReleaseTests {
    /// A tombstone the context's view still holds — a child merging a deletion its pinned
    /// parent has not caught up with — is kept: a fresh instance would load alive.
    @Test("a tombstone the context's view still holds is kept")
    func tombstoneStillInViewIsKept() async throws {
        let f = try ContextFixture(.child)
        let ids = try await Self.seed(f.store)
        let (parent, child, target) = (f.ancestors[0], f.context, ids[0])
        await parent.perform { _ = $0.pinQueryGeneration() }
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        let saves = other.didSave()
        try await other.perform { c in
            c.delete(c.object(with: target))
            try await c.save()
        }
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        let (kept, code) = await child.perform { c in
            _ = c.object(with: target, as: Artist.self).name
            c.merge(save)
            for id in ids.dropFirst() { _ = c.object(with: id, as: Artist.self).name }
            c.processPendingChanges()  // the end of a turn: a release pass runs
            return (c.registeredObject(for: target)?.isDeletedElsewhere == true,
                    Self.code { _ = try c.object(with: target).value(forKey: "name") })
        }
        #expect(kept, "a tombstone the view still holds was let go")
        #expect(code == .objectDeleted)
        await f.close()
    }
}

extension ObjectReleaseTests {
    /// A tombstone a pending change refers to is kept: the save checks the references of its
    /// changes against the deleted objects the context holds, and refuses the change as it
    /// did (in a child, before it reaches the parent). Merging the deletion or refreshing the
    /// object has what it names let go of it (`RefreshDeletedElsewhereTests`), so the
    /// tombstone is made here directly.
    @Test("a tombstone a pending change refers to is kept, and the save still refuses the reference", arguments: [Tier.root, .child])
    func referencedTombstoneIsKept(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let filler = f.store.allocateObjectIDs(for: "Artist", count: Self.count)
        try await f.store.commit(ChangeSet(author: "seed", inserted: filler.enumerated().map { i, id in
            Songbook.artist(id, artistID: Int64(1_000 + i), name: "Artist \(i)")
        }))
        // The song moves to album y here; another context deletes y; y becomes a tombstone
        // here while the song's pending change still refers to it.
        await f.context.perform { c in c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self) }
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        try await other.perform { c in
            c.delete(c.object(with: o.y))
            try await c.save()
        }
        let (tombstone, kept) = await f.context.perform { c in
            c.graph.makeTombstone(c.object(with: o.y))
            let tombstone = c.registeredObject(for: o.y)?.isDeletedElsewhere == true
            for id in filler { _ = c.object(with: id, as: Artist.self).name }
            c.processPendingChanges()  // the end of a turn: a release pass runs
            return (tombstone, c.registeredObject(for: o.y) != nil)
        }
        #expect(tombstone, "precondition: the album is a tombstone")
        #expect(kept, "a tombstone a pending change refers to was let go")
        let error = await #expect(throws: StoreError.self) { try await f.context.save() }
        #expect(error?.code == .danglingReference && error?.object == o.s && error?.key == "album", "\(String(describing: error))")
        for ancestor in f.ancestors { #expect(await ancestor.perform { !$0.hasChanges }) }
        await f.close()
    }
}

extension ObjectReleaseTests {
    /// Live results whose updates are suspended (while the user reorders rows by hand) keep
    /// listing an object deleted meanwhile: the context keeps its tombstone, so that the row
    /// shows its last values until the results resume.
    @Test("live results whose updates are suspended keep the tombstones they list")
    func suspendedResultsKeepTheirTombstones() async throws {
        let p = try ContextMergeTests.Pair()
        let ids = try await Self.seed(p.store)
        let target = ids[0]
        await p.a.perform { _ = $0.pinQueryGeneration() }
        let saves = p.b.didSave()
        try await p.b.perform { c in
            c.delete(c.object(with: target))
            try await c.save()
        }
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        let failures = await p.a.perform { c -> [String] in
            var failures: [String] = []
            let results = try! c.fetchedResults(Artist.self, request: FetchRequest(entity: "Artist", sortBy: [SortKey("artistID")]))
            _ = results.object(at: ResultsIndexPath(section: 0, row: 0)).name
            results.suspendUpdates()
            c.merge(save)
            for id in ids.dropFirst() { _ = c.object(with: id, as: Artist.self).name }
            c.processPendingChanges()  // the end of a turn: a release pass runs
            let shown = results.object(at: ResultsIndexPath(section: 0, row: 0))
            if shown.objectID != target || shown.name != "Artist 1" || !shown.isDeletedElsewhere {
                failures.append("suspended results show \(shown) for the deleted artist")
            }
            results.resumeUpdates()
            if results.snapshot.sections.flatMap(\.ids).contains(target) { failures.append("resumed results still list the deleted artist") }
            return failures
        }
        #expect(failures.isEmpty, "\(failures)")
        await p.close()
    }
}
