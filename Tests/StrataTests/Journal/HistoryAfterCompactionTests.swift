import Foundation
import Testing

@testable import Strata

/// `transactions(after:)` lists the transactions compaction has not folded into a
/// checkpoint — not older ones that happen to share a segment with newer ones.
@Suite struct HistoryAfterCompactionTests {
    @Test func historyOmitsTransactionsFoldedIntoTheCheckpoint() async throws {
        let memory = InMemoryFileIO()
        let history = History(seed: 21, count: 8)
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: .init(fileIO: memory))
        for number in 1...5 as ClosedRange<UInt64> { try await journal.append(history.record(number)) }
        // A checkpoint behind the last transaction, as a store's compaction takes while
        // commits continue: transactions 1...3 are folded into it.
        let report = try await journal.compact(from: history.model(3))
        #expect(report.checkpoint == 3)
        for number in 6...8 as ClosedRange<UInt64> { try await journal.append(history.record(number)) }
        let listed = try journal.transactions().map(\.number)
        #expect(listed == Array(4...8))
        await journal.close()

        // The same after reopening, read-only as `strata history` opens it.
        let (reader, state) = try Journal.read(at: storePath, fileIO: memory)
        #expect(state == history.model(8))
        #expect(reader.recovery.checkpoint == 3)
        let listedAfterReopen = try reader.transactions().map(\.number)
        #expect(listedAfterReopen == Array(4...8))
        await reader.close()
    }
}
