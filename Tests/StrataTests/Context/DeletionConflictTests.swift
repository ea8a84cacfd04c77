import Foundation
import Testing
@testable import Strata

/// Changes to an object another context deleted are a conflict, never dropped without a
/// word: in a merge, and in a child's save into a parent that deleted the object — as the
/// store reports an update of an object deleted since it was read.
@Suite struct DeletionConflictTests {
    typealias Pair = ContextMergeTests.Pair

    @Test("a merged deletion of an object with changes here is a conflict resolved by the merge policy",
          arguments: [MergePolicy.error, .storeWins, .contextWins])
    func mergedDeletionOfChangedObject(policy: MergePolicy) async throws {
        let p = try Pair()
        let o = try await seedSongbook(p.store)
        await p.a.setMergePolicy(policy)
        await p.a.perform { c in c.object(with: o.a2, as: Artist.self).name = "ours" }
        let saves = p.b.didSave()
        await p.b.perform { c in c.delete(c.object(with: o.a2, as: Artist.self)) }
        try await p.b.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        let conflicts = await p.a.merge(save)
        #expect(conflicts.map(\.object) == [o.a2] && conflicts.first?.key == nil, "\(conflicts)")
        let (deleted, pending) = await p.a.perform { c in (c.object(with: o.a2).isDeleted, c.hasChanges) }
        if policy == .error {
            #expect(!deleted && pending, "under error the change stays for the next save to report")
            let refused = await #expect(throws: StoreError.self) { try await p.a.save() }
            #expect(refused?.code == .conflict)
            let (afterRollback, stillPending) = await p.a.perform { c in
                c.rollback()
                return (c.object(with: o.a2).isDeleted, c.hasChanges)
            }
            #expect(afterRollback && !stillPending, "a rollback lets the deletion win")
        } else {
            #expect(deleted && !pending, "the deletion wins; the conflict was reported")
        }
        #expect(p.store.currentGeneration.object(o.a2) == nil)
        await p.close()
    }

    @Test("a deletion of a song changed elsewhere that the merge policy drops saves the rest, the song staying on its album",
          arguments: [false, true], [MergePolicy.storeWins, .rollback])
    func droppedDeletionThroughContexts(separateCoordinators: Bool, policy: MergePolicy) async throws {
        let p = try Pair(separateCoordinators: separateCoordinators)
        let o = try await seedSongbook(p.store)
        await p.a.setMergePolicy(policy)
        _ = await p.a.perform { c in c.object(with: o.s, as: Song.self).title }
        await p.b.perform { c in c.object(with: o.s, as: Song.self).title = "b's" }
        try await p.b.save()
        // S.album is nullify: X's songs lose S in a's save.
        await p.a.perform { c in
            c.delete(c.object(with: o.s))
            c.object(with: o.a2, as: Artist.self).name = "a's"
        }
        await #expect(throws: Never.self, "\(policy)") { try await p.a.save() }
        let g = p.store.currentGeneration
        #expect(g.value(o.s, "title") == .string("b's") && g.value(o.x, "songs") == .objects([o.s]))
        #expect(g.value(o.a2, "name") == .string("a's"))
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        let (deleted, songs, pending) = await p.a.perform { c in
            (c.object(with: o.s).isDeleted, c.object(with: o.x, as: Album.self).songs.map(\.objectID), c.hasChanges)
        }
        #expect(!deleted && songs == [o.s] && !pending, "a shows the song the store kept: deleted \(deleted), X.songs \(songs)")
        await p.close()
    }

    @Test("a cascading deletion of an artist changed elsewhere that the merge policy drops lets go of the albums its cascade deleted",
          arguments: [false, true], [MergePolicy.storeWins, .rollback])
    func droppedCascadingDeletion(separateCoordinators: Bool, policy: MergePolicy) async throws {
        let p = try Pair(separateCoordinators: separateCoordinators)
        let o = try await seedSongbook(p.store)
        await p.a.setMergePolicy(policy)
        _ = await p.a.perform { c in c.object(with: o.a1, as: Artist.self).name }
        await p.b.perform { c in c.object(with: o.a1, as: Artist.self).name = "b's" }
        try await p.b.save()
        // A1's albums cascade (X), X's songs deny (S goes first).
        await p.a.perform { c in
            c.delete(c.object(with: o.s))
            c.delete(c.object(with: o.a1))
        }
        await #expect(throws: Never.self, "\(policy)") { try await p.a.save() }
        let g = p.store.currentGeneration
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        #expect(g.value(o.a1, "name") == .string("b's") && g.value(o.a1, "albums") == .objects([]))
        #expect(g.object(o.x) == nil && g.object(o.s) == nil)
        let (deleted, albums, pending, disagreements) = await p.a.perform { c in
            (c.object(with: o.a1).isDeleted, c.object(with: o.a1)["albums"], c.hasChanges, relationshipDisagreements(c))
        }
        #expect(!deleted && albums == .objects([]) && !pending && disagreements.isEmpty, "\(albums), \(disagreements)")
        await p.close()
    }

    @Test("a child's save changing an object its parent deleted since is a conflict", arguments: [MergePolicy.error, .storeWins])
    func childSaveOfObjectDeletedInParent(policy: MergePolicy) async throws {
        let f = try ContextFixture(.root)
        let o = try await seedSongbook(f.store)
        let child = ObjectContext(parent: f.context, name: "child")
        await child.setMergePolicy(policy)
        await child.perform { c in c.object(with: o.a2, as: Artist.self).name = "child's" }
        await f.context.perform { c in c.delete(c.object(with: o.a2, as: Artist.self)) }
        if policy == .error {
            let refused = await #expect(throws: StoreError.self) { try await child.save() }
            #expect(refused?.code == .conflict, "\(String(describing: refused))")
            #expect(refused?.conflicts.first?.object == o.a2 && refused?.conflicts.first?.key == nil)
        } else {
            try await child.save()
            let (deleted, pending) = await child.perform { c in (c.object(with: o.a2).isDeleted, c.hasChanges) }
            #expect(deleted && !pending, "the child's object follows the parent's deletion")
        }
        let parentDeleted = await f.context.perform { c in c.deletedObjects.map(\.objectID) == [o.a2] }
        #expect(parentDeleted, "the parent's deletion stands")
        await f.close()
    }
}

extension DeletionConflictTests {
    @Test("a save whose merge policy lets another transaction's deletion win lets go of the deleted album everywhere, in a context that does not merge",
          arguments: [false, true], [MergePolicy.storeWins, .rollback, .contextWins, .overwrite])
    func saveMeetingDeletionLetsGoOfIt(separateCoordinators: Bool, policy: MergePolicy) async throws {
        let p = try Pair(separateCoordinators: separateCoordinators)
        let o = try await seedSongbook(p.store)
        await p.a.setMergePolicy(policy)
        // a reads A1, its album X and X's song S, and renames X; b deletes S and X.
        let read = await p.a.perform { c in
            c.object(with: o.x, as: Album.self).title = "a's"
            return (c.object(with: o.a1, as: Artist.self).albums.map(\.objectID), c.object(with: o.s, as: Song.self).album?.objectID)
        }
        #expect(read.0 == [o.x] && read.1 == o.x)
        await p.b.perform { c in
            c.delete(c.object(with: o.s))
            c.delete(c.object(with: o.x))
        }
        try await p.b.save()
        // a's rename of an album the store no longer has is dropped, under every policy.
        try await p.a.save()
        let after = await p.a.perform { c in
            (c.object(with: o.x).isDeleted, c.object(with: o.a1, as: Artist.self).albums.map(\.objectID),
             c.object(with: o.s, as: Song.self).album?.objectID, c.hasChanges, relationshipDisagreements(c))
        }
        #expect(after.0, "X is deleted in a")
        #expect(after.1 == [] && after.2 == nil, "A1 lists \(after.1), S names \(String(describing: after.2))")
        #expect(!after.3 && after.4.isEmpty, "pending \(after.3), \(after.4)")
        // Nothing a does next brings X back.
        await p.a.perform { c in
            c.rollback()
            c.object(with: o.a1, as: Artist.self).name = "renamed"
        }
        try await p.a.save()
        let g = p.store.currentGeneration
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        #expect(g.value(o.a1, "albums") == .objects([]) && g.value(o.a1, "name") == .string("renamed"))
        await p.close()
    }

    @Test("a child's save meeting its parent's deletion lets go of the deleted album everywhere: its artist and its song no longer name it, and nothing is pending",
          arguments: [Tier.root, .mainRoot, .child], [MergePolicy.storeWins, .rollback, .contextWins])
    func childSaveMeetingParentDeletionLetsGoOfIt(tier: Tier, policy: MergePolicy) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let child = ObjectContext(parent: f.context, name: "editor")
        await child.setMergePolicy(policy)
        // The child reads artist A1, its album X and X's song S, and renames X.
        let read = await child.perform { c in
            let x = c.object(with: o.x, as: Album.self)
            x.title = "child's"
            return (c.object(with: o.a1, as: Artist.self).albums.map(\.objectID), c.object(with: o.s, as: Song.self).album?.objectID)
        }
        #expect(read.0 == [o.x] && read.1 == o.x)
        // The parent deletes S, then X (X's songs deny; X's artist nullify).
        await f.context.perform { c in
            c.delete(c.object(with: o.s))
            c.delete(c.object(with: o.x))
        }
        // The rename of an album the parent deleted is dropped; the album is gone here too.
        try await child.save()
        let after = await child.perform { c in
            (c.object(with: o.x).isDeleted, c.object(with: o.a1, as: Artist.self).albums.map(\.objectID),
             c.object(with: o.s, as: Song.self).album?.objectID, c.hasChanges)
        }
        #expect(after.0, "X is deleted in the child")
        #expect(after.1 == [], "A1 lists no deleted album: \(after.1)")
        #expect(after.2 == nil, "S names no deleted album: \(String(describing: after.2))")
        #expect(!after.3, "letting go is the parent's doing, not a change of the child's")
        // Nothing the child does next brings X back: a rollback, then a save of another key.
        let rolledBack = await child.perform { c in
            c.rollback()
            c.object(with: o.a1, as: Artist.self).name = "renamed"
            return c.object(with: o.a1, as: Artist.self).albums.map(\.objectID)
        }
        #expect(rolledBack == [])
        try await child.save()
        try await f.saveThrough()
        let g = f.generation
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        #expect(g.object(o.x) == nil && g.object(o.s) == nil)
        #expect(g.value(o.a1, "albums") == .objects([]) && g.value(o.a1, "name") == .string("renamed"))
        await f.close()
    }
}

/// A child's deletion meeting its parent's changes: deleting an object the parent changed
/// since the child read it is a conflict, as the store reports one (a cascade from a stale
/// read once deleted an album the parent had just given to another artist, without a word).
@Suite struct ChildDeletionConflictTests {
    /// The tiers a parent context can sit in.
    static let parentTiers: [Tier] = [.root, .mainRoot, .child]

    @Test("a child's cascade deleting an album its parent moved to another artist since is a conflict",
          arguments: parentTiers, [MergePolicy.error, .storeWins, .rollback, .contextWins])
    func childCascadeOverParentMove(tier: Tier, policy: MergePolicy) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let parent = f.context
        let child = ObjectContext(parent: parent, name: "editor")
        await child.setMergePolicy(policy)
        // The child reads artist A1 and its album X.
        let titles = await child.perform { c in c.object(with: o.a1, as: Artist.self).albums.map(\.title) }
        #expect(titles == ["Album"])
        // The parent then gives X to A2.
        await parent.perform { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        // The child deletes X's song (X's songs deny), then A1, whose cascade takes X as the child
        // saw it. X's artist changed since: a conflict. (A1's albums changed too, but a to-many
        // list the parent changed follows the deletion through the parent's own delete rules.)
        await child.perform { c in
            c.delete(c.object(with: o.s))
            c.delete(c.object(with: o.a1))
        }
        let conflicts = child.mergeConflicts()
        if policy == .error {
            let error = await #expect(throws: StoreError.self) { try await child.save() }
            #expect(error?.code == .conflict, "\(String(describing: error))")
            #expect(error?.conflicts.map(\.object) == [o.x] && error?.conflicts.allSatisfy { $0.key == nil } == true,
                    "\(String(describing: error?.conflicts))")
            let (xDeleted, a1Deleted, sDeleted, artist) = await parent.perform { c in
                (c.object(with: o.x).isDeleted, c.object(with: o.a1).isDeleted, c.object(with: o.s).isDeleted,
                 c.object(with: o.x, as: Album.self).artist?.objectID)
            }
            #expect(!xDeleted && !a1Deleted && !sDeleted && artist == o.a2, "a refused save changed the parent")
            #expect(await child.perform { c in c.object(with: o.x).isDeleted && c.hasChanges }, "the child keeps its changes")
            await f.close()
            return
        }
        try await child.save()
        let reported = try #require(await firstElement(of: conflicts, timeout: .seconds(10)))
        #expect(reported.map(\.object) == [o.x] && reported.allSatisfy { $0.key == nil }, "\(reported)")
        let kept = policy == .storeWins || policy == .rollback
        let (xDeleted, a1Deleted, artist) = await parent.perform { c in
            (c.object(with: o.x).isDeleted, c.object(with: o.a1).isDeleted, c.object(with: o.x, as: Album.self).artist?.objectID)
        }
        #expect(a1Deleted)
        #expect(xDeleted == !kept, "\(policy): the parent's album \(kept ? "was deleted" : "was kept")")
        if kept {
            #expect(artist == o.a2, "the parent's move was undone")
            let (childSees, childArtist, pending) = await child.perform { c in
                (!c.object(with: o.x).isDeleted, c.object(with: o.x, as: Album.self).artist?.objectID, c.hasChanges)
            }
            #expect(childSees && childArtist == o.a2 && !pending, "the child shows the album the parent kept")
        }
        for context in [parent] + f.ancestors { try await context.save() }
        let g = f.generation
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        #expect(g.object(o.a1) == nil && g.object(o.s) == nil)
        #expect((g.object(o.x) != nil) == kept)
        if kept { #expect(g.value(o.x, "artist") == .object(o.a2)) }
        await f.close()
    }

    @Test("a child's deletion that the merge policy drops brings back the references the child's delete rules dropped",
          arguments: parentTiers, [MergePolicy.storeWins, .rollback])
    func keptDeletionKeepsInverses(tier: Tier, policy: MergePolicy) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let parent = f.context
        let child = ObjectContext(parent: parent, name: "editor")
        await child.setMergePolicy(policy)
        _ = await child.perform { c in c.object(with: o.x, as: Album.self).title }
        await parent.perform { c in c.object(with: o.x, as: Album.self).title = "Renamed" }
        // Deleting X (after its song: songs deny) takes X out of A1's albums (artist: nullify).
        await child.perform { c in
            c.delete(c.object(with: o.s))
            c.delete(c.object(with: o.x))
        }
        try await child.save()
        let (xDeleted, artist, albums) = await parent.perform { c in
            let x = c.object(with: o.x, as: Album.self)
            return (x.isDeleted, x.artist?.objectID, c.object(with: o.a1, as: Artist.self).albums.map(\.objectID))
        }
        #expect(!xDeleted && artist == o.a1 && albums == [o.x], "X kept with artist \(String(describing: artist)); A1's albums \(albums)")
        let childAlbums = await child.perform { c in c.object(with: o.a1, as: Artist.self).albums.map(\.objectID) }
        #expect(childAlbums == [o.x], "the child shows A1 without the album its parent kept")
        for context in [parent] + f.ancestors { try await context.save() }
        let g = f.generation
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        #expect(g.value(o.x, "title") == .string("Renamed") && g.object(o.s) == nil)
        await f.close()
    }
}

/// A child that saved a deletion into its parent, which holds it, then merges a commit made
/// before the deletion reached the store that still relates another object to the deleted
/// one (as `hybrid`'s editors merge the imports' commits): the merged object lets go of the
/// tombstone, without a change of its own. It listed the song again — a deleted object —
/// and nothing merged later took it out (`hybrid` seed 21228 of the soak).
@Suite struct MergeAfterSavedDeletionTests {
    @Test("a merged album that names a song the child deleted and saved into its parent lets go of it",
          arguments: [MergePolicy.error, .storeWins], [false, true])
    func mergedAlbumLetsGoOfSongDeletedThroughParent(policy: MergePolicy, parentMergesFirst: Bool) async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (o, parent, child) = (f.objects, f.parent, f.child)
        await child.setMergePolicy(policy)
        // The child reads album x and deletes its song s, and saves into the parent.
        _ = await child.perform { c in c.object(with: o.x, as: Album.self).songs.count }
        await child.perform { c in c.delete(c.object(with: o.s)) }
        try await child.save()
        // Another context, reading the store (s still on x), adds a song to x.
        let saves = f.other.didSave()
        let added = try await f.other.perform { c in
            let song = insertSong(77, title: "new", on: o.x, in: c)
            try await c.save()
            return song
        }
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        #expect(save.values[o.x]?.last == .objects([o.s, added]), "the commit still names s")
        if parentMergesFirst { _ = await parent.merge(save) }
        _ = await child.merge(save)
        let shown = await child.perform { c in
            (c.object(with: o.x, as: Album.self).songs.map(\.objectID), relationshipDisagreements(c), c.hasChanges)
        }
        #expect(shown.0 == [added], "x lists \(shown.0)")
        #expect(shown.1.isEmpty && !shown.2, "\(shown.1), pending \(shown.2)")
        if !parentMergesFirst { _ = await parent.merge(save) }
        try await parent.save()
        let g = f.store.currentGeneration
        #expect(g.object(o.s) == nil && g.value(o.x, "songs") == .objects([added]))
        await f.close()
    }
}

extension MergeAfterSavedDeletionTests {
    /// A child's save finds an album deleted in its parent (its artist's cascade there): the
    /// album becomes a tombstone, and the artist the child had read lets go of it. The child
    /// then merges another context's commit, made before the deletion reached the store, that
    /// gives the artist another album: the commit's artist still lists the deleted one, and
    /// the merged artist lets go of it, without a change of its own. (It listed the tombstone
    /// again, which named it back — `hybrid` seed 21841 of the soak.)
    @Test("a merged artist that names an album the child's save found deleted in its parent lets go of it",
          arguments: [MergePolicy.storeWins, .contextWins])
    func mergedArtistLetsGoOfAlbumFoundDeletedInParent(policy: MergePolicy) async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (o, parent, child) = (f.objects, f.parent, f.child)
        try await f.other.perform { c in
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
            try await c.save()
        }
        await child.setMergePolicy(policy)
        // The child reads a2 with its album y, and renames y; the parent deletes a2, whose
        // cascade takes y; the child saves into the parent, and finds y gone there.
        await child.perform { c in
            _ = c.object(with: o.a2, as: Artist.self).albums
            c.object(with: o.y, as: Album.self).title = "the child's"
        }
        await parent.perform { c in c.delete(c.object(with: o.a2)) }
        try await child.save()
        let afterSave = await child.perform { c in (c.object(with: o.y).isDeletedElsewhere, c.object(with: o.a2)["albums"]) }
        #expect(afterSave.0 && afterSave.1 == .objects([]), "y deleted elsewhere, a2 lists nothing: \(afterSave)")
        // Another context, reading the store (a2 still with y), moves x to a2.
        let saves = f.other.didSave()
        try await f.other.perform { c in
            c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
            try await c.save()
        }
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        #expect(save.values[o.a2]?.last == .objects([o.y, o.x]), "the commit still names y")
        _ = await child.merge(save)
        let shown = await child.perform { c in
            (c.object(with: o.a2)["albums"], referencesToTombstones(c), relationshipDisagreements(c), c.hasChanges)
        }
        #expect(shown.0 == .objects([o.x]), "a2 lists \(shown.0)")
        #expect(shown.1.isEmpty && shown.2.isEmpty && !shown.3, "\(shown.1), \(shown.2), pending \(shown.3)")
        await f.close()
    }
}

extension MergeAfterSavedDeletionTests {
    /// A child holds an artist and its album, read before the parent deleted the artist (its
    /// cascade taking the album): a stale read, the child does not follow its parent. It
    /// deletes a song another context put on the album, and reading the album again for the
    /// song's inverse finds it gone in the parent: a tombstone, let go of by the artist, which
    /// the parent does not show to read again. The child then merges that context's commit,
    /// which gave the artist another album and still lists the deleted one: the merged artist
    /// lets go of it again. (It listed the tombstone, which named it back — `hybrid` seed 22535
    /// of the soak: only a deletion the child had saved into its parent, or one its save had
    /// found there, made its merges look.)
    @Test("a merged artist lets go of an album the child found deleted in its parent when it read the album again",
          arguments: [MergePolicy.storeWins, .contextWins, .error])
    func mergedArtistLetsGoOfAlbumFoundDeletedOnReadingAgain(policy: MergePolicy) async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (o, parent, child) = (f.objects, f.parent, f.child)
        await child.setMergePolicy(policy)
        // The child reads a1 with its album x, and x with its song s.
        let read = await child.perform { c in
            (c.object(with: o.a1, as: Artist.self).albums.map(\.objectID), c.object(with: o.x, as: Album.self).songs.map(\.objectID))
        }
        #expect(read.0 == [o.x] && read.1 == [o.s], "\(read)")
        // The parent deletes a1 (pending; its cascade takes x). Another context, reading the
        // store, puts a new song n on x and moves y to a1; the parent merges that commit first.
        await parent.perform { c in c.delete(c.object(with: o.a1)) }
        let saves = f.other.didSave()
        let n = try await f.other.perform { c in
            let song = insertSong(79, on: o.x, in: c)
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a1, as: Artist.self)
            try await c.save()
            return song
        }
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        #expect(save.values[o.a1]?.last == .objects([o.x, o.y]), "the commit still names x")
        _ = await parent.merge(save)
        // The child deletes n, read through the parent: x, read again for n's inverse, is gone
        // there.
        let afterDelete = await child.perform { c in
            c.delete(c.object(with: n))
            return (c.object(with: o.x).isDeletedElsewhere, c.object(with: o.a1)["albums"])
        }
        #expect(afterDelete.0 && afterDelete.1 == .objects([]), "x deleted elsewhere, a1 lists nothing: \(afterDelete)")
        _ = await child.merge(save)
        let shown = await child.perform { c in (c.object(with: o.a1)["albums"], referencesToTombstones(c)) }
        #expect(shown.0 == .objects([o.y]), "a1 lists \(shown.0)")
        #expect(shown.1.isEmpty, "\(shown.1)")
        await f.close()
    }
}

extension MergeAfterSavedDeletionTests {
    /// A child reads an album through its parent while the parent's pending change lists a
    /// song the store has on no album; the parent then deletes the song (its pending list is
    /// the album's row again), and another context's commit deletes it too. The child,
    /// merging that commit, holds the song as deleted elsewhere, and the album lets go of it
    /// as the parent shows it, not as a change of the child's: a rollback does not bring the
    /// deleted song back onto the album. (The album was not among the objects the letting go
    /// looked at — it held no change, here or in the parent — so its list lost the song as a
    /// change on a base still naming it, and the child's rollback listed the deleted song
    /// again — `hybrid` seed 21951 of the soak.)
    @Test("a merged deletion of a song a child read on an album through its parent's pending change leaves the album without it, rollback or not",
          arguments: [false, true])
    func mergedDeletionOfSongReadThroughPendingChange(rollsBack: Bool) async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (o, parent, child) = (f.objects, f.parent, f.child)
        // The store holds song n on no album.
        let n = try await f.other.perform { c in
            let song = insertSong(78, on: nil, in: c)
            try await c.save()
            return song
        }
        await parent.perform { c in c.object(with: n, as: Song.self).album = c.object(with: o.x, as: Album.self) }
        let read = await child.perform { c in c.object(with: o.x, as: Album.self).songs.map { ($0.objectID, $0.album?.objectID) } }
        #expect(read.map(\.0) == [o.s, n] && read.allSatisfy { $0.1 == o.x }, "the child reads x and n through the parent's pending change: \(read)")
        await parent.perform { c in c.delete(c.object(with: n)) }
        let saves = f.other.didSave()
        try await f.other.perform { c in
            c.delete(c.object(with: n))
            try await c.save()
        }
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        _ = await parent.merge(save)
        _ = await child.merge(save)
        let shown = await child.perform { c in
            if rollsBack { c.rollback() }
            return (c.object(with: o.x)["songs"], c.object(with: n).isDeletedElsewhere, referencesToTombstones(c), relationshipDisagreements(c), c.hasChanges)
        }
        #expect(shown.0 == .objects([o.s]) && shown.1, "x lists \(shown.0), n deleted elsewhere \(shown.1)")
        #expect(shown.2.isEmpty && shown.3.isEmpty && !shown.4, "\(shown.2), \(shown.3), pending \(shown.4)")
        await f.close()
    }
}

/// A child refreshes an album its parent holds deleted — a tombstone here, which the artist
/// lets go of — and the parent rolls the deletion back. The child, which does not follow its
/// parent, then saves a change to the artist: the artist takes what the parent holds, which
/// lists the album again, and the album comes back as the parent shows it. (It stayed a
/// tombstone while the artist listed it — `mainParent` seed 22022 of the soak.)
@Suite struct SavedIntoParentNamingTombstoneTests {
    @Test("a child's save whose object takes the parent's list naming an album the child refreshed away brings the album back",
          arguments: [MergePolicy.error, .storeWins, .contextWins])
    func savedArtistBringsBackRefreshedAwayAlbum(policy: MergePolicy) async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (o, parent, child) = (f.objects, f.parent, f.child)
        await child.setMergePolicy(policy)
        try await f.other.perform { c in
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a1, as: Artist.self)
            try await c.save()
        }
        let read = await child.perform { c in c.object(with: o.a1, as: Artist.self).albums.map { ($0.objectID, $0.artist?.objectID) } }
        #expect(read.map(\.0) == [o.x, o.y], "\(read)")
        await parent.perform { c in c.delete(c.object(with: o.y)) }
        let refreshed = await child.perform { c in
            c.refresh(c.object(with: o.y), mergeChanges: false)
            return (c.object(with: o.y).isDeletedElsewhere, c.object(with: o.a1)["albums"])
        }
        #expect(refreshed.0 && refreshed.1 == .objects([o.x]), "y gone, a1 lets go: \(refreshed)")
        await parent.perform { c in c.rollback() }
        await child.perform { c in c.object(with: o.a1, as: Artist.self).name = "the child's" }
        try await child.save()
        let shown = await child.perform { c in
            (c.object(with: o.a1)["albums"], c.object(with: o.y).isDeletedElsewhere, c.object(with: o.y)["artist"],
             referencesToTombstones(c), relationshipDisagreements(c), c.hasChanges)
        }
        #expect(shown.0 == .objects([o.x, o.y]) && !shown.1 && shown.2 == .object(o.a1), "a1 lists \(shown.0), y gone \(shown.1), y's artist \(shown.2)")
        #expect(shown.3.isEmpty && shown.4.isEmpty && !shown.5, "\(shown.3), \(shown.4), pending \(shown.5)")
        await f.close()
    }
}

extension MergeAfterSavedDeletionTests {
    /// A child reads album x through its parent's pending change listing song n (the store
    /// has n on no album), and changes x. Another context deletes n; the child merges the
    /// deletion before its parent: x lets go of n as a change of the child's, on a base still
    /// naming it, as the parent still shows it. Once the parent has deleted n too (and merged
    /// the deletion, or not yet), the child's rollback does not list the deleted song on x
    /// again. (It did, and the song,
    /// a tombstone, named x back — `hybrid` seed 22030 of the soak.)
    @Test("a child's rollback after merging a deletion before its parent does not name the deleted song again",
          arguments: [false, true])
    func rollbackAfterMergingDeletionFirst(parentMerges: Bool) async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (o, parent, child) = (f.objects, f.parent, f.child)
        let n = try await f.other.perform { c in
            let song = insertSong(79, on: nil, in: c)
            try await c.save()
            return song
        }
        await parent.perform { c in c.object(with: n, as: Song.self).album = c.object(with: o.x, as: Album.self) }
        let read = await child.perform { c in
            let x = c.object(with: o.x, as: Album.self)
            x.title = "the child's"
            return x.songs.map { ($0.objectID, $0.album?.objectID) }
        }
        #expect(read.map(\.0) == [o.s, n] && read.allSatisfy { $0.1 == o.x }, "\(read)")
        let saves = f.other.didSave()
        try await f.other.perform { c in
            c.delete(c.object(with: n))
            try await c.save()
        }
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        _ = await child.merge(save)
        let merged = await child.perform { c in (c.object(with: o.x)["songs"], c.object(with: n).isDeletedElsewhere) }
        #expect(merged.0 == .objects([o.s]) && merged.1, "\(merged)")
        // The parent deletes n too, and merges the deletion: it no longer shows n.
        await parent.perform { c in c.delete(c.object(with: n)) }
        if parentMerges { _ = await parent.merge(save) }
        let shown = await child.perform { c in
            c.rollback()
            return (c.object(with: o.x)["songs"], c.object(with: o.x)["title"], referencesToTombstones(c), relationshipDisagreements(c), c.hasChanges)
        }
        #expect(shown.0 == .objects([o.s]) && shown.1 == .string("Album"), "x lists \(shown.0), title \(shown.1)")
        #expect(shown.2.isEmpty && shown.3.isEmpty && !shown.4, "\(shown.2), \(shown.3), pending \(shown.4)")
        await f.close()
    }
}

extension MergeAfterSavedDeletionTests {
    /// A parent inserts a song on album x, and then merges another context's deletion of x:
    /// x holds the parent's change (its list gained the song), so under `error` the parent
    /// keeps it, deleted in conflict, for its next save to report — and still shows it. A
    /// child that read the song on x merges the same deletion: x is a tombstone here, and the
    /// song lets go of it as a change of the child's (the parent still shows the song on x).
    /// The child's rollback gives the song its album back, as the parent shows it — and x
    /// too: after a rollback the child shows what its parent shows. (The song named x again,
    /// a tombstone naming the song back — `hybrid` seed 23483 of the soak, an editor
    /// following the view.)
    @Test("a child's rollback brings back, as its parent shows it, an object the store deleted that the parent keeps in conflict")
    func rollbackBringsBackDeletionParentKeepsInConflict() async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (o, parent, child) = (f.objects, f.parent, f.child)
        let n = await parent.perform { c in insertSong(82, on: o.x, in: c) }
        let read = await child.perform { c in c.object(with: o.x, as: Album.self).songs.map { ($0.objectID, $0.album?.objectID) } }
        #expect(read.map(\.0) == [o.s, n] && read.allSatisfy { $0.1 == o.x }, "\(read)")
        let saves = f.other.didSave()
        try await f.other.perform { c in
            c.delete(c.object(with: o.s))
            c.delete(c.object(with: o.x))
            try await c.save()
        }
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        _ = await parent.merge(save)
        let kept = await parent.perform { c in (c.object(with: o.x).isDeletedElsewhere, c.object(with: n)["album"]) }
        #expect(!kept.0 && kept.1 == .object(o.x), "the parent keeps x in conflict, n on it: \(kept)")
        _ = await child.merge(save)
        let merged = await child.perform { c in (c.object(with: o.x).isDeletedElsewhere, c.object(with: n)["album"]) }
        #expect(merged.0 && merged.1 == .null, "\(merged)")
        await child.rollback()
        let shown = await child.perform { c in
            (c.object(with: n)["album"], c.object(with: o.x).isDeletedElsewhere, c.object(with: o.x)["songs"],
             referencesToTombstones(c), relationshipDisagreements(c), c.hasChanges)
        }
        #expect(shown.0 == .object(o.x) && !shown.1 && shown.2 == .objects([n]), "n's album \(shown.0), x gone \(shown.1), x lists \(shown.2)")
        // The parent's conflict shows as it is there: x still names a1, which lists it no more.
        let parentDisagrees = await parent.perform { c in relationshipDisagreements(c) }
        #expect(shown.3.isEmpty && shown.4 == parentDisagrees && !shown.5, "\(shown.3), \(shown.4) (parent: \(parentDisagrees)), pending \(shown.5)")
        await f.close()
    }
}

extension SavedIntoParentNamingTombstoneTests {
    /// A child refreshes a song its parent holds deleted (a tombstone here) and then reads
    /// the song's album, which the parent holds deleted too (missing here, so it comes back
    /// once the parent shows it). The parent rolls both deletions back; the child, which does
    /// not follow its parent, reads the album again: it comes back as the parent shows it,
    /// listing the song, and the song comes back too. (The song stayed a tombstone while the
    /// album listed it — `sharedCoordinator` seed 22268 of the soak.)
    @Test("an album brought back as the parent shows it brings back the song it lists that the child held as deleted")
    func revivedAlbumBringsBackItsSong() async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (o, parent, child) = (f.objects, f.parent, f.child)
        _ = await child.perform { c in c.object(with: o.s, as: Song.self).title }
        await parent.perform { c in
            c.delete(c.object(with: o.s))
            c.delete(c.object(with: o.x))
        }
        let gone = await child.perform { c in
            c.refresh(c.object(with: o.s), mergeChanges: false)
            _ = c.object(with: o.x)["songs"]
            return (c.object(with: o.s).isDeletedElsewhere, c.object(with: o.x).isDeletedElsewhere)
        }
        #expect(gone.0 && gone.1, "s and x gone in the child: \(gone)")
        await parent.perform { c in c.rollback() }
        _ = await child.perform { c in c.object(with: o.x)["songs"] }
        let shown = await child.perform { c in
            (c.object(with: o.x)["songs"], c.object(with: o.s).isDeletedElsewhere, c.object(with: o.s)["album"],
             referencesToTombstones(c), relationshipDisagreements(c), c.hasChanges)
        }
        #expect(shown.0 == .objects([o.s]) && !shown.1 && shown.2 == .object(o.x), "x lists \(shown.0), s gone \(shown.1), s's album \(shown.2)")
        #expect(shown.3.isEmpty && shown.4.isEmpty && !shown.5, "\(shown.3), \(shown.4), pending \(shown.5)")
        await f.close()
    }
}

extension SavedIntoParentNamingTombstoneTests {
    /// A child refreshes an artist its parent holds deleted (a tombstone here, let go of by
    /// its album); the parent rolls the deletion back, and the child, which does not follow
    /// its parent, reads the album again — on its own, or to delete a song the parent shows
    /// on it that the child's album does not list. The album takes the parent's row, naming
    /// the artist, and the artist comes back as the parent shows it. (It stayed a tombstone
    /// that the album named, and that named the album back — `sharedCoordinator` seed 22631
    /// of the soak, through the song's deletion.)
    @Test("an album read again as the parent shows it brings back the artist it names that the child held as deleted",
          arguments: [false, true])
    func albumReadAgainBringsBackItsArtist(throughSongDeletion: Bool) async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (o, parent, child) = (f.objects, f.parent, f.child)
        _ = await child.perform { c in c.object(with: o.x, as: Album.self).artist?.albums.count }
        // Another context puts a new song n on x; the parent merges it.
        let saves = f.other.didSave()
        let n = try await f.other.perform { c in
            let song = insertSong(80, on: o.x, in: c)
            try await c.save()
            return song
        }
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        _ = await parent.merge(save)
        await parent.perform { c in c.delete(c.object(with: o.a1)) }
        let gone = await child.perform { c in
            c.refresh(c.object(with: o.a1), mergeChanges: false)
            return (c.object(with: o.a1).isDeletedElsewhere, c.object(with: o.x)["artist"])
        }
        #expect(gone.0 && gone.1 == .null, "a1 gone in the child, x without it: \(gone)")
        await parent.perform { c in c.rollback() }
        await child.perform { c in
            if throughSongDeletion {
                c.delete(c.object(with: n))
            } else {
                c.refresh(c.object(with: o.x), mergeChanges: true)
            }
        }
        let shown = await child.perform { c in
            (c.object(with: o.x)["artist"], c.object(with: o.a1).isDeletedElsewhere, c.object(with: o.a1)["albums"],
             referencesToTombstones(c), relationshipDisagreements(c))
        }
        #expect(shown.0 == .object(o.a1) && !shown.1 && shown.2 == .objects([o.x]), "x's artist \(shown.0), a1 gone \(shown.1), a1 lists \(shown.2)")
        #expect(shown.3.isEmpty && shown.4.isEmpty, "\(shown.3), \(shown.4)")
        await f.close()
    }
}

extension MergeAfterSavedDeletionTests {
    /// A parent's pending deletion of an artist cascades onto an album another context has
    /// just put on the artist with a new song; the album's `deny` rule leaves the song naming
    /// the album in the parent (its next save is refused until the song goes). The child,
    /// which merged the cascade (the album a tombstone there), then reads the song: as the
    /// parent shows it, less the album the parent holds deleted — it names no tombstone.
    /// (`hybrid` seed 23841 of the soak: an editor loaded the song naming the album.)
    @Test("a child reading an object its parent shows naming an object the parent holds deleted lets go of it")
    func loadedSongLetsGoOfAlbumParentHoldsDeleted() async throws {
        let f = try await childHoldingArtistParentDeletes()
        let (o, parent, child) = (f.objects, f.parent, f.child)
        let song = try await f.other.perform { c in
            let album = c.object(with: o.y, as: Album.self)
            album.artist = c.object(with: o.a2, as: Artist.self)
            let song = insertSong(50, on: o.y, in: c)
            try await c.save()
            return song
        }
        await waitUntil(child, "the child to merge the cascade") { c in c.object(with: o.y).isDeletedElsewhere }
        let inParent = await parent.perform { c in (c.object(with: o.y).isDeleted, c.object(with: song)["album"]) }
        #expect(inParent.0 && inParent.1 == .object(o.y), "the parent keeps the song on the album it deletes: \(inParent)")
        let shown = await child.perform { c in
            (c.object(with: song)["album"], referencesToTombstones(c), c.hasChanges)
        }
        #expect(shown.0 == .null, "the song names \(shown.0)")
        #expect(shown.1.isEmpty && !shown.2, "\(shown.1), pending \(shown.2)")
        // The parent drops its deletion: the album comes back in the child, and the song on it.
        await parent.perform { c in c.rollback() }
        await waitUntil(child, "the album to come back in the child") { c in !c.object(with: o.y).isDeletedElsewhere }
        let back = await child.perform { c in
            (c.object(with: song)["album"], c.object(with: o.y)["songs"], referencesToTombstones(c), relationshipDisagreements(c))
        }
        #expect(back.0 == .object(o.y) && back.1 == .objects([song]), "\(back.0), \(back.1)")
        #expect(back.2.isEmpty && back.3.isEmpty, "\(back.2), \(back.3)")
        await f.close()
    }
}

/// A view and an editor following it, the editor holding artist a2 and album y (a2 lists
/// no album), the view deleting a2 (pending): the view follows the store; the editor takes
/// what the view merges.
private func childHoldingArtistParentDeletes() async throws -> ChildFixture {
    let f = try await ChildFixture(parent: "view", child: "editor")
    let o = f.objects
    await f.child.perform { c in c.automaticallyMergesChanges = true }
    _ = await f.child.perform { c in (c.object(with: o.a2, as: Artist.self).albums.count, c.object(with: o.y, as: Album.self).artist?.objectID) }
    await f.parent.perform { c in
        c.delete(c.object(with: o.a2))
        c.automaticallyMergesChanges = true
    }
    return f
}

/// Inserts a song numbered `number` (its `songID`) on `album`, or on none, in `c`.
private func insertSong(_ number: Int, title: String = "n", on album: ObjectID?, in c: isolated ObjectContext) -> ObjectID {
    let song = c.insert(Song.self)
    song.songID = StoreTesting.uuid(number); song.title = title; song.milliseconds = 1
    if let album { song.album = c.object(with: album, as: Album.self) }
    return song.objectID
}

extension MergeAfterSavedDeletionTests {
    /// A child following its parent holds an artist the parent deletes (a stale read) and an
    /// album; another context moves the album to the artist, and the parent's cascade takes
    /// it — the child merges the album's deletion as the parent announces it, and the artist
    /// lets go of it. Another commit then gives the artist another album, its list still
    /// naming the first: the child's artist lets go of it again (and of the other, which the
    /// cascade takes too). (It listed the tombstone, which named it back —
    /// `hybrid` seed 23310 of the soak, an editor merging the view's cascade: only a deletion
    /// the child saved into its parent, or found there, made its merges look.)
    @Test("a merged artist lets go of an album the child merged its parent's cascade deletion of")
    func mergedArtistLetsGoOfAlbumParentsCascadeTook() async throws {
        let f = try await childHoldingArtistParentDeletes()
        let (o, child) = (f.objects, f.child)
        try await f.other.perform { c in
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
            try await c.save()
        }
        try await f.other.perform { c in
            c.object(with: o.a2, as: Artist.self).name = "renamed"
            c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
            try await c.save()
        }
        await waitUntil(child, "the child to take both commits") { c in c.object(with: o.a2)["name"] == .string("renamed") }
        let shown = await child.perform { c in
            (c.object(with: o.y).isDeletedElsewhere, c.object(with: o.a2)["albums"], referencesToTombstones(c), c.hasChanges)
        }
        #expect(shown.0 && shown.1 == .objects([]), "y gone \(shown.0), a2 lists \(shown.1)")
        #expect(shown.2.isEmpty && !shown.3, "\(shown.2), pending \(shown.3)")
        await f.close()
    }
}

extension SavedIntoParentNamingTombstoneTests {
    /// A child changes album x (its title) and refreshes song s, which its parent holds
    /// deleted (a tombstone here, which x lets go of); the parent merges a new song n on x
    /// from another context, then rolls the deletion back. The child, which does not follow its parent,
    /// then moves n — which it reads as the parent shows it, on x — to album y: x's list,
    /// which never held n here, is read again as the parent shows it (x keeps its title
    /// change), listing s and n, and lets go of n. Read so, the list names s, which comes
    /// back as the parent shows it, as after a load or a refresh; and a list that holds a
    /// change of its own merges the parent's the same way. (Left a tombstone, s was named by
    /// x and named x back.)
    @Test("a key read again as the parent shows it brings back what it names that the child held as deleted",
          arguments: [false, true])
    func keyReadAgainBringsBackTombstones(listChangedHere: Bool) async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (o, parent, child) = (f.objects, f.parent, f.child)
        let extra = await child.perform { c -> ObjectID? in
            let x = c.object(with: o.x, as: Album.self)
            x.title = "Changed here"
            _ = x.songs.map(\.title)
            // A song of the child's own on x: the list holds a change here.
            return listChangedHere ? insertSong(83, on: o.x, in: c) : nil
        }
        await parent.perform { c in c.delete(c.object(with: o.s)) }
        let gone = await child.perform { c in
            c.refresh(c.object(with: o.s), mergeChanges: false)
            return (c.object(with: o.s).isDeletedElsewhere, c.object(with: o.x)["songs"])
        }
        #expect(gone.0 && gone.1 == .objects(extra.map { [$0] } ?? []), "s gone in the child, x without it: \(gone)")
        // Another context puts a new song n on x; the parent merges it.
        let saves = f.other.didSave()
        let n = try await f.other.perform { c in
            let song = insertSong(84, on: o.x, in: c)
            try await c.save()
            return song
        }
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        _ = await parent.merge(save)
        await parent.perform { c in c.rollback() }
        await child.perform { c in c.object(with: n, as: Song.self).album = c.object(with: o.y, as: Album.self) }
        let shown = await child.perform { c in
            (c.object(with: o.x)["songs"], c.object(with: o.s).isDeletedElsewhere, c.object(with: o.s)["album"],
             referencesToTombstones(c), relationshipDisagreements(c), c.object(with: o.x)["title"])
        }
        #expect(shown.0.referencedObjects.sorted() == ([o.s] + (extra.map { [$0] } ?? [])).sorted() && !shown.1 && shown.2 == .object(o.x),
                "x lists \(shown.0), s gone \(shown.1), s's album \(shown.2)")
        #expect(shown.3.isEmpty && shown.4.isEmpty && shown.5 == .string("Changed here"), "\(shown.3), \(shown.4), \(shown.5)")
        try await child.save()
        try await parent.save()
        let g = f.store.currentGeneration
        #expect(g.value(o.x, "songs")?.referencedObjects.sorted() == ([o.s] + (extra.map { [$0] } ?? [])).sorted() && g.value(n, "album") == .object(o.y),
                "\(String(describing: g.value(o.x, "songs")))")
        await f.close()
    }
}

extension MergeAfterSavedDeletionTests {
    /// A child holds album x listing song s (read before another context moved s to album
    /// y) and s as the parent shows it now, on y. The parent deletes y, whose `deny` rule
    /// leaves s naming it there (the parent's next save is refused until s goes); the child
    /// finds y gone (a tombstone here, which s lets go of). The child changes s's title, then
    /// takes s out of x's list: s, which names no album here, has its album read again as
    /// the parent shows it — less the album the parent holds deleted, as a load reads it.
    /// (Read as the parent shows it, s named y, a tombstone listing s back.)
    @Test("a key read again as the parent shows it lets go of an object the parent holds deleted")
    func keyReadAgainLetsGoOfDeletionParentHolds() async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (o, parent, child) = (f.objects, f.parent, f.child)
        let listed = await child.perform { c in c.object(with: o.x, as: Album.self).songs.map(\.objectID) }
        #expect(listed == [o.s])
        let saves = f.other.didSave()
        try await f.other.perform { c in
            c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self)
            try await c.save()
        }
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        _ = await parent.merge(save)
        let read = await child.perform { c in (c.object(with: o.s)["album"], c.object(with: o.y, as: Album.self).songs.map(\.objectID)) }
        #expect(read.0 == .object(o.y) && read.1 == [o.s], "\(read)")
        await parent.perform { c in c.delete(c.object(with: o.y)) }
        let inParent = await parent.perform { c in (c.object(with: o.y).isDeleted, c.object(with: o.s)["album"]) }
        #expect(inParent.0 && inParent.1 == .object(o.y), "the parent keeps s on the album it deletes: \(inParent)")
        let gone = await child.perform { c in
            c.refresh(c.object(with: o.y), mergeChanges: false)
            return (c.object(with: o.y).isDeletedElsewhere, c.object(with: o.s)["album"])
        }
        #expect(gone.0 && gone.1 == .null, "y gone in the child, s without it: \(gone)")
        await child.perform { c in
            let song = c.object(with: o.s, as: Song.self)
            song.title = "Changed here"
            c.object(with: o.x, as: Album.self).songs = []
        }
        let shown = await child.perform { c in
            (c.object(with: o.s)["album"], c.object(with: o.x)["songs"], referencesToTombstones(c), relationshipDisagreements(c))
        }
        #expect(shown.0 == .null && shown.1 == .objects([]), "s's album \(shown.0), x lists \(shown.1)")
        #expect(shown.2.isEmpty && shown.3.isEmpty, "\(shown.2), \(shown.3)")
        await f.close()
    }
}
