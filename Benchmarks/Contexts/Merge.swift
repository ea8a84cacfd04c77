import Strata

/// Merging a save into a context: another root context on the same coordinator changes
/// one attribute of each of 10,000 items and saves; its did-save is merged with
/// `merge(_:)` into a context that has 0, 1,000 or 10,000 of those items registered and
/// loaded (spread evenly over them), none of them changed.
///
/// A merge only updates objects the context holds, so its cost should follow the
/// registered objects the save touches, not the save's size. The wall time is the
/// `merge(_:)` call inside the context (its end-of-turn processing of the refreshed
/// objects included); next to it, the duration the coordinator's ``ContextObserver``
/// reports for the merge itself (`ContextEvent` with operation `.merge`). Each case gets
/// a fresh merging context, loaded before the other context saves; the case order rotates
/// from round to round. Durability `.none` (the save is not what is measured).
enum Merge {
    static let name = "merge"

    static func run(_ context: BenchmarkContext) async throws -> GroupReport {
        let rounds = context.quick ? 1 : 7
        let count = context.quick ? 1_000 : 10_000
        let cases = context.quick ? [0, 100, 1_000] : [0, 1_000, 10_000]
        var report = GroupReport(name: name, title: "Merging a did-save into a context, by how many of its objects the context holds")
        report.parameters = [
            "updated objects per save": String(count), "registered objects": cases.map(String.init).joined(separator: "/"),
            "rounds": String(rounds), "durability": "none", "executors": "private queues",
        ]
        var wall: [Int: [Double]] = [:], observed: [Int: [Double]] = [:], processing: [Int: [Double]] = [:]
        var reportedObjects: [Int: Set<Int>] = [:]
        for round in 0..<rounds {
            let order = Array(cases[(round % cases.count)...] + cases[..<(round % cases.count)])
            let outcomes = try await merge(context.path("merge"), count: count, registering: order)
            for (registered, outcome) in zip(order, outcomes) {
                wall[registered, default: []].append(outcome.wallSeconds * 1e3)
                observed[registered, default: []].append(outcome.observedSeconds * 1e3)
                processing[registered, default: []].append(outcome.processingSeconds * 1e3)
                reportedObjects[registered, default: []].insert(outcome.observedObjects)
            }
        }
        for registered in cases {
            report.add("\(registered) registered: merge(_:) wall time", "ms", runs: wall[registered]!)
            report.add("\(registered) registered: merge, seen by the observer (.merge)", "ms", runs: observed[registered]!)
            report.add("\(registered) registered:   its end-of-turn processing, seen by the observer", "ms", runs: processing[registered]!)
            if registered > 0 {
                report.add("\(registered) registered: wall time per registered object", "µs", runs: wall[registered]!.map { $0 * 1e3 / Double(registered) })
            }
        }
        let none = report.median("\(cases[0]) registered: merge(_:) wall time")
        let all = report.median("\(cases.last!) registered: merge(_:) wall time")
        report.notes.append("objectCount of the observer's .merge events: "
                            + cases.map { "\($0) registered: \(reportedObjects[$0]!.sorted().map(String.init).joined(separator: ", "))" }.joined(separator: "; "))
        report.notes.append("merging into a context holding none of the \(count) saved objects takes \(formatted(none / all * 100)) % of the time of merging into one holding all of them")
        return report
    }

    struct Outcome {
        var wallSeconds: Double
        /// The `.merge` event's duration.
        var observedSeconds: Double
        /// The `.merge` event's object count.
        var observedObjects: Int
        /// The duration of the `.processPendingChanges` event the merge ran.
        var processingSeconds: Double
    }

    /// One store; for each entry of `registering`, a fresh context with that many items
    /// loaded merges a save that changed every item.
    static func merge(_ path: String, count: Int, registering: [Int]) async throws -> [Outcome] {
        let log = ContextEventLog()
        let coordinator = try ContextModel.open(path, durability: .none, observer: log.observer)
        defer { removeItem(path) }
        let ids = try await ContextModel.seed(coordinator, count: count)
        let writer = ObjectContext(coordinator: coordinator, executor: .privateQueue("benchmark.writer"), name: "writer")
        _ = await writer.perform { c in c.objects(of: Item.self).count }
        var saves = writer.didSave().makeAsyncIterator()
        var outcomes: [Outcome] = []
        for registered in registering {
            let reader = ObjectContext(coordinator: coordinator, executor: .privateQueue("benchmark.reader"), name: "reader")
            let held = registered == 0 ? [] : stride(from: 0, to: count, by: count / registered).prefix(registered).map { ids[$0] }
            await reader.perform { c in
                for id in held { _ = c.object(with: id, as: Item.self).value }
            }
            await writer.perform { c in
                for item in c.objects(of: Item.self) { item.value += 1 }
            }
            try await writer.save()
            guard let save = await saves.next() else { throw BenchmarkError("merge: the writer's did-save stream ended") }
            guard save.updated.count == count else { throw BenchmarkError("merge: the save updated \(save.updated.count) objects, expected \(count)") }
            log.removeAll()
            let seconds = await reader.perform { c in
                let start = monotonicNanoseconds()
                c.merge(save)
                return secondsSince(start)
            }
            let merges = log.events(.merge, context: "reader")
            guard merges.count == 1 else { throw BenchmarkError("merge: the observer saw \(merges.count) merges, expected 1") }
            // The merge's own; the end of `perform` runs another, with nothing left to do.
            guard let processing = log.events(.processPendingChanges, context: "reader").first else {
                throw BenchmarkError("merge: the observer saw no processing of pending changes")
            }
            try await check(reader, holds: held, as: coordinator.currentGeneration)
            outcomes.append(Outcome(wallSeconds: seconds, observedSeconds: merges[0].duration.seconds,
                                    observedObjects: merges[0].objectCount, processingSeconds: processing.duration.seconds))
        }
        await coordinator.store.close()
        return outcomes
    }

    /// Checks that the context holds exactly `ids`, each with the store's values and no changes.
    static func check(_ reader: ObjectContext, holds ids: [ObjectID], as generation: Generation) async throws {
        let problem = await reader.perform { c -> String? in
            let registered = c.registeredObjects.count
            if registered != ids.count { return "\(registered) objects registered, expected \(ids.count)" }
            for id in ids {
                guard let object = c.registeredObject(for: id), let stored = generation.object(id) else { return "\(id) is missing" }
                guard let value = object.entity.propertyIndex(named: "value") else { return "Item has no value attribute" }
                if object.hasChanges || object["value"] != stored.values[value] { return "\(id) was not merged: \(object)" }
            }
            return nil
        }
        if let problem { throw BenchmarkError("merge: \(problem)") }
    }
}
