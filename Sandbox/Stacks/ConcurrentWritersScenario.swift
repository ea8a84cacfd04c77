import Foundation
import Strata

/// Several background contexts increment shared counters and retitle overlapping songs at
/// once, retrying when a save reports a conflict: throughput, conflicts, and proof that no
/// increment was lost.
struct ConcurrentWritersScenario: Scenario {
    let name = "concurrent-writers"
    let summary = "4 background contexts increment shared counters and edit overlapping objects: no lost updates, conflicts retried, saves/s"
    let ignoredOptions = ["--save-every"]

    static let writers = 4, counters = 8, shared = 32

    func run(_ options: ScenarioOptions, progress: @Sendable (String) -> Void) async throws -> ScenarioReport {
        let presets = options.stacks ?? StackName.all.map(\.preset)
        let saves = options.objects ?? 400
        let rounds = max(1, saves / Self.writers)
        var results: [JSON] = []
        var table: [[String]] = [["stack", "writers", "saves", "saves/s", "conflicts retried", "lost updates"]]
        var lostTotal = 0
        for preset in presets {
            progress("concurrent-writers: \(StackName.name(of: preset)), \(Self.writers) writers × \(rounds) saves × \(options.runs) runs")
            var rates: [Double] = [], conflicts: [Double] = [], lost = 0
            for run in 0..<options.runs {
                let bench = try StackBench(preset, label: "concurrent-writers")
                do {
                    try await bench.populate(objects: 1_500, seed: options.seed)
                    let outcome = try await Self.measure(bench, rounds: rounds, seed: options.seed &+ UInt64(run))
                    rates.append(outcome.rate)
                    conflicts.append(Double(outcome.conflicts))
                    lost = max(lost, outcome.lost)
                    await bench.close()
                } catch {
                    await bench.close()
                    throw error
                }
            }
            lostTotal += lost
            let name = StackName.name(of: preset)
            table.append([name, String(Self.writers), String(rounds * Self.writers), format(Measure.median(rates)), String(Int(Measure.medianCount(conflicts))), String(lost)])
            results.append(.object([
                ("stack", .string(name)), ("writers", .int(Int64(Self.writers))), ("saves", .int(Int64(rounds * Self.writers))),
                ("savesPerSecond", number(Measure.median(rates), decimals: 1)), ("conflictsRetried", .int(Int64(Measure.medianCount(conflicts)))),
                ("lostUpdates", .int(Int64(lost))), ("mergePolicy", .string("error, then retry")),
            ]))
        }
        let verdict = "every increment of \(Self.writers) concurrent writers is in the store, conflicts reported and retried: \(lostTotal == 0 ? "holds" : "MISSED (\(lostTotal) lost)")"
        return ScenarioReport(scenario: name, objects: saves, saveEvery: 1, runs: options.runs, results: results, table: table, verdict: verdict)
    }

    static func measure(_ bench: StackBench, rounds: Int, seed: UInt64) async throws -> (rate: Double, conflicts: Int, lost: Int) {
        let stack = bench.stack
        await stack.start()
        let before = try counterValues(bench.store)
        let conflicts = Collector<Int>()
        let started = Measure.now()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    let context = stack.newBackgroundContext(name: "writer-\(writer)")
                    var rng = SplitMix64(seed: seed &+ UInt64(writer) &* 7919)
                    for round in 0..<rounds {
                        let counter = 1 + Int(rng.next() % UInt64(counters))
                        let other = counters + 1 + Int(rng.next() % UInt64(shared))
                        while true {
                            try await context.perform { context in
                                context.reset()
                                for song in try StackBench.songs(counter...counter, in: context) { song.milliseconds += 1 }
                                for song in try StackBench.songs(other...other, in: context) { song.title = "writer \(writer) round \(round)" }
                            }
                            let saved: Result<Void, StoreError>
                            do throws(StoreError) {
                                try await stack.save(context)
                                saved = .success(())
                            } catch {
                                saved = .failure(error)
                            }
                            switch saved {
                            case .success: break
                            case .failure(let error) where error.code == .conflict:
                                // Someone else changed it first: read again, once their commit
                                // can be read, and retry. (Read at once, it was not yet: the
                                // store shows a commit once it is durable, so the retry read
                                // the same values and conflicted again, over and over until the
                                // other commit's sync ended — counting that spin as conflicts.)
                                conflicts.append(1)
                                try await Self.waitUntilReadable(error.conflicts.compactMap(\.theirVersion).max(), in: stack.store)
                                continue
                            case .failure(let error): throw error
                            }
                            break
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        if let writer = stack.writerContext { try await writer.save() }
        let elapsed = Double(Measure.now() - started) / 1e9
        let after = try counterValues(bench.store)
        // Every counter checked on its own (a lost increment of one and a doubled one of
        // another must not cancel out): the writers' seeded choices say how often each was
        // incremented.
        var expected: [Int: Int] = [:]
        for writer in 0..<writers {
            var rng = SplitMix64(seed: seed &+ UInt64(writer) &* 7919)
            for _ in 0..<rounds {
                expected[1 + Int(rng.next() % UInt64(counters)), default: 0] += 1
                _ = rng.next()  // the shared song it retitled
            }
        }
        let lost = (1...counters).reduce(0) { total, counter in
            total + abs((expected[counter] ?? 0) - ((after[counter] ?? 0) - (before[counter] ?? 0)))
        }
        return (Double(writers * rounds) / elapsed, conflicts.count, lost)
    }

    /// Waits until the store's readable generation holds transaction `transaction`.
    static func waitUntilReadable(_ transaction: UInt64?, in store: Store) async throws {
        guard let transaction else { return }
        let deadline = Measure.now() + 10_000_000_000
        while store.currentGeneration.transaction < transaction {
            guard Measure.now() < deadline else {
                throw ScenarioError("transaction \(transaction), which a save conflicted with, was not readable within 10 s")
            }
            try await Task.sleep(for: .microseconds(100))
        }
    }

    /// Each counter's value (its song's length) in the store, by song number.
    static func counterValues(_ store: Store) throws -> [Int: Int] {
        let songs = try store.currentGeneration.fetch(FetchRequest(entity: "Song", predicate: .written("songID <= \(counters)")))
        let attributes = Workload.schema.entities.first { $0.name == "Song" }!.attributes
        let length = attributes.firstIndex { $0.name == "milliseconds" }!, key = attributes.firstIndex { $0.name == "songID" }!
        var values: [Int: Int] = [:]
        for song in songs {
            if case .int(let id) = song.values[key], case .int(let value) = song.values[length] { values[Int(id)] = Int(value) }
        }
        return values
    }
}
