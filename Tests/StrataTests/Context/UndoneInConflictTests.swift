import Foundation
import Testing
@testable import Strata

/// A key changed here and elsewhere, kept under the merge policy `error` for the next save to
/// report, then set back by hand to its value from before: it still differs from the value
/// merged since, so it stays a change, and the save reports the conflict. (It left the
/// changes, the context showed the old value with nothing pending while the store had the
/// merged one, and no save ever mentioned it — `hybrid` seed 4506 of the soak, a view under
/// `error` that set an album's title back.)
@Suite struct UndoneInConflictTests {
    @Test("a key set back to its old value after a conflicting merge stays a change, reported by the save", arguments: Tier.allCases)
    func keySetBackAfterConflict(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let original = await f.context.perform { c in
            c.mergePolicy = .error
            let album = c.object(with: o.x, as: Album.self)
            defer { album.title = "ours" }
            return album.title
        }
        let (_, save) = try await f.saveElsewhere { c in c.object(with: o.x, as: Album.self).title = "theirs" }
        let conflicts = await f.context.merge(save)
        #expect(conflicts.map(\.key) == ["title"])
        let pending = await f.context.perform { c in
            c.object(with: o.x, as: Album.self).title = original
            return c.hasChanges
        }
        #expect(pending, "the title set back differs from the merged one: a change still")
        await #expect(throws: StoreError.self, "the save reports the conflict") { try await f.saveThrough() }
        let afterRollback = await f.context.perform { c in
            c.rollback()
            return (c.object(with: o.x, as: Album.self).title, c.hasChanges)
        }
        #expect(afterRollback.0 == "theirs" && !afterRollback.1, "a rollback shows the merged title: \(afterRollback)")
        await f.close()
    }
}
