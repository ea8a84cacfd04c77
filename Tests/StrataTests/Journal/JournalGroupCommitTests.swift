import Foundation
import Testing

@testable import Strata

/// Concurrent appenders share writes and fsyncs, and every one of them is acknowledged
/// and kept.
@Suite struct JournalGroupCommitTests {
    /// Hands out transactions in order; enqueueing happens under the same lock, so the
    /// journal receives them numbered in order while appenders wait concurrently.
    final class Numbering: Sendable {
        let next = Locked(0)
    }

    /// The durability observer (how the store publishes generations) is called the same
    /// way after the thousandth batch as after the first: holding it must not wrap it in
    /// more thunks at each read (it did once, and every batch grew the chain).
    @Test func durabilityObserverStaysFlat() async throws {
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: .init(durability: .relaxed, fileIO: InMemoryFileIO()))
        let depths = Locked<[Int]>([])
        journal.observeDurability { _ in
            let depth = Thread.callStackReturnAddresses.count
            depths.withLock { $0.append(depth) }
        }
        let history = History(seed: 7, count: 300)
        for record in history.records { try await journal.append(record) }
        let seen = depths.withLock { $0 }
        #expect(seen.count >= 2)
        #expect((seen.last ?? 0) <= (seen.first ?? 0) + 2, "call depth of the observer: \(seen.first ?? 0) at first, \(seen.last ?? 0) at last")
        await journal.close()
    }

    @Test func fourAppendersShareSyncs() async throws {
        let appenders = 4
        let history = History(seed: 31, count: appenders * 25)
        let memory = InMemoryFileIO()
        let checker = IOOrderingChecker(wrapping: memory)
        // An fsync takes a moment, as on a disk: appends arriving meanwhile join the next batch.
        let disk = HookedFileIO(wrapping: checker) { if $0 == .sync { usleep(300) } }
        let journal = try Journal.create(
            at: storePath, schema: Fixtures.songbook,
            configuration: .init(segmentSize: segmentPreambleSize + 8_000, fileIO: disk) {
                checker.noteAcknowledged(path: $0, durableThrough: $1)
            })
        let numbering = Numbering()

        let acknowledged = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for _ in 0..<appenders {
                group.addTask {
                    var mine: [UInt64] = []
                    while true {
                        let number = try numbering.next.withLock { (next) throws(StoreError) -> UInt64? in
                            guard next < history.count else { return nil }
                            let record = history.records[next]
                            try journal.enqueue(record)
                            next += 1
                            return record.number
                        }
                        guard let number else { return mine }
                        try await journal.waitUntilDurable(number)
                        mine.append(number)
                    }
                }
            }
            var all: [[UInt64]] = []
            for try await mine in group { all.append(mine) }
            return all
        }

        #expect(acknowledged.count == appenders)
        #expect(acknowledged.allSatisfy { !$0.isEmpty }, "every appender got some work: \(acknowledged.map(\.count))")
        #expect(acknowledged.flatMap { $0 }.sorted() == Array(1...UInt64(history.count)))
        let statistics = journal.statistics
        #expect(statistics.appends == history.count)
        #expect(statistics.syncs < statistics.appends, "group commit: \(statistics)")
        #expect(statistics.writes == statistics.syncs)
        #expect(journal.lastDurableTransaction == UInt64(history.count))
        #expect(statistics.segmentsStarted > 1)
        await journal.close()
        #expect(checker.violations.isEmpty, "\(checker.violations)")

        let recovered = try await recover(memory.crashed(seed: 1, mode: .powerLoss))
        #expect(recovered.state == history.model(UInt64(history.count)))
        #expect(recovered.untidiness.isEmpty)
    }
}
