import Foundation
import Testing
@testable import Strata

/// An album moved here to an artist that this context also renamed, while another context
/// renames the artist and retitles the album: under `rollback` the merge drops every change of the artist (its name
/// conflicts), its list naming the album among them; the album's move, changed here only,
/// is kept by the rule for such to-ones. A pair is kept or dropped whole: the album goes
/// back to no artist and the artist does not list it. (The kept move listed the album on
/// the artist again after the dropped list had taken the album back, and the next save was
/// refused as an inverse violation — `hybrid` seed 1643 of the soak, where the writer then
/// dropped everything it held.) Under the other policies the rename conflict keeps or drops
/// only the name, and the move stays on both sides.
@Suite struct PairDroppedWholeTests {
    @Test("an album moved here to an artist whose rename conflicts: the pair is kept or dropped whole, and the next save goes through",
          arguments: Tier.allCases, [MergePolicy.rollback, .error, .storeWins, .contextWins, .overwrite])
    func movedToARenamedArtist(tier: Tier, policy: MergePolicy) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        await f.context.perform { c in
            c.mergePolicy = policy
            let a2 = c.object(with: o.a2, as: Artist.self)
            _ = a2.albums
            c.object(with: o.y, as: Album.self).artist = a2
            a2.name = "ours"
        }
        // The same save retitles the album: the merge reaches it too.
        let (_, renamed) = try await f.saveElsewhere { c in
            c.object(with: o.a2, as: Artist.self).name = "theirs"
            c.object(with: o.y, as: Album.self).title = "theirs"
        }
        let (artist, a2Albums, problems) = await f.context.perform { c in
            _ = c.merge(renamed)
            return (c.object(with: o.y, as: Album.self).artist?.objectID, c.object(with: o.a2, as: Artist.self).albums.map(\.objectID),
                    relationshipDisagreements(c))
        }
        #expect(problems.isEmpty, "\(problems)")
        #expect(artist == (policy == .rollback ? nil : o.a2))
        #expect(a2Albums == (policy == .rollback ? [] : [o.y]))
        if policy != .error {
            try await f.saveThrough()
            let stored = f.generation
            #expect(stored.integrityProblems().isEmpty, "\(stored.integrityProblems().prefix(3))")
            #expect(stored.value(o.y, "artist") == (policy == .rollback ? .null : .object(o.a2)))
        }
        await f.close()
    }
}
