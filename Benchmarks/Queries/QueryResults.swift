import Strata

/// What live results cost to keep up to date: a root context holds a ``FetchedResults`` of
/// the 1,000 items with `itemID BETWEEN {5000, 5999}` (a range of the unique index),
/// sorted by price (no index), in a store of 100,000 or 1,000,000 items (``QueryData``).
/// Its objects are loaded, as a list on screen would load them.
///
/// - One change: the context changes the price of one of those objects (moving it in the
///   order) and calls `processPendingChanges()`; timed from the change until `onChange`
///   receives the diff. Next to it, the parts: the same request through `fetchIDs(_:)`
///   with the change pending (the re-fetch), `ResultsDiff(from:to:updated:)` between the
///   two snapshots alone, and the same changes in a context without live results.
/// - A merge: another root context on the same coordinator changes the price of 10,000
///   items (the results' 1,000 among them) and saves; its did-save is merged with
///   `merge(_:)` into the context holding the results (a fresh one each round). Timed: the
///   `merge(_:)` call (its end-of-turn processing and the diff included), from its start
///   until `onChange` receives the diff, and the merge alone as the coordinator's observer
///   reports it (`.merge`).
///
/// Durability `.none`.
enum QueryResults {
    static let name = "query-results"

    static let first = 5_000
    static let matching = 1_000

    static var request: FetchRequest {
        get throws {
            do {
                let predicate = try ObjectPredicate(format: "itemID BETWEEN {\(first), \(first + matching - 1)}")
                return FetchRequest(entity: "Item", predicate: predicate, sortBy: [SortKey("price")])
            } catch {
                throw BenchmarkError("query-results: the predicate does not parse: \(error)")
            }
        }
    }

    static func objectID(itemID: Int) -> ObjectID { ObjectID(entity: "Item", number: UInt64(itemID + 1)) }

    static func run(_ context: BenchmarkContext) async throws -> GroupReport {
        let sizes = context.quick ? [10_000] : [100_000, 1_000_000]
        let changes = context.quick ? 5 : 21
        let rounds = context.quick ? 2 : 7
        let saved = 10_000
        var report = GroupReport(name: name, title: "Live results (FetchedResults): from a change to the diff delivered")
        report.parameters = [
            "items": sizes.map(grouped).joined(separator: "/"), "results": "\(grouped(matching)) (itemID BETWEEN, sorted by price)",
            "changes": String(changes), "merge rounds": String(rounds), "objects per merged save": grouped(saved),
            "durability": "none", "executors": "private queues",
        ]
        var notes: [String] = []
        for rows in sizes {
            let prefix = "[\(grouped(rows))]"
            let path = context.path("results")
            let (store, _) = try await QueryData.load(path, count: rows)
            let log = ContextEventLog()
            let coordinator = Coordinator(store: store, modelClasses: [QueryItem.self], observer: log.observer)

            let change = try await oneChange(coordinator, runs: changes)
            report.add("\(prefix) one change: processPendingChanges() until the diff is delivered", "ms", runs: change.delivered)
            report.add("\(prefix) one change:   re-fetch alone (fetchIDs, the change pending)", "ms", runs: change.refetch)
            report.add("\(prefix) one change:   ResultsDiff(from:to:) alone", "ms", runs: change.diff)
            report.add("\(prefix) one change:   processPendingChanges() in a context without live results", "ms", runs: change.plain)

            let merge = try await merges(coordinator, log: log, rows: rows, saved: min(saved, rows), rounds: rounds)
            report.add("\(prefix) merge of a \(grouped(min(saved, rows)))-object save: merge(_:) wall time", "ms", runs: merge.wall)
            report.add("\(prefix) merge of a \(grouped(min(saved, rows)))-object save: until the diff is delivered", "ms", runs: merge.delivered)
            report.add("\(prefix) merge of a \(grouped(min(saved, rows)))-object save:   the merge alone (observer's .merge event)", "ms", runs: merge.merge)
            report.add("\(prefix) (the other context's save of those objects, not part of the merge)", "ms", runs: merge.save)
            notes.append("\(prefix) diffs: one change: \(change.shape); merge: \(merge.shape)")

            await store.close()
            removeItem(path)
        }
        report.notes = notes
        report.notes.append("the request uses BETWEEN: with itemID >= a AND itemID < b the index would give the candidates "
                            + "for the first condition alone (see query-fetch), and every re-fetch would read every item from 5000 on")
        report.notes.append("the results' objects are loaded before anything is timed: a merge refreshes only the objects a context "
                            + "holds, and the results re-fetch only when one of those (or an insert or delete in the context) changes")
        return report
    }

    struct ChangeOutcome: Sendable {
        var delivered: [Double] = []
        var refetch: [Double] = []
        var diff: [Double] = []
        var plain: [Double] = []
        var shape = ""
    }

    /// One context holding the results; each run changes one more of its objects. Then
    /// the same changes in a context without results.
    static func oneChange(_ coordinator: Coordinator, runs: Int) async throws -> ChangeOutcome {
        let request = try self.request
        let view = ObjectContext(coordinator: coordinator, executor: .privateQueue("benchmark.view"), name: "view")
        var outcome = try await view.perform { c in
            let results = try c.fetchedResults(QueryItem.self, request: request)
            let objects = results.objects
            guard objects.count == matching else { throw BenchmarkError("query-results: \(objects.count) results, expected \(matching)") }
            for object in objects { _ = object.price }
            var deliveredAt: UInt64 = 0
            var diffs: [ResultsDiff] = []
            results.onChange = { diff in
                deliveredAt = monotonicNanoseconds()
                diffs.append(diff)
            }
            var outcome = ChangeOutcome()
            for run in 0..<runs {
                let object = objects[(run * 389) % objects.count]
                let before = results.snapshot
                let start = monotonicNanoseconds()
                object.price = (object.price + 500).truncatingRemainder(dividingBy: 1_000)
                c.processPendingChanges()
                guard diffs.count == run + 1, results.version == run + 1 else {
                    throw BenchmarkError("query-results: change \(run + 1) delivered \(diffs.count) diffs in all, expected \(run + 1)")
                }
                outcome.delivered.append(Double(deliveredAt - start) / 1e6)
                let after = results.snapshot
                guard before.applying(diffs[run]) == after else { throw BenchmarkError("query-results: the diff does not give the new snapshot") }

                let fetchStart = monotonicNanoseconds()
                let ids = try c.fetchIDs(request)
                outcome.refetch.append(secondsSince(fetchStart) * 1e3)
                guard ids == after.sections.flatMap(\.ids) else { throw BenchmarkError("query-results: the results differ from a fetch") }

                let diffStart = monotonicNanoseconds()
                let again = ResultsDiff(from: before, to: after, updated: [object.objectID])
                outcome.diff.append(secondsSince(diffStart) * 1e3)
                guard again.movedRows == diffs[run].movedRows else { throw BenchmarkError("query-results: the diff differs when made again") }
            }
            outcome.shape = shape(diffs.last!)
            return outcome
        }
        let plain = ObjectContext(coordinator: coordinator, executor: .privateQueue("benchmark.plain"), name: "plain")
        outcome.plain = try await plain.perform { c in
            let objects = try c.fetch(request).map { $0 as! QueryItem }
            for object in objects { _ = object.price }
            var times: [Double] = []
            for run in 0..<runs {
                let object = objects[(run * 389) % objects.count]
                let start = monotonicNanoseconds()
                object.price = (object.price + 500).truncatingRemainder(dividingBy: 1_000)
                c.processPendingChanges()
                times.append(secondsSince(start) * 1e3)
            }
            return times
        }
        return outcome
    }

    struct MergeOutcome: Sendable {
        var wall: [Double] = []
        var delivered: [Double] = []
        var merge: [Double] = []
        var save: [Double] = []
        var shape = ""
    }

    /// For each round, a fresh context with the results loaded merges another context's
    /// save of `saved` changed items, the results' among them.
    static func merges(_ coordinator: Coordinator, log: ContextEventLog, rows: Int, saved: Int, rounds: Int) async throws -> MergeOutcome {
        let request = try self.request
        let changed = (0..<saved).map { objectID(itemID: (first + $0) % rows) }
        let writer = ObjectContext(coordinator: coordinator, executor: .privateQueue("benchmark.writer"), name: "writer")
        var outcome = MergeOutcome()
        for round in 0..<rounds {
            let reader = ObjectContext(coordinator: coordinator, executor: .privateQueue("benchmark.reader"), name: "reader")
            let result = try await reader.perform { c -> (wall: Double, delivered: Double, merge: Double, save: Double, shape: String) in
                let results = try c.fetchedResults(QueryItem.self, request: request)
                for object in results.objects { _ = object.price }
                var deliveredAt: UInt64 = 0
                var diffs: [ResultsDiff] = []
                results.onChange = { diff in
                    deliveredAt = monotonicNanoseconds()
                    diffs.append(diff)
                }
                let before = results.snapshot

                var saves = writer.didSave().makeAsyncIterator()
                await writer.perform { w in
                    for (k, id) in changed.enumerated() {
                        w.object(with: id, as: QueryItem.self).price = Double((k * 7_919 + round * 104_729) % 100_000) / 100
                    }
                }
                let saveStart = monotonicNanoseconds()
                try await writer.save()
                let saveSeconds = secondsSince(saveStart)
                guard let save = await saves.next() else { throw BenchmarkError("query-results: the writer's did-save stream ended") }
                guard save.updated.count == saved else {
                    throw BenchmarkError("query-results: the save updated \(save.updated.count) objects, expected \(saved)")
                }

                log.removeAll()
                let start = monotonicNanoseconds()
                c.merge(save)
                let wall = secondsSince(start)
                guard diffs.count == 1, results.version == 1 else {
                    throw BenchmarkError("query-results: the merge delivered \(diffs.count) diffs, expected 1")
                }
                guard before.applying(diffs[0]) == results.snapshot, try c.fetchIDs(request) == results.snapshot.sections.flatMap(\.ids) else {
                    throw BenchmarkError("query-results: after the merge, the results differ from a fetch")
                }
                let events = log.events(.merge, context: "reader")
                guard events.count == 1 else { throw BenchmarkError("query-results: the observer saw \(events.count) merges, expected 1") }
                return (wall * 1e3, Double(deliveredAt - start) / 1e6, events[0].duration.seconds * 1e3, saveSeconds * 1e3, shape(diffs[0]))
            }
            outcome.wall.append(result.wall)
            outcome.delivered.append(result.delivered)
            outcome.merge.append(result.merge)
            outcome.save.append(result.save)
            outcome.shape = result.shape
        }
        return outcome
    }

    static func shape(_ diff: ResultsDiff) -> String {
        "\(diff.movedRows.count) moved, \(diff.updatedRows.count) updated, \(diff.insertedRows.count) inserted, \(diff.deletedRows.count) deleted"
    }
}
