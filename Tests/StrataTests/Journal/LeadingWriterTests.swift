import Foundation
import Testing

@testable import Strata

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An appender whose thread may block can write its own transaction: when the writer is
/// idle and appends have been coming one at a time, it writes and syncs on its own thread
/// (no wake-up of the writer's queue and none back). Once appends share batches under
/// `.full`, each waits on its own thread and the one completing a group writes it; appends
/// that cannot wait so go through the writer's queue, which gathers them.
@Suite struct LeadingWriterTests {
    typealias Rig = PoisonTests.Rig
    static var history: History { PoisonTests.history }

    /// Appends as a leading appender: enqueue offering to lead, and write if asked to.
    /// Returns whether it led.
    @discardableResult
    static func leadingAppend(_ journal: Journal, _ number: UInt64) throws -> Bool {
        let turn = try journal.enqueue(history.record(number), validated: false, mayLead: true)
        journal.takeTurn(turn, for: number)
        return turn == .lead
    }

    /// Marks the calling thread, so that a file hook can tell whether it runs there.
    static let marker = "strata.test.leader"

    @Test("a lone appender writes and syncs each of its transactions itself, durable when it returns")
    func loneAppender() async throws {
        let onLeader = Locked((syncs: 0, elsewhere: 0))
        let memory = InMemoryFileIO()
        let checker = IOOrderingChecker(wrapping: memory)
        let hooked = HookedFileIO(wrapping: checker) { call in
            guard call == .sync else { return }
            let here = Thread.current.threadDictionary[LeadingWriterTests.marker] != nil
            onLeader.withLock { if here { $0.syncs += 1 } else { $0.elsewhere += 1 } }
        }
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: .init(fileIO: hooked) {
            checker.noteAcknowledged(path: $0, durableThrough: $1)
        })
        let syncsBefore = journal.statistics.syncs
        let count = UInt64(Self.history.count)
        let appends = try await onOwnThread { () throws -> [(led: Bool, durable: UInt64)] in
            Thread.current.threadDictionary[Self.marker] = true
            return try (1...count).map { number in (try Self.leadingAppend(journal, number), journal.lastDurableTransaction) }
        }
        let leds = appends.map { $0.led }, durable = appends.map { $0.durable }
        #expect(!leds.contains(false), "every append led: \(leds)")
        // Durable when the leader returns: no wait, no other thread.
        #expect(durable == Array(1...count))
        #expect(journal.statistics.syncs - syncsBefore == Int(count))
        #expect(journal.statistics.writesByAppenders == Int(count))
        #expect(onLeader.withLock { $0.syncs } == Int(count), "every append's sync ran on the appender's thread")
        await journal.close()
        #expect(checker.violations.isEmpty, "\(checker.violations)")
        #expect(try await recover(memory.crashed(seed: 1, mode: .powerLoss)).state == Self.history.model(count))
    }

    @Test("appends arriving while a lone leader syncs go to the writer's queue; once batches are shared, appenders wait in groups")
    func handOffAndGroups() async throws {
        let rig = try Rig()
        let journal = rig.journal
        let syncsBefore = journal.statistics.syncs
        rig.gate.hold(sync: rig.gate.syncs)
        // On a thread of its own, started here: a task could wait for a pool thread while
        // other tests hold them.
        let leader = BlockingCall { try Self.leadingAppend(journal, 1) }
        try #require(await eventually { rig.gate.isHolding })
        // The writer is busy (in the leader's hands) and appends have come one at a time:
        // these neither lead nor start it.
        #expect(try journal.enqueue(Self.history.record(2), validated: false, mayLead: true) == .none)
        #expect(try journal.enqueue(Self.history.record(3), validated: false, mayLead: true) == .none)
        rig.gate.releaseHeld()
        #expect(try await leader.result(within: 30), "the first append led")
        #expect(journal.lastDurableTransaction >= 1)
        // The leader wrote only its own batch; the writer's queue took 2 and 3 together.
        try await withTimeout(30, "transactions 2 and 3") { try await journal.waitUntilDurable(3) }
        #expect(journal.statistics.syncs - syncsBefore == 2, "\(journal.statistics)")
        #expect(journal.statistics.writesByAppenders == 1)
        // Appends have shared a batch lately: the next waits for a group on its thread and,
        // alone, writes itself once the group's time is up — the writer's queue has no part.
        await rig.settle()
        let turn = try journal.enqueue(Self.history.record(4), validated: false, mayLead: true)
        #expect(turn != .none, "\(turn)")
        try await onOwnThread { journal.takeTurn(turn, for: 4) }
        try await withTimeout(30, "transaction 4") { try await journal.waitUntilDurable(4) }
        #expect(journal.statistics.writesByAppenders == 2)
        await journal.close()
        #expect(rig.checker.violations.isEmpty, "\(rig.checker.violations)")
        try await PoisonTests.expectReopen(rig.memory, acked: 4, written: 4)
    }

    @Test("a leader whose sync fails poisons the journal: it, and everything after, is refused")
    func leaderSyncFails() async throws {
        let rig = try Rig()
        let journal = rig.journal
        try await onOwnThread { for number in UInt64(1)...3 { try Self.leadingAppend(journal, number) } }
        rig.faults.inject(.init(callIndex: rig.faults.callCount(of: .sync), kind: .error(EIO), persistence: .once, operations: [.sync]))
        #expect(try await onOwnThread { try Self.leadingAppend(journal, 4) }, "it led")
        let waited = await #expect(throws: StoreError.self) { try await journal.waitUntilDurable(4) }
        #expect(waited?.code == .poisoned)
        #expect(journal.lastDurableTransaction == 3)
        await PoisonTests.expectRefusal(journal, next: 5)
        await journal.close()
        try await PoisonTests.expectReopen(rig.memory, acked: 3, written: 4)
    }

    @Test("under .none nobody leads: appends are acknowledged at once and written behind")
    func noneNeverLeads() async throws {
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: .init(durability: .none, fileIO: InMemoryFileIO()))
        let led = try await onOwnThread { try (UInt64(1)...5).map { try Self.leadingAppend(journal, $0) } }
        #expect(led == [false, false, false, false, false])
        await journal.close()
    }

    @Test("append(_:callerMayBlock:) writes a lone caller's transactions itself, and only when the caller may block",
          arguments: [true, false])
    func publicAppend(callerMayBlock: Bool) async throws {
        let memory = InMemoryFileIO()
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: .init(fileIO: memory))
        for number in UInt64(1)...10 {
            try await journal.append(Self.history.record(number), callerMayBlock: callerMayBlock)
            #expect(journal.lastDurableTransaction == number)
        }
        #expect(journal.statistics.writesByAppenders == (callerMayBlock ? 10 : 0))
        #expect(journal.statistics.syncs == 10)
        await journal.close()
        let recovered = try await recover(memory.crashed(seed: 3, mode: .powerLoss))
        #expect(recovered.state == Self.history.model(10))
    }

    @Test("flush waits for a transaction that a leading appender hands to the writer's queue after the flush began")
    func flushWaitsForWhatALeaderHandsOver() async throws {
        let rig = try Rig()
        let journal = rig.journal
        // 1 leads on its own thread; its sync is held.
        rig.gate.hold(sync: rig.gate.syncs)
        let first = BlockingCall { try Self.leadingAppend(journal, 1) }
        try #require(await eventually { rig.gate.isHolding })
        // 2 arrives from a task meanwhile: the leader hands it to the writer's queue when it
        // is done, after the flush below has queued its own step there.
        let turn = try journal.enqueue(Self.history.record(2), validated: false, mayLead: false)
        #expect(turn == .none)
        let flushing = Locked(false)
        let flushed = Task { () -> UInt64 in
            flushing.withLock { $0 = true }
            await journal.flush()
            return journal.state.withLock { $0.lastWritten }
        }
        try #require(await eventually { flushing.withLock { $0 } })
        rig.gate.releaseHeld()
        #expect(try await first.result(within: 30), "1 led")
        let written = try await withTimeout(30, "flush") { await flushed.value }
        #expect(written >= 2, "flush returned with transaction 2 unwritten (written through \(written))")
        await journal.close()
        #expect(rig.checker.violations.isEmpty, "\(rig.checker.violations)")
    }
}

/// A blocking call started at once on a thread of its own, whose result is awaited later.
final class BlockingCall<T: Sendable>: Sendable {
    private let outcome = Locked<Result<T, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () throws -> T) {
        Thread { [outcome, done] in
            let result = Result { try body() }
            outcome.withLock { $0 = result }
            done.signal()
        }.start()
    }

    /// The call's result; throws ``TimedOut`` if it has not returned after `seconds`.
    func result(within seconds: Double) async throws -> T {
        let limit = seconds * Double(TestTiming.slowdown)
        let finished = try await onOwnThread { [done] in done.wait(timeout: .now() + limit) == .success }
        guard finished, let result = outcome.withLock({ $0 }) else { throw TimedOut(what: "a blocking call", seconds: limit) }
        return try result.get()
    }
}
