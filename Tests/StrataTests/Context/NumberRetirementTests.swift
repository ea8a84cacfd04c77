import Foundation
import Testing
@testable import Strata

/// An object a context inserts takes its number from the store at once; one let go of
/// unsaved — rolled back, reset, deleted before a save, or gone with a discarded context —
/// never reaches a commit. The store forgets such numbers (they stay handed out), so what
/// it keeps of its unused numbers does not grow with every cancelled insert: it kept one
/// range per such number, between the numbers saved around it, until it closed.
@Suite struct NumberRetirementTests {
    @Test("numbers of inserts let go of unsaved are forgotten", arguments: Tier.allCases)
    func cancelledInsertsLeaveNothingBehind(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        for round in 0..<40 {
            let base = 10 * round
            await f.context.perform { c in
                // Inserted and rolled back.
                c.insert(Album.self).albumID = base + 1
                c.rollback()
                // Inserted and deleted before a save.
                let deleted = c.insert(Album.self)
                deleted.albumID = base + 2
                c.delete(deleted)
                // Inserted and reset away.
                c.insert(Album.self).albumID = base + 3
                c.reset()
            }
            // Inserted in a child that is let go of unsaved.
            var scratch: ObjectContext? = ObjectContext(parent: f.context, name: "scratch")
            await scratch!.perform { c in c.insert(Album.self).albumID = base + 4 }
            scratch = nil
            // One kept, so that every number let go of lies between saved ones.
            await f.context.perform { c in
                let kept = c.insert(Album.self)
                kept.albumID = base + 5
                kept.title = "kept"
            }
            try await f.saveThrough()
        }
        #expect(f.generation.objects(of: "Album").count == 40)
        // (A discarded context lets go of its inserts in its deinit, on its own executor.)
        #expect(await eventually { f.store.unusedNumberRanges(of: "Album") == 0 }, "the numbers of cancelled inserts are still kept")
        await f.close()
    }
}
