import Foundation
import Testing
@testable import Strata

/// An album moved here, pending, while other contexts move it elsewhere and then back to the
/// artist it had: the first merge is a conflict (kept under `error`), which the second
/// dissolves — its value is the base again. The album stays where this context moved it,
/// and the artist it was moved away from must not list it. (The first merge left that
/// artist's list as this context had made it, so it no longer held a change of its own;
/// the second gave it the save's list, naming the album again, while the album named
/// another artist — `hybrid` seed 4998 of the soak.)
@Suite struct MovedAndMovedBackTests {
    @Test("an album moved here while others move it away and back stays where it was moved, its old artist not listing it",
          arguments: Tier.allCases, [MergePolicy.error, .storeWins, .contextWins, .overwrite, .rollback])
    func movedAwayAndBack(tier: Tier, policy: MergePolicy) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        // Y goes to A1 first, everywhere.
        let (_, placed) = try await f.saveElsewhere { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a1, as: Artist.self) }
        await f.context.perform { c in
            _ = c.merge(placed)
            c.mergePolicy = policy
            _ = c.object(with: o.a1, as: Artist.self).albums
            _ = c.object(with: o.a3, as: Artist.self).albums
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)  // here: to A2
        }
        let (_, away) = try await f.saveElsewhere { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a3, as: Artist.self) }
        let (_, back) = try await f.saveElsewhere { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a1, as: Artist.self) }
        let (artist, a1Albums, problems) = await f.context.perform { c in
            _ = c.merge(away)
            _ = c.merge(back)
            return (c.object(with: o.y, as: Album.self).artist?.objectID, c.object(with: o.a1)["albums"], relationshipDisagreements(c))
        }
        #expect(problems.isEmpty, "\(problems)")
        // Policies keeping ours keep the move here; the others took the first merge's value,
        // and the album follows the second back to A1.
        let keepsOurs = [MergePolicy.error, .contextWins, .overwrite].contains(policy)
        #expect(artist == (keepsOurs ? o.a2 : o.a1))
        #expect(a1Albums == .objects(keepsOurs ? [o.x] : [o.x, o.y]), "A1 lists \(a1Albums)")
        try? await f.saveThrough()
        let stored = f.generation
        #expect(stored.integrityProblems().isEmpty, "\(stored.integrityProblems().prefix(3))")
        await f.close()
    }
}
