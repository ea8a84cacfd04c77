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
