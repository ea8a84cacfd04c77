import Foundation

/// SQLite's figures for the same queries on the same rows, from `sqlite_compare.py` (next
/// to this file) run with `/usr/bin/env python3`: what to run goes to its standard input as
/// JSON, its timings come back on its standard output. See the script for what it does.
enum SQLiteComparison {
    /// One query as SQL.
    struct Query: Codable {
        var name: String
        var sql: String
        /// `"fetch"` (every column of every row) or `"count"` (one value).
        var kind: String
        /// Whether the order of the rows is part of the answer (sorted queries).
        var ordered: Bool
    }

    struct Spec: Codable {
        var seed: UInt64
        var sizes: [Int]
        var runs: Int
        /// Queries faster than this are repeated within a run.
        var targetSeconds: Double
        var queries: [Query]
    }

    /// One query's figures in one configuration.
    struct Timing: Codable {
        var runsMs: [Double]
        var repetitions: Int
        /// Rows fetched, or the value counted.
        var count: Int
        /// The sum of the fetched rows' itemIDs.
        var checksum: Int
        /// The itemIDs of the first 50 rows of an ordered query, in order.
        var first: [Int]
    }

    struct SizeResult: Codable {
        var rows: Int
        var loadSeconds: Double
        var indexSeconds: Double
        /// `"no index"` and `"indexed"`, each by query name.
        var configs: [String: [String: Timing]]
    }

    struct Result: Codable {
        var sqliteVersion: String
        var pythonVersion: String
        var database: String
        var sizes: [SizeResult]
    }

    /// The two configurations every query is timed in.
    static let noIndex = "no index"
    static let indexed = "indexed"

    static var scriptPath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("sqlite_compare.py").path
    }

    /// Runs the script and returns what it measured.
    static func run(_ spec: Spec) throws -> Result {
        try runPythonScript(scriptPath, input: spec)
    }
}
