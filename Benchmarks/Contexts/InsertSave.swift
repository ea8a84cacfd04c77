import Strata

/// Inserting many objects in one context and saving them to the store: 100,000 items (with
/// their 1,000 categories, each item's to-one keeping its category's to-many in step),
/// inserted in one `perform` of a private-queue context whose parent is the coordinator,
/// then saved in one `save()`, at durability `.none` and `.full`.
///
/// The insert time is the whole `perform` (the end-of-turn processing of the pending
/// changes included); the save time is `save()` until it returns (validation, capture,
/// the store's commit checks, the journal append, and the durability wait at `.full`).
/// Each round runs both durabilities, alternating which goes first.
enum InsertSave {
    static let name = "insert-save"

    static func run(_ context: BenchmarkContext) async throws -> GroupReport {
        let rounds = context.quick ? 1 : 5
        let count = context.quick ? 5_000 : 100_000
        var report = GroupReport(name: name, title: "Insert and save in one context (parent: the coordinator), .none and .full")
        report.parameters = [
            "objects": String(count), "categories": String(count / ContextModel.itemsPerCategory),
            "rounds": String(rounds), "executor": "private queue",
        ]
        var results: [Durability: [Outcome]] = [.none: [], .full: []]
        for round in 0..<rounds {
            for durability in round % 2 == 0 ? [Durability.none, .full] : [.full, .none] {
                results[durability]!.append(try await insertAndSave(context.path("insert-save"), count: count, durability: durability))
            }
        }
        for durability in [Durability.none, .full] {
            let outcomes = results[durability]!
            let label = ".\(durability.rawValue)"
            report.add("\(label): insert (one perform)", "s", runs: outcomes.map(\.insertSeconds))
            report.add("\(label): save", "s", runs: outcomes.map(\.saveSeconds))
            report.add("\(label): insert + save", "s", runs: outcomes.map { $0.insertSeconds + $0.saveSeconds })
            report.add("\(label): overall", "objects/s", runs: outcomes.map { Double(count) / ($0.insertSeconds + $0.saveSeconds) })
            report.add("\(label): insert alone", "objects/s", runs: outcomes.map { Double(count) / $0.insertSeconds })
            report.add("\(label): save alone", "objects/s", runs: outcomes.map { Double(count) / $0.saveSeconds })
        }
        report.add(".full: journal bytes written by the save", "MB", runs: results[.full]!.map { Double($0.journalBytes) / 1e6 })
        return report
    }

    struct Outcome {
        var insertSeconds: Double
        var saveSeconds: Double
        var journalBytes: Int64
    }

    static func insertAndSave(_ path: String, count: Int, durability: Durability) async throws -> Outcome {
        let coordinator = try ContextModel.open(path, durability: durability)
        defer { removeItem(path) }
        let importer = ObjectContext(coordinator: coordinator, executor: .privateQueue("benchmark.insert"), name: "importer")
        let bytesBefore = coordinator.store.journal.statistics.bytes
        let start = monotonicNanoseconds()
        await importer.perform { c in ContextModel.insert(count, into: c) }
        let inserted = monotonicNanoseconds()
        try await importer.save()
        let saved = monotonicNanoseconds()
        let bytes = coordinator.store.journal.statistics.bytes - bytesBefore
        try ContextModel.expectItems(coordinator, count, "insert-save")
        await coordinator.store.close()
        return Outcome(insertSeconds: Double(inserted - start) / 1e9, saveSeconds: Double(saved - inserted) / 1e9, journalBytes: bytes)
    }
}
