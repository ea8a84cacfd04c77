import Strata

/// Latency of small durable appends: 1-row transactions appended one at a time at
/// `.full` (each awaited before the next), against `pwrite` of the same number of bytes
/// plus `fsync` on a plain file, in the same loop.
///
/// Each round runs both, alternating which goes first; ratios are taken within a round
/// (so both sides see the same machine load) and the median over rounds is reported.
enum SmallAppend {
    static let name = "small-append"

    static func run(_ context: BenchmarkContext) async throws -> GroupReport {
        let rounds = context.quick ? 1 : 5
        let count = context.quick ? 100 : 2000
        let warmUp = 10
        var report = GroupReport(name: name, title: "Small durable append latency (1-row transactions, .full)")
        report.parameters = ["appends per round": String(count), "rounds": String(rounds), "warm-up appends": String(warmUp)]
        var journal50: [Double] = [], journal99: [Double] = [], raw50: [Double] = [], raw99: [Double] = []
        var ratio50: [Double] = [], ratio99: [Double] = [], recordBytes: [Double] = []
        var enqueueMicros: [Double] = [], waitMicros: [Double] = []
        // The raw loop writes what the journal writes; the sizes do not depend on durability.
        let sizes = try await appendToJournal(context.path("sizes"), durability: .relaxed, count: count, warmUp: warmUp).sizes
        for round in 0..<rounds {
            var journalRun: JournalRun?
            var rawRun: Distribution?
            for side in round % 2 == 0 ? [0, 1] : [1, 0] {
                if side == 0 {
                    journalRun = try await appendToJournal(context.path("small-append"), durability: .full, count: count, warmUp: warmUp)
                } else {
                    rawRun = try rawAppends(context.path("small-raw"), sizes: sizes, warmUp: warmUp)
                }
            }
            guard let journalRun, let rawRun else { continue }
            if journalRun.sizes != sizes { report.notes.append("round \(round + 1): record sizes differed from the dry run") }
            let journal = journalRun.latencies
            journal50.append(journal.percentile(50))
            journal99.append(journal.percentile(99))
            raw50.append(rawRun.percentile(50))
            raw99.append(rawRun.percentile(99))
            ratio50.append(journal.percentile(50) / rawRun.percentile(50))
            ratio99.append(journal.percentile(99) / rawRun.percentile(99))
            recordBytes.append(Double(journalRun.sizes.reduce(0, +)) / Double(journalRun.sizes.count))
            enqueueMicros.append(journalRun.enqueue.median)
            waitMicros.append(journalRun.wait.median)
        }
        report.add("journal append latency, p50", "ms", runs: journal50)
        report.add("journal append latency, p99", "ms", runs: journal99)
        report.add("raw pwrite+fsync latency, p50", "ms", runs: raw50)
        report.add("raw pwrite+fsync latency, p99", "ms", runs: raw99)
        report.add("ratio journal/raw, p50", "×", runs: ratio50)
        report.add("ratio journal/raw, p99", "×", runs: ratio99)
        report.add("journal bytes per append", "bytes", runs: recordBytes)
        report.add("  of which enqueue (validate+encode), p50", "µs", runs: enqueueMicros)
        report.add("  of which waitUntilDurable, p50", "µs", runs: waitMicros)
        report.goals.append(GoalCheck("p50 append latency within 1.3× of raw pwrite+fsync", measured: report.median("ratio journal/raw, p50"), atMost: 1.3))
        try await diagnose(context, count: count, warmUp: warmUp, into: &report)
        return report
    }

    /// Splits an append's latency, through a file system wrapper that timestamps the
    /// journal's write and fsync: the caller's `enqueue`; the hand-off to the writer thread
    /// (enqueue returned → write starts); the write and fsync; the wake-up of the waiting
    /// task (fsync returned → `waitUntilDurable` returns).
    static func diagnose(_ context: BenchmarkContext, count: Int, warmUp: Int, into report: inout GroupReport) async throws {
        var enqueue: [Double] = [], handOff: [Double] = [], writeSync: [Double] = [], wakeUp: [Double] = []
        for _ in 0..<(context.quick ? 1 : 3) {
            let io = ObservedFileIO()
            let run = try await appendToJournal(context.path("small-observed"), durability: .full, count: count, warmUp: warmUp, fileIO: io)
            let events = io.events
            let synced = Set(events.filter { $0.kind == .sync }.map(\.fd))
            // The first write and sync are the new segment's header; then one of each per append.
            let writes = Array(events.filter { $0.kind == .write && synced.contains($0.fd) }.dropFirst(1 + warmUp))
            let syncs = Array(events.filter { $0.kind == .sync }.dropFirst(1 + warmUp))
            guard writes.count == run.stamps.count, syncs.count == run.stamps.count else {
                report.notes.append("diagnostic skipped: \(writes.count) writes and \(syncs.count) syncs for \(run.stamps.count) appends")
                return
            }
            var e: [Double] = [], h: [Double] = [], w: [Double] = [], u: [Double] = []
            for (k, stamp) in run.stamps.enumerated() {
                e.append(Double(stamp.enqueued - stamp.start) / 1e3)
                h.append((Double(writes[k].start) - Double(stamp.enqueued)) / 1e3)
                w.append(Double(syncs[k].end - writes[k].start) / 1e3)
                u.append((Double(stamp.end) - Double(syncs[k].end)) / 1e3)
            }
            enqueue.append(Distribution(e).median)
            handOff.append(Distribution(h).median)
            writeSync.append(Distribution(w).median)
            wakeUp.append(Distribution(u).median)
        }
        report.add("diag: enqueue (validate, encode, queue), p50", "µs", runs: enqueue)
        report.add("diag: hand-off to writer thread, p50", "µs", runs: handOff)
        report.add("diag: write + fsync in writer, p50", "µs", runs: writeSync)
        report.add("diag: wake-up of the waiting task, p50", "µs", runs: wakeUp)
    }

    struct JournalRun {
        /// Append latencies in milliseconds.
        var latencies: Distribution
        /// Time in `enqueue` and in `waitUntilDurable`, in microseconds.
        var enqueue: Distribution
        var wait: Distribution
        /// The bytes each append added to the journal.
        var sizes: [Int]
        /// When each append started, when `enqueue` returned, and when it was durable.
        var stamps: [(start: UInt64, enqueued: UInt64, end: UInt64)]
    }

    static func appendToJournal(
        _ path: String, durability: Durability, count: Int, warmUp: Int, fileIO: any FileIO = POSIXFileIO()
    ) async throws -> JournalRun {
        let journal = try Journal.create(at: path, schema: Workload.schema, configuration: configuration(durability, fileIO: fileIO))
        defer { removeItem(path) }
        var latencies: [Double] = [], enqueue: [Double] = [], wait: [Double] = [], sizes: [Int] = []
        var stamps: [(start: UInt64, enqueued: UInt64, end: UInt64)] = []
        latencies.reserveCapacity(count)
        var bytes = journal.statistics.bytes
        for k in 1...(warmUp + count) {
            let number = UInt64(k)
            let record = Workload.transaction(number, firstObject: number, rows: 1)
            let start = monotonicNanoseconds()
            try journal.enqueue(record)
            let enqueued = monotonicNanoseconds()
            try await journal.waitUntilDurable(number)
            let end = monotonicNanoseconds()
            let now = journal.statistics.bytes
            if k > warmUp {
                latencies.append(Double(end - start) / 1e6)
                enqueue.append(Double(enqueued - start) / 1e3)
                wait.append(Double(end - enqueued) / 1e3)
                sizes.append(Int(now - bytes))
                stamps.append((start, enqueued, end))
            }
            bytes = now
        }
        await journal.close()
        return JournalRun(latencies: Distribution(latencies), enqueue: Distribution(enqueue), wait: Distribution(wait), sizes: sizes, stamps: stamps)
    }

    /// `pwrite` of each size at the end of a plain file, then `fsync`; latencies in ms.
    static func rawAppends(_ path: String, sizes: [Int], warmUp: Int) throws -> Distribution {
        var file = try RawFile(creating: path)
        defer { removeItem(path) }
        let buffer = filler(max(4096, sizes.max() ?? 0))
        var latencies: [Double] = []
        latencies.reserveCapacity(sizes.count)
        try buffer.withUnsafeBytes { all in
            // A header's worth of bytes first, as a new journal segment has.
            try file.append(UnsafeRawBufferPointer(rebasing: all[0..<512]))
            try file.sync()
            for k in 0..<(warmUp + sizes.count) {
                let size = sizes[max(0, k - warmUp)]
                let start = monotonicNanoseconds()
                try file.append(UnsafeRawBufferPointer(rebasing: all[0..<size]))
                try file.sync()
                if k >= warmUp { latencies.append(secondsSince(start) * 1e3) }
            }
        }
        return Distribution(latencies)
    }
}
