import Foundation
import Testing

@testable import Strata

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Appenders whose threads may block, sharing syncs under `.full`: each waits for its
/// group on its own thread and the one completing the group (or the first past the group's
/// deadline) writes it, without the writer's queue; appenders that cannot wait so still go
/// through the queue; a failure reaches every waiter. Under `.relaxed` such appenders write
/// their own transactions, and whoever is writing takes what arrives meanwhile.
@Suite struct GroupWaitTests {
    static let history = History(seed: 4242, count: 160)

    /// Numbers and enqueues transactions in order, as the store does under its commit lock.
    final class Sequencer: Sendable {
        private let next = Locked<UInt64>(1)
        let journal: Journal
        let limit: UInt64

        init(_ journal: Journal, limit: UInt64) {
            self.journal = journal
            self.limit = limit
        }

        /// How many transactions have been enqueued.
        var enqueued: UInt64 { next.withLock { $0 - 1 } }

        /// Enqueues the next transaction; `nil` once `limit` are enqueued.
        func enqueueNext(mayLead: Bool) throws -> (number: UInt64, turn: Journal.AppendTurn)? {
            try next.withLock { (n) throws -> (number: UInt64, turn: Journal.AppendTurn)? in
                guard n <= limit else { return nil }
                let turn = try journal.enqueue(GroupWaitTests.history.record(n), validated: false, mayLead: mayLead)
                defer { n += 1 }
                return (n, turn)
            }
        }
    }

    /// One appender on a thread of its own: appends until the sequencer runs out, each
    /// time taking its turn and waiting until its transaction is durable before the next.
    /// Returns the turns it was given.
    static func threadAppender(_ sequencer: Sequencer) -> BlockingCall<[Journal.AppendTurn]> {
        BlockingCall {
            var turns: [Journal.AppendTurn] = []
            while let (number, turn) = try sequencer.enqueueNext(mayLead: true) {
                turns.append(turn)
                sequencer.journal.takeTurn(turn, for: number)
                if sequencer.journal.lastDurableTransaction < number {
                    // Parked (a writer busy past the wait's limit): wait for the acknowledgement.
                    let done = DispatchSemaphore(value: 0)
                    let journal = sequencer.journal
                    Task { try? await journal.waitUntilDurable(number); done.signal() }
                    let seconds = 60.0 * Double(TestTiming.slowdown)
                    guard done.wait(timeout: .now() + seconds) == .success else { throw TimedOut(what: "transaction \(number)", seconds: seconds) }
                }
                if let failure = sequencer.journal.failure { throw failure }
            }
            return turns
        }
    }

    @Test("appenders on their own threads share syncs in groups they write themselves, with or without a task appender among them",
          arguments: [false, true])
    func groupsWriteThemselves(withTaskAppender: Bool) async throws {
        let rig = try PoisonTests.Rig(syncMicroseconds: 1_000)
        let journal = rig.journal
        let count = UInt64(Self.history.count)
        let sequencer = Sequencer(journal, limit: count)
        let threads = (0..<3).map { _ in Self.threadAppender(sequencer) }
        if withTaskAppender {
            while let (number, _) = try sequencer.enqueueNext(mayLead: false) {
                try await withTimeout(60, "transaction \(number)") { try await journal.waitUntilDurable(number) }
            }
        }
        var turns: [Journal.AppendTurn] = []
        for thread in threads { turns += try await thread.result(within: 120) }
        try await withTimeout(60, "every transaction") { try await journal.waitUntilDurable(count) }
        let statistics = journal.statistics
        #expect(statistics.appends == Int(count))
        #expect(statistics.syncs < Int(count), "appends shared syncs: \(statistics)")
        #expect(turns.contains { if case .waitInGroup = $0 { true } else { false } }, "some appenders waited in a group")
        if !withTaskAppender {
            // (The writer's queue still takes what arrives while a lone appender leads, when
            // batches have not been shared lately.)
            #expect(statistics.writesByAppenders > 0, "\(statistics)")
        }
        try await Self.closeAndRecover(rig, count: count, crashSeed: 11)
    }

    /// Closes the rig's journal, checks its I/O ordering, and checks that a power loss
    /// afterwards keeps the first `count` transactions of ``history``.
    static func closeAndRecover(_ rig: PoisonTests.Rig, count: UInt64, crashSeed: UInt64) async throws {
        await rig.journal.close()
        #expect(rig.checker.violations.isEmpty, "\(rig.checker.violations)")
        let recovered = try await recover(rig.memory.crashed(seed: crashSeed, mode: .powerLoss))
        #expect(recovered.state == history.model(count))
    }

    @Test("a group left to its waiters by a leader, whose sync then fails: the waiter that writes it gets the failure, and nothing after is acknowledged")
    func failureReachesWaiters() async throws {
        let rig = try PoisonTests.Rig()
        let journal = rig.journal
        let history = PoisonTests.history
        // Batches become shared: 2 and 3 arrive while the leader's sync of 1 is held.
        rig.gate.hold(sync: rig.gate.syncs)
        let first = BlockingCall { try LeadingWriterTests.leadingAppend(journal, 1) }
        try #require(await eventually { rig.gate.isHolding })
        try journal.enqueue(history.record(2), validated: false, mayLead: true)
        try journal.enqueue(history.record(3), validated: false, mayLead: true)
        rig.gate.releaseHeld()
        _ = try await first.result(within: 30)
        try await withTimeout(30, "transactions 2 and 3") { try await journal.waitUntilDurable(3) }
        await rig.settle()
        // Transaction 4 leads (or waits out its group's time and then leads); its sync is
        // held while 5 arrives and waits in the group behind it.
        let heldAt = rig.gate.syncs
        rig.gate.hold(sync: heldAt)
        let fourth = BlockingCall { () throws -> Bool in
            let turn = try journal.enqueue(history.record(4), validated: false, mayLead: true)
            journal.takeTurn(turn, for: 4)
            return journal.lastDurableTransaction >= 4
        }
        try #require(await eventually { rig.gate.syncs > heldAt })
        let turn5 = try journal.enqueue(history.record(5), validated: false, mayLead: true)
        guard case .waitInGroup = turn5 else {
            Issue.record("transaction 5 arrived while 4 was being written: it should wait in a group, not \(turn5)")
            rig.gate.releaseHeld()
            return
        }
        // The sync after 4's fails: it is 5's, written by 5's own appender once 4's leader
        // has left it to the group.
        rig.faults.inject(.init(callIndex: rig.faults.callCount(of: .sync) + 1, kind: .error(EIO), persistence: .once, operations: [.sync]))
        let fifth = BlockingCall { journal.takeTurn(turn5, for: 5) }
        rig.gate.releaseHeld()
        #expect(try await fourth.result(within: 30), "4 is durable")
        try await fifth.result(within: 30)
        let waited = await #expect(throws: StoreError.self) { try await journal.waitUntilDurable(5) }
        #expect(waited?.code == .poisoned)
        #expect(journal.lastDurableTransaction == 4)
        #expect(journal.statistics.writesByAppenders >= 2)
        await PoisonTests.expectRefusal(journal, next: 6)
        await journal.close()
        try await PoisonTests.expectReopen(rig.memory, acked: 4, written: 5)
    }

    @Test("under .relaxed, appenders on their own threads write their transactions themselves, a writer taking what arrives meanwhile")
    func relaxedAppendersWriteThemselves() async throws {
        let rig = try PoisonTests.Rig(durability: .relaxed, writeMicroseconds: 200)
        let journal = rig.journal
        let count = UInt64(Self.history.count)
        let sequencer = Sequencer(journal, limit: count)
        // The first transaction's write is held until the other two appenders have arrived:
        // at least one write then carries more than one transaction, however the threads run.
        rig.gate.hold(write: rig.gate.writes)
        let threads = (0..<3).map { _ in Self.threadAppender(sequencer) }
        try #require(await eventually { rig.gate.isHolding && sequencer.enqueued >= 3 })
        rig.gate.releaseHeld()
        var turns: [Journal.AppendTurn] = []
        for thread in threads { turns += try await thread.result(within: 120) }
        #expect(journal.lastDurableTransaction == count)
        let statistics = journal.statistics
        #expect(statistics.appends == Int(count))
        #expect(statistics.syncs == 0, "\(statistics)")
        #expect(statistics.writes < Int(count), "appends that arrived during a write shared the next: \(statistics)")
        #expect(statistics.writesByAppenders > statistics.writes / 2, "appenders wrote (nearly) every batch themselves: \(statistics)")
        #expect(turns.contains(.lead))
        #expect(turns.contains { if case .waitInGroup = $0 { true } else { false } }, "some appenders waited for a writer")
        await journal.close()
        let recovered = try await recover(rig.memory.crashed(seed: 12, mode: .processCrash))
        #expect(recovered.state == Self.history.model(count))
    }
}
