import Foundation
import Testing
@testable import Strata

/// A writer process running into `RLIMIT_FSIZE` (with `SIGXFSZ` ignored, so writes past the
/// limit fail with `EFBIG`): the failing save throws a typed error instead of the process
/// dying, nothing is acknowledged after it, and a reopen holds every acknowledged save.
@Suite("File-size limit in a writer process", .enabled(if: WriterExecutable.isAvailable, "strata-journal-writer was not built"))
struct FileSizeLimitTests {
    struct Report {
        var acked: [UInt64] = []
        var error: String?
        var after: String?
        var other: [String] = []
    }

    static func run(_ arguments: [String]) async throws -> (Report, status: Int32) {
        let (lines, exit) = try await onOwnThread {
            let child = try ChildProcess(arguments)
            return (try child.remainingLines(within: .seconds(60)), try child.waitForExit())
        }
        #expect(exit.reason == .exit, "the writer died of signal \(exit.status) instead of reporting an error")
        var report = Report()
        for line in lines {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            switch (parts.first, parts.count > 1 ? parts[1] : nil) {
            case ("ack", let n?): report.acked.append(UInt64(n) ?? 0)
            case ("error", let code?): report.error = code
            case ("after", let code?): report.after = code
            default: report.other.append(line)
            }
        }
        return (report, exit.status)
    }

    /// A store holding the workload's first 3 transactions; returns its path and the size of
    /// its largest file.
    static func makeStore(in directory: TemporaryDirectory, seed: UInt64) async throws -> (String, Int) {
        let store = directory.appending("songs.strata")
        let journal = try Journal.create(at: store, schema: Fixtures.songbook)
        for n in 1...3 as ClosedRange<UInt64> { try await journal.append(ProcessWorkload.transaction(n, seed: seed)) }
        await journal.close()
        let largest = try FileManager.default.contentsOfDirectory(atPath: store).map { name in
            (try FileManager.default.attributesOfItem(atPath: StoreLayout.join(store, name))[.size] as? Int) ?? 0
        }.max() ?? 0
        return (store, largest)
    }

    /// Reopens in this process (no limit) and checks the oracle, then appends once more.
    static func verify(_ store: String, report: Report, seed: UInt64) async throws {
        let acked = report.acked.max() ?? 3
        var state = ReplayedState()
        let journal = try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &state)
        let p = state.lastTransaction
        // At most the failed save itself may have reached the file whole (a write that fit
        // and a sync that failed); nothing after it was attempted.
        #expect(acked <= p && p <= acked + 1, "the store holds \(p) transactions; \(acked) were acknowledged")
        var model = WorkloadModel(seed: seed)
        #expect(state == (try model.state(through: p)))
        #expect(temporaryFiles(in: store).isEmpty)
        // The handle that hit the limit is gone; a new one writes normally.
        try await journal.append(ProcessWorkload.transaction(p + 1, seed: seed))
        await journal.close()
        var reopened = ReplayedState()
        let again = try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &reopened)
        #expect(reopened == (try model.state(through: p + 1)))
        await again.close()
    }

    @Test(arguments: [Durability.full, .relaxed])
    func appendsPastTheLimitThrowAndPoison(durability: Durability) async throws {
        let directory = TemporaryDirectory("strata-fsize")
        defer { directory.remove() }
        let seed: UInt64 = 11
        let (store, size) = try await Self.makeStore(in: directory, seed: seed)
        let (report, status) = try await Self.run(["fsize-limit", store, "--bytes", String(size + 60_000), "--seed", String(seed),
                                                   "--durability", durability.rawValue])
        #expect(status == 0)
        #expect(report.other.isEmpty, "\(report.other)")
        #expect(!report.acked.isEmpty, "no save fit under the limit")
        #expect(report.error == "poisoned", "the failing append reported \(report.error ?? "nothing")")
        #expect(report.after == "poisoned", "an append after the failure reported \(report.after ?? "nothing")")
        try await Self.verify(store, report: report, seed: seed)
    }

    @Test func compactionPastTheLimitThrows() async throws {
        let directory = TemporaryDirectory("strata-fsize")
        defer { directory.remove() }
        let seed: UInt64 = 12
        let (store, size) = try await Self.makeStore(in: directory, seed: seed)
        // Compacting every 2 saves keeps segments short, so the growing checkpoint is the
        // file that reaches the limit first (or, rarely, a segment does: both are typed errors).
        let (report, status) = try await Self.run(["fsize-limit", store, "--bytes", String(size + 60_000), "--seed", String(seed),
                                                   "--compact-every", "2"])
        #expect(status == 0)
        #expect(report.other.isEmpty, "\(report.other)")
        #expect(!report.acked.isEmpty)
        #expect(report.error == "io" || report.error == "poisoned", "the failure reported \(report.error ?? "nothing")")
        try await Self.verify(store, report: report, seed: seed)
    }
}
