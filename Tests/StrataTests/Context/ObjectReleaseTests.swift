import Foundation
import Testing
@testable import Strata

/// A context lets go of unchanged objects nothing else refers to (as Core Data holds them
/// weakly), so a long-lived context that walks many objects stays bounded; objects someone
/// holds keep their identity, and objects with changes are never let go.
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
    /// and deleted before any save are never let go: only persistent objects are. A
    /// long-lived context (a stack's view or writer context, following imports that delete)
    /// holds one instance, with its last values, for every such object it ever held.
    ///
    /// Known, not fixed: a fresh instance of a deleted object loads as *missing*, whose
    /// `value(forKey:)` throws `objectNotFound` rather than `objectDeleted` and whose
    /// properties read empty rather than the last snapshot, so letting tombstones go would
    /// change what asking again by ID gives (or needs a record of the deleted IDs, which
    /// still grows).
    @Test("tombstones and discarded inserts nobody holds are let go like unchanged objects")
    func tombstonesAreLetGo() async throws {
        let p = try ContextMergeTests.Pair()
        let ids = try await Self.seed(p.store)
        // a holds 4,000 artists (fewer than a release pass waits for); b deletes them and a
        // merges the deletions; a deletes 4,000 others itself and discards 4,096 inserts.
        let merged = ids.prefix(4_000), own = ids.dropFirst(4_000).prefix(4_000)
        await p.a.perform { c in for id in merged { _ = c.object(with: id, as: Artist.self).name } }
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
        let (held, tombstones) = await p.a.perform { c in
            c.processPendingChanges()  // the end of a turn: a release pass runs
            return (c.registeredObjects.count, c.registeredObjects.filter(\.isDeletedElsewhere).count)
        }
        #expect(tombstones == merged.count + own.count, "precondition: the deleted artists are tombstones")
        withKnownIssue("tombstones and discarded inserts are never let go") {
            #expect(held < ObjectGraph.minimumReleaseThreshold, "\(held) tombstones and discarded inserts nobody holds are still registered")
        }
        await p.close()
    }
}
