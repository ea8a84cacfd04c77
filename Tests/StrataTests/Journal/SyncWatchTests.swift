import Foundation
import Testing

@testable import Strata

/// Task appenders that cannot block, sharing syncs under `.full`: the one whose append
/// completes a group watches for that group's sync before it parks
/// (``Journal/AppendTurn/watchSync(until:)``). Every transaction is still acknowledged in
/// order, once durable; a watch that runs out parks and is acknowledged later; a failed sync
/// reaches the watcher as `poisoned`.
@Suite struct SyncWatchTests {
    @Test("task appenders sharing syncs: those completing a group watch its sync, and every transaction is acknowledged once durable")
    func tasksWatchTheirGroupsSync() async throws {
        let rig = try PoisonTests.Rig(syncMicroseconds: 1_000)
        let journal = rig.journal
        let count = UInt64(GroupWaitTests.history.count)
        let sequencer = GroupWaitTests.Sequencer(journal, limit: count)
        let turns = try await withThrowingTaskGroup(of: [Journal.AppendTurn].self) { group in
            for _ in 0..<4 {
                group.addTask {
                    var turns: [Journal.AppendTurn] = []
                    while let (number, turn) = try sequencer.enqueueNext(mayLead: false) {
                        turns.append(turn)
                        journal.takeTurn(turn, for: number)
                        try await withTimeout(60, "transaction \(number)") { try await journal.waitUntilDurable(number, after: turn) }
                        // Returned only once durable: its acknowledgement was recorded.
                        #expect(journal.lastDurableTransaction >= number)
                    }
                    return turns
                }
            }
            var all: [Journal.AppendTurn] = []
            for try await part in group { all += part }
            return all
        }
        let statistics = journal.statistics
        #expect(statistics.appends == Int(count))
        #expect(statistics.syncs < Int(count), "appends shared syncs: \(statistics)")
        #expect(turns.contains { if case .watchSync = $0 { true } else { false } }, "some appender completed a group and watched its sync")
        try await GroupWaitTests.closeAndRecover(rig, count: count, crashSeed: 12)
    }

    @Test("a watch that runs out before the sync ends parks, and returns once the transaction is durable")
    func watchRunsOutThenParks() async throws {
        let rig = try PoisonTests.Rig()
        let journal = rig.journal
        rig.gate.hold(sync: rig.gate.syncs)
        try journal.enqueue(PoisonTests.history.record(1), validated: false)
        try #require(await eventually { rig.gate.isHolding })
        let watching = Task {
            try await journal.waitUntilDurable(1, after: .watchSync(until: DispatchTime.now().uptimeNanoseconds + 200_000))
        }
        // Parked: registered as a waiter once its watch ran out.
        #expect(await eventually { journal.state.withLock { $0.waiters.count } == 1 }, "the watcher parked")
        #expect(journal.lastDurableTransaction == 0)
        rig.gate.releaseHeld()
        try await withTimeout(30, "transaction 1") { try await watching.value }
        #expect(journal.lastDurableTransaction == 1)
        await journal.close()
    }

    @Test("a failed sync reaches an appender watching for it as poisoned")
    func failedSyncReachesTheWatcher() async throws {
        let rig = try PoisonTests.Rig()
        let journal = rig.journal
        try await rig.append(1...1)
        await rig.settle()
        // The next sync, transaction 2's, fails.
        rig.faults.inject(.init(callIndex: rig.faults.callCount(of: .sync), kind: .error(EIO), persistence: .once, operations: [.sync]))
        try journal.enqueue(PoisonTests.history.record(2), validated: false)
        let waited = await #expect(throws: StoreError.self) {
            try await journal.waitUntilDurable(2, after: .watchSync(until: DispatchTime.now().uptimeNanoseconds + 1_000_000))
        }
        #expect(waited?.code == .poisoned, "\(String(describing: waited))")
        #expect(journal.lastDurableTransaction == 1)
        await journal.close()
    }
}
