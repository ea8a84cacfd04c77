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

extension FetchedResultsTests {
    /// Live results follow the context's objects as it has them; a request that leaves out
    /// pending changes is refused, naming the entity, rather than showing the store's rows
    /// in sections worked out from unsaved values (one section twice, and a diff that did
    /// not fit the snapshot) and never showing what the context saved.
    @Test("live results refuse a request without pending changes", arguments: [Tier.root, .child])
    func liveResultsRefuseStoreOnlyRequest(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let message = await f.context.perform { c -> String? in
            var request = FetchRequest(entity: "Album", sortBy: [SortKey("albumID")])
            request.includesPendingChanges = false
            do throws(StoreError) {
                _ = try c.fetchedResults(Album.self, request: request, sectionedBy: "artist.name")
                return nil
            } catch {
                return error.code == .invalidQuery ? error.message : "\(error)"
            }
        }
        #expect(message?.contains("\"Album\"") == true && message?.contains("includesPendingChanges") == true, "\(message ?? "no error")")
        await f.close()
    }
}

extension FetchedResultsTests {
    /// Live results of one entity asked for as another entity's class trap at once, naming
    /// both (they trapped at the first object read, perhaps much later, advising to register
    /// the class).
    @Test("live results asked for as another entity's class trap, naming both")
    func liveResultsOfAnotherEntityTrap() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let f = try! ContextFixture(.root, label: "strata-trap-results-entity")
            await f.context.perform { c in
                _ = try? c.fetchedResults(Song.self, request: FetchRequest(entity: "Album"))
            }
        }
        TemporaryDirectory.removeAll(labelled: "strata-trap-results-entity")
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("fetches \"Album\" objects, but Song models \"Song\""), "\(stderr.suffix(600))")
    }
}

extension FetchedResultsTests {
    /// A reset takes back unsaved values of objects that stay where they are in the results:
    /// they are reported as updated, so that a view showing them draws them again (the diff
    /// reported no update, and a table kept the discarded values).
    @Test("after a reset, objects that stay in place are reported as updated", arguments: [Tier.root, .child])
    func resetReportsObjectsInPlaceAsUpdated(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let (updatedAfterReset, position) = await f.context.perform { c -> ([ResultsIndexPath], ResultsIndexPath?) in
            let results = try! c.fetchedResults(Artist.self, request: FetchRequest(entity: "Artist", sortBy: [SortKey("artistID")]))
            var diffs: [ResultsDiff] = []
            results.onChange = { diffs.append($0) }
            let artist = c.object(with: o.a2, as: Artist.self)
            artist.name = "Unsaved"  // not a sort key: the artist stays in place
            c.processPendingChanges()
            let row = results.snapshot.sections[0].ids.firstIndex(of: o.a2).map { ResultsIndexPath(section: 0, row: $0) }
            diffs = []
            c.reset()
            return (diffs.flatMap(\.updatedRows), row)
        }
        let row = try #require(position)
        #expect(updatedAfterReset.contains(row), "\(updatedAfterReset)")
        await f.close()
    }
}
