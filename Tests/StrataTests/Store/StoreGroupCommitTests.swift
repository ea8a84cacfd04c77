import Foundation
import Testing
@testable import Strata

@Suite struct StoreGroupCommitTests {
    @Test func concurrentCommittersShareSyncs() async throws {
        let directory = TemporaryDirectory("strata-group-commit")
        defer { directory.remove() }
        // An fsync takes a moment, as on a disk, longer than preparing a commit: commits
        // arriving meanwhile join the next batch, however slow the build.
        let disk = HookedFileIO(wrapping: POSIXFileIO()) { if $0 == .sync { usleep(2_000) } }
        let store = try Store.create(at: directory.appending("store.strata"), schema: Fixtures.songbook,
                                     configuration: Store.Configuration(durability: .full, fileIO: disk))
        let committers = 4
        let perCommitter = 30

        let results = try await withTimeout(60, "\(committers * perCommitter) commits at full durability") {
            try await withThrowingTaskGroup(of: [CommitResult].self) { group in
                for c in 0..<committers {
                    group.addTask {
                        var mine: [CommitResult] = []
                        for i in 0..<perCommitter {
                            let id = store.allocateObjectIDs(for: "Artist")[0]
                            let result = try await store.commit(ChangeSet(author: "committer \(c)", inserted: [
                                Songbook.artist(id, artistID: Int64(c * 1_000 + i), name: "c\(c) i\(i)"),
                            ]))
                            // Acknowledged means durable and published.
                            #expect(store.journal.lastDurableTransaction >= result.transaction)
                            #expect(store.currentGeneration.transaction >= result.transaction)
                            mine.append(result)
                        }
                        return mine
                    }
                }
                var all: [CommitResult] = []
                for try await mine in group { all += mine }
                return all
            }
        }
        let commits = committers * perCommitter
        #expect(Set(results.map(\.transaction)) == Set(1...UInt64(commits)))
        let statistics = store.journal.statistics
        #expect(statistics.appends == commits)
        #expect(statistics.syncs >= 1)
        #expect(statistics.syncs < commits, "every commit had its own fsync: \(statistics)")
        #expect(statistics.writes == statistics.syncs)
        #expect(store.currentGeneration.count(of: "Artist") == commits)
        let live = store.currentGeneration
        await store.close()

        let reopened = try StoreTesting.open(in: directory, durability: .full)
        #expect(reopened.currentGeneration.allObjects == live.allObjects)
        await reopened.close()
    }
}
