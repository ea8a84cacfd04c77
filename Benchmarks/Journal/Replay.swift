import Strata

/// Opening a store: replaying ~128 MB of journal segments with no checkpoint, then opening
/// the same state from a checkpoint written by `compact(from:)`.
///
/// Each is opened into a ``ReplayedState`` (a dictionary of rows, as a store's memory would
/// hold them) and into a target that only counts (the journal's own reading, checking and
/// decoding, without building any state); with the files just read, so in the page cache
/// ("warm"), and, where the platform allows, evicted from it first ("cold",
/// `posix_fadvise(DONTNEED)` on the store's files only). The time `open` spends reading
/// files is measured through a file system wrapper; plain sequential reads of the same
/// files are the baseline.
enum Replay {
    static let name = "replay"

    /// Counts what replay delivers and keeps nothing.
    struct CountingTarget: JournalReplayTarget {
        var rows = 0
        var transactions = 0
        mutating func loadCheckpointRow(_ row: RowImage) throws(ReplayError) { rows += 1 }
        mutating func finishCheckpoint(through transaction: UInt64, highestObjectNumbers: [String: UInt64]) throws(ReplayError) {}
        mutating func apply(_ transaction: TransactionRecord) throws(ReplayError) {
            rows += transaction.inserted.count + transaction.updated.count + transaction.deleted.count
            transactions += 1
        }
    }

    static func run(_ context: BenchmarkContext) async throws -> GroupReport {
        let rounds = context.quick ? 1 : 3
        let transactions = context.quick ? 24 : 1200
        let rowsPer = 1000
        var report = GroupReport(name: name, title: "Replay: opening a store from journal segments vs from a checkpoint")
        report.parameters = ["transactions": String(transactions), "rows per transaction": String(rowsPer), "rounds": String(rounds)]
        let store = context.path("replay")
        defer { removeItem(store) }
        try await build(store, transactions: transactions, rows: rowsPer)

        let segments = filesIn(store).filter { $0.hasSuffix(".strata") }
        let journalBytes = Double(segments.map(fileSize).reduce(0, +))
        report.parameters["journal files"] = String(segments.count)
        report.add("journal size", "MB", runs: [journalBytes / 1e6])
        try await measure(store, label: "journal", files: segments, bytes: journalBytes, rounds: rounds, into: &report)

        // Checkpoint the replayed state; the covered segments are removed.
        var state = ReplayedState()
        let journal = try Journal.open(at: store, schema: Workload.schema, replayingInto: &state)
        let compactStart = monotonicNanoseconds()
        let compaction = try await journal.compact(from: state)
        let compactSeconds = secondsSince(compactStart)
        await journal.close()
        state = ReplayedState()
        let files = filesIn(store).filter { $0.hasSuffix(".strata") }
        let checkpointBytes = Double(files.map(fileSize).reduce(0, +))
        report.add("checkpoint size (with the empty segment after it)", "MB", runs: [checkpointBytes / 1e6])
        report.add("compact(from:) time (write checkpoint, remove segments)", "s", runs: [compactSeconds])
        report.add("compact(from:) checkpoint write rate", "MB/s", runs: [Double(compaction.bytes) / compactSeconds / 1e6])
        try await measure(store, label: "checkpoint", files: files, bytes: checkpointBytes, rounds: rounds, into: &report)

        let speedup = report.median("journal open, warm, into ReplayedState") / report.median("checkpoint open, warm, into ReplayedState")
        report.notes.append("opening from the checkpoint takes \(formatted(1 / speedup))× the time of replaying the journal (warm, into ReplayedState)")
        return report
    }

    /// Writes `transactions` inserts of `rows` rows each (durability `.relaxed`: building
    /// the store is not what is measured; closing syncs it).
    static func build(_ store: String, transactions: Int, rows: Int) async throws {
        let journal = try Journal.create(at: store, schema: Workload.schema, configuration: configuration(.relaxed))
        for k in 0..<transactions {
            let number = UInt64(k + 1)
            try journal.enqueue(Workload.transaction(number, firstObject: UInt64(k * rows + 1), rows: rows))
            if k % 32 == 31 { try await journal.waitUntilDurable(number) }
        }
        await journal.close()
    }

    private static func measure(
        _ store: String, label: String, files: [String], bytes: Double, rounds: Int, into report: inout GroupReport
    ) async throws {
        var warmState: [Double] = [], warmCount: [Double] = [], coldState: [Double] = []
        var warmRead: [Double] = [], coldRead: [Double] = []
        var rawWarm: [Double] = [], rawCold: [Double] = []
        var rows = 0
        for _ in 0..<rounds {
            // Read once untimed first: this machine may page out file pages soon after use.
            _ = try readFiles(files)
            rawWarm.append(try timeRead(files))
            _ = try readFiles(files)
            let warm = try await timeOpen(store) { (target: inout ReplayedState) in rows = target.rows.count }
            warmState.append(warm.seconds)
            warmRead.append(warm.reading)
            _ = try readFiles(files)
            warmCount.append(try await timeOpen(store) { (_: inout CountingTarget) in }.seconds)
            if canDropFileCache {
                try dropFromPageCache(files)
                rawCold.append(try timeRead(files))
                try dropFromPageCache(files)
                let cold = try await timeOpen(store) { (_: inout ReplayedState) in }
                coldState.append(cold.seconds)
                coldRead.append(cold.reading)
            }
        }
        report.add("\(label) open, warm, into ReplayedState", "s", runs: warmState)
        report.add("\(label) open, warm, into ReplayedState", "MB/s", runs: warmState.map { bytes / $0 / 1e6 })
        report.add("\(label) open, warm, into ReplayedState", "rows/s", runs: warmState.map { Double(rows) / $0 })
        report.add("\(label) open, warm: time reading files", "s", runs: warmRead)
        report.add("\(label) open, warm, counting only", "s", runs: warmCount)
        report.add("\(label) open, warm, counting only", "MB/s", runs: warmCount.map { bytes / $0 / 1e6 })
        report.add("\(label) raw read, warm", "MB/s", runs: rawWarm.map { bytes / $0 / 1e6 })
        if canDropFileCache {
            report.add("\(label) open, cold, into ReplayedState", "s", runs: coldState)
            report.add("\(label) open, cold, into ReplayedState", "MB/s", runs: coldState.map { bytes / $0 / 1e6 })
            report.add("\(label) open, cold: time reading files", "s", runs: coldRead)
            report.add("\(label) raw read, cold", "MB/s", runs: rawCold.map { bytes / $0 / 1e6 })
        }
        report.parameters["\(label) rows"] = String(rows)
    }

    private static func timeRead(_ files: [String]) throws -> Double {
        let start = monotonicNanoseconds()
        _ = try readFiles(files)
        return secondsSince(start)
    }

    /// Opens the store into a fresh target, closes it, and returns the seconds `open` took
    /// and the seconds of it spent reading files.
    private static func timeOpen<Target: JournalReplayTarget>(
        _ store: String, inspect: (inout Target) -> Void
    ) async throws -> (seconds: Double, reading: Double) where Target: Initializable {
        var target = Target()
        let io = ObservedFileIO()
        let start = monotonicNanoseconds()
        let journal = try Journal.open(at: store, schema: Workload.schema, configuration: configuration(.full, fileIO: io), replayingInto: &target)
        let seconds = secondsSince(start)
        inspect(&target)
        await journal.close()
        return (seconds, io.readSeconds)
    }
}

/// A replay target that starts empty.
protocol Initializable { init() }
extension ReplayedState: Initializable {}
extension Replay.CountingTarget: Initializable {}
