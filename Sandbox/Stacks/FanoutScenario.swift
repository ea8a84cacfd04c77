import Foundation
import Strata
import Synchronization

/// A thousand live result sets in the view context and one background save that changes
/// objects in every one of them: how long until the last result set has been told.
struct FanoutScenario: Scenario {
    let name = "fanout"
    let summary = "1,000 live result sets in the view context, one save updating 10,000 objects: time until the last is notified"
    let ignoredOptions = ["--save-every"]
    let minimumObjects: Int? = 26_000  // 10,400 songs

    static let observers = 1_000
    static let updated = 10_000

    func run(_ options: ScenarioOptions, progress: @Sendable (String) -> Void) async throws -> ScenarioReport {
        let presets = options.stacks ?? StackName.all.map(\.preset)
        let objects = objectCount(options, default: 30_000)
        var results: [JSON] = []
        var table: [[String]] = [["stack", "last notified ms", "main busy ms", "notified"]]
        var lastTimes: [StackPreset: Double] = [:]
        for preset in presets {
            progress("fanout: \(StackName.name(of: preset)), \(Self.observers) result sets over a store of \(objects) objects × \(options.runs) runs")
            let bench = try StackBench(preset, label: "fanout", durability: .relaxed)
            var last: [Double] = [], busy: [Double] = [], notified: [Double] = []
            do {
                try await bench.populate(objects: objects, seed: options.seed)
                await bench.stack.start()
                let background = bench.stack.newBackgroundContext()
                for run in 0..<options.runs {
                    let outcome = try await Self.measure(bench, background: background, round: run + 1)
                    last.append(outcome.last)
                    busy.append(outcome.busy)
                    notified.append(Double(outcome.notified))
                }
                await bench.close()
            } catch {
                await bench.close()
                throw error
            }
            lastTimes[preset] = Measure.median(last)
            table.append([StackName.name(of: preset), format(Measure.median(last)), format(Measure.median(busy)), "\(Int(Measure.medianCount(notified))) of \(Self.observers)"])
            results.append(.object([
                ("stack", .string(StackName.name(of: preset))), ("resultSets", .int(Int64(Self.observers))),
                ("updatedObjects", .int(Int64(Self.updated))), ("lastNotifiedMs", number(Measure.median(last))),
                ("mainActorBusySeconds", number(Measure.median(busy) / 1000, decimals: 6)),
                ("notified", .int(Int64(Measure.medianCount(notified)))),
            ]))
        }
        let verdict = lastTimes.isEmpty ? "nothing measured" : "the last of \(Self.observers) result sets hears of a \(Self.updated)-object save after "
            + StackName.all.compactMap { entry in lastTimes[entry.preset].map { "\(format($0)) ms (\(entry.name))" } }.joined(separator: ", ")
        return ScenarioReport(scenario: name, objects: objects, saveEvery: nil, runs: options.runs, results: results, table: table, verdict: verdict)
    }

    /// Sets up the result sets in the view context, saves the update in the background and
    /// waits, on the view context, until every result set has reported its change.
    static func measure(_ bench: StackBench, background: ObjectContext, round: Int) async throws -> (last: Double, busy: Double, notified: Int) {
        let stack = bench.stack
        let perSet = updated / observers
        return try await stack.viewContext.perform { context in
            context.reset()
            let tally = Tally(target: observers)
            var sets: [FetchedResults<Song>] = []
            for index in 0..<observers {
                let first = index * perSet + 1
                let request = FetchRequest(entity: "Song", predicate: .written("songID BETWEEN {\(first), \(first + perSet - 1)}"), sortBy: [SortKey("songID")])
                let results = try context.fetchedResults(Song.self, request: request)
                _ = results.objects.map(\.title)
                results.onChange = { _ in tally.count() }
                sets.append(results)
            }
            try await background.perform { context in
                context.reset()
                for song in try StackBench.songs(1...updated, in: context) { song.rating = Double(round % 50) / 10 + 0.05 }
            }
            bench.meter.start()
            let start = Measure.now()
            try await stack.save(background)
            let finished = await tally.wait(timeout: 30)
            let busy = bench.meter.stop()
            if let writer = stack.writerContext { try await writer.save() }
            withExtendedLifetime(sets) {}
            guard finished else { throw ScenarioError("only \(tally.notified) of \(observers) result sets were notified within 30 s") }
            return (Double(tally.last - start) / 1e6, busy.busy.milliseconds, tally.notified)
        }
    }

    /// Counts notifications and wakes the waiter at the target (or at the timeout).
    private final class Tally: Sendable {
        private struct State {
            var notified = 0
            var last: UInt64 = 0
            var waiter: CheckedContinuation<Bool, Never>?
        }

        let target: Int
        private let state = Mutex(State())

        init(target: Int) { self.target = target }

        var notified: Int { state.withLock { $0.notified } }
        var last: UInt64 { state.withLock { $0.last } }

        func count() {
            let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                state.notified += 1
                state.last = Measure.now()
                guard state.notified >= target else { return nil }
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: true)
        }

        private func expire() {
            state.withLock { state -> CheckedContinuation<Bool, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }?.resume(returning: false)
        }

        func wait(timeout: Double) async -> Bool {
            let expiry = Task { [self] in
                try? await Task.sleep(for: .seconds(timeout))
                if !Task.isCancelled { expire() }
            }
            defer { expiry.cancel() }
            return await withCheckedContinuation { continuation in
                let done = state.withLock { state -> Bool in
                    if state.notified >= target { return true }
                    state.waiter = continuation
                    return false
                }
                if done { continuation.resume(returning: true) }
            }
        }
    }
}
