import Foundation
import Testing

@testable import Strata

/// Closing while appends and compactions are under way: what was accepted before the close
/// began finishes (written, acknowledged, checkpointed) before the files are closed and the
/// lock released; what comes after is refused as closed; nothing touches a file afterwards.
@Suite struct CloseRaceTests {
    typealias Rig = PoisonTests.Rig
    static var history: History { PoisonTests.history }

    @Test("a transaction a leader hands to the writer's queue while the journal closes is written before the segment is closed")
    func handOffDuringClose() async throws {
        // Every append fills its segment: a leader rolls after acknowledging its transaction.
        let rig = try Rig(segmentSize: segmentPreambleSize + 1)
        let journal = rig.journal
        // The sync after transaction 1's is the new segment's, in the roll: hold it.
        rig.gate.hold(sync: rig.gate.syncs + 1)
        let leader = BlockingCall { try LeadingWriterTests.leadingAppend(journal, 1) }
        try #require(await eventually { rig.gate.isHolding })
        #expect(journal.lastDurableTransaction == 1, "1 is acknowledged before the roll")
        // 2 arrives from a task while the leader still owns the writer: it will be handed to
        // the writer's queue when the leader is done.
        #expect(try journal.enqueue(Self.history.record(2), validated: false, mayLead: false) == .none)
        let two = Task { try await journal.waitUntilDurable(2) }
        try #require(await eventually { journal.state.withLock { $0.waiters.count } == 1 })
        // The close begins now (`Task.immediate` runs it up to its first wait).
        let closing = Task.immediate { await journal.close() }
        let refused = #expect(throws: StoreError.self, "an append after close began") {
            try journal.enqueue(Self.history.record(3), validated: false, mayLead: false)
        }
        #expect(refused?.code == .closed)
        rig.gate.releaseHeld()
        #expect(try await leader.result(within: 30))
        try await withTimeout(30, "close") { await closing.value }
        try await withTimeout(30, "transaction 2") { try await two.value }
        #expect(journal.failure == nil, "nothing failed while closing: \(String(describing: journal.failure))")
        #expect(journal.lastDurableTransaction == 2)
        #expect(rig.checker.violations.isEmpty, "\(rig.checker.violations)")
        let recovered = try await recover(rig.memory.crashed(seed: 3, mode: .powerLoss))
        #expect(recovered.state == Self.history.model(2))
    }

    @Test("a compaction under way when the journal closes finishes first; one started after is refused")
    func compactionDuringClose() async throws {
        let memory = InMemoryFileIO()
        let gate = SyncGate()
        let box = Locked<Journal?>(nil)
        // File calls made after the journal closed (and released its lock).
        let afterClose = Locked<[FileCall]>([])
        let hooked = HookedFileIO(wrapping: memory) { call in
            gate.observe(call)
            guard call == .rename || call == .remove || call == .write else { return }
            if let journal = box.withLock({ $0 }), journal.state.withLock({ $0.isClosed }) {
                afterClose.withLock { $0.append(call) }
            }
        }
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: .init(fileIO: hooked))
        box.withLock { $0 = journal }
        for number in UInt64(1)...3 { try await journal.append(Self.history.record(number)) }
        #expect(await eventually { journal.state.withLock { !$0.writerScheduled } })
        // The compaction's roll syncs the new segment: hold it, and begin closing meanwhile.
        gate.hold(sync: gate.syncs)
        let compaction = Task { try await journal.compact(from: Self.history.model(3)) }
        try #require(await eventually { gate.isHolding })
        let closing = Task.immediate { await journal.close() }
        // (Awaited only once the held sync is released: a compaction that were accepted
        // would wait for it.)
        let late = Task { try await journal.compact(from: Self.history.model(3)) }
        gate.releaseHeld()
        try await withTimeout(30, "close") { await closing.value }
        let report = try await withTimeout(30, "compaction") { try await compaction.value }
        let lateResult = try await withTimeout(30, "the compaction after close began") { await late.result }
        if case .failure(let error as StoreError) = lateResult {
            #expect(error.code == .closed, "\(error)")
        } else {
            Issue.record("a compaction started after close began was not refused: \(lateResult)")
        }
        #expect(report.checkpoint == 3)
        #expect(afterClose.withLock { $0 }.isEmpty, "file calls after close: \(afterClose.withLock { $0 })")
        let recovered = try await recover(memory)
        #expect(recovered.state == Self.history.model(3))
        #expect(recovered.report.checkpoint == 3)
    }
}
