import Foundation
import Testing
@testable import Strata

/// Rollbacks after merges show the merged values: after a merge into an object with a
/// pending deletion, and after a merge that kept a conflict for the next save (merge policy
/// `error`). Merges that replace this context's own relationship changes, or delete an
/// object they made others refer to, leave both sides of every relationship in step.
@Suite struct MergeRollbackGapTests {
    typealias Pair = ContextMergeTests.Pair

    @Test("rollback after merging a save into an object with a pending deletion: values are current")
    func rollbackAfterMergeIntoDeleted() async throws {
        let p = try Pair()
        let o = try await seedSongbook(p.store)
        await p.a.perform { c in c.delete(c.object(with: o.a2, as: Artist.self)) }
        let saves = p.b.didSave()
        await p.b.perform { c in c.object(with: o.a2, as: Artist.self).name = "B" }
        try await p.b.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await p.a.merge(save)
        await p.a.rollback()
        let name = await p.a.perform { c in c.object(with: o.a2, as: Artist.self).name }
        #expect(name == "B", "rollback restored the pre-merge row")
        await p.close()
    }

    /// An album deleted by its artist's cascade has already let go of the artist (its value
    /// is nil, its base still the artist); a merged save that sets the album's artist to nil
    /// must still become its base, so that a rollback shows the album as the store has it —
    /// not with the artist back, whose albums no longer list it (fetches and live results
    /// sorted or sectioned it by the store's nil while it showed the artist).
    @Test("rollback after merging into an object its cascade deleted: values are current", arguments: [Tier.root, .child])
    func rollbackAfterMergeIntoCascadeDeleted(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let ids = try await FetchedResultsTests.commit(f.coordinator) { c in
            let artist = c.insert(Artist.self); artist.artistID = 1; artist.name = "Y"
            let album = c.insert(Album.self); album.albumID = 1; album.title = "X"; album.artist = artist
            return [artist.objectID, album.objectID]
        }
        await f.context.perform { c in
            _ = c.object(with: ids[1], as: Album.self).title
            c.delete(c.object(with: ids[0], as: Artist.self))  // cascades to the album
        }
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        let saves = other.didSave()
        await other.perform { o in o.object(with: ids[1], as: Album.self).artist = nil }
        try await other.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        for context in f.ancestors.reversed() + [f.context] { await context.merge(save) }
        await f.context.rollback()
        let (artist, albums) = await f.context.perform { c in
            (c.object(with: ids[1], as: Album.self).artist?.objectID, c.object(with: ids[0], as: Artist.self).albums.map(\.objectID))
        }
        #expect(artist == nil, "the album's artist came back as \(artist?.description ?? "nil") from before the merge")
        #expect(albums.isEmpty)
        await f.close()
    }

    /// A child saved an album into its parent, referring to an artist; another context then
    /// deletes the artist. The parent's merge lets go of the artist (a change of its own, as
    /// the album is not in the store yet — but not under `error`, which keeps the parent's
    /// changes to the artist for its next save to report), and so does the child's — where
    /// the album's base, what the parent showed, still named the artist: a rollback then
    /// brought the deleted artist back in the child only, and its fetches followed it. After
    /// a rollback the child shows what its parent shows. Also when the child had given the
    /// album another artist since.
    @Test("rollback after merging the deletion of an object a saved child change refers to", arguments: [
        (Tier.child, MergePolicy.storeWins, false), (.child, .storeWins, true), (.child, .contextWins, false), (.child, .error, false),
        (.grandchild, .storeWins, false), (.grandchild, .contextWins, true), (.grandchild, .error, false),
    ])
    func rollbackAfterMergingADeletedTarget(tier: Tier, policy: MergePolicy, movedHere: Bool) async throws {
        let f = try ContextFixture(tier)
        for context in f.ancestors + [f.context] { await context.perform { $0.mergePolicy = policy } }
        let ids = try await FetchedResultsTests.commit(f.coordinator) { c in
            let artist = c.insert(Artist.self); artist.artistID = 1; artist.name = "Y"
            let other = c.insert(Artist.self); other.artistID = 2; other.name = "Z"
            return [artist.objectID, other.objectID]
        }
        let album = try await f.context.perform { c in
            let album = c.insert(Album.self); album.albumID = 1; album.title = "X"
            album.artist = c.object(with: ids[0], as: Artist.self)
            try await c.save()
            if movedHere { album.artist = c.object(with: ids[1], as: Artist.self) }
            return album.objectID
        }
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        let saves = other.didSave()
        await other.perform { o in o.delete(o.object(with: ids[0], as: Artist.self)) }
        try await other.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        for context in f.ancestors.reversed() + [f.context] { await context.merge(save) }
        let parentShows = await f.ancestors[0].perform { c in c.object(with: album, as: Album.self).artist?.objectID }
        if policy != .error {
            #expect(parentShows == nil)
            let changed = await f.context.perform { c in c.hasChanges }
            #expect(changed == movedHere, "the merge left changes the context did not make")
        }
        await f.context.rollback()
        let (artist, fetched) = try await f.context.perform { c in
            (c.object(with: album, as: Album.self).artist?.objectID,
             try c.fetchIDs(FetchRequest(entity: "Album", predicate: try ObjectPredicate(format: "artist != nil"))))
        }
        #expect(artist == parentShows, "after a rollback the album's artist is \(artist?.description ?? "nil"), its parent's \(parentShows?.description ?? "nil")")
        #expect(fetched == (artist == nil ? [] : [album]))
        await f.close()
    }

    @Test("rollback after a conflicting merge under .error: values are current")
    func rollbackAfterConflictMerge() async throws {
        let p = try Pair()
        let o = try await seedSongbook(p.store)
        let later = Date(timeIntervalSince1970: 99)
        await p.a.perform { c in c.object(with: o.a1, as: Artist.self).name = "A" }
        let saves = p.b.didSave()
        await p.b.perform { c in
            let artist = c.object(with: o.a1, as: Artist.self)
            artist.name = "B"
            artist.createdAt = later
        }
        try await p.b.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await p.a.merge(save)
        let merged = await p.a.perform { c in c.object(with: o.a1, as: Artist.self).createdAt }
        #expect(merged == later)
        await p.a.rollback()
        let (name, created) = await p.a.perform { c in
            let artist = c.object(with: o.a1, as: Artist.self)
            return (artist.name, artist.createdAt)
        }
        #expect(name == "B")
        #expect(created == later, "rollback took back a value already merged")
        await p.close()
    }

    @Test("merge under storeWins of a moved to-one keeps inverses consistent")
    func mergeMoveInverse() async throws {
        let p = try Pair()
        let o = try await seedSongbook(p.store)
        await p.a.setMergePolicyStoreWins()
        await p.a.perform { c in
            _ = c.object(with: o.a3, as: Artist.self).albums  // load a3
            c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
        }
        let saves = p.b.didSave()
        await p.b.perform { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a3, as: Artist.self) }
        try await p.b.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await p.a.merge(save)
        let (artist, a2Albums, a3Albums) = await p.a.perform { c in
            (c.object(with: o.x, as: Album.self).artist?.objectID,
             c.object(with: o.a2, as: Artist.self).albums.map(\.objectID),
             c.object(with: o.a3, as: Artist.self).albums.map(\.objectID))
        }
        #expect(artist == o.a3)
        #expect(a3Albums == [o.x])
        #expect(a2Albums == [], "a2.albums still lists x, whose artist is a3")
        try await p.a.save()
        #expect(p.store.currentGeneration.row(o.a2)?.values[albumsIndex(p.store)] == .objects([]))
        await p.close()
    }

    @Test("merge under a policy keeping our move of a to-one: the object the save moved it to lets go of it",
          arguments: [MergePolicy.contextWins, .overwrite])
    func mergeKeepsOurMove(policy: MergePolicy) async throws {
        let p = try Pair()
        let o = try await seedSongbook(p.store)
        await p.a.setMergePolicy(policy)
        await p.a.perform { c in
            _ = c.object(with: o.a3, as: Artist.self).albums  // load a3
            c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
        }
        let saves = p.b.didSave()
        await p.b.perform { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a3, as: Artist.self) }
        try await p.b.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await p.a.merge(save)
        let (artist, a2Albums, a3Albums, disagreements) = await p.a.perform { c in
            (c.object(with: o.x, as: Album.self).artist?.objectID,
             c.object(with: o.a2, as: Artist.self).albums.map(\.objectID),
             c.object(with: o.a3, as: Artist.self).albums.map(\.objectID), relationshipDisagreements(c))
        }
        #expect(artist == o.a2 && a2Albums == [o.x])
        #expect(a3Albums == [], "a3.albums still lists x, whose artist is a2")
        #expect(disagreements.isEmpty, "\(disagreements)")
        try await p.a.save()  // before: inverseViolation
        let g = p.store.currentGeneration
        #expect(g.value(o.x, "artist") == .object(o.a2) && g.value(o.a3, "albums") == .objects([]))
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        await p.close()
    }

    /// (The object deleted has a change here — the inverse of ours — so under `error` the
    /// merge keeps it as a conflict: `DeletionConflictTests`. Under `storeWins` the deletion
    /// wins and the references our changes made to it go.)
    @Test("merged deletion of an object this context made others refer to: the references go")
    func mergedDeletionNullifiesOwnReferences() async throws {
        let p = try Pair()
        let o = try await seedSongbook(p.store)
        await p.a.setMergePolicy(.storeWins)
        await p.a.perform { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        let saves = p.b.didSave()
        await p.b.perform { c in c.delete(c.object(with: o.a2, as: Artist.self)) }
        try await p.b.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await p.a.merge(save)
        let (artist, a1Albums) = await p.a.perform { c in
            (c.object(with: o.x, as: Album.self).artist?.objectID, c.object(with: o.a1, as: Artist.self).albums.map(\.objectID))
        }
        #expect(artist == nil, "x still refers to the deleted a2")
        #expect(a1Albums == [])
        try await p.a.save()  // before: danglingReference
        #expect(p.store.currentGeneration.row(o.x)?.values[artistIndex(p.store)] == .null)
        await p.close()
    }

    @Test("merge under rollback of a to-many change: the objects it moved go back")
    func rollbackPolicyRestoresMovedObjects() async throws {
        let p = try Pair()
        let o = try await seedSongbook(p.store)
        await p.a.setMergePolicy(.rollback)
        await p.a.perform { c in
            let a2 = c.object(with: o.a2, as: Artist.self)
            a2.albums = [c.object(with: o.x, as: Album.self)]
            a2.name = "A"
        }
        let saves = p.b.didSave()
        await p.b.perform { c in c.object(with: o.a2, as: Artist.self).name = "B" }
        try await p.b.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await p.a.merge(save)
        let (artist, a1Albums, a2Albums, pending) = await p.a.perform { c in
            (c.object(with: o.x, as: Album.self).artist?.objectID, c.object(with: o.a1, as: Artist.self).albums.map(\.objectID),
             c.object(with: o.a2, as: Artist.self).albums.map(\.objectID), c.hasChanges)
        }
        #expect(a2Albums == [])
        #expect(artist == o.a1, "x still refers to a2, which no longer lists it")
        #expect(a1Albums == [o.x])
        #expect(!pending, "every change of this context was rolled back by the policy")
        await p.close()
    }

}

private func albumsIndex(_ store: Store) -> Int { store.schema.entity(named: "Artist")!.propertyIndex(named: "albums")! }
private func artistIndex(_ store: Store) -> Int { store.schema.entity(named: "Album")!.propertyIndex(named: "artist")! }

extension ObjectContext {
    func setMergePolicyStoreWins() { mergePolicy = .storeWins }
    func setMergePolicy(_ policy: MergePolicy) { mergePolicy = policy }
}
