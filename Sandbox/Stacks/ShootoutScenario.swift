import Foundation
import Strata

/// Kugler's shootout: the same import through every stack while the simulated UI ticks on
/// the main actor; what each stack costs the main actor and how fast data gets in and
/// becomes visible.
struct ShootoutScenario: Scenario {
    let name = "shootout"
    let summary = "an import through every stack while the UI ticks at 60 Hz: import time, main-actor busy time, tick lateness, dropped frames, visible-after, durable-after, memory"

    /// One run of one stack.
    /// Frame deadlines no tick met: a tick that started more than a frame late missed its
    /// own, and the grid points between consecutive ticks' deadlines (skipped because a
    /// tick ended past them) had none.
    static func droppedFrames(_ ticks: [UILoop.Tick]) -> Int {
        var dropped = 0
        for (index, tick) in ticks.enumerated() {
            if tick.started - tick.scheduled > UILoop.period { dropped += 1 }
            if index + 1 < ticks.count {
                let gap = (ticks[index + 1].scheduled - tick.scheduled + UILoop.period / 2) / UILoop.period
                if gap > 1 { dropped += Int(gap) - 1 }
            }
        }
        return dropped
    }

    struct Run: Sendable {
        var importSeconds: Double
        var busySeconds: Double
        var wallSeconds: Double
        var longestMs: Double
        var longestOperation: String
        var lateness: [Double]
        /// Frame deadlines with no tick started within a frame of them: every tick more than
        /// a frame late, and every grid point skipped after a late or long tick.
        var droppedFrames: Int
        var latenessSeries: [(x: Double, y: Double)]
        var visibleAfter: [Double]
        var durableAfter: [Double]
        var peakMegabytes: Double
        var busyByOperation: [ContextEvent.Operation: Double]
        /// The share of processor time the hypervisor took during the import (Linux), in percent.
        var hostStealPercent: Double?
    }

    func run(_ options: ScenarioOptions, progress: @Sendable (String) -> Void) async throws -> ScenarioReport {
        let objects = options.objects ?? 15_000
        let saveEvery = options.saveEvery ?? 500
        let presets = options.stacks ?? StackName.all.map(\.preset)
        let feed = SongbookImport(objects: objects, saveEvery: saveEvery, seed: options.seed)
        var results: [JSON] = []
        var table: [[String]] = [[
            "stack", "import s", "main busy ms", "busy %", "main wall ms", "longest main op ms", "late p50 ms", "late p99 ms", "late max ms",
            "dropped", "stalls>100ms", "visible p50 ms", "visible max ms", "durable p50 ms", "durable max ms", "peak MB", "steal %",
        ]]
        var series: [LineChart.Series] = []
        var summaries: [StackPreset: Summary] = [:]
        for preset in presets {
            var runs: [Run] = []
            for run in 0..<options.runs {
                progress("shootout: \(StackName.name(of: preset)), run \(run + 1) of \(options.runs), \(feed.records.count) objects, a save every \(saveEvery)")
                runs.append(try await Self.measureInOwnProcess(preset, objects: objects, saveEvery: saveEvery, seed: options.seed))
            }
            let summary = Summary(runs)
            summaries[preset] = summary
            let name = StackName.name(of: preset)
            results.append(summary.json(stack: name))
            table.append([
                name, format(summary.importSeconds), format(summary.busySeconds * 1000), format(summary.busyShare * 100),
                format(summary.wallSeconds * 1000), format(summary.longestMs),
            ] + [summary.lateness.p50, summary.lateness.p99, summary.lateness.max].map { summary.latenessMeasured ? format($0) : "–" } + [
                String(Int(summary.dropped)), String(Int(summary.stalls)), format(summary.visible.p50), format(summary.visible.max),
                format(summary.durable.p50), format(summary.durable.max), format(summary.peakMegabytes),
                summary.hostStealPercent.map { format($0) } ?? "–",
            ])
            // The run whose import time is the median one is the one drawn.
            let drawn = runs.sorted { $0.importSeconds < $1.importSeconds }[runs.count / 2]
            series.append(.init(name: name, points: drawn.latenessSeries))
        }
        let chart = LineChart(title: "Tick lateness during the import", xLabel: "seconds since the import started",
                              yLabel: "tick lateness (ms)", series: series, guide: (16.67, "one frame"))
        return ScenarioReport(
            scenario: name, objects: feed.records.count, saveEvery: saveEvery, runs: options.runs, results: results,
            table: table, verdict: Self.verdict(summaries, saves: feed.batches.count), charts: [chart])
    }

    /// Medians over runs.
    struct Summary {
        var importSeconds, busySeconds, wallSeconds, busyShare, longestMs, dropped, stalls, peakMegabytes: Double
        /// The most dropped frames of any run (the verdict's "no dropped frame" is for every run).
        var droppedMost: Double
        var lateness: (p50: Double, p99: Double, max: Double)
        /// Whether a tick fell inside the import in every run (with none, there is no
        /// lateness to report: an import shorter than a frame).
        var latenessMeasured: Bool
        var visible: (p50: Double, max: Double)
        var durable: (p50: Double, max: Double)
        var longestOperation: String
        var busyByOperation: [ContextEvent.Operation: Double]
        var hostStealPercent: Double?

        init(_ runs: [Run]) {
            func median(_ figure: (Run) -> Double) -> Double { Measure.median(runs.map(figure)) }
            importSeconds = median(\.importSeconds)
            busySeconds = median(\.busySeconds)
            wallSeconds = median(\.wallSeconds)
            busyShare = median { $0.busySeconds / max($0.importSeconds, 1e-9) }
            longestMs = median(\.longestMs)
            // The operation of the run whose longest is the median (not of the run with the
            // largest, beside the median's milliseconds).
            longestOperation = runs.sorted { $0.longestMs < $1.longestMs }[runs.count / 2].longestOperation
            dropped = Measure.medianCount(runs.map { Double($0.droppedFrames) })
            droppedMost = Double(runs.map(\.droppedFrames).max() ?? 0)
            stalls = Measure.medianCount(runs.map { Double($0.lateness.filter { $0 > 100 }.count) })
            peakMegabytes = median(\.peakMegabytes)
            latenessMeasured = runs.allSatisfy { !$0.lateness.isEmpty }
            lateness = (median { Measure.quantile($0.lateness, 0.5) }, median { Measure.quantile($0.lateness, 0.99) },
                        median { $0.lateness.max() ?? 0 })
            visible = (median { Measure.quantile($0.visibleAfter, 0.5) }, median { $0.visibleAfter.max() ?? 0 })
            durable = (median { Measure.quantile($0.durableAfter, 0.5) }, median { $0.durableAfter.max() ?? 0 })
            busyByOperation = Dictionary(uniqueKeysWithValues: ContextEvent.Operation.allCases.map { operation in
                (operation, median { $0.busyByOperation[operation] ?? 0 })
            })
            let steal = runs.compactMap(\.hostStealPercent)
            hostStealPercent = steal.isEmpty ? nil : Measure.median(steal)
        }

        /// A lateness figure, or null when no tick was measured (0 would read as none late).
        private func measured(_ value: Double) -> JSON { latenessMeasured ? number(value) : .null }

        func json(stack: String) -> JSON {
            .object([
                ("stack", .string(stack)),
                ("importSeconds", number(importSeconds)),
                ("mainActorBusySeconds", number(busySeconds, decimals: 6)),
                ("tickLatenessMs", .object([("p50", measured(lateness.p50)), ("p99", measured(lateness.p99)), ("max", measured(lateness.max))])),
                ("droppedFrames", .int(Int64(dropped))),
                ("stallsOver100ms", .int(Int64(stalls))),
                ("visibleAfterMs", .object([("p50", number(visible.p50)), ("max", number(visible.max))])),
                ("durableAfterMs", .object([("p50", number(durable.p50)), ("max", number(durable.max))])),
                ("peakResidentMegabytes", number(peakMegabytes, decimals: 1)),
                ("mainActorBusyShare", number(busyShare, decimals: 6)),
                ("mainActorWallSeconds", number(wallSeconds, decimals: 6)),
                ("longestMainActorOperationMs", number(longestMs)),
                ("longestMainActorOperation", .string(longestOperation)),
                ("mainActorBusyMsByOperation", .object(ContextEvent.Operation.allCases.map { ($0.rawValue, number(busyByOperation[$0]! * 1000)) })),
            ] + (hostStealPercent.map { [("hostStealPercent", number($0))] } ?? []))
        }
    }

    static func verdict(_ summaries: [StackPreset: Summary], saves: Int) -> String {
        var parts: [String] = []
        if let nested = summaries[.nested] {
            for other in [StackPreset.hybrid, .separateCoordinators] {
                guard let summary = summaries[other] else { continue }
                let ratio = nested.busySeconds / max(summary.busySeconds, 1e-9)
                parts.append("nested keeps the main actor \(format(ratio))× as busy as \(StackName.name(of: other)) (target ≥ 50×: \(ratio >= 50 ? "holds" : "missed"))")
            }
        }
        if let hybrid = summaries[.hybrid] {
            let checks = [
                (hybrid.busyShare <= 0.01, "main busy \(format(hybrid.busyShare * 100))% of the import (≤ 1%)"),
                (hybrid.droppedMost == 0, "\(Int(hybrid.droppedMost)) dropped frames in the worst run (0)"),
                hybrid.latenessMeasured
                    ? (hybrid.lateness.p99 <= 4, "lateness p99 \(format(hybrid.lateness.p99)) ms (≤ 4)")
                    : (false, "lateness p99 not measured, no tick fell inside the import: give more objects (≤ 4)"),
                // The target as the acceptance states it (p50); the slowest save is shown beside it.
                (hybrid.visible.p50 <= 16.7, "visible after \(format(hybrid.visible.p50)) ms p50 (≤ 16.7; slowest save \(format(hybrid.visible.max)) ms)"),
            ]
            // The hypervisor's steal delays ticks whatever the stack does: say how much there was.
            let steal = hybrid.hostStealPercent.map { " (host steal \(format($0))% during the import)" } ?? ""
            parts.append("hybrid: " + checks.map { "\($0.1) \($0.0 ? "holds" : "missed")" }.joined(separator: ", ") + steal)
        }
        if let mainParent = summaries[.mainParent] {
            parts.append("main-parent stalls the UI for up to \(format(mainParent.lateness.max)) ms (\(Int(mainParent.dropped)) dropped frames): every import save is taken in and saved on the main actor, \(format(mainParent.busySeconds * 1000 / Double(max(saves, 1)))) ms of main-actor work per save, the longest single operation \(mainParent.longestOperation) (\(format(mainParent.longestMs)) ms)")
        }
        return parts.isEmpty ? "measured \(summaries.count) stack(s)" : parts.joined(separator: "; ")
    }

    // MARK: - One run

    static func measure(_ preset: StackPreset, feed: SongbookImport) async throws -> Run {
        let bench = try StackBench(preset, label: "shootout")
        do {
            let run = try await measure(bench, feed: feed)
            await bench.close()
            return run
        } catch {
            await bench.close()
            throw error
        }
    }

    private static func measure(_ bench: StackBench, feed: SongbookImport) async throws -> Run {
        let stack = bench.stack
        await stack.start()
        let loop = await MainActor.run {
            let loop = UILoop(view: stack.viewContext)
            loop.start()
            return loop
        }
        _ = await loop.waitForTicks(5, timeout: 5)
        let expectedSaves = feed.batches.count
        let outcomes = Collector<(time: UInt64, error: StoreError?)>()
        var writerOutcomes: Task<Void, Never>?
        let importer = stack.newImportContext()
        let asynchronous = stack.savesAsynchronously(importer)
        if asynchronous {
            let stream = stack.writerSaves()
            writerOutcomes = Task {
                for await outcome in stream {
                    outcomes.append((Measure.now(), outcome.error))
                    if outcomes.count >= expectedSaves { break }
                }
            }
        }
        Measure.resetPeakMemory()
        bench.meter.start()
        let ticksAtStart = Measure.processorTicks()
        let started = Measure.now()
        let saves = Collector<SongbookImport.Save>()
        try await feed.run(on: stack, in: importer) { saves.append($0) }
        // Where the view's saves reach the store through the writer (`nested`), the import
        // ends when the writer has saved them too. (Not under `hybrid`, whose imports do not
        // pass through the writer: a save there waited behind the writer's merges of them.)
        if asynchronous, let writer = stack.writerContext { try await writer.save() }
        let finished = Measure.now()
        let steal = Measure.stealPercent(from: ticksAtStart, to: Measure.processorTicks())
        let peak = Measure.peakResidentMegabytes
        let saved = saves.values
        let newest = saved.last?.newestSong ?? 0
        let seen = await loop.waitUntilSeen(song: newest, timeout: 10)
        // Metered until the view shows the import's last song and, where it merges the
        // import's commits (each one merge), has merged them all: those merges are the
        // import's cost too, also the last ones, which come after the import's end — and
        // may come after the view has shown the song, which its fetch reads from the newer
        // generation. (Stopped at the end, a run with few saves sometimes counted no merge.)
        if [.sharedCoordinator, .separateCoordinators, .hybrid].contains(stack.preset),
            !(await bench.meter.waitForMerges(saves.values.count, timeout: 10))
        {
            throw ScenarioError("the view context merged \(bench.meter.read().merges) of the import's \(saves.values.count) commits within 10 s of its end")
        }
        let busy = bench.meter.stop()
        if let writerOutcomes {
            let watchdog = Task {
                try? await Task.sleep(for: .seconds(10))
                writerOutcomes.cancel()
            }
            await writerOutcomes.value
            watchdog.cancel()
        }
        let (ticks, failure) = await MainActor.run {
            loop.stop()
            return (loop.ticks, loop.failure)
        }
        if let failure { throw ScenarioError("the UI's query failed: \(failure)") }
        if let failed = outcomes.values.first(where: { $0.error != nil }), let error = failed.error {
            throw ScenarioError("an asynchronous writer save failed: \(error)")
        }
        guard seen else { throw ScenarioError("the view context did not see song \(newest) within 10 s of the import's end") }

        // Durable: when save returned — or, where the writer saves asynchronously, the
        // k-th writer outcome (capped by the end of the import, when all was durable).
        // Visible: from the save's commit — when its save returned: committed to the store,
        // or (through the view context, `nested`) held by the view context and handed to the
        // writer — to the first tick whose probe saw it; 0 where a tick saw it before the
        // save returned. (Measured from the writer's later durability instead, every save made
        // durable at the import's end was given the time from that end to the next tick, and
        // one seen before that end got no figure at all.)
        let writerTimes = outcomes.values.map(\.time).sorted()
        var durableAfter: [Double] = [], visibleAfter: [Double] = []
        for (index, save) in saved.enumerated() {
            let durable = !asynchronous ? save.returned : min(index < writerTimes.count ? writerTimes[index] : finished, finished)
            durableAfter.append(Double(durable - save.called) / 1e6)
            guard let tick = ticks.first(where: { $0.newestSong >= save.newestSong }) else {
                throw ScenarioError("no tick saw song \(save.newestSong), though the view context saw song \(newest)")
            }
            visibleAfter.append(tick.started > save.returned ? Double(tick.started - save.returned) / 1e6 : 0)
        }
        let during = ticks.filter { $0.scheduled >= started && $0.scheduled <= finished }
        return Run(
            importSeconds: Double(finished - started) / 1e9, busySeconds: busy.busy.seconds, wallSeconds: busy.wall.seconds, longestMs: busy.longest.milliseconds,
            longestOperation: busy.longestOperation,
            lateness: during.map { Double($0.started - $0.scheduled) / 1e6 },
            droppedFrames: Self.droppedFrames(during),
            latenessSeries: during.map { (Double($0.scheduled - started) / 1e9, Double($0.started - $0.scheduled) / 1e6) },
            visibleAfter: visibleAfter, durableAfter: durableAfter, peakMegabytes: peak,
            busyByOperation: busy.byOperation.mapValues(\.seconds), hostStealPercent: steal)
    }
}
