import Foundation
import Strata

/// Store queries against SQLite: `Generation.fetch(_:)` and `Generation.count(for:)` on the
/// store's current generation, over 100,000 and 1,000,000 items (``QueryData``), and the
/// same queries in SQLite (`sqlite_compare.py`, an in-memory database holding the same rows)
/// without and with an index on the columns they use.
///
/// The queries: predicates Strata answers by scanning every row (`tag` and `price` have no
/// index), predicates it answers from an ordered index (`category` is indexed, `itemID`
/// unique), sorted fetches with a limit of 50 (by an indexed and by an unindexed key), and
/// counts. A few fetches also go through a root context's `fetchIDs(_:)`. Each query runs
/// once untimed (warm-up; its answer is checked against SQLite's), then `runs` timed runs;
/// a query faster than 2 ms is repeated within a run, and the run is the mean. The
/// `Strata ÷ SQLite` figures divide the medians, against SQLite configured like Strata
/// (an index on the column exactly when Strata has one): above 1, Strata is slower.
enum QueryFetch {
    static let name = "query-fetch"

    /// Runs faster than this repeat the query within the run.
    static let targetSeconds = 0.002

    struct Case {
        /// How the figure names the query.
        var label: String
        var isCount: Bool
        var request: FetchRequest
        var sql: String
        /// Whether Strata answers from an index (the SQLite configuration it is compared with).
        var strataUsesIndex: Bool
        /// Also timed through a root context's `fetchIDs(_:)`.
        var viaContext = false
        var ordered: Bool { request.limit != nil }
    }

    /// What a query answered: enough to check that both sides ran the same query on the same rows.
    struct Answer: Equatable {
        var count: Int
        var checksum: Int
        var first: [Int]
    }

    /// The queries (the same at every size: the itemID range is within the smallest).
    static func cases() throws -> [Case] {
        let low = 5_000
        let range = "itemID >= \(low) AND itemID < \(low + 1_000)"
        func predicate(_ format: String) throws -> ObjectPredicate {
            do {
                return try ObjectPredicate(format: format)
            } catch {
                throw BenchmarkError("query-fetch: the predicate \(format) does not parse: \(error)")
            }
        }
        func fetch(_ label: String, _ format: String?, where sqlWhere: String?, sort: [SortKey]? = nil, orderBy: String? = nil,
                   indexed: Bool, viaContext: Bool = false) throws -> Case {
            let limit = sort == nil ? nil : 50
            var sql = "SELECT * FROM item"
            if let sqlWhere { sql += " WHERE \(sqlWhere)" }
            if let orderBy { sql += " ORDER BY \(orderBy)" }
            if let limit { sql += " LIMIT \(limit)" }
            return Case(label: "fetch " + label, isCount: false,
                        request: FetchRequest(entity: "Item", predicate: try format.map(predicate), sortBy: sort, limit: limit),
                        sql: sql, strataUsesIndex: indexed, viaContext: viaContext)
        }
        func count(_ format: String?, where sqlWhere: String?, indexed: Bool) throws -> Case {
            Case(label: "count " + (format ?? "all"), isCount: true,
                 request: FetchRequest(entity: "Item", predicate: try format.map(predicate)),
                 sql: "SELECT count(*) FROM item" + (sqlWhere.map { " WHERE \($0)" } ?? ""), strataUsesIndex: indexed)
        }
        return [
            // 1. Unindexed predicates: a scan of every row.
            try fetch(#"tag == "t123" [scan]"#, #"tag == "t123""#, where: "tag = 't123'", indexed: false, viaContext: true),
            try fetch("price > 900.5 [scan]", "price > 900.5", where: "price > 900.5", indexed: false),
            try count(#"tag == "t123""#, where: "tag = 't123'", indexed: false),
            try count("price > 900.5", where: "price > 900.5", indexed: false),
            // 2. Indexed equality and ranges.
            try fetch("category == 17 [index]", "category == 17", where: "category = 17", indexed: true, viaContext: true),
            try fetch("category BETWEEN {10, 12} [index]", "category BETWEEN {10, 12}", where: "category BETWEEN 10 AND 12", indexed: true),
            try fetch(range + " [unique index]", range, where: "itemID >= \(low) AND itemID < \(low + 1_000)", indexed: true),
            try fetch("itemID BETWEEN {\(low), \(low + 999)} [unique index]", "itemID BETWEEN {\(low), \(low + 999)}",
                      where: "itemID BETWEEN \(low) AND \(low + 999)", indexed: true, viaContext: true),
            // 3. Sorted, limit 50.
            try fetch("sorted by itemID desc, limit 50 [index walk]", nil, where: nil, sort: [SortKey("itemID", ascending: false)],
                      orderBy: "itemID DESC", indexed: true),
            try fetch("sorted by price, limit 50 [scan + sort]", nil, where: nil, sort: [SortKey("price")], orderBy: "price, id",
                      indexed: false),
            try fetch("category == 17 sorted by price, limit 50 [index]", "category == 17", where: "category = 17",
                      sort: [SortKey("price")], orderBy: "price, id", indexed: true),
            // 4. Counts.
            try count(nil, where: nil, indexed: false),
            try count("category == 17", where: "category = 17", indexed: true),
        ]
    }

    static func run(_ context: BenchmarkContext) async throws -> GroupReport {
        let sizes = context.quick ? [10_000] : [100_000, 1_000_000]
        let runs = context.quick ? 3 : 7
        var report = GroupReport(name: name, title: "Store queries (Generation.fetch / count) against SQLite on the same rows")
        report.parameters = [
            "items": sizes.map(grouped).joined(separator: "/"), "runs": String(runs),
            "load": "\(grouped(QueryData.batch)) rows per commit, durability none",
            "indexes": "Strata: itemID (unique), category; SQLite: none, then itemID (unique), category, price, tag",
        ]
        var answers: [Int: [String: Answer]] = [:]
        var strata: [Int: [String: [Double]]] = [:]
        var throughContext: [Int: [String: [Double]]] = [:]
        var loads: [Int: Double] = [:]
        let cases = try self.cases()
        for rows in sizes {
            let path = context.path("queries")
            let (store, seconds) = try await QueryData.load(path, count: rows)
            loads[rows] = seconds
            let generation = store.currentGeneration
            for query in cases {
                let (answer, times) = try measure(query, runs: runs, in: generation)
                answers[rows, default: [:]][query.label] = answer
                strata[rows, default: [:]][query.label] = times
            }
            let coordinator = Coordinator(store: store, modelClasses: [QueryItem.self])
            let reader = ObjectContext(coordinator: coordinator, executor: .privateQueue("benchmark.query"), name: "query")
            for query in cases where query.viaContext {
                let request = query.request
                let expected = answers[rows]![query.label]!.count
                let times = try await reader.perform { c in
                    let ids = try c.fetchIDs(request)
                    guard ids.count == expected else {
                        throw BenchmarkError("query-fetch: the context fetched \(ids.count) objects for \(request), the store \(expected)")
                    }
                    return try repeatedTimings(runs: runs) { _ = try c.fetchIDs(request) }
                }
                throughContext[rows, default: [:]][query.label] = times
            }
            await store.close()
            removeItem(path)
        }

        // SQLite, once Strata's stores are gone (its own data, in its own process).
        let spec = SQLiteComparison.Spec(
            seed: QueryData.seed, sizes: sizes, runs: runs, targetSeconds: targetSeconds,
            queries: cases.map { SQLiteComparison.Query(name: $0.label, sql: $0.sql, kind: $0.isCount ? "count" : "fetch", ordered: $0.ordered) })
        var sqlite: SQLiteComparison.Result?
        do {
            sqlite = try SQLiteComparison.run(spec)
        } catch {
            report.notes.append("the SQLite comparison did not run: \(error)")
        }
        if let sqlite {
            report.parameters["sqlite"] = "SQLite \(sqlite.sqliteVersion) (\(sqlite.database), Python \(sqlite.pythonVersion) sqlite3)"
        }

        for rows in sizes {
            let prefix = "[\(grouped(rows))]"
            let sizeResult = sqlite?.sizes.first { $0.rows == rows }
            report.add("\(prefix) load into Strata (\(rows / QueryData.batch) commits)", "s", runs: [loads[rows]!])
            if let sizeResult {
                report.add("\(prefix) load into SQLite (one transaction)", "s", runs: [sizeResult.loadSeconds])
                report.add("\(prefix) SQLite CREATE INDEX ×4 + ANALYZE", "s", runs: [sizeResult.indexSeconds])
            }
            for query in cases {
                let name = "\(prefix) \(query.label)"
                let mine = strata[rows]![query.label]!
                report.add("\(name): Strata", "ms", runs: mine)
                if let viaContext = throughContext[rows]?[query.label] {
                    report.add("\(name): Strata, root context fetchIDs", "ms", runs: viaContext)
                }
                guard let sizeResult else { continue }
                var medians: [String: Double] = [:]
                for config in [SQLiteComparison.noIndex, SQLiteComparison.indexed] {
                    guard let timing = sizeResult.configs[config]?[query.label] else {
                        throw BenchmarkError("query-fetch: SQLite gave no figure for \(query.label) (\(config))")
                    }
                    let theirs = Answer(count: timing.count, checksum: timing.checksum, first: timing.first)
                    guard theirs == answers[rows]![query.label]! else {
                        throw BenchmarkError("query-fetch: SQLite (\(config)) answered \(theirs) to \(query.sql), Strata \(answers[rows]![query.label]!)")
                    }
                    report.add("\(name): SQLite, \(config)", "ms", runs: timing.runsMs)
                    medians[config] = median(timing.runsMs)
                }
                let like = query.strataUsesIndex ? SQLiteComparison.indexed : SQLiteComparison.noIndex
                report.add("\(name): Strata ÷ SQLite \(like)", "×", runs: [median(mine) / medians[like]!])
            }
        }
        report.notes.append("[scan]: Strata reads every row; [index]: an ordered index gives the candidates; [index walk]: "
                            + "the index is walked in order until the limit is reached")
        report.notes.append("two range conditions on one indexed key (itemID >= a AND itemID < b) give the index both ends, "
                            + "as BETWEEN does")
        report.notes.append("count all: Strata keeps a count per entity, SQLite counts the table's rows — not the same work")
        if sqlite != nil {
            report.notes.append("Strata ÷ SQLite divides the medians, against SQLite with an index on the column exactly when Strata "
                                + "has one (above 1: Strata is slower); SQLite fetches are fetchall() of every column into Python "
                                + "tuples (Python's share is large where many rows come back: Queries/sqlite_fetch.c is the same "
                                + "in C), Strata's return StoredObjects sharing the decoded rows")
        }
        report.notes.append("queries under \(formatted(targetSeconds * 1e3)) ms repeat within a run, the run being their mean"
                            + (sqlite == nil ? "" : "; every answer (row count, itemID sum, order of sorted ones) was the same "
                               + "in Strata and in SQLite"))
        return report
    }

    /// Times one query on a generation, after one untimed run whose answer it returns.
    static func measure(_ query: Case, runs: Int, in generation: Generation) throws -> (Answer, [Double]) {
        let request = query.request
        if query.isCount {
            let count = try generation.count(for: request)
            return (Answer(count: count, checksum: 0, first: []), try repeatedTimings(runs: runs) { _ = try generation.count(for: request) })
        }
        let objects = try generation.fetch(request)
        let ids = objects.map { object -> Int in
            guard case .int(let id) = object.values[0] else { return -1 }
            return Int(id)
        }
        let answer = Answer(count: ids.count, checksum: ids.reduce(0, +), first: query.ordered ? Array(ids.prefix(50)) : [])
        return (answer, try repeatedTimings(runs: runs) { _ = try generation.fetch(request) })
    }

    /// `runs` timings of `body` in milliseconds; a body faster than ``targetSeconds`` (timed
    /// once first) repeats within each run and the run is the mean.
    static func repeatedTimings(runs: Int, _ body: () throws -> Void) throws -> [Double] {
        let first = monotonicNanoseconds()
        try body()
        let single = secondsSince(first)
        let repetitions = max(1, min(1_000, Int(targetSeconds / max(single, 1e-9))))
        var times: [Double] = []
        for _ in 0..<runs {
            let start = monotonicNanoseconds()
            for _ in 0..<repetitions { try body() }
            times.append(secondsSince(start) * 1e3 / Double(repetitions))
        }
        return times
    }
}

/// `1234567` as `1,234,567`.
func grouped(_ number: Int) -> String {
    var digits = String(number.magnitude)
    var parts: [String] = []
    while digits.count > 3 {
        parts.insert(String(digits.suffix(3)), at: 0)
        digits.removeLast(3)
    }
    parts.insert(digits, at: 0)
    return (number < 0 ? "-" : "") + parts.joined(separator: ",")
}
