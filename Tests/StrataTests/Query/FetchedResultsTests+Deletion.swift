import Foundation
import Testing
@testable import Strata

extension FetchedResultsTests {
    /// An object inserted in one turn and deleted in a later one, before any save, leaves
    /// the live results at once.
    @Test("live results drop an unsaved inserted object deleted in a later turn", arguments: [Tier.root, .child])
    func liveResultsDropDeletedInsertion(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let failures = await f.context.perform { c -> [String] in
            var failures: [String] = []
            let results = try! c.fetchedResults(Artist.self, request: FetchRequest(entity: "Artist", sortBy: [SortKey("artistID")]))
            var diffs: [ResultsDiff] = []
            results.onChange = { diffs.append($0) }
            let artist = c.insert(Artist.self)
            artist.artistID = 1
            artist.name = "AC/DC"
            c.processPendingChanges()
            if results.objects.count != 1 { failures.append("after the insert: \(results.snapshot)") }
            c.delete(artist)
            c.processPendingChanges()
            let fresh = try! c.fetchIDs(FetchRequest(entity: "Artist", sortBy: [SortKey("artistID")]))
            if !fresh.isEmpty { failures.append("a fresh fetch still finds \(fresh)") }
            if results.snapshot.sections.flatMap(\.ids) != fresh {
                failures.append("live results still hold \(results.snapshot.sections.flatMap(\.ids)) after the delete; diffs delivered: \(diffs.count)")
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures)")
        await f.close()
    }
}
