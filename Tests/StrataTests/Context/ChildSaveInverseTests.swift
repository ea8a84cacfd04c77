import Foundation
import Testing
@testable import Strata

/// A child's relationship change that its parent does not apply — the merge policy kept the
/// parent's value, or the parent deleted the object — leaves the other side in step in the
/// parent too: the child's updates of the related objects once stayed applied, and the
/// parent held a song one album listed while the song named another (or a deleted song in
/// an album's list), which it could not save.
@Suite struct ChildSaveInverseTests {
    static let parentTiers: [Tier] = [.root, .mainRoot, .child]

    @Test("a child's move of a song, dropped because the parent moved it too, leaves both sides in step in the parent",
          arguments: parentTiers, [MergePolicy.storeWins, .rollback])
    func droppedMove(tier: Tier, policy: MergePolicy) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let parent = f.context
        let child = ObjectContext(parent: parent, name: "editor")
        await child.setMergePolicy(policy)
        // The child moves S from X to Y; the parent meanwhile moves S to a new album Z.
        await child.perform { c in c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self) }
        let z = await parent.perform { c in
            let z = c.insert(Album.self)
            z.albumID = 77
            z.title = "Z"
            c.object(with: o.s, as: Song.self).album = z
            return z.objectID
        }
        let conflicts = child.mergeConflicts()
        try await child.save()
        let reported = try #require(await firstElement(of: conflicts, timeout: .seconds(10)))
        #expect(reported.contains { $0.object == o.s && $0.key == "album" }, "\(reported)")
        let (album, x, y, zSongs) = await parent.perform { c in
            (c.object(with: o.s, as: Song.self).album?.objectID, c.object(with: o.x, as: Album.self).songs.map(\.objectID),
             c.object(with: o.y, as: Album.self).songs.map(\.objectID), c.object(with: z, as: Album.self).songs.map(\.objectID))
        }
        #expect(album == z && zSongs == [o.s] && x.isEmpty && y.isEmpty,
                "S.album \(String(describing: album)); X.songs \(x), Y.songs \(y), Z.songs \(zSongs)")
        let childY = await child.perform { c in c.object(with: o.y, as: Album.self).songs.map(\.objectID) }
        #expect(childY.isEmpty, "the child shows Y with the song its parent kept on Z")
        for context in [parent] + f.ancestors { try await context.save() }
        #expect(f.generation.integrityProblems().isEmpty, "\(f.generation.integrityProblems())")
        #expect(f.generation.value(o.s, "album") == .object(z))
        await f.close()
    }

    @Test("a child's move of a song applied over the parent's move of it leaves the parent's album without it",
          arguments: parentTiers, [MergePolicy.contextWins, .overwrite])
    func appliedMove(tier: Tier, policy: MergePolicy) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let parent = f.context
        let child = ObjectContext(parent: parent, name: "editor")
        await child.setMergePolicy(policy)
        // The child moves S from X to Y; the parent meanwhile moves S to a new album Z.
        await child.perform { c in c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self) }
        let z = await parent.perform { c in
            let z = c.insert(Album.self)
            z.albumID = 77
            z.title = "Z"
            c.object(with: o.s, as: Song.self).album = z
            return z.objectID
        }
        try await child.save()
        let (album, y, zSongs, disagreements) = await parent.perform { c in
            (c.object(with: o.s, as: Song.self).album?.objectID, c.object(with: o.y, as: Album.self).songs.map(\.objectID),
             c.object(with: z, as: Album.self).songs.map(\.objectID), relationshipDisagreements(c))
        }
        #expect(album == o.y && y == [o.s] && zSongs.isEmpty, "S.album \(String(describing: album)); Y.songs \(y), Z.songs \(zSongs)")
        #expect(disagreements.isEmpty, "\(disagreements)")
        for context in [parent] + f.ancestors { try await context.save() }
        #expect(f.generation.integrityProblems().isEmpty, "\(f.generation.integrityProblems())")
        #expect(f.generation.value(o.s, "album") == .object(o.y))
        await f.close()
    }

    @Test("a child's move of a song its parent deleted since leaves no reference to the song in the parent",
          arguments: parentTiers, [MergePolicy.storeWins, .contextWins, .overwrite, .rollback])
    func moveOfDeletedObject(tier: Tier, policy: MergePolicy) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let parent = f.context
        let child = ObjectContext(parent: parent, name: "editor")
        await child.setMergePolicy(policy)
        await child.perform { c in c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self) }
        await parent.perform { c in c.delete(c.object(with: o.s)) }
        try await child.save()
        let (x, y) = await parent.perform { c in
            (c.object(with: o.x, as: Album.self).songs.map(\.objectID), c.object(with: o.y, as: Album.self).songs.map(\.objectID))
        }
        #expect(x.isEmpty && y.isEmpty, "the parent's albums list its deleted song: X.songs \(x), Y.songs \(y)")
        let (deleted, childY) = await child.perform { c in
            (c.object(with: o.s).isDeleted, c.object(with: o.y, as: Album.self).songs.map(\.objectID))
        }
        #expect(deleted && childY.isEmpty, "the child still shows the deleted song on Y: \(childY)")
        for context in [parent] + f.ancestors { try await context.save() }
        #expect(f.generation.integrityProblems().isEmpty, "\(f.generation.integrityProblems())")
        #expect(f.generation.object(o.s) == nil)
        await f.close()
    }
}

extension ChildSaveInverseTests {
    /// A child moves album y from a1 to a2, which the parent then deletes (cascade), while
    /// both rename a1 and another commit gives a1 a new album. The child's save meets the
    /// name's conflict: under `rollback` every change of a1 is dropped — its letting go of y
    /// too — so y goes back to a1 as a pair kept whole, and a2's cascade no longer reaches
    /// it; under `storeWins` a1's list keeps the move, and the cascade takes y. Either way the
    /// parent's save to the store is accepted. (Under `rollback` the cascade took y while a1
    /// still listed it, and the parent's save was refused as an inverse violation —
    /// `sharedCoordinator` seed 22089 of the soak.)
    @Test("a move the merge policy drops half of, to an artist deleted in the parent, leaves both sides in step",
          arguments: [MergePolicy.rollback, .storeWins], [MergePolicy.storeWins, .rollback])
    func droppedHalfOfMoveToDeletedArtist(childPolicy: MergePolicy, parentPolicy: MergePolicy) async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (o, parent, child) = (f.objects, f.parent, f.child)
        try await f.other.perform { c in
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a1, as: Artist.self)
            try await c.save()
        }
        await child.setMergePolicy(childPolicy)
        await parent.setMergePolicy(parentPolicy)
        await child.perform { c in
            c.object(with: o.a1, as: Artist.self).name = "the child's"
            _ = c.object(with: o.a2, as: Artist.self).albums
        }
        await parent.perform { c in
            c.delete(c.object(with: o.a2))
            c.object(with: o.a1, as: Artist.self).name = "the parent's"
        }
        await child.perform { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        let z = try await f.other.perform { c in
            let album = c.insert(Album.self)
            album.albumID = 99; album.title = "z"
            album.artist = c.object(with: o.a1, as: Artist.self)
            try await c.save()
            return album.objectID
        }
        try await child.save()
        let applied = await parent.perform { c in (c.object(with: o.y).isDeleted, c.object(with: o.y)["artist"], relationshipDisagreements(c)) }
        if childPolicy == .rollback {
            #expect(!applied.0 && applied.1 == .object(o.a1), "y back on a1: \(applied)")
        } else {
            #expect(applied.0, "y taken by a2's cascade: \(applied)")
        }
        #expect(applied.2.isEmpty, "\(applied.2)")
        try await parent.save()
        let g = f.store.currentGeneration
        if childPolicy == .rollback {
            #expect(g.value(o.y, "artist") == .object(o.a1) && g.value(o.a1, "albums") == .objects([o.x, o.y, z]))
        } else {
            #expect(g.object(o.y) == nil && g.value(o.a1, "albums") == .objects([o.x, z]))
        }
        #expect(g.object(o.a2) == nil)
        await f.close()
    }
}
