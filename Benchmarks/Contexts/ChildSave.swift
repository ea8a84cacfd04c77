import Strata

/// Saving a child context into its parent: a root context holds 10,000 saved items (all
/// loaded); a private-queue child of it changes one attribute of each and saves.
///
/// The save time is the child's `save()` until it returns: validating and capturing the
/// changes in the child, the parent applying them as its own pending changes (on the
/// parent's executor), and the child rebasing its objects on what it sent. Nothing reaches
/// the store. The child's loading and changing of the objects is timed apart. Each round
/// starts from a fresh store (durability `.none`; nothing here writes to it).
enum ChildSave {
    static let name = "child-save"

    static func run(_ context: BenchmarkContext) async throws -> GroupReport {
        let rounds = context.quick ? 1 : 7
        let count = context.quick ? 1_000 : 10_000
        var report = GroupReport(name: name, title: "Child context save into its parent (one attribute changed per object)")
        report.parameters = ["objects": String(count), "rounds": String(rounds), "durability": "none", "executors": "private queues"]
        var change: [Double] = [], save: [Double] = []
        for _ in 0..<rounds {
            let outcome = try await changeAndSave(context.path("child-save"), count: count)
            change.append(outcome.changeSeconds)
            save.append(outcome.saveSeconds)
        }
        report.add("child: load and change the objects (one perform)", "ms", runs: change.map { $0 * 1e3 })
        report.add("child save (applied in the parent)", "ms", runs: save.map { $0 * 1e3 })
        report.add("child save", "objects/s", runs: save.map { Double(count) / $0 })
        report.add("child save, per object", "µs", runs: save.map { $0 / Double(count) * 1e6 })
        return report
    }

    struct Outcome {
        var changeSeconds: Double
        var saveSeconds: Double
    }

    static func changeAndSave(_ path: String, count: Int) async throws -> Outcome {
        let coordinator = try ContextModel.open(path, durability: .none)
        defer { removeItem(path) }
        _ = try await ContextModel.seed(coordinator, count: count)
        let root = ObjectContext(coordinator: coordinator, executor: .privateQueue("benchmark.root"), name: "root")
        let loaded = await root.perform { c in c.objects(of: Item.self).count }
        guard loaded == count else { throw BenchmarkError("child-save: the root context loaded \(loaded) items, expected \(count)") }
        let child = ObjectContext(parent: root, executor: .privateQueue("benchmark.child"), name: "child")
        let start = monotonicNanoseconds()
        await child.perform { c in
            for item in c.objects(of: Item.self) { item.value += 1 }
        }
        let changed = monotonicNanoseconds()
        try await child.save()
        let saved = monotonicNanoseconds()
        let pending = await root.perform { c in c.updatedObjects.count }
        guard pending == count else { throw BenchmarkError("child-save: the root context has \(pending) changed objects, expected \(count)") }
        await coordinator.store.close()
        return Outcome(changeSeconds: Double(changed - start) / 1e9, saveSeconds: Double(saved - changed) / 1e9)
    }
}
