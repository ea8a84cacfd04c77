import Foundation
import Testing
@testable import Strata

/// An object read before another save changed it, brought up to date because a change here
/// reaches it through a relationship, keeps its own changes on the base they were made on: a
/// key both sides changed is a conflict, which the merge policy resolves (or, under `error`,
/// the save reports). The context had read album Y (no artist, no songs) and given it to A1;
/// another save had given Y to A2 and a new song. Deleting that song here read Y again whole,
/// taking the newer version as its base: the save's A1 then overwrote A2 without a conflict,
/// A2 still listed Y, and every save was refused as an inverse violation.
@Suite struct CaughtUpTargetTests {
    /// What the other context does (unsaved): gives Y to A2 and a new song, returned.
    static func giveYToA2WithANewSong(in other: ObjectContext, _ o: ConstraintTests.Objects) async -> ObjectID {
        await other.perform { c -> ObjectID in
            let y = c.object(with: o.y, as: Album.self)
            y.artist = c.object(with: o.a2, as: Artist.self)
            let song = c.insert(Song.self)
            song.songID = UUID()
            song.title = "New"
            song.milliseconds = 1_000
            song.album = y
            return song.objectID
        }
    }

    @Test("deleting a song another save added to an album changed here keeps the album's change in conflict",
          arguments: [false, true], [MergePolicy.error, .storeWins, .rollback, .contextWins, .overwrite])
    func deletionReachingAChangedAlbum(separateCoordinators: Bool, policy: MergePolicy) async throws {
        let p = try ContextMergeTests.Pair(separateCoordinators: separateCoordinators)
        let o = try await seedSongbook(p.store)
        await p.b.setMergePolicy(policy)
        // B reads Y: no artist, no songs.
        let read = await p.b.perform { c in
            (c.object(with: o.y, as: Album.self).artist?.objectID, c.object(with: o.y, as: Album.self).songs.count)
        }
        #expect(read.0 == nil && read.1 == 0)
        let song = await Self.giveYToA2WithANewSong(in: p.a, o)
        try await p.a.save()
        // B, not knowing, gives Y to A1, then deletes the new song (read now: on Y).
        await p.b.perform { c in
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a1, as: Artist.self)
            c.delete(c.object(with: song))
        }
        if policy == .error {
            let error = await #expect(throws: StoreError.self) { try await p.b.save() }
            #expect(error?.code == .conflict, "\(String(describing: error))")
            let conflict = error?.conflicts.first { $0.object == o.y && $0.key == "artist" }
            #expect(conflict?.base == .null && conflict?.ours == .object(o.a1) && conflict?.theirs == .object(o.a2),
                    "\(String(describing: error?.conflicts))")
            let g = p.store.currentGeneration
            #expect(g.object(song) != nil && g.value(o.y, "artist") == .object(o.a2), "nothing committed")
        } else {
            try await p.b.save()
            let g = p.store.currentGeneration
            #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
            #expect(g.object(song) == nil && g.value(o.y, "songs") == .objects([]))
            let theirsKept = policy == .storeWins || policy == .rollback
            #expect(g.value(o.y, "artist") == .object(theirsKept ? o.a2 : o.a1))
            #expect(g.value(o.a1, "albums") == .objects(theirsKept ? [o.x] : [o.x, o.y]))
            #expect(g.value(o.a2, "albums") == .objects(theirsKept ? [o.y] : []))
            let after = await p.b.perform { c in (c.hasChanges, relationshipDisagreements(c)) }
            #expect(!after.0 && after.1.isEmpty, "\(after)")
        }
        await p.close()
    }

    @Test("a child deleting a song its parent added to an album the child changed keeps the album's change in conflict",
          arguments: ChildDeletionConflictTests.parentTiers, [MergePolicy.error, .storeWins, .contextWins])
    func childDeletionReachingAChangedAlbum(tier: Tier, policy: MergePolicy) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let parent = f.context
        let child = ObjectContext(parent: parent, name: "editor")
        await child.setMergePolicy(policy)
        _ = await child.perform { c in c.object(with: o.y, as: Album.self).songs.count }
        let song = await Self.giveYToA2WithANewSong(in: parent, o)
        try await f.saveThrough()
        await child.perform { c in
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a1, as: Artist.self)
            c.delete(c.object(with: song))
        }
        if policy == .error {
            let error = await #expect(throws: StoreError.self) { try await child.save() }
            #expect(error?.code == .conflict, "\(String(describing: error))")
            #expect(error?.conflicts.contains { $0.object == o.y && $0.key == "artist" } == true, "\(String(describing: error?.conflicts))")
        } else {
            try await child.save()
            try await f.saveThrough()
            let g = f.generation
            #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
            #expect(g.object(song) == nil)
            #expect(g.value(o.y, "artist") == .object(policy == .storeWins ? o.a2 : o.a1))
            let after = await child.perform { c in relationshipDisagreements(c) }
            #expect(after.isEmpty, "\(after)")
        }
        await f.close()
    }
}
