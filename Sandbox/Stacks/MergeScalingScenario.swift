import Foundation
import Strata

/// What one save costs the main actor as the view context learns of it, by save size and
/// by how many of the saved objects the view context holds.
struct MergeScalingScenario: Scenario {
    let name = "merge-scaling"
    let summary = "main-actor cost of one background save reaching the view context: 1k / 10k changed objects × 0 / 100 / 1,000 / 10,000 registered"
    let ignoredOptions = ["--save-every"]
    let minimumObjects: Int? = 30_000  // 12,000 songs: room for 10,000 of each

    static let registeredCounts = [0, 100, 1_000, 10_000]
    static let changedCounts = [1_000, 10_000]

    func run(_ options: ScenarioOptions, progress: @Sendable (String) -> Void) async throws -> ScenarioReport {
        let presets = options.stacks ?? StackName.all.map(\.preset)
        let objects = objectCount(options, default: 30_000)
        var results: [JSON] = []
        var table: [[String]] = [["stack", "registered", "1k changed ms", "10k changed ms", "how the view learns"]]
        var costs: [StackPreset: [Int: [Int: Double]]] = [:]
        for preset in presets {
            progress("merge-scaling: \(StackName.name(of: preset)), a store of \(objects) objects, \(Self.registeredCounts.count * Self.changedCounts.count) configurations × \(options.runs) runs")
            let bench = try StackBench(preset, label: "merge-scaling", durability: .relaxed)
            do {
                try await bench.populate(objects: objects, seed: options.seed)
                await bench.stack.start()
                let background = bench.stack.newBackgroundContext()
                let merges = bench.viewMerges(savesOf: background)
                var round = 0
                let learns = merges ? "merges the commit" : "child save through main"
                for registered in Self.registeredCounts {
                    var row = [StackName.name(of: preset), String(registered)]
                    for changed in Self.changedCounts {
                        var samples: [Double] = []
                        var held = 0
                        for _ in 0..<options.runs {
                            round += 1
                            let measured = try await Self.measure(bench, background: background, merges: merges, registered: registered, changed: changed, round: round)
                            samples.append(measured.milliseconds)
                            held = measured.held
                        }
                        let cost = Measure.median(samples)
                        costs[preset, default: [:]][registered, default: [:]][changed] = cost
                        row.append(format(cost))
                        // One result per configuration, with the busy time under the key every
                        // scenario uses (FORMATS.md §4).
                        results.append(.object([
                            ("stack", .string(StackName.name(of: preset))), ("registeredObjects", .int(Int64(registered))),
                            ("changedObjects", .int(Int64(changed))), ("heldObjects", .int(Int64(held))),
                            ("mainActorBusySeconds", number(cost / 1000, decimals: 6)), ("howTheViewLearns", .string(learns)),
                        ]))
                    }
                    row.append(learns)
                    table.append(row)
                }
                await bench.close()
            } catch {
                await bench.close()
                throw error
            }
        }
        return ScenarioReport(scenario: name, objects: objects, saveEvery: nil, runs: options.runs, results: results, table: table,
                              verdict: Self.verdict(costs))
    }

    /// The main actor's busy time (ms) from a background save of `changed` songs until the
    /// view context, holding `registered` of them, has taken it in; and how many objects the
    /// view context held when the save was made.
    static func measure(_ bench: StackBench, background: ObjectContext, merges: Bool, registered: Int, changed: Int, round: Int) async throws
        -> (milliseconds: Double, held: Int)
    {
        let view = bench.stack.viewContext
        let held = try await MainActor.run {
            try view.performAndWait { context in
                context.reset()
                // The objects stay registered (as a UI holding them would keep them) until the
                // next round's reset, whatever their number.
                context.retainsRegisteredObjects = true
                if registered > 0 { for song in try StackBench.songs(1...registered, in: context) { _ = song.title } }
            }
            return view.performAndWait { $0.registeredObjects.count }
        }
        try await background.perform { context in
            context.reset()
            for song in try StackBench.songs(1...changed, in: context) { song.rating = Double(round % 50) / 10 + 0.05 }
        }
        let changes = view.objectsDidChange()
        bench.meter.start()
        try await bench.stack.save(background)
        if merges { try await StackBench.awaitMerge(changes, timeout: 30) }
        let totals = bench.meter.stop()
        if let writer = bench.stack.writerContext { try await writer.save() }
        return (totals.busy.milliseconds, held)
    }

    static func verdict(_ costs: [StackPreset: [Int: [Int: Double]]]) -> String {
        var parts: [String] = []
        for preset in [StackPreset.hybrid, .separateCoordinators, .sharedCoordinator] {
            guard let c = costs[preset] else { continue }
            let sizeGrowth = c[100]![10_000]! / max(c[100]![1_000]!, 1e-9)
            let heldGrowth = c[10_000]![10_000]! / max(c[0]![10_000]!, 1e-9)
            let holds = heldGrowth > sizeGrowth && c[0]![10_000]! < 0.25 * c[10_000]![10_000]!
            parts.append("\(StackName.name(of: preset)): a 10k-object save costs the main actor \(format(c[0]![10_000]!)) ms with none of its objects held and \(format(c[10_000]![10_000]!)) ms with all 10k held (\(format(heldGrowth))×); with 100 held, 1k → 10k changed costs \(format(c[100]![1_000]!)) → \(format(c[100]![10_000]!)) ms (\(format(sizeGrowth))×) — cost follows objects held, not save size: \(holds ? "holds" : "missed")")
            break
        }
        if let c = costs[.nested] ?? costs[.mainParent] {
            let which = costs[.nested] != nil ? "nested" : "main-parent"
            parts.append("\(which): the same 10k save costs \(format(c[0]![10_000]!)) ms with nothing held — every changed object passes through the main actor")
        }
        return parts.isEmpty ? "measured \(costs.count) stack(s)" : parts.joined(separator: "; ")
    }
}
