import Foundation
import Testing
@testable import Strata

/// An object whose to-many list this context changed, read before another save added an
/// object to that list, and the added object read after that save and moved away from it:
/// the list lets go of the object too, so that the save changes both sides. (The list kept
/// the added object — the other save's addition merged into it, by the store or by a merge
/// here — while the object named another owner, and the save was refused as an inverse
/// violation.)
@Suite struct StaleListInverseTests {
    enum Merging: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// The context saves before it merges the other save.
        case none
        /// It merges the other save first.
        case explicit
        var testDescription: String { rawValue }
    }

    @Test("an object moved away from a list read before it joined leaves the list", arguments: Tier.allCases, Merging.allCases)
    func movedAwayFromStaleList(tier: Tier, merging: Merging) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        // A1 (listing X) read here, and changed: Y joins it.
        await f.context.perform { c in
            let y = c.object(with: o.y, as: Album.self)
            y.artist = c.object(with: o.a1, as: Artist.self)
        }
        // Elsewhere, Z joins A1 and is saved.
        let (z, save) = try await f.saveElsewhere { c in
            let z = c.insert(Album.self)
            z.albumID = 900
            z.title = "Z"
            z.artist = c.object(with: o.a1, as: Artist.self)
            return z.objectID
        }
        // Z, read here after that save, moves to A2.
        await f.context.perform { c in
            let album = c.object(with: z, as: Album.self)
            album.artist = c.object(with: o.a2, as: Artist.self)
        }
        switch merging {
        case .none: break
        case .explicit: await f.context.merge(save)
        }
        let (albums, problems) = await f.context.perform { c in
            ((c.object(with: o.a1, as: Artist.self)).albums.map(\.objectID), relationshipDisagreements(c))
        }
        #expect(Set(albums) == [o.x, o.y], "A1 lists X and Y, not Z")
        #expect(problems.isEmpty, "\(problems)")
        try await f.saveThrough()
        let generation = f.generation
        #expect(generation.integrityProblems().isEmpty)
        #expect(generation.value(z, "artist") == .object(o.a2))
        #expect(Set(generation.value(o.a1, "albums")?.referencedObjects ?? []) == [o.x, o.y])
        await f.close()
    }
}
