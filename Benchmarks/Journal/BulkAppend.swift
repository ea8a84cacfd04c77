import Strata

/// Throughput of large durable appends: 1,000-row transactions appended one at a time at
/// `.full`, in MB/s of journal bytes (MB = 10^6 bytes), against sequential `pwrite`s of the
/// same chunk sizes, each followed by `fsync`, on a plain file.
///
/// The transactions are built before timing (building rows is the caller's work). The
/// journal's time is split into `enqueue` (validating and encoding, on the caller's thread)
/// and `waitUntilDurable` (the writer's write and fsync, and the wake-up). A further run
/// keeps one transaction in flight, so that encoding overlaps the previous fsync (for
/// information; the goal compares the one-at-a-time loop with the raw loop). A last run
/// appends one at a time from a private queue, as an import context's saves do: there each
/// append writes and syncs its own transaction (`append(_:callerMayBlock:)`), without the
/// two thread wake-ups of an append from a task; it has a goal line of its own.
enum BulkAppend {
    static let name = "bulk-append"

    static func run(_ context: BenchmarkContext) async throws -> GroupReport {
        let rounds = context.quick ? 1 : 5
        let transactions = context.quick ? 24 : 1200
        let rows = 1000
        var report = GroupReport(name: name, title: "Bulk durable append throughput (1,000-row transactions, .full)")
        report.parameters = ["transactions": String(transactions), "rows per transaction": String(rows), "rounds": String(rounds)]
        let records = Workload.transactions(transactions, rows: rows)
        var journalMBps: [Double] = [], rawMBps: [Double] = [], ratio: [Double] = [], totalMB: [Double] = []
        var encodeShare: [Double] = [], encodeMBps: [Double] = [], seconds: [Double] = [], rawSeconds: [Double] = []
        var segments: [Double] = [], pipelined: [Double] = [], fromQueue: [Double] = [], fromQueueRatio: [Double] = []
        var sizes: [Int] = []
        for round in 0..<rounds {
            var journal: JournalRun?
            var raw: Double?
            for side in round % 2 == 0 ? [0, 1] : [1, 0] {
                if side == 0 {
                    journal = try await appendToJournal(context.path("bulk"), records: records)
                    sizes = journal!.sizes
                } else {
                    if sizes.isEmpty { sizes = try await appendToJournal(context.path("sizes"), records: records, durability: .relaxed).sizes }
                    raw = try rawWrites(context.path("bulk-raw"), sizes: sizes)
                }
            }
            guard let journal, let raw else { continue }
            let bytes = Double(journal.sizes.reduce(0, +))
            totalMB.append(bytes / 1e6)
            seconds.append(journal.seconds)
            rawSeconds.append(raw)
            journalMBps.append(bytes / journal.seconds / 1e6)
            rawMBps.append(bytes / raw / 1e6)
            ratio.append(raw / journal.seconds * 100)
            encodeShare.append(journal.enqueueSeconds / journal.seconds * 100)
            encodeMBps.append(bytes / journal.enqueueSeconds / 1e6)
            segments.append(Double(journal.segments))
            let overlapped = try await appendPipelined(context.path("bulk-pipelined"), records: records)
            pipelined.append(bytes / overlapped / 1e6)
            let queue = PrivateQueue(label: "bulk-append")
            let led = try await queue.run { try await appendFromPrivateQueue(context.path("bulk-queue"), records: records) }
            fromQueue.append(bytes / led / 1e6)
            fromQueueRatio.append(raw / led * 100)
        }
        report.add("journal bytes written", "MB", runs: totalMB)
        report.add("journal throughput", "MB/s", runs: journalMBps)
        report.add("raw pwrite+fsync throughput", "MB/s", runs: rawMBps)
        report.add("journal as share of raw", "%", runs: ratio)
        report.add("journal time", "s", runs: seconds)
        report.add("raw time", "s", runs: rawSeconds)
        report.add("  time in enqueue (validate+encode)", "% of journal", runs: encodeShare)
        report.add("  enqueue rate alone", "MB/s", runs: encodeMBps)
        report.add("segments started", "count", runs: segments)
        report.add("journal throughput, next transaction encoded during each fsync", "MB/s", runs: pipelined)
        report.add("journal throughput from a private queue (writing its own batches)", "MB/s", runs: fromQueue)
        report.add("  as share of raw (that round's raw)", "%", runs: fromQueueRatio)
        report.goals.append(GoalCheck("journal throughput at least 50 % of raw", measured: report.median("journal as share of raw"), atLeast: 50))
        report.goals.append(GoalCheck("journal throughput from a private queue at least 50 % of raw",
                                      measured: report.median("  as share of raw (that round's raw)"), atLeast: 50))
        return report
    }

    struct JournalRun {
        var seconds: Double
        var enqueueSeconds: Double
        var sizes: [Int]
        var segments: Int
    }

    static func appendToJournal(_ path: String, records: [TransactionRecord], durability: Durability = .full) async throws -> JournalRun {
        let journal = try Journal.create(at: path, schema: Workload.schema, configuration: configuration(durability))
        defer { removeItem(path) }
        var sizes: [Int] = []
        sizes.reserveCapacity(records.count)
        var bytes = journal.statistics.bytes
        var enqueueTime: UInt64 = 0
        let start = monotonicNanoseconds()
        for record in records {
            let before = monotonicNanoseconds()
            try journal.enqueue(record)
            enqueueTime += monotonicNanoseconds() - before
            try await journal.waitUntilDurable(record.number)
            let now = journal.statistics.bytes
            sizes.append(Int(now - bytes))
            bytes = now
        }
        let seconds = secondsSince(start)
        let segments = journal.statistics.segmentsStarted
        await journal.close()
        return JournalRun(seconds: seconds, enqueueSeconds: Double(enqueueTime) / 1e9, sizes: sizes, segments: segments)
    }

    /// Appends one at a time, as a private-queue context's saves do: on a thread that may
    /// block, so that each append finding the writer idle writes and syncs itself
    /// (`callerMayBlock`). Returns seconds.
    nonisolated(nonsending) static func appendFromPrivateQueue(_ path: String, records: [TransactionRecord]) async throws -> Double {
        let journal = try Journal.create(at: path, schema: Workload.schema, configuration: configuration(.full))
        defer { removeItem(path) }
        let start = monotonicNanoseconds()
        for record in records { try await journal.append(record, callerMayBlock: true) }
        let seconds = secondsSince(start)
        let led = journal.statistics.writesByAppenders
        await journal.close()
        precondition(led > 0, "bulk-append from a private queue: no append wrote its own batch")
        return seconds
    }

    /// Appends with one transaction in flight: each is enqueued before waiting for the one
    /// before it, so encoding overlaps the writer's write and fsync. Returns seconds.
    static func appendPipelined(_ path: String, records: [TransactionRecord]) async throws -> Double {
        let journal = try Journal.create(at: path, schema: Workload.schema, configuration: configuration(.full))
        defer { removeItem(path) }
        let start = monotonicNanoseconds()
        for record in records {
            try journal.enqueue(record)
            if record.number > 1 { try await journal.waitUntilDurable(record.number - 1) }
        }
        try await journal.waitUntilDurable(UInt64(records.count))
        let seconds = secondsSince(start)
        await journal.close()
        return seconds
    }

    /// Sequential `pwrite` of each chunk then `fsync`; returns seconds.
    static func rawWrites(_ path: String, sizes: [Int]) throws -> Double {
        var file = try RawFile(creating: path)
        defer { removeItem(path) }
        let buffer = filler(sizes.max() ?? 0)
        let start = monotonicNanoseconds()
        try buffer.withUnsafeBytes { all in
            for size in sizes {
                try file.append(UnsafeRawBufferPointer(rebasing: all[0..<size]))
                try file.sync()
            }
        }
        return secondsSince(start)
    }
}
