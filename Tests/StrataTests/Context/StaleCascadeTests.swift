import Foundation
import Testing
@testable import Strata

/// A deletion whose `cascade` rule reaches an object read before another save related it to
/// the deleted object, the deleted object itself read after that save: the object is read
/// again and deleted with it. (It stayed, still naming no owner here; merged, it named the
/// deleted artist, and the context showed an album of an artist it had deleted.)
@Suite struct StaleCascadeTests {
    @Test("a cascade reaches an object that joined the deleted one after it was read", arguments: Tier.allCases, StaleListInverseTests.Merging.allCases)
    func cascadeReachesStaleMember(tier: Tier, merging: StaleListInverseTests.Merging) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        // Y, without an artist, read here.
        await f.context.perform { c in _ = c.object(with: o.y, as: Album.self).title }
        // Elsewhere, Y joins A2 and is saved.
        let (_, save) = try await f.saveElsewhere { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        // A2, read here after that save (listing Y), is deleted: its cascade takes Y.
        let yDeleted = await f.context.perform { c in
            c.delete(c.object(with: o.a2, as: Artist.self))
            return c.object(with: o.y, as: Album.self).isDeleted
        }
        #expect(yDeleted)
        if merging == .explicit { await f.context.merge(save) }
        let problems = await f.context.perform { c in relationshipDisagreements(c) }
        #expect(problems.isEmpty, "\(problems)")
        try await f.saveThrough()
        let generation = f.generation
        #expect(generation.integrityProblems().isEmpty)
        #expect(generation.row(o.y) == nil, "Y went with A2")
        #expect(generation.row(o.a2) == nil)
        await f.close()
    }
}
