import Foundation
import Testing
@testable import Strata

/// A deletion the merge policy drops brings the object back as the parent (or the store)
/// holds it, and the objects it refers to there list it again — as what they hold there,
/// not as a change of the saving context's. The context had read the album before the song
/// was moved to it; the song's deletion, dropped, brought the song back naming the album,
/// and the album listed it as a pending change on a base without it. Once the song moved on,
/// the next save listed it on that album again, and the parent took the list while the song
/// named another album: its save was refused as an inverse violation.
@Suite struct DroppedDeletionOtherSideTests {
    @Test("a child's dropped deletion of a song its parent moved leaves the album it moved to unchanged in the child",
          arguments: ChildDeletionConflictTests.parentTiers, [MergePolicy.storeWins, .rollback])
    func childDroppedDeletion(tier: Tier, policy: MergePolicy) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let parent = f.context
        let child = ObjectContext(parent: parent, name: "editor")
        await child.setMergePolicy(policy)
        // The child reads album Y (no songs) and song S (on X).
        let read = await child.perform { c in
            (c.object(with: o.y, as: Album.self).songs.count, c.object(with: o.s, as: Song.self).album?.objectID)
        }
        #expect(read.0 == 0 && read.1 == o.x)
        // The parent moves S to Y; the child, not knowing, deletes S.
        await parent.perform { c in c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self) }
        await child.perform { c in c.delete(c.object(with: o.s)) }
        try await child.save()
        let after = await child.perform { c in
            (c.object(with: o.s).isDeleted, c.object(with: o.s, as: Song.self).album?.objectID,
             c.object(with: o.y, as: Album.self).songs.map(\.objectID), c.hasChanges, relationshipDisagreements(c))
        }
        #expect(!after.0 && after.1 == o.y && after.2 == [o.s], "the song stays, on Y: \(after)")
        #expect(!after.3, "nothing pending in the child: Y lists S in the parent too")
        #expect(after.4.isEmpty, "\(after.4)")

        // The parent saves, then moves S back to X and saves again.
        try await f.saveThrough()
        await parent.perform { c in c.object(with: o.s, as: Song.self).album = c.object(with: o.x, as: Album.self) }
        try await f.saveThrough()
        // The child's next save, of something else, does not take Y's list with it.
        await child.perform { c in c.object(with: o.a2, as: Artist.self).name = "editor's" }
        try await child.save()
        await #expect(throws: Never.self) { try await f.saveThrough() }
        let g = f.generation
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        #expect(g.value(o.y, "songs") == .objects([]) && g.value(o.x, "songs") == .objects([o.s]))
        #expect(g.value(o.a2, "name") == .string("editor's"))
        await f.close()
    }

    @Test("a dropped deletion of a song another context moved leaves the album it moved to unchanged",
          arguments: [false, true], [MergePolicy.storeWins, .rollback])
    func storeDroppedDeletion(separateCoordinators: Bool, policy: MergePolicy) async throws {
        let p = try ContextMergeTests.Pair(separateCoordinators: separateCoordinators)
        let o = try await seedSongbook(p.store)
        await p.a.setMergePolicy(policy)
        _ = await p.a.perform { c in (c.object(with: o.y, as: Album.self).songs.count, c.object(with: o.s, as: Song.self).album?.objectID) }
        await p.b.perform { c in c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self) }
        try await p.b.save()
        await p.a.perform { c in c.delete(c.object(with: o.s)) }
        try await p.a.save()
        let after = await p.a.perform { c in
            (c.object(with: o.s).isDeleted, c.object(with: o.y, as: Album.self).songs.map(\.objectID), c.hasChanges,
             relationshipDisagreements(c))
        }
        #expect(!after.0 && after.1 == [o.s] && !after.2 && after.3.isEmpty, "\(after)")

        await p.b.perform { c in c.object(with: o.s, as: Song.self).album = c.object(with: o.x, as: Album.self) }
        try await p.b.save()
        await p.a.perform { c in c.object(with: o.a2, as: Artist.self).name = "a's" }
        await #expect(throws: Never.self) { try await p.a.save() }
        let g = p.store.currentGeneration
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        #expect(g.value(o.y, "songs") == .objects([]) && g.value(o.x, "songs") == .objects([o.s]))
        await p.close()
    }
}
