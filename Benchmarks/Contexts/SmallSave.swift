import Strata

/// Many small saves from one private-queue context: each inserts one item and saves it to
/// the store, all in one `perform` (so no hop between saves). At durability `.none` the
/// figure is the library's own cost of a save — capture, validation, the commit, the
/// context's bookkeeping and notifications — without the disk; at `.full`, with one `fsync`
/// each, written by the saving context itself.
///
/// Reports the time per save and the processor time per save of the whole process, which
/// includes the journal writer's work under `.none`.
enum SmallSave {
    static let name = "small-save"

    static func run(_ context: BenchmarkContext) async throws -> GroupReport {
        let rounds = context.quick ? 1 : 5
        let saves = context.quick ? 500 : 10_000
        var report = GroupReport(name: name, title: "Small saves from one private-queue context (one item inserted per save)")
        report.parameters = ["saves per round": String(saves), "rounds": String(rounds), "executor": "private queue (utility)"]
        for durability in [Durability.none, .full] {
            var perSave: [Double] = [], processor: [Double] = []
            for _ in 0..<rounds {
                let outcome = try await measure(context.path("small-save"), saves: durability == .full ? saves / 5 : saves, durability: durability)
                perSave.append(outcome.seconds * 1e6)
                processor.append(outcome.processorSeconds * 1e6)
            }
            report.add("\(durability.rawValue): time per save", "µs", runs: perSave)
            report.add("\(durability.rawValue): processor time per save", "µs", runs: processor)
        }
        return report
    }

    static func measure(_ path: String, saves: Int, durability: Durability) async throws -> (seconds: Double, processorSeconds: Double) {
        let coordinator = try ContextModel.open(path, durability: durability)
        defer { removeItem(path) }
        let saver = ObjectContext(coordinator: coordinator, executor: .privateQueue("benchmark.small-save", priority: .utility), name: "saver")
        let processorStart = processorNanoseconds()
        let start = monotonicNanoseconds()
        try await saver.perform { c in
            for k in 0..<saves {
                let item = c.insert(Item.self)
                item.itemID = k
                item.name = "item \(k)"
                item.value = Double(k)
                try await c.save()
            }
        }
        let seconds = Double(monotonicNanoseconds() - start) / 1e9
        let processor = Double(processorNanoseconds() - processorStart) / 1e9
        let stored = coordinator.currentGeneration.count(of: "Item")
        await coordinator.store.close()
        guard stored == saves else { throw BenchmarkError("small-save: \(stored) items in the store, expected \(saves)") }
        return (seconds / Double(saves), processor / Double(saves))
    }
}
