import Foundation
import Testing
@testable import Strata

/// A merge under `rollback` drops every change of an object another save changed too —
/// relationship changes included: the other side of such a change goes back with it, also
/// where that side's own change gave it another object. (An artist the policy rolled back
/// listed its album again while the album, moved here to another artist, still named that
/// one; the next save was refused as an inverse violation.)
@Suite struct RolledBackPairTests {
    @Test("an album moved away from an artist the merge rolls back goes back to it", arguments: Tier.allCases)
    func movedAlbumGoesBack(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        // Here: X moves from A1 to A2, and A1 is renamed.
        await f.context.perform { c in
            c.mergePolicy = .rollback
            let a1 = c.object(with: o.a1, as: Artist.self)
            c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
            a1.name = "ours"
        }
        // Elsewhere A1 is renamed too: a conflict, and the merge rolls A1 back.
        let (_, save) = try await f.saveElsewhere { c in c.object(with: o.a1, as: Artist.self).name = "theirs" }
        await f.context.merge(save)
        let (a1Albums, a2Albums, xArtist, name, problems) = await f.context.perform { c in
            let a1 = c.object(with: o.a1, as: Artist.self)
            return (a1.albums.map(\.objectID), c.object(with: o.a2, as: Artist.self).albums.map(\.objectID),
                    c.object(with: o.x, as: Album.self).artist?.objectID, a1.name, relationshipDisagreements(c))
        }
        #expect(name == "theirs")
        #expect(a1Albums == [o.x], "A1 is as the other save left it")
        #expect(xArtist == o.a1, "X goes back to A1 with it")
        #expect(a2Albums.isEmpty)
        #expect(problems.isEmpty, "\(problems)")
        try await f.saveThrough()
        let generation = f.generation
        #expect(generation.integrityProblems().isEmpty)
        #expect(generation.value(o.x, "artist") == .object(o.a1))
        await f.close()
    }

    /// The same, saved without merging the other save first: the store's `rollback` takes
    /// the pair back whole too (it refused the save as an inverse violation).
    @Test("a save under rollback takes back an album moved away from an artist another save changed", arguments: Tier.allCases)
    func savedMovedAlbumGoesBack(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        // Here: X moves from A1 to a new artist, and A1 is renamed.
        let newArtist = await f.context.perform { c in
            c.mergePolicy = .rollback
            let artist = c.insert(Artist.self)
            artist.artistID = 700
            artist.createdAt = Date(timeIntervalSince1970: 0)
            c.object(with: o.x, as: Album.self).artist = artist
            c.object(with: o.a1, as: Artist.self).name = "ours"
            return artist.objectID
        }
        for ancestor in f.ancestors { await ancestor.perform { c in c.mergePolicy = .rollback } }
        // Elsewhere, straight to the store, A1 is renamed too.
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        await other.perform { c in c.object(with: o.a1, as: Artist.self).name = "theirs" }
        try await other.save()
        try await f.saveThrough()
        let generation = f.generation
        #expect(generation.integrityProblems().isEmpty)
        #expect(generation.value(o.a1, "name") == .string("theirs"))
        #expect(generation.value(o.x, "artist") == .object(o.a1), "X stays with A1, whose changes were rolled back")
        #expect(generation.value(newArtist, "albums") == .objects([]))
        await f.close()
    }
}
