import Foundation
import Testing
@testable import Strata

/// Cancelling the task that runs a compaction stops it before its checkpoint is in place:
/// the temporary file is removed, the journal's files are as they were, the store keeps
/// committing, and a later compaction runs to the end.
@Suite struct CompactionCancellationTests {
    /// Enough artists for a checkpoint of several chunks (the writer looks for a
    /// cancellation after each).
    static let artists = 60_000

    /// A store of `artists` artists, committed in one transaction.
    static func seeded(in directory: TemporaryDirectory) async throws -> Store {
        let store = try StoreTesting.create(in: directory)
        let ids = store.allocateObjectIDs(for: "Artist", count: artists)
        try await store.commit(ChangeSet(author: "seed", inserted: ids.enumerated().map { i, id in
            Songbook.artist(id, artistID: Int64(i + 1), name: "Artist number \(i + 1) with a longer name")
        }))
        return store
    }

    /// The store's files, by name.
    static func files(_ directory: TemporaryDirectory) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.appending("store.strata")).sorted()
    }

    /// A generation's rows that cancels the task compacting it once `after` rows were read.
    struct CancellingSource: CheckpointSource {
        let base: Generation
        let after: Int
        let cancel: @Sendable () -> Void
        var lastTransaction: UInt64 { base.lastTransaction }
        var highestObjectNumbers: [String: UInt64] { base.highestObjectNumbers }
        func forEachRow(_ body: (RowImage) throws -> Void) rethrows {
            var read = 0
            try base.forEachRow { row in
                read += 1
                if read == after { cancel() }
                try body(row)
            }
        }
    }

    @Test("a compaction cancelled while it writes its checkpoint changes nothing, and the next one completes")
    func cancelledWhileWriting() async throws {
        let directory = TemporaryDirectory("strata-compaction-cancel")
        defer { directory.remove() }
        let store = try await Self.seeded(in: directory)
        let before = try Self.files(directory)
        let compacting = Locked<Task<Result<Journal.CompactionReport, StoreError>, Never>?>(nil)
        let source = CancellingSource(base: store.currentGeneration, after: 10) { compacting.withLock { $0?.cancel() } }
        let (gate, opened) = AsyncStream<Void>.makeStream()
        let task = Task { () async -> Result<Journal.CompactionReport, StoreError> in
            for await _ in gate { break }  // until the test holds the task, so the source can cancel it
            do throws(StoreError) { return .success(try await store.journal.compact(from: source)) } catch { return .failure(error) }
        }
        compacting.withLock { $0 = task }
        opened.yield()
        opened.finish()
        let outcome = try await withTimeout(30, "the cancelled compaction") { await task.value }
        guard case .failure(let error) = outcome else {
            Issue.record("the cancelled compaction completed: \(outcome)")
            return
        }
        #expect(error.code == .cancelled, "\(error)")
        #expect(error.message.contains("the temporary checkpoint was removed and nothing changed"), "\(error.message)")
        // The segment the compaction rolled to may be new; nothing else is, and no checkpoint
        // (finished or temporary) is left.
        let after = try Self.files(directory)
        #expect(Set(before).isSubset(of: Set(after)), "files went: \(Set(before).subtracting(after))")
        #expect(!after.contains { $0.hasPrefix("checkpoint-") }, "\(after)")
        #expect(store.journal.statistics.checkpoints == 0)

        // The store goes on: a commit, then a compaction that completes.
        let more = store.allocateObjectIDs(for: "Artist", count: 1)
        try await store.commit(ChangeSet(author: "after", inserted: [Songbook.artist(more[0], artistID: 0, name: "After")]))
        let report = try await store.compact()
        #expect(report.rows == Self.artists + 1)
        await store.close()
        let reopened = try StoreTesting.open(in: directory)
        #expect(reopened.currentGeneration.count(of: "Artist") == Self.artists + 1)
        await reopened.close()
    }

    @Test("a compaction asked for by a cancelled task does not begin")
    func cancelledBeforeItBegins() async throws {
        let directory = TemporaryDirectory("strata-compaction-cancel")
        defer { directory.remove() }
        let store = try await Self.seeded(in: directory)
        let before = try Self.files(directory)
        let task = Task { () async -> Result<Journal.CompactionReport, StoreError> in
            withUnsafeCurrentTask { $0?.cancel() }
            do throws(StoreError) { return .success(try await store.compact()) } catch { return .failure(error) }
        }
        let outcome = try await withTimeout(30, "the compaction") { await task.value }
        guard case .failure(let error) = outcome else {
            Issue.record("a cancelled task's compaction ran: \(outcome)")
            return
        }
        #expect(error.code == .cancelled)
        #expect(try Self.files(directory) == before)
        await store.close()
    }
}
