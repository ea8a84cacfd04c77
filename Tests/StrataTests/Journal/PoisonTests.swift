import Foundation
import Testing

@testable import Strata

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed fsync stops the writer for good: the append it was for throws, so does every
/// append waiting behind it and every later one, with a `poisoned` error that says to
/// reopen; reopening holds every acknowledged transaction.
///
/// What the failed batch leaves is decided by the file system: its write reached the
/// page cache and its fsync failed, so after a process crash it may still be there, and
/// after a power loss it may be gone. It was never acknowledged, so the oracle is
/// `acked ≤ p ≤ issued` — and since the writer stops at the failure, nothing enqueued after
/// the failed batch is ever written: `p` is at most the failed batch's last transaction.
@Suite struct PoisonTests {
    static let history = History(seed: 777, count: 12)

    /// A journal over faults over an ordering checker over memory, with a gate counting
    /// (and able to hold) the syncs the journal makes.
    struct Rig {
        let memory = InMemoryFileIO()
        let checker: IOOrderingChecker
        let faults: FaultInjectingFileIO
        let gate = SyncGate()
        let journal: Journal

        /// `syncMicroseconds` and `writeMicroseconds`: how long each file sync and write
        /// take (a disk, simulated), so that appenders arrive while one is in progress.
        init(segmentSize: Int = 64 << 20, durability: Durability = .full,
             syncMicroseconds: UInt32 = 0, writeMicroseconds: UInt32 = 0) throws {
            checker = IOOrderingChecker(wrapping: memory)
            faults = FaultInjectingFileIO(wrapping: checker)
            let gate = self.gate
            let checker = self.checker
            let hook: @Sendable (FileCall) -> Void = { call in
                gate.observe(call)
                if call == .sync, syncMicroseconds > 0 { usleep(syncMicroseconds) }
                if call == .write, writeMicroseconds > 0 { usleep(writeMicroseconds) }
            }
            journal = try Journal.create(
                at: storePath, schema: Fixtures.songbook,
                configuration: .init(durability: durability, segmentSize: segmentSize, fileIO: HookedFileIO(wrapping: faults, hook: hook)) {
                    checker.noteAcknowledged(path: $0, durableThrough: $1)
                })
        }

        func append(_ numbers: ClosedRange<UInt64>) async throws {
            for number in numbers { try await journal.append(PoisonTests.history.record(number)) }
        }

        /// Waits until the writer has nothing left to do (a segment roll may follow an
        /// acknowledgement), so that call counts are stable.
        func settle() async {
            #expect(await eventually { journal.state.withLock { !$0.writerScheduled } })
        }
    }

    /// Checks that every later attempt to append or compact is refused as poisoned.
    static func expectRefusal(_ journal: Journal, next: UInt64) async {
        let appended = await #expect(throws: StoreError.self) { try await journal.append(history.record(next)) }
        #expect(appended?.code == .poisoned)
        #expect(appended?.message.contains("reopen") == true, "\(appended?.message ?? "")")
        let enqueued = #expect(throws: StoreError.self) { try journal.enqueue(history.record(next)) }
        #expect(enqueued?.code == .poisoned)
        #expect(enqueued?.message.contains("reopen") == true, "\(enqueued?.message ?? "")")
        let compacted = await #expect(throws: StoreError.self) { try await journal.compact(from: history.model(1)) }
        #expect(compacted?.code == .poisoned)
        #expect(journal.failure != nil)
    }

    /// Reopens the file system after a process crash and after power losses: the store
    /// holds the model after `p` with `acked ≤ p ≤ written`, and takes the next
    /// transaction.
    static func expectReopen(_ memory: InMemoryFileIO, acked: UInt64, written: UInt64) async throws {
        let images = [memory.crashed(seed: 0, mode: .processCrash)] + (1...5).map { memory.crashed(seed: $0, mode: .powerLoss) }
        for image in images {
            let outcome = await checkOracle(image, history: history, acked: acked, issued: written)
            let recovered = try outcome.get()
            let p = recovered.last
            var state = ReplayedState()
            let journal = try Journal.open(at: storePath, configuration: .init(fileIO: image), replayingInto: &state)
            try await journal.append(history.record(p + 1))
            await journal.close()
            #expect(try await recover(image).state == history.model(p + 1))
        }
    }

    @Test func fsyncFailsOnce() async throws {
        let rig = try Rig()
        let journal = rig.journal
        try await rig.append(1...5)

        // Transaction 6's fsync fails, once; it is held until 7 and 8 wait behind it.
        let index = rig.gate.syncs
        rig.faults.inject(.init(callIndex: index, kind: .error(EIO), persistence: .once, operations: [.sync]))
        rig.gate.hold(sync: index)
        // Enqueued here rather than in a task, so that the writer reaches the held sync
        // without waiting for a pool thread.
        try journal.enqueue(Self.history.record(6))
        let six = Task { try await journal.waitUntilDurable(6) }
        try #require(await eventually { rig.gate.isHolding })
        try journal.enqueue(Self.history.record(7))
        try journal.enqueue(Self.history.record(8))
        let waiting = [UInt64(7), 8].map { number in Task { try await journal.waitUntilDurable(number) } }
        try #require(await eventually { journal.state.withLock { $0.waiters.count } == 3 })
        rig.gate.releaseHeld()

        for (number, task) in zip([6, 7, 8], [six] + waiting) {
            switch await task.result {
            case .success:
                Issue.record("transaction \(number) was acknowledged although the fsync failed")
            case .failure(let error as StoreError):
                #expect(error.code == .poisoned, "transaction \(number)")
                #expect(error.underlying?.errno == EIO, "transaction \(number)")
                #expect(error.message.contains("reopen"), "transaction \(number): \(error.message)")
            case .failure(let error):
                Issue.record("transaction \(number) failed with \(error)")
            }
        }
        #expect(journal.lastDurableTransaction == 5)
        #expect(journal.statistics.syncs == 5)
        // Already durable transactions stay acknowledged.
        try await journal.waitUntilDurable(5)
        await Self.expectRefusal(journal, next: 9)
        await journal.close()
        #expect(rig.checker.violations.isEmpty, "\(rig.checker.violations)")

        // 6 was written but never acknowledged; 7 and 8 were never written.
        try await Self.expectReopen(rig.memory, acked: 5, written: 6)
    }

    /// The fsync of a new segment, or of its directory, fails once while the journal rolls
    /// after an acknowledged append: that append stays acknowledged, nothing later is.
    @Test(arguments: [FaultInjectingFileIO.Operation.sync, .syncDirectory])
    func syncFailsOnceWhileRolling(_ operation: FaultInjectingFileIO.Operation) async throws {
        // Every append fills its segment, so the journal rolls after each.
        let rig = try Rig(segmentSize: segmentPreambleSize + 1)
        let journal = rig.journal
        try await rig.append(1...3)
        await rig.settle()
        #expect(journal.segmentPaths.count == 4)

        // Appending 4 syncs its segment; then the roll syncs the new segment and its directory.
        let index = operation == .sync ? rig.gate.syncs + 1 : rig.gate.directorySyncs
        rig.faults.inject(.init(callIndex: index, kind: .error(EIO), persistence: .once, operations: [operation]))
        try await rig.append(4...4)
        await rig.settle()
        #expect(journal.failure?.underlying?.errno == EIO)
        await Self.expectRefusal(journal, next: 5)
        await journal.close()
        #expect(rig.checker.violations.isEmpty, "\(rig.checker.violations)")
        try await Self.expectReopen(rig.memory, acked: 4, written: 4)
    }

    /// The disk fills while the journal rolls: the new segment's header cannot be written.
    /// The journal is poisoned, as after any failed write, and the empty segment is
    /// removed, so that reopening finds no torn tail to report and cut.
    @Test func aSegmentWhoseHeaderCannotBeWrittenIsRemoved() async throws {
        let rig = try Rig(segmentSize: segmentPreambleSize + 1)
        let journal = rig.journal
        try await rig.append(1...3)
        await rig.settle()

        // Appending 4 writes its record; then the roll writes the new segment's header.
        let index = rig.faults.callCount(of: .write) + 1
        rig.faults.inject(.init(callIndex: index, kind: .error(ENOSPC), persistence: .forever, operations: [.write]))
        try await rig.append(4...4)
        await rig.settle()
        #expect(journal.failure?.underlying?.errno == ENOSPC)
        await Self.expectRefusal(journal, next: 5)
        await journal.close()
        let unborn = StoreLayout.join(storePath, StoreLayout.segmentName(firstTransaction: 5))
        #expect(rig.memory.contents(of: unborn) == nil, "the segment whose header failed was left behind")

        rig.faults.clearFaults()
        var state = ReplayedState()
        let reopened = try Journal.open(at: storePath, configuration: .init(fileIO: rig.memory), replayingInto: &state)
        #expect(state == Self.history.model(4))
        #expect(reopened.recovery.tornTail == nil, "\(String(describing: reopened.recovery.tornTail))")
        #expect(reopened.recovery.removedFiles.isEmpty, "\(reopened.recovery.removedFiles)")
        await reopened.close()
    }
}
