import Testing
@testable import Strata

/// `refresh(_:mergeChanges: false)` drops an object's changes: its relationship changes go,
/// and so does what they did to the other side of each relationship (the objects it left get
/// it back, those it joined lose it), so that the graph still agrees with itself and saves.
@Suite struct RefreshInverseTests {
    @Test("dropping a to-one move puts both old and new owners back", arguments: Tier.allCases)
    func droppedToOneMove(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let (artist, problems, changed) = await f.context.perform { c in
            let x = c.object(with: o.x, as: Album.self)
            x.artist = c.object(with: o.a2, as: Artist.self)  // A1.albums loses X, A2.albums gains it
            c.refresh(x, mergeChanges: false)
            return (x.artist?.objectID, relationshipDisagreements(c), c.hasChanges)
        }
        #expect(artist == o.a1)
        #expect(problems.isEmpty, "\(problems)")
        #expect(!changed, "nothing is left to save: A1 and A2 are as they were")
        try await f.saveThrough()
        #expect(f.generation.integrityProblems().isEmpty)
        await f.close()
    }

    /// As if the relationship were set back with its setter (`a2.albums = []`): X leaves A2
    /// and is left without an artist — A1 had let go of it, and has changed since.
    @Test("dropping a to-many change takes it back as the setter would, keeping the other objects' own changes", arguments: Tier.allCases)
    func droppedToManyChange(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let (a1Albums, a2Albums, xArtist, yArtist, problems) = await f.context.perform { c in
            let a1 = c.object(with: o.a1, as: Artist.self)
            let a2 = c.object(with: o.a2, as: Artist.self)
            let x = c.object(with: o.x, as: Album.self)
            let y = c.object(with: o.y, as: Album.self)
            a2.albums = [x]      // X leaves A1 for A2
            a2.name = "Renamed"  // dropped with the rest
            a1.albums = [y]      // and A1, without X now, takes Y (a change of A1's own, kept)
            c.refresh(a2, mergeChanges: false)
            return (a1.albums.map(\.objectID), a2.albums.map(\.objectID), x.artist?.objectID, y.artist?.objectID,
                    relationshipDisagreements(c))
        }
        #expect(a2Albums.isEmpty)
        #expect(xArtist == nil)
        #expect(a1Albums == [o.y], "A1 keeps its own change")
        #expect(yArtist == o.a1)
        #expect(problems.isEmpty, "\(problems)")
        try await f.saveThrough()
        #expect(f.generation.integrityProblems().isEmpty)
        await f.close()
    }
}
