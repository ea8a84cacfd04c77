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
        let file = try catalog.file("artists.jsonl", (1...9).map { #"{"entity": "Artist", "values": {"artistID": \#($0)}}"# })
        let task = Task { () async -> JSONLinesImporter.ImportError? in
            let store = try! Store.open(at: catalog.path)
            var importer = JSONLinesImporter(store: store, batchSize: 2)
            do {
                _ = try await importer.run(try JSONLinesReader(path: file)) { event in
                    // The import's task is cancelled once its first commit is reported.
                    if case .committed = event { withUnsafeCurrentTask { $0?.cancel() } }
                }
                await store.close()
                return nil
            } catch {
                await store.close()
                return error as? JSONLinesImporter.ImportError
            }
        }
        let failure = await task.value
        let error = try #require(failure)
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
        let file = try catalog.file("artists.jsonl", (1...3).map { #"{"entity": "Artist", "values": {"artistID": \#($0)}}"# })
        let task = Task { () async -> JSONLinesImporter.ImportError? in
            withUnsafeCurrentTask { $0?.cancel() }
            let store = try! Store.open(at: catalog.path)
            var importer = JSONLinesImporter(store: store)
            do {
                _ = try await importer.run(try JSONLinesReader(path: file))
                await store.close()
                return nil
            } catch {
                await store.close()
                return error as? JSONLinesImporter.ImportError
            }
        }
        let error = try #require(await task.value)
        #expect(error.storeError?.code == .cancelled)
        #expect(error.message == "the import was cancelled after line 0: nothing was committed")
        let generation = try await catalog.generation()
        #expect(generation.transaction == 0)
        #expect(generation.count(of: "Artist") == 0)
    }
}
