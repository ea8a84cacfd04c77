import Foundation
import Testing
@testable import Strata

/// `refresh(_:mergeChanges: true)` of an object whose to-many list changed here, after
/// another save changed that list too: the list keeps this context's additions and removals
/// on top of the other save's, as a merge does — not this context's whole list over it.
/// (The whole list kept a song the other save had moved to another album, and dropped an
/// album it had given the artist: the next save was refused as an inverse violation.)
@Suite struct RefreshMergingListTests {
    @Test("a refreshed list takes the other save's removal under its own addition", arguments: Tier.allCases)
    func refreshedListTakesRemoval(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        // X (listing S) gets a new song here.
        let song = await f.context.perform { c in
            let n = c.insert(Song.self)
            n.songID = UUID()
            n.title = "new"
            n.milliseconds = 1
            n.album = c.object(with: o.x, as: Album.self)
            return n.objectID
        }
        // Elsewhere S moves to Y.
        let other = PendingDeletionMergeTests.sibling(of: f)
        await other.perform { c in c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self) }
        try await other.save()
        let (songs, problems) = await f.context.perform { c in
            let x = c.object(with: o.x, as: Album.self)
            c.refresh(x, mergeChanges: true)
            return (x.songs.map(\.objectID), relationshipDisagreements(c))
        }
        #expect(songs == [song], "X lists the new song only: S moved to Y")
        #expect(problems.isEmpty, "\(problems)")
        try await f.saveThrough()
        let generation = f.generation
        #expect(generation.integrityProblems().isEmpty)
        #expect(generation.value(o.x, "songs") == .objects([song]))
        #expect(generation.value(o.y, "songs") == .objects([o.s]))
        await f.close()
    }

    @Test("a refreshed list keeps the other save's addition beside its own", arguments: Tier.allCases)
    func refreshedListKeepsAddition(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        // A1 (listing X) gets a new album here.
        let mine = await f.context.perform { c in
            let album = c.insert(Album.self)
            album.albumID = 800
            album.title = "mine"
            album.artist = c.object(with: o.a1, as: Artist.self)
            return album.objectID
        }
        // Elsewhere Y joins A1.
        let other = PendingDeletionMergeTests.sibling(of: f)
        await other.perform { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a1, as: Artist.self) }
        try await other.save()
        let (albums, problems) = await f.context.perform { c in
            let a1 = c.object(with: o.a1, as: Artist.self)
            c.refresh(a1, mergeChanges: true)
            return (a1.albums.map(\.objectID), relationshipDisagreements(c))
        }
        #expect(Set(albums) == [o.x, o.y, mine])
        #expect(problems.isEmpty, "\(problems)")
        try await f.saveThrough()
        let generation = f.generation
        #expect(generation.integrityProblems().isEmpty)
        #expect(Set(generation.value(o.a1, "albums")?.referencedObjects ?? []) == [o.x, o.y, mine])
        await f.close()
    }
}
