import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// Cancelling the task that runs an import stops it before its next commit: the commits it
/// reported stay, nothing after them is committed, and the error says so.
extension ImportCommandTests {
    @Test func cancellingAnImportKeepsExactlyTheReportedCommits() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        // The import's task is cancelled once its first commit is reported.
        let error = try #require(await importArtists(1...9, into: catalog, batchSize: 2, cancelling: .afterFirstCommit))
        #expect(error.storeError?.code == .cancelled)
        #expect(error.description == "the import was cancelled after line 4: lines 1–2 are committed (1 transaction through 1) and nothing after them")
        let generation = try await catalog.generation()
        #expect(generation.transaction == 1)
        #expect(generation.count(of: "Artist") == 2)
    }

    @Test func anImportCancelledBeforeItStartsCommitsNothing() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let error = try #require(await importArtists(1...3, into: catalog, batchSize: nil, cancelling: .beforeStart))
        #expect(error.storeError?.code == .cancelled)
        #expect(error.message == "the import was cancelled after line 0: nothing was committed")
        let generation = try await catalog.generation()
        #expect(generation.transaction == 0)
        #expect(generation.count(of: "Artist") == 0)
    }

    enum CancellationMoment { case beforeStart, afterFirstCommit }

    /// Imports artists with the given keys in a task of its own, cancelled at `moment`;
    /// returns the import's error (`nil` if it finished).
    private func importArtists(_ keys: ClosedRange<Int>, into catalog: CatalogStore, batchSize: Int?,
                               cancelling moment: CancellationMoment) async -> JSONLinesImporter.ImportError? {
        let file = try! catalog.file("artists.jsonl", keys.map { #"{"entity": "Artist", "values": {"artistID": \#($0)}}"# })
        let task = Task { () async -> JSONLinesImporter.ImportError? in
            if moment == .beforeStart { withUnsafeCurrentTask { $0?.cancel() } }
            let store = try! Store.open(at: catalog.path)
            var importer = JSONLinesImporter(store: store, batchSize: batchSize)
            do {
                _ = try await importer.run(try JSONLinesReader(path: file)) { event in
                    if moment == .afterFirstCommit, case .committed = event { withUnsafeCurrentTask { $0?.cancel() } }
                }
                await store.close()
                return nil
            } catch {
                await store.close()
                return error as? JSONLinesImporter.ImportError
            }
        }
        return await task.value
    }
}
