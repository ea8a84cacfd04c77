import Foundation
import Strata
import Synchronization

/// The same small-save workload under each durability, with 1 and 4 concurrent writers:
/// saves per second, latency, and how many fsyncs each save cost (group commit).
///
/// A writer is a private-queue context (at utility priority, like a stack's background
/// context) that inserts one artist and saves, over and over; a save's latency is its
/// `save()`. One more row gives the same saves made as bare `Store.commit` calls from a task,
/// which cannot block the cooperative pool and so always hand their write to the journal's
/// writer queue.
struct DurabilityScenario: Scenario {
    let name = "durability"
    let summary = "small saves under .full, .relaxed, .none with 1 and 4 writers: saves/s, latency p50/p99, fsyncs per save"
    let ignoredOptions = ["--stacks", "--save-every", "--seed"]

    func run(_ options: ScenarioOptions, progress: @Sendable (String) -> Void) async throws -> ScenarioReport {
        // 6,000 saves per configuration and run (`--objects` changes it): about a second of
        // saves for one writer at .full, long enough that a stray slow sync or a slow first
        // few groups do not decide a run's rate.
        let saves = options.objects ?? 6_000
        var results: [JSON] = []
        var table: [[String]] = [["durability", "writers", "saves/s", "p50 ms", "p99 ms", "fsyncs/save", "CPU µs/save"]]
        var fullRates: [Int: Double] = [:]
        var fullOutcomes: [Int: [Outcome]] = [:]
        var fullSingleP50 = 0.0
        var bytesPerSave = 0.0
        var raw: [[Double]] = []
        var rawIntoZeros: [[Double]] = []
        var storeCommits: [Int: [Outcome]] = [:]
        let ticksAtStart = Measure.processorTicks()
        for durability in [Durability.full, .relaxed, .none] {
            progress("durability: \(durability.rawValue), 1 and 4 writers, \(saves) saves × \(options.runs) runs")
            var outcomes: [Int: [Outcome]] = [:]
            // One writer and four take turns, run by run (and under .full the raw floor with
            // them), so that a disk or processor busier in one stretch of time than another
            // weighs on every configuration alike.
            for _ in 0..<options.runs {
                for writers in [1, 4] {
                    let outcome = try await measure(durability: durability, writers: writers, saves: saves, through: .context)
                    outcomes[writers, default: []].append(outcome)
                    if durability == .full && writers == 1 {
                        bytesPerSave = outcome.bytesPerSave
                        raw.append(try rawAppendLatencies(bytes: Int(bytesPerSave), count: saves, intoZeros: false))
                        rawIntoZeros.append(try rawAppendLatencies(bytes: Int(bytesPerSave), count: saves, intoZeros: true))
                    }
                    if durability == .full {
                        storeCommits[writers, default: []].append(try await measure(durability: durability, writers: writers, saves: saves, through: .store))
                    }
                }
            }
            for writers in [1, 4] {
                let row = Row(outcomes[writers] ?? [])
                if durability == .full {
                    fullRates[writers] = row.rate
                    fullOutcomes[writers] = outcomes[writers] ?? []
                }
                if durability == .full && writers == 1 { fullSingleP50 = row.p50 }
                results.append(row.json(durability: durability.rawValue, writers: writers, committer: "context"))
                table.append(row.cells(durability.rawValue, writers))
            }
        }
        var storeRates: [Int: Double] = [:]
        var storeSingleP50 = 0.0
        for writers in [1, 4] {
            let row = Row(storeCommits[writers] ?? [])
            storeRates[writers] = row.rate
            if writers == 1 { storeSingleP50 = row.p50 }
            results.append(row.json(durability: "full", writers: writers, committer: "store commit"))
            table.append(row.cells("full, store commit", writers))
        }
        /// A raw floor's row (JSON and table); its p50 in milliseconds.
        func floor(_ label: String, _ runs: [[Double]]) -> Double {
            let p50 = Measure.median(runs.map { Measure.quantile($0, 0.5) }) * 1000
            let p99 = Measure.median(runs.map { Measure.quantile($0, 0.99) }) * 1000
            results.append(.object([
                ("durability", .string(label)), ("writers", .int(1)),
                ("savesPerSecond", number(1000 / max(p50, 1e-9), decimals: 1)),
                ("latencyMs", .object([("p50", number(p50)), ("p99", number(p99))])),
                ("fsyncsPerSave", number(1)), ("bytesPerSave", .int(Int64(bytesPerSave))),
            ]))
            table.append([label, "1", format(1000 / max(p50, 1e-9)), format(p50), format(p99), "1", ""])
            return p50
        }
        let rawP50 = floor("raw append+fsync", raw)
        // The journal writes its appends into space it filled with zeros and synced
        // beforehand (an fsync after a write that grows a file also commits its new size):
        // the floor for that way of writing, for comparison.
        let zerosP50 = floor("raw write+fsync into zeros", rawIntoZeros)
        func verdict(_ what: String, rates: [Int: Double], runs: [Int: [Outcome]], singleP50: Double) -> String {
            let ratio = (rates[4] ?? 0) / max(rates[1] ?? 1, 1e-9)
            let latencyRatio = singleP50 / max(rawP50, 1e-9)
            // One writer and four take turns run by run: each run's pair, to show how far the
            // ratio moves from run to run.
            let pairs = zip(runs[1] ?? [], runs[4] ?? []).map { format($1.rate / max($0.rate, 1e-9)) }
            let perRun = pairs.count > 1 ? " (run by run: \(pairs.joined(separator: ", ")))" : ""
            return "\(what): 4 writers at .full make \(format(ratio))× the saves/s of 1 writer\(perRun) (target ≥ 3×: \(ratio >= 3 ? "holds" : "missed")); "
                + "one takes \(format(latencyRatio))× a raw append+fsync of its bytes at p50 (target ≤ 1.3×: \(latencyRatio <= 1.3 ? "holds" : "missed"))"
                + " and \(format(singleP50 / max(zerosP50, 1e-9)))× a write+fsync of them into zero-filled space"
        }
        let steal = Measure.stealPercent(from: ticksAtStart, to: Measure.processorTicks()).map { "; host steal \(format($0))% during the scenario" } ?? ""
        let verdict = verdict("context saves", rates: fullRates, runs: fullOutcomes, singleP50: fullSingleP50) + "; "
            + verdict("store commits", rates: storeRates, runs: storeCommits, singleP50: storeSingleP50) + steal
        return ScenarioReport(scenario: name, objects: saves, saveEvery: 1, runs: options.runs, results: results, table: table, verdict: verdict)
    }

    /// One row of the table: medians over runs of each run's rate, latency quantiles, syncs
    /// and processor time.
    struct Row {
        var rate, p50, p99, syncs, processor: Double

        init(_ runs: [Outcome]) {
            rate = Measure.median(runs.map(\.rate))
            p50 = Measure.median(runs.map { Measure.quantile($0.latencies, 0.5) }) * 1000
            p99 = Measure.median(runs.map { Measure.quantile($0.latencies, 0.99) }) * 1000
            syncs = Measure.median(runs.map(\.syncsPerSave))
            processor = Measure.median(runs.map(\.processorPerSave)) * 1e6
        }

        func json(durability: String, writers: Int, committer: String) -> JSON {
            .object([
                ("durability", .string(durability)), ("writers", .int(Int64(writers))), ("committer", .string(committer)),
                ("savesPerSecond", number(rate, decimals: 1)),
                ("latencyMs", .object([("p50", number(p50)), ("p99", number(p99))])),
                ("fsyncsPerSave", number(syncs)), ("processorMicrosecondsPerSave", number(processor, decimals: 1)),
            ])
        }

        func cells(_ label: String, _ writers: Int) -> [String] {
            [label, String(writers), format(rate), format(p50), format(p99), format(syncs), format(processor)]
        }
    }

    /// How the writers save.
    enum Saves {
        /// A private-queue context per writer, inserting and saving.
        case context
        /// `Store.commit` of a one-row change set, from a task.
        case store
    }

    struct Outcome {
        var rate: Double
        var latencies: [Double]
        var syncsPerSave: Double
        var bytesPerSave: Double
        /// Processor time of the whole process (every thread) per save.
        var processorPerSave: Double
    }

    /// Latencies of `count` appends of `bytes` bytes to a plain file, each followed by fsync;
    /// `intoZeros`: into space written with zeros and synced before the first (the file's
    /// size does not change), as the journal appends.
    private func rawAppendLatencies(bytes: Int, count: Int, intoZeros: Bool) throws -> [Double] {
        let directory = Measure.temporaryDirectory("raw")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/raw"
        let fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError(.io, "cannot create \(path)") }
        defer { close(fd) }
        let buffer = [UInt8](repeating: 0x5A, count: max(bytes, 1))
        if intoZeros {
            let zeros = [UInt8](repeating: 0, count: max(bytes, 1) * count)
            guard zeros.withUnsafeBytes({ pwrite(fd, $0.baseAddress, $0.count, 0) }) == zeros.count, fsync(fd) == 0 else {
                throw StoreError(.io, "cannot fill \(path) with zeros")
            }
        }
        var offset: off_t = 0
        var latencies: [Double] = []
        for _ in 0..<count {
            let begin = Measure.now()
            _ = buffer.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, offset) }
            fsync(fd)
            latencies.append(Measure.seconds(since: begin))
            offset += off_t(buffer.count)
        }
        return latencies
    }

    func measure(durability: Durability, writers: Int, saves: Int, through path: Saves) async throws -> Outcome {
        let directory = Measure.temporaryDirectory("durability")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try Store.create(at: directory + "/store", schema: Workload.schema,
                                     configuration: .init(durability: durability))
        // The writers share the run's saves: each claims its next save from `budget` and
        // stops when none is left, so all of them write until the last few saves (a writer
        // given a quarter each would finish on its own time, and the run's tail would be
        // measured with fewer writers than its row says).
        let budget = Counter()
        let keys = Counter()
        let start = Measure.now()
        let processorStart = Measure.processorSeconds()
        let coordinator = Coordinator(store: store, name: "durability")
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for writer in 0..<writers {
                switch path {
                case .context:
                    let context = ObjectContext(coordinator: coordinator, executor: .privateQueue("durability.writer\(writer)", priority: .utility),
                                                name: "writer")
                    group.addTask { try await Self.save(claimingFrom: budget, upTo: saves, keys: keys, in: context) }
                case .store:
                    group.addTask { try await Self.commit(claimingFrom: budget, upTo: saves, keys: keys, to: store) }
                }
            }
            var all: [Double] = []
            for try await part in group { all += part }
            return all
        }
        let elapsed = Measure.seconds(since: start)
        let processor = Measure.processorSeconds() - processorStart
        let statistics = store.journal.statistics
        await store.close()
        let count = latencies.count
        return Outcome(rate: Double(count) / elapsed, latencies: latencies,
                       syncsPerSave: Double(statistics.syncs) / Double(max(count, 1)),
                       bytesPerSave: Double(statistics.bytes) / Double(max(count, 1)),
                       processorPerSave: processor / Double(max(count, 1)))
    }
}

extension DurabilityScenario {
    /// One writer's saves through a context, each inserting one artist, while `budget` has
    /// saves left of `total`; their latencies.
    static func save(claimingFrom budget: Counter, upTo total: Int, keys: Counter, in context: ObjectContext) async throws -> [Double] {
        try await context.perform { context in
            var latencies: [Double] = []
            latencies.reserveCapacity(total)
            while budget.next() <= total {
                let key = keys.next()
                let artist = context.insert(entity: "Artist")
                try artist.setValue(.int(Int64(key)), forKey: "artistID")
                try artist.setValue(.string("Artist \(key)"), forKey: "name")
                let begin = Measure.now()
                try await context.save()
                latencies.append(Measure.seconds(since: begin))
            }
            return latencies
        }
    }

    /// One writer's bare store commits of one artist each, while `budget` has commits left
    /// of `total`; their latencies.
    static func commit(claimingFrom budget: Counter, upTo total: Int, keys: Counter, to store: Store) async throws -> [Double] {
        var latencies: [Double] = []
        latencies.reserveCapacity(total)
        while budget.next() <= total {
            let key = keys.next()
            let id = store.allocateObjectIDs(for: "Artist")[0]
            let begin = Measure.now()
            try await store.commit(ChangeSet(author: "writer", inserted: [
                RowImage(id: id, values: [.int(Int64(key)), .string("Artist \(key)"), .objects([])]),
            ]))
            latencies.append(Measure.seconds(since: begin))
        }
        return latencies
    }
}

/// A shared counter: the writers' unique keys, and the saves they claim.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    func next() -> Int { value.add(1, ordering: .relaxed).newValue }
}
