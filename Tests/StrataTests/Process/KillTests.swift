#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
@testable import Strata

/// `kill -9` of a writer process at random moments, some inside compaction, with both
/// durabilities, on one store whose kills accumulate.
///
/// Each iteration spawns `strata-journal-writer write` on the store the previous iteration
/// left, reads its `issue N` / `ack N` lines from a pipe, kills it when a seeded trigger
/// fires (a number of acks, a compaction starting, a short delay, or at once so the kill
/// may land in startup or recovery), and then opens the store in this process. The oracle:
/// the store holds exactly the workload's first `p` transactions, with
/// `acked ≤ p ≤ issued` — every acknowledged save is there, nothing unannounced is, and
/// no transaction is partly applied.
///
/// The number of iterations is `STRATA_KILL_ITERATIONS` (default 50, the CI tier; the long
/// tier sets 200). `STRATA_KILL_SEED` (in every failure message) replays the same plans; the
/// exact kill moments depend on timing.
@Suite("Kill -9 of a writer process") struct KillTests {
    static var iterations: Int {
        ProcessInfo.processInfo.environment["STRATA_KILL_ITERATIONS"].flatMap(Int.init) ?? 50
    }

    static var seed: UInt64 {
        ProcessInfo.processInfo.environment["STRATA_KILL_SEED"].flatMap { UInt64($0) } ?? 0x5EED_4B11
    }

    /// When an iteration kills its writer.
    enum Trigger: CustomStringConvertible {
        /// Right after spawning, after `delay`: during startup, opening or recovery.
        case atStart(delay: Duration)
        /// Once the writer has acknowledged `count` transactions (0: as soon as it is open).
        case afterAcks(Int)
        /// When the writer announces its `ordinal`-th compaction (it is then compacting).
        case atCompaction(ordinal: Int)
        /// `delay` after the writer has opened the store.
        case afterOpen(delay: Duration)

        var description: String {
            switch self {
            case .atStart(let delay): "at start + \(delay)"
            case .afterAcks(let count): "after \(count) acks"
            case .atCompaction(let ordinal): "at compaction #\(ordinal)"
            case .afterOpen(let delay): "open + \(delay)"
            }
        }
    }

    /// One iteration's choices, all drawn from the seeded generator.
    struct Plan: CustomStringConvertible {
        var durability: Durability
        var window: Int
        var compactEvery: Int
        var count: Int
        var trigger: Trigger
        /// Verify with a read-only open, leaving any torn tail for the next writer to recover.
        var verifyReadOnly: Bool
        /// Appends one at a time, each writing and syncing its own transaction (`--lead`;
        /// the window does not apply).
        var lead = false

        static func random(using rng: inout SeededGenerator) -> Plan {
            let durability: Durability = Bool.random(using: &rng) ? .full : .relaxed
            let compactEvery = [0, 2, 3, 5, 8][Int.random(in: 0..<5, using: &rng)]
            let trigger: Trigger
            switch Int.random(in: 0..<20, using: &rng) {
            case 0..<3: trigger = .atStart(delay: .microseconds(Int.random(in: 0...8_000, using: &rng)))
            case 3..<6: trigger = .afterOpen(delay: .microseconds(Int.random(in: 0...20_000, using: &rng)))
            case 6..<10 where compactEvery > 0: trigger = .atCompaction(ordinal: Int.random(in: 1...2, using: &rng))
            default: trigger = .afterAcks(Int.random(in: 0...12, using: &rng))
            }
            // Now and then a writer runs out of work before its trigger and closes cleanly.
            let count = Int.random(in: 0..<8, using: &rng) == 0 ? 4 : 30
            return Plan(durability: durability, window: Int.random(in: 1...4, using: &rng), compactEvery: compactEvery,
                        count: count, trigger: trigger, verifyReadOnly: Int.random(in: 0..<3, using: &rng) == 0,
                        lead: Int.random(in: 0..<4, using: &rng) == 0)
        }

        var description: String {
            "\(count) saves, \(durability), \(lead ? "leading appends" : "window \(window)"), compact every \(compactEvery), kill \(trigger)\(verifyReadOnly ? ", read-only check" : "")"
        }
    }

    /// What the writer said before it died.
    struct Outcome: Sendable {
        var opened: UInt64?
        var acked: UInt64 = 0
        var issued: UInt64 = 0
        var finished = false
        var killed = false
        var killedInCompaction = false
        var fatal: String?
        var exit: (reason: Process.TerminationReason, status: Int32) = (.exit, 0)
    }

    /// Spawns the writer, kills it when the plan says, and collects what it reported.
    static func execute(_ plan: Plan, store: String, seed: UInt64, create: Bool) throws -> Outcome {
        var arguments = ["write", store, "--seed", String(seed), "--count", String(plan.count),
                         "--durability", plan.durability.rawValue, "--window", String(plan.window),
                         "--compact-every", String(plan.compactEvery)]
        if create { arguments.append("--create") }
        if plan.lead { arguments.append("--lead") }
        let started = ContinuousClock.now
        let child = try ChildProcess(arguments)
        var outcome = Outcome()
        var acks = 0
        var compactions = 0
        var compacting = false
        var killDeadline: ContinuousClock.Instant?
        if case .atStart(let delay) = plan.trigger { killDeadline = started + delay }

        func take(_ line: String) {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            let number = parts.count > 1 ? UInt64(parts[1]) : nil
            switch parts.first {
            case "open": outcome.opened = number
            case "issue": outcome.issued = number ?? outcome.issued
            case "ack":
                outcome.acked = number ?? outcome.acked
                acks += 1
            case "compacting":
                compactions += 1
                compacting = true
            case "compacted": compacting = false
            case "done": outcome.finished = true
            default: outcome.fatal = line
            }
        }

        reading: while true {
            let deadline = killDeadline ?? ContinuousClock.now + .seconds(30)
            switch child.readLine(until: deadline) {
            case .line(let line):
                take(line)
                if outcome.fatal != nil || outcome.finished { break reading }
                switch plan.trigger {
                case .atStart: break
                case .afterAcks(let count):
                    if outcome.opened != nil && acks >= count { break reading }
                case .atCompaction(let ordinal):
                    if compacting && compactions >= ordinal { break reading }
                case .afterOpen(let delay):
                    if line.hasPrefix("open ") { killDeadline = .now + delay }
                }
            case .end:
                break reading
            case .timedOut:
                guard killDeadline != nil else {
                    child.sendKill()
                    throw ChildProcessFailure(description: "the writer said nothing for 30 s (\(plan))")
                }
                break reading
            }
        }
        if !outcome.finished && outcome.fatal == nil {
            child.sendKill()
            outcome.killed = true
        }
        // Lines written before the kill are true: acks among them were durable.
        for line in try child.remainingLines() { take(line) }
        outcome.exit = try child.waitForExit()
        if outcome.killed && outcome.finished && outcome.exit.reason == .exit && outcome.exit.status == 0 {
            // The kill came as the writer was finishing: it had closed the store, said so and
            // exited before the signal could land.
            outcome.killed = false
        }
        outcome.killedInCompaction = outcome.killed && compacting && !outcome.finished
        return outcome
    }

    /// What a kill between creating a new segment and writing its header leaves (compaction
    /// starts a segment first): an empty or partial last segment. The first writable open
    /// removes it and opens — it must not then try to truncate the file it just removed.
    @Test(arguments: [0, 7, 40])
    func segmentWhoseCreationWasInterrupted(keptBytes: Int) async throws {
        let directory = TemporaryDirectory("strata-kill")
        defer { directory.remove() }
        let store = directory.appending("songs.strata")
        let journal = try Journal.create(at: store, schema: Fixtures.songbook)
        for n in 1...3 as ClosedRange<UInt64> { try await journal.append(ProcessWorkload.transaction(n, seed: 5)) }
        await journal.close()
        let first = try Data(contentsOf: URL(fileURLWithPath: StoreLayout.join(store, StoreLayout.segmentName(firstTransaction: 1))))
        let interrupted = StoreLayout.join(store, StoreLayout.segmentName(firstTransaction: 4))
        try first.prefix(keptBytes).write(to: URL(fileURLWithPath: interrupted))

        var state = ReplayedState()
        let reopened = try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &state)
        var model = WorkloadModel(seed: 5)
        #expect(state == (try model.state(through: 3)))
        #expect(reopened.recovery.removedFiles == [StoreLayout.segmentName(firstTransaction: 4)])
        #expect(!FileManager.default.fileExists(atPath: interrupted))
        try await reopened.append(ProcessWorkload.transaction(4, seed: 5))
        await reopened.close()

        var again = ReplayedState()
        let last = try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &again)
        #expect(again == (try model.state(through: 4)))
        await last.close()
    }

    @Test(.enabled(if: WriterExecutable.isAvailable, "strata-journal-writer was not built"), .timeLimit(.minutes(20)))
    func killedWritersNeverLoseAcknowledgedSaves() async throws {
        let seed = Self.seed
        var rng = SeededGenerator(seed: seed)
        let directory = TemporaryDirectory("strata-kill")
        defer { directory.remove() }
        let store = directory.appending("songs.strata")
        let workloadSeed = rng.next() % 1_000_000
        var model = WorkloadModel(seed: workloadSeed)
        var committed: UInt64 = 0
        var kills = 0, killsInCompaction = 0, finished = 0, tornTails = 0, unacknowledgedKept = 0
        var durabilities: Set<Durability> = []
        var leadingKills = 0

        for iteration in 0..<Self.iterations {
            var plan = Plan.random(using: &rng)
            let create = iteration == 0
            if create, case .atStart = plan.trigger { plan.trigger = .afterAcks(2) }  // a half-created store is another test's subject
            let context = "seed \(seed), iteration \(iteration): \(plan)"
            let outcome = try await onOwnThread { [plan] in
                try Self.execute(plan, store: store, seed: workloadSeed, create: create)
            }
            try #require(outcome.fatal == nil, "the writer failed: \(outcome.fatal ?? "") (\(context))")
            if outcome.killed {
                kills += 1
                if plan.lead { leadingKills += 1 }
                #expect(outcome.exit.reason == .uncaughtSignal && outcome.exit.status == SIGKILL, "\(context)")
            } else {
                finished += 1
                #expect(outcome.exit.reason == .exit && outcome.exit.status == 0, "\(context)")
            }
            if outcome.killedInCompaction { killsInCompaction += 1 }
            if let opened = outcome.opened {
                #expect(opened == committed, "the writer opened at \(opened), the store held \(committed) (\(context))")
            }
            // Transactions up to `committed` were in the store before; a process crash keeps
            // them whatever the durability.
            let acked = max(outcome.acked, committed)
            let issued = max(outcome.issued, committed)

            var state = ReplayedState()
            let configuration = Journal.Configuration(durability: plan.durability, readOnly: plan.verifyReadOnly)
            let journal = try Journal.open(at: store, schema: Fixtures.songbook, configuration: configuration, replayingInto: &state)
            if journal.recovery.tornTail != nil { tornTails += 1 }
            let p = state.lastTransaction
            if p > acked { unacknowledgedKept += 1 }
            durabilities.insert(plan.durability)
            try #require(acked <= p && p <= issued,
                         "the store holds \(p) transactions; acknowledged \(acked), issued \(issued) (\(context))")
            let expected = try model.state(through: p)
            try #require(state == expected, "the store's state is not the workload's first \(p) transactions (\(context))")
            if !plan.verifyReadOnly {
                #expect(temporaryFiles(in: store).isEmpty, "temporary files left after opening (\(context))")
            }
            await journal.close()
            committed = p
        }
        #expect(kills > 0)
        if Self.iterations >= 20 {
            #expect(durabilities == [.full, .relaxed])
            #expect(leadingKills > 0, "some writers were killed while appending their own batches")
        }
        print("""
            kill -9 test (seed \(seed)): \(Self.iterations) iterations, \(kills) kills (\(killsInCompaction) during compaction, \(leadingKills) of leading appenders), \
            \(finished) writers finished, \(unacknowledgedKept) times unacknowledged transactions kept, \
            \(tornTails) torn tails recovered, \(committed) transactions committed
            """)
    }
}
