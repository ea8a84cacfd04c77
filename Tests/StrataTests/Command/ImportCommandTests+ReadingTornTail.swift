import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// The read-only commands say on standard error when they read past a torn tail, which they
/// do not cut, and history stops where the replay does: at a stale copy of an older record,
/// which a torn tail may hold.
extension ImportCommandTests {
    /// A catalog with transactions 1–3, and the path of its last segment.
    private func catalogWithThreeTransactions() async throws -> (CatalogStore, String) {
        let catalog = CatalogStore()
        try await catalog.create()
        try await catalog.load((1...30).map { #"{"entity": "Artist", "values": {"artistID": \#($0)}}"# }, batchSize: 10)
        let segments = try FileManager.default.contentsOfDirectory(atPath: catalog.path).filter { $0.hasPrefix("journal-") }.sorted()
        return (catalog, StoreLayout.join(catalog.path, try #require(segments.last)))
    }

    @Test func readingCommandsNameTheTornTailTheySkip() async throws {
        let (catalog, last) = try await catalogWithThreeTransactions()
        defer { catalog.remove() }
        let size = try #require(try FileManager.default.attributesOfItem(atPath: last)[.size] as? Int)
        #expect(truncate(last, off_t(size - 10)) == 0)
        for (command, extra) in [("history", []), ("query", ["--entity", "Artist", "--count"]), ("dump", []), ("aggregate", ["--entity", "Artist", "--function", "count"])] {
            let result = await runTool([command, catalog.path] + extra)
            #expect(result.status == 0, "\(command): \(result.errors)")
            #expect(result.errors.hasPrefix("strata \(command): note: skipped "), "\(command): \(result.errors)")
            #expect(result.errors.contains(" of \(last) ("), "\(command): \(result.errors)")
            #expect(result.errors.contains("the store holds transactions 1–2"), "\(command): \(result.errors)")
        }
        let history = await runTool(["history", catalog.path])
        #expect(history.output.split(separator: "\n").count == 2, "\(history.output)")
        // A dry run of a migration counts what the store holds without the tail, and says so.
        let model = try catalog.file("catalog-v2.json", [try Schema("Catalog", version: 2, entities: CommandFixtures.catalog.entities).modelFileJSON.prettyText])
        let dryRun = await runTool(["migrate", catalog.path, "--model", model, "--dry-run"])
        #expect(dryRun.status == 0, "\(dryRun.errors)")
        #expect(dryRun.errors.hasPrefix("strata migrate: note: skipped "), "\(dryRun.errors)")
        #expect(dryRun.errors.contains("the store holds transactions 1–2"), "\(dryRun.errors)")
        // Verify does not say every checksum holds: through which transaction, and what the
        // bytes after it may be.
        let verified = await runTool(["verify", catalog.path])
        #expect(verified.status == 0, "\(verified.errors)")
        #expect(verified.output.contains("required values hold through transaction 2\n"), "\(verified.output)")
        #expect(verified.output.contains(" of \(last) are no transaction ("), "\(verified.output)")
        #expect(verified.output.contains("if transaction 3 was ever acknowledged, damage to it"), "\(verified.output)")
    }

    @Test func historyStopsAtAStaleCopyOfAnOlderRecord() async throws {
        let (catalog, last) = try await catalogWithThreeTransactions()
        defer { catalog.remove() }
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: last)))
        let spans = FrameSpan.transactions(in: bytes)
        try #require(spans.count == 3)
        // A byte-exact copy of transaction 2 after the last record.
        bytes.replaceSubrange(spans[2].end..<spans[2].end, with: bytes[spans[1].offset..<spans[1].end])
        try Data(bytes).write(to: URL(fileURLWithPath: last))
        let store = try Store.open(at: catalog.path, configuration: .init(readOnly: true))
        #expect(try store.journal.transactions().map(\.number) == [1, 2, 3])
        await store.close()
        let history = await runTool(["history", catalog.path])
        #expect(history.status == 0)
        #expect(history.output.split(separator: "\n").count == 3, "\(history.output)")
    }

    /// A read-only handle takes no lock: a writer compacting in another process (or through
    /// another handle) removes the segments it listed when it opened. Its history is read
    /// again from what the directory holds now: the transactions folded into the checkpoint
    /// are history no more.
    @Test func readOnlyHistoryWhileAWriterCompacts() async throws {
        let directory = TemporaryDirectory("strata-history-compaction")
        defer { directory.remove() }
        let path = directory.appending("store.strata")
        let writer = try Store.create(at: path, schema: Fixtures.songbook)
        let first = writer.allocateObjectIDs(for: "Artist")[0]
        try await writer.commit(ChangeSet(author: "a", inserted: [Songbook.artist(first, artistID: 1)]))
        let reader = try Store.open(at: path, configuration: .init(readOnly: true))
        #expect(try reader.journal.transactions().map(\.number) == [1])
        try await writer.compact()
        let second = writer.allocateObjectIDs(for: "Artist")[0]
        try await writer.commit(ChangeSet(author: "a", inserted: [Songbook.artist(second, artistID: 2)]))
        #expect(try reader.journal.transactions().map(\.number) == [2])
        await reader.close()
        await writer.close()
    }
}
