import Strata
import Synchronization

/// Group commit: several concurrent appenders, each appending 1-row transactions at `.full`
/// and awaiting each one's durability before the next, against a single appender.
///
/// The journal requires consecutive transaction numbers, so appenders take the next number
/// and `enqueue` under one small lock, and await `waitUntilDurable` outside it. Each round
/// runs both, alternating which goes first; the speed-up is taken within a round.
///
/// A diagnostic pass then repeats the run for 1, 2, 4, 8 and 16 appenders through a file
/// system wrapper that records every write and fsync the journal issues, to show how many
/// appends share each fsync and how the writer spends its time.
enum GroupCommit {
    static let name = "group-commit"

    static func run(_ context: BenchmarkContext) async throws -> GroupReport {
        let rounds = context.quick ? 1 : 9
        let total = context.quick ? 120 : 2000
        var report = GroupReport(name: name, title: "Group commit (4 concurrent appenders vs 1, 1-row transactions, .full)")
        report.parameters = ["appends per run": String(total), "rounds": String(rounds)]
        var single: [Double] = [], four: [Double] = [], speedup: [Double] = []
        var singleSyncs: [Double] = [], fourSyncs: [Double] = [], single50: [Double] = [], four50: [Double] = []
        for round in 0..<rounds {
            var one: Outcome?
            var many: Outcome?
            for side in round % 2 == 0 ? [1, 4] : [4, 1] {
                let outcome = try await append(context.path("group"), appenders: side, total: total)
                if side == 1 { one = outcome } else { many = outcome }
            }
            guard let one, let many else { continue }
            single.append(one.appendsPerSecond)
            four.append(many.appendsPerSecond)
            speedup.append(many.appendsPerSecond / one.appendsPerSecond)
            singleSyncs.append(one.syncsPerAppend)
            fourSyncs.append(many.syncsPerAppend)
            single50.append(one.latencies.percentile(50))
            four50.append(many.latencies.percentile(50))
        }
        report.add("1 appender", "appends/s", runs: single)
        report.add("4 appenders", "appends/s", runs: four)
        report.add("speed-up, 4 vs 1", "×", runs: speedup)
        report.add("syncs per append, 1 appender", "syncs", runs: singleSyncs)
        report.add("syncs per append, 4 appenders", "syncs", runs: fourSyncs)
        report.add("append latency p50, 1 appender", "ms", runs: single50)
        report.add("append latency p50, 4 appenders", "ms", runs: four50)
        report.goals.append(GoalCheck("4 appenders reach at least 3× the appends/s of 1", measured: report.median("speed-up, 4 vs 1"), atLeast: 3))
        try await diagnose(context, into: &report)
        return report
    }

    // MARK: - Running appenders

    /// Hands out transaction numbers and enqueues under one lock.
    final class Sequencer: Sendable {
        let journal: Journal
        private let last = Mutex<UInt64>(0)

        init(_ journal: Journal) { self.journal = journal }

        /// Enqueues the next 1-row transaction and returns its number.
        func enqueueNext() throws(StoreError) -> UInt64 {
            try last.withLock { (last) throws(StoreError) -> UInt64 in
                let number = last + 1
                try journal.enqueue(Workload.transaction(number, firstObject: number, rows: 1))
                last = number
                return number
            }
        }
    }

    struct Outcome {
        var seconds: Double
        var appends: Int
        var statistics: Journal.Statistics
        /// Append latencies (enqueue to durable) in milliseconds.
        var latencies: Distribution
        var appendsPerSecond: Double { Double(appends) / seconds }
        var syncsPerAppend: Double { Double(statistics.syncs) / Double(statistics.appends) }
    }

    /// `appenders` tasks append `total` transactions between them, each awaiting its own.
    static func append(_ path: String, appenders: Int, total: Int, fileIO: any FileIO = POSIXFileIO()) async throws -> Outcome {
        let journal = try Journal.create(at: path, schema: Workload.schema, configuration: configuration(.full, fileIO: fileIO))
        defer { removeItem(path) }
        let sequencer = Sequencer(journal)
        let each = total / appenders
        let start = monotonicNanoseconds()
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for _ in 0..<appenders {
                group.addTask {
                    var latencies: [Double] = []
                    latencies.reserveCapacity(each)
                    for _ in 0..<each {
                        let begin = monotonicNanoseconds()
                        let number = try sequencer.enqueueNext()
                        try await journal.waitUntilDurable(number)
                        latencies.append(secondsSince(begin) * 1e3)
                    }
                    return latencies
                }
            }
            var all: [Double] = []
            for try await part in group { all += part }
            return all
        }
        let seconds = secondsSince(start)
        let statistics = journal.statistics
        await journal.close()
        return Outcome(seconds: seconds, appends: each * appenders, statistics: statistics, latencies: Distribution(latencies))
    }

    // MARK: - Why: how appends share fsyncs

    static func diagnose(_ context: BenchmarkContext, into report: inout GroupReport) async throws {
        let rounds = context.quick ? 1 : 3
        let total = context.quick ? 96 : 1920
        for appenders in [1, 2, 4, 8, 16] {
            var rate: [Double] = [], perSync: [Double] = [], syncMs: [Double] = [], idle: [Double] = [], cycle: [Double] = []
            var histogram: [Int: Int] = [:]
            var sequence: [Int] = []
            for _ in 0..<rounds {
                let io = ObservedFileIO()
                let outcome = try await append(context.path("group-observed"), appenders: appenders, total: total, fileIO: io)
                let cycles = writerCycles(io.events, appendBytes: Double(outcome.statistics.bytes) / Double(outcome.statistics.appends))
                rate.append(outcome.appendsPerSecond)
                perSync.append(Double(outcome.statistics.appends) / Double(outcome.statistics.syncs))
                syncMs.append(Distribution(cycles.map(\.syncMilliseconds)).median)
                idle.append(Distribution(cycles.dropFirst().map(\.gapMicroseconds)).median)
                cycle.append(Distribution(zip(cycles.dropFirst(), cycles).map { ($0.syncEnd - $1.syncEnd) / 1e3 }).median)
                for cycle in cycles { histogram[cycle.batch, default: 0] += 1 }
                if sequence.isEmpty { sequence = cycles.dropFirst(8).prefix(24).map(\.batch) }
            }
            report.add("diag \(appenders) appenders: appends/s", "appends/s", runs: rate)
            report.add("diag \(appenders) appenders: appends per fsync", "appends", runs: perSync)
            report.add("diag \(appenders) appenders: fsync in writer, p50", "ms", runs: syncMs)
            report.add("diag \(appenders) appenders: writer idle after fsync, p50", "µs", runs: idle)
            report.add("diag \(appenders) appenders: fsync to fsync, p50", "µs", runs: cycle)
            if appenders == 4 || appenders == 8 {
                report.notes.append("\(appenders) appenders, appends per fsync (size×count, all runs): "
                                    + histogram.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: ", ")
                                    + "; a stretch of consecutive batches: " + sequence.map(String.init).joined(separator: " "))
            }
        }
    }

    struct Cycle {
        /// Transactions in the write (estimated from its size).
        var batch: Int
        var syncMilliseconds: Double
        /// From the end of the previous fsync to the start of this write.
        var gapMicroseconds: Double
        /// When the fsync returned, in nanoseconds.
        var syncEnd: Double
    }

    /// Pairs each append write with the fsync after it on the same file. The first sync is
    /// the new segment's (its header and schema record), so its cycle is skipped.
    static func writerCycles(_ events: [ObservedFileIO.Event], appendBytes: Double) -> [Cycle] {
        var cycles: [Cycle] = []
        var previousSyncEnd: UInt64?
        var written: (bytes: Int, start: UInt64)?
        var syncs = 0
        let syncedFiles = Set(events.filter { $0.kind == .sync }.map(\.fd))
        for event in events {
            switch event.kind {
            case .read:
                continue
            case .write:
                // Only writes to synced files count (not the lock file's).
                guard syncedFiles.contains(event.fd) else { continue }
                written = ((written?.bytes ?? 0) + event.bytes, written?.start ?? event.start)
            case .sync:
                syncs += 1
                defer {
                    previousSyncEnd = event.end
                    written = nil
                }
                guard syncs > 1, let write = written else { continue }
                let gap = previousSyncEnd.map { (Double(write.start) - Double($0)) / 1e3 } ?? 0
                cycles.append(Cycle(batch: max(1, Int((Double(write.bytes) / appendBytes).rounded())),
                                    syncMilliseconds: Double(event.end - event.start) / 1e6, gapMicroseconds: gap,
                                    syncEnd: Double(event.end)))
            }
        }
        return cycles
    }
}
