import Foundation
import Testing

@testable import Strata

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failure at every file operation — each errno, once or from then on — of creating a
/// store and appending, of a compaction, and of opening a store with a torn tail.
///
/// `EINTR` and short writes are retried where POSIX reports them (reads, writes, `fstat`)
/// and the work succeeds. Any other failure makes the operation throw a ``StoreError`` or
/// is absorbed; nothing that failed is acknowledged, so reopening the file system with the
/// faults cleared — as left, and after a power loss — holds the model after some prefix
/// `p` with `acked ≤ p ≤ issued`. An append-path failure poisons the journal; a failed
/// compaction removes nothing the store needs.
@Suite struct FaultInjectionTests {
    /// One way to fail a call.
    struct Spec: Sendable, Hashable, CustomTestStringConvertible {
        var kind: FaultInjectingFileIO.Fault.Kind
        var persistence: FaultInjectingFileIO.Fault.Persistence

        /// Whether the library must hide the fault when it hits `operation`: short writes
        /// always; `EINTR` from reads and writes (which POSIX interrupts), `fstat` (which the
        /// reading helpers retry too) and `ftruncate` (which POSIX interrupts). `open` and
        /// `flock` retry `EINTR` inside ``POSIXFileIO``; `fsync`, `rename`, `unlink`,
        /// `mkdir` and `opendir` do not report it, so an injected one is an ordinary failure.
        func isTransparent(on operation: FaultInjectingFileIO.Operation) -> Bool {
            switch kind {
            case .shortWrite: true
            case .error(let code): code == EINTR && [.read, .write, .size, .truncate].contains(operation)
            }
        }

        var testDescription: String {
            let what: String
            switch kind {
            case .shortWrite: what = "short write"
            case .error(EIO): what = "EIO"
            case .error(ENOSPC): what = "ENOSPC"
            case .error(EFBIG): what = "EFBIG"
            case .error(EINTR): what = "EINTR"
            case .error(let code): what = "errno \(code)"
            }
            return "\(what) \(persistence == .once ? "once" : "forever")"
        }
    }

    /// Every errno once and forever, short writes once and forever, `EINTR` once (an
    /// `EINTR` that never stops makes the retrying helpers retry forever, by design).
    static let specs: [Spec] =
        [EIO, ENOSPC, EFBIG].flatMap { code in
            [Spec(kind: .error(code), persistence: .once), Spec(kind: .error(code), persistence: .forever)]
        } + [
            Spec(kind: .error(EINTR), persistence: .once),
            Spec(kind: .shortWrite, persistence: .once), Spec(kind: .shortWrite, persistence: .forever),
        ]

    static let history = History(seed: 4242, count: 12)
    static let segmentSize = segmentPreambleSize + 900
    static let powerLossSeeds: [UInt64] = [1, 2, 3]

    /// A file system under test: faults over an ordering checker over memory, with the
    /// operation each counted call was, so a failure can be matched to the call it hit.
    struct Rig {
        let memory: InMemoryFileIO
        let checker: IOOrderingChecker
        let faults: FaultInjectingFileIO
        let log: OperationLog

        init(memory: InMemoryFileIO = InMemoryFileIO()) {
            self.memory = memory
            checker = IOOrderingChecker(wrapping: memory)
            log = OperationLog()
            // The log sees the calls the faults let through: in a fault-free run, all of them.
            faults = FaultInjectingFileIO(wrapping: HookedFileIO(wrapping: checker) { [log] in log.note($0) })
        }

        func configuration(_ durability: Durability = .full) -> Journal.Configuration {
            Journal.Configuration(durability: durability, segmentSize: FaultInjectionTests.segmentSize, fileIO: faults) {
                [checker] in checker.noteAcknowledged(path: $0, durableThrough: $1)
            }
        }
    }

    /// The counted operations of a fault-free run, in order (what call index `k` is).
    final class OperationLog: Sendable {
        private let calls = Locked<[FileCall]>([])
        func note(_ call: FileCall) {
            guard call != .close && call != .kind else { return }
            calls.withLock { $0.append(call) }
        }
        var operations: [FileCall] { calls.withLock { $0 } }
    }

    static func operation(_ call: FileCall) -> FaultInjectingFileIO.Operation {
        switch call {
        case .open: .open
        case .read: .read
        case .write: .write
        case .size: .size
        case .sync: .sync
        case .truncate: .truncate
        case .rename: .rename
        case .remove: .remove
        case .syncDirectory: .syncDirectory
        case .createDirectory: .createDirectory
        case .contentsOfDirectory: .contentsOfDirectory
        case .tryLock: .tryLock
        case .removeDirectory: .removeDirectory
        case .close, .kind: preconditionFailure("close and kind(of:) are not counted")
        }
    }

    /// Checks the oracle on what `memory` holds, after a process crash and after power
    /// losses; returns the problems.
    static func checkReopen(_ memory: InMemoryFileIO, acked: UInt64, issued: UInt64, created: Bool, label: String) async -> [String] {
        var problems: [String] = []
        var images = [("process crash", memory.crashed(seed: 0, mode: .processCrash))]
        images += powerLossSeeds.map { ("power loss \($0)", memory.crashed(seed: $0, mode: .powerLoss)) }
        for (crash, image) in images {
            if !created {
                do {
                    let recovered = try await recover(image)
                    if recovered.last != 0 { problems.append("\(label), \(crash): a store whose creation failed holds \(recovered.last)") }
                } catch {
                    if error.code != .notFound && error.code != .notAStore {
                        problems.append("\(label), \(crash): a store whose creation failed fails to open with \(error)")
                    }
                }
                continue
            }
            if case .failure(let failure) = await checkOracle(image, history: history, acked: acked, issued: issued) {
                problems.append("\(label), \(crash): \(failure)")
            }
        }
        return problems
    }

    /// The faults are real: errors make most runs fail; short writes never do.
    static func expectFaultsBite(_ spec: Spec, failures: Int, runs: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        switch spec.kind {
        case .shortWrite:
            #expect(failures == 0, sourceLocation: sourceLocation)
        case .error(EINTR):
            #expect(failures > 0 && failures < runs, "\(failures) of \(runs) runs failed", sourceLocation: sourceLocation)
        case .error:
            #expect(failures > runs / 2, "\(failures) of \(runs) runs failed", sourceLocation: sourceLocation)
        }
    }

    // MARK: - Create and append

    /// Creates a store and appends every transaction, stopping at the first failure after
    /// checking that the journal refuses more.
    static func createAndAppend(_ rig: Rig, progress: Progress) async -> (error: StoreError?, problems: [String]) {
        let journal: Journal
        do {
            journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: rig.configuration())
        } catch {
            return (error, [])
        }
        progress.markCreated()
        var problems: [String] = []
        var failure: StoreError?
        for record in history.records {
            progress.issue(record.number)
            do {
                try await journal.append(record)
                progress.acknowledge(record.number)
            } catch {
                failure = error
                if error.code != .poisoned { problems.append("a failed append throws \(error.code), not poisoned") }
                problems += await refusesMore(journal)
                break
            }
        }
        await journal.close()
        return (failure, problems)
    }

    /// After an append-path failure every later append throws `poisoned`, saying to reopen.
    static func refusesMore(_ journal: Journal) async -> [String] {
        var problems: [String] = []
        let next = history.record(min(journal.lastTransaction + 1, UInt64(history.count)))
        do {
            try await journal.append(next)
            problems.append("an append after a failure succeeded")
        } catch {
            if error.code != .poisoned { problems.append("an append after a failure throws \(error.code), not poisoned") }
            if !error.message.contains("reopen") { problems.append("the poisoned error does not say to reopen: \(error.message)") }
        }
        if journal.failure == nil { problems.append("the journal does not report what poisoned it") }
        return problems
    }

    @Test(arguments: specs)
    func createAndAppendWithFaultAtEveryCall(_ spec: Spec) async throws {
        let probe = Rig()
        let clean = await Self.createAndAppend(probe, progress: Progress())
        #expect(clean.error == nil && clean.problems.isEmpty)
        let operations = probe.log.operations
        #expect(operations.count == probe.faults.callCount)
        #expect(operations.filter { $0 == .open }.count >= 4, "the workload rolls segments")

        var problems: [String] = []
        var failures = 0
        for (index, call) in operations.enumerated() {
            let label = "call \(index) (\(call)), \(spec.testDescription)"
            let rig = Rig()
            rig.faults.inject(.init(callIndex: index, kind: spec.kind, persistence: spec.persistence))
            let progress = Progress()
            let outcome = await Self.createAndAppend(rig, progress: progress)
            let counts = progress.current
            if outcome.error != nil { failures += 1 }
            problems += outcome.problems.map { "\(label): \($0)" }
            if spec.isTransparent(on: Self.operation(call)), let error = outcome.error {
                problems.append("\(label): not retried: \(error)")
            }
            if outcome.error == nil && counts.acked != UInt64(Self.history.count) {
                problems.append("\(label): no error, yet only \(counts.acked) acknowledged")
            }
            problems += rig.checker.violations.map { "\(label): ordering: \($0)" }
            problems += await Self.checkReopen(rig.memory, acked: counts.acked, issued: counts.issued, created: counts.created, label: label)
        }
        expectNoProblems(problems, "faults while creating and appending misbehave (\(spec.testDescription))")
        Self.expectFaultsBite(spec, failures: failures, runs: operations.count)
    }

    // MARK: - Compaction

    /// Builds a store with a checkpoint and several segments, then compacts it with the
    /// faults given injected from the compaction's first call; then appends two more
    /// transactions and, if the compaction failed but left the journal usable, compacts
    /// again.
    static func compactionWorkload(
        _ rig: Rig, progress: Progress, fault: (Int) -> FaultInjectingFileIO.Fault?
    ) async throws -> (compactionStart: Int, compactionEnd: Int, error: StoreError?, problems: [String]) {
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: rig.configuration())
        progress.markCreated()
        func append(_ number: UInt64) async throws(StoreError) {
            progress.issue(number)
            try await journal.append(history.record(number))
            progress.acknowledge(number)
        }
        for number in 1...4 as ClosedRange<UInt64> { try await append(number) }
        try await journal.compact(from: history.model(4))
        for number in 5...10 as ClosedRange<UInt64> { try await append(number) }
        // Let the writer finish any segment roll, so the compaction's calls are numbered alike in every run.
        _ = await eventually { journal.state.withLock { !$0.writerScheduled } }

        let start = rig.faults.callCount
        if let fault = fault(start) { rig.faults.inject(fault) }
        var problems: [String] = []
        var failure: StoreError?
        do {
            let report = try await journal.compact(from: history.model(10))
            if report.checkpoint != 10 { problems.append("the compaction reports checkpoint \(report.checkpoint)") }
        } catch {
            failure = error
        }
        let end = rig.faults.callCount
        let once = fault(start)?.persistence == .once
        do {
            for number in 11...12 as ClosedRange<UInt64> { try await append(number) }
            if let failure, failure.code == .poisoned { problems.append("appends succeed after the compaction poisoned the journal") }
            if failure != nil {
                // The compaction failed without poisoning: a second one must work.
                let report = try await journal.compact(from: history.model(12))
                if report.checkpoint != 12 { problems.append("the second compaction reports checkpoint \(report.checkpoint)") }
            }
        } catch {
            if failure == nil && once {
                problems.append("after a compaction that succeeded, work fails: \(error)")
            } else if let failure, failure.code != .poisoned, once {
                problems.append("after a compaction that failed with \(failure.code) (not poisoned), work fails: \(error)")
            }
            if failure?.code == .poisoned && error.code != .poisoned {
                problems.append("after a poisoned compaction, an append throws \(error.code)")
            }
        }
        await journal.close()
        return (start, end, failure, problems)
    }

    @Test(arguments: specs)
    func compactionWithFaultAtEveryCall(_ spec: Spec) async throws {
        let probe = Rig()
        let clean = try await Self.compactionWorkload(probe, progress: Progress()) { _ in nil }
        #expect(clean.error == nil && clean.problems.isEmpty)
        let operations = probe.log.operations
        let window = clean.compactionStart..<clean.compactionEnd
        #expect(window.count >= 10, "the compaction rolls a segment, writes, syncs and renames a checkpoint, removes files")
        #expect(operations[window].contains(.rename) && operations[window].contains(.remove))

        var problems: [String] = []
        var failures = 0
        for index in window {
            let call = operations[index]
            let label = "compaction call \(index - window.lowerBound) (\(call)), \(spec.testDescription)"
            let rig = Rig()
            let progress = Progress()
            let outcome = try await Self.compactionWorkload(rig, progress: progress) {
                precondition($0 == window.lowerBound, "the workload before the compaction is deterministic")
                return .init(callIndex: index, kind: spec.kind, persistence: spec.persistence)
            }
            let counts = progress.current
            if outcome.error != nil { failures += 1 }
            problems += outcome.problems.map { "\(label): \($0)" }
            if spec.isTransparent(on: Self.operation(call)), let error = outcome.error {
                problems.append("\(label): not retried: \(error)")
            }
            if let error = outcome.error, error.code != .io && error.code != .poisoned {
                problems.append("\(label): the compaction fails with \(error.code)")
            }
            problems += rig.checker.violations.map { "\(label): ordering: \($0)" }
            problems += await Self.checkReopen(rig.memory, acked: counts.acked, issued: counts.issued, created: true, label: label)
        }
        expectNoProblems(problems, "faults during compaction misbehave (\(spec.testDescription))")
        Self.expectFaultsBite(spec, failures: failures, runs: window.count)
    }

    // MARK: - Opening a store with a torn tail

    /// A store holding transactions 1...9 and the first half of 10 (a torn tail), a
    /// checkpoint through 4, and a temporary checkpoint an interrupted compaction left.
    static func makeTornStore() async throws -> InMemoryFileIO {
        let memory = InMemoryFileIO()
        // One segment after the checkpoint, so that transaction 10 ends the last one.
        // Without zeros ahead of the appends: the tear is made by cutting the file's growth.
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: .init(fileIO: memory, preallocation: 0))
        for number in 1...4 as ClosedRange<UInt64> { try await journal.append(history.record(number)) }
        try await journal.compact(from: history.model(4))
        for number in 5...9 as ClosedRange<UInt64> { try await journal.append(history.record(number)) }
        let segment = journal.segmentPaths.last!
        let before = memory.contents(of: segment)!.count
        try await journal.append(history.record(10))
        let after = memory.contents(of: segment)!
        await journal.close()
        try memory.setContents(Array(after.prefix(before + (after.count - before) / 2)), of: segment)
        try memory.setContents(Array("half a checkpoint".utf8), of: storePath + "/" + StoreLayout.checkpointName(through: 9) + ".tmp")
        return memory
    }

    /// Opens the torn store, appends transaction 10 again, closes.
    static func openTorn(_ rig: Rig, progress: Progress) async -> (error: StoreError?, problems: [String]) {
        var state = ReplayedState()
        let journal: Journal
        do {
            journal = try Journal.open(at: storePath, schema: Fixtures.songbook, configuration: rig.configuration(), replayingInto: &state)
        } catch {
            return (error, error.code == .corrupted ? ["an I/O failure while opening is reported as corruption: \(error)"] : [])
        }
        var problems: [String] = []
        if state != history.model(9) { problems.append("opened at \(state.lastTransaction), not the model at 9") }
        if journal.recovery.tornTail == nil { problems.append("the torn tail is not reported") }
        progress.issue(10)
        do {
            try await journal.append(history.record(10))
            progress.acknowledge(10)
        } catch {
            if error.code != .poisoned { problems.append("a failed append throws \(error.code), not poisoned") }
            problems += await refusesMore(journal)
        }
        await journal.close()
        return (nil, problems)
    }

    @Test(arguments: specs)
    func openWithFaultAtEveryCall(_ spec: Spec) async throws {
        let tornStore = try await Self.makeTornStore()
        let probe = Rig(memory: tornStore.crashed(seed: 0, mode: .processCrash))
        let clean = await Self.openTorn(probe, progress: Progress())
        #expect(clean.error == nil && clean.problems.isEmpty)
        let operations = probe.log.operations
        #expect(operations.contains(.truncate) && operations.contains(.remove))

        var problems: [String] = []
        var failures = 0
        for (index, call) in operations.enumerated() {
            let label = "call \(index) (\(call)), \(spec.testDescription)"
            let rig = Rig(memory: tornStore.crashed(seed: 0, mode: .processCrash))
            rig.faults.inject(.init(callIndex: index, kind: spec.kind, persistence: spec.persistence))
            let progress = Progress()
            progress.markCreated()
            progress.acknowledge(9)
            progress.issue(9)
            let outcome = await Self.openTorn(rig, progress: progress)
            let counts = progress.current
            if outcome.error != nil { failures += 1 }
            problems += outcome.problems.map { "\(label): \($0)" }
            if spec.isTransparent(on: Self.operation(call)), let error = outcome.error {
                problems.append("\(label): not retried: \(error)")
            }
            problems += rig.checker.violations.map { "\(label): ordering: \($0)" }
            problems += await Self.checkReopen(rig.memory, acked: counts.acked, issued: counts.issued, created: true, label: label)
        }
        expectNoProblems(problems, "faults while opening misbehave (\(spec.testDescription))")
        Self.expectFaultsBite(spec, failures: failures, runs: operations.count)
    }
}
