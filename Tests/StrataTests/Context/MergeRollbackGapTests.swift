import Foundation
import Testing
@testable import Strata

/// Rollbacks after merges show the merged values: after a merge into an object with a
/// pending deletion, and after a merge that kept a conflict for the next save (merge policy
/// `error`). The last test states a merge case not handled yet (docs/ARCHITECTURE.md,
/// "Limits today") and is disabled with the reason; nothing inconsistent reaches the store
/// in it — the next save is refused with `inverseViolation`.
@Suite struct MergeRollbackGapTests {
    typealias Pair = ContextMergeTests.Pair

    @Test("rollback after merging a save into an object with a pending deletion: values are current")
    func rollbackAfterMergeIntoDeleted() async throws {
        let p = try Pair()
        let o = try await seedSongbook(p.store)
        await p.a.perform { c in c.delete(c.object(with: o.a2, as: Artist.self)) }
        let saves = p.b.didSave()
        await p.b.perform { c in c.object(with: o.a2, as: Artist.self).name = "B" }
        try await p.b.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await p.a.merge(save)
        await p.a.rollback()
        let name = await p.a.perform { c in c.object(with: o.a2, as: Artist.self).name }
        #expect(name == "B", "rollback restored the pre-merge row")
        await p.close()
    }

    @Test("rollback after a conflicting merge under .error: values are current")
    func rollbackAfterConflictMerge() async throws {
        let p = try Pair()
        let o = try await seedSongbook(p.store)
        let later = Date(timeIntervalSince1970: 99)
        await p.a.perform { c in c.object(with: o.a1, as: Artist.self).name = "A" }
        let saves = p.b.didSave()
        await p.b.perform { c in
            let artist = c.object(with: o.a1, as: Artist.self)
            artist.name = "B"
            artist.createdAt = later
        }
        try await p.b.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await p.a.merge(save)
        let merged = await p.a.perform { c in c.object(with: o.a1, as: Artist.self).createdAt }
        #expect(merged == later)
        await p.a.rollback()
        let (name, created) = await p.a.perform { c in
            let artist = c.object(with: o.a1, as: Artist.self)
            return (artist.name, artist.createdAt)
        }
        #expect(name == "B")
        #expect(created == later, "rollback took back a value already merged")
        await p.close()
    }

    @Test("merge under storeWins of a moved to-one keeps inverses consistent", .disabled("known gap: a merged to-one change that overrides this context's own does not take the object out of the to-many list its own change put it in"))
    func mergeMoveInverse() async throws {
        let p = try Pair()
        let o = try await seedSongbook(p.store)
        await p.a.setMergePolicyStoreWins()
        await p.a.perform { c in
            _ = c.object(with: o.a3, as: Artist.self).albums  // load a3
            c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
        }
        let saves = p.b.didSave()
        await p.b.perform { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a3, as: Artist.self) }
        try await p.b.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await p.a.merge(save)
        let (artist, a2Albums, a3Albums) = await p.a.perform { c in
            (c.object(with: o.x, as: Album.self).artist?.objectID,
             c.object(with: o.a2, as: Artist.self).albums.map(\.objectID),
             c.object(with: o.a3, as: Artist.self).albums.map(\.objectID))
        }
        #expect(artist == o.a3)
        #expect(a3Albums == [o.x])
        #expect(a2Albums == [], "a2.albums still lists x, whose artist is a3")
        await p.close()
    }
}

extension ObjectContext {
    func setMergePolicyStoreWins() { mergePolicy = .storeWins }
}
