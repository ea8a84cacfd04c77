import Foundation
import Strata

/// What the command line chose for a scenario.
struct ScenarioOptions: Sendable {
    var objects: Int?
    var saveEvery: Int?
    var runs = 3
    var seed: UInt64 = 1
    /// The stacks chosen with `--stacks` (`nil`: the scenario's own choice, usually all).
    var stacks: [StackPreset]?
}

/// A line chart for the HTML report: one series per configuration.
struct LineChart: Sendable {
    struct Series: Sendable {
        var name: String
        var points: [(x: Double, y: Double)]
    }

    var title: String
    var xLabel: String
    var yLabel: String
    var series: [Series]
    /// A horizontal line worth drawing (a target or a frame), with its label.
    var guide: (y: Double, label: String)?
}

/// One scenario's outcome: the rows of its table, its JSON results, and a one-line verdict.
struct ScenarioReport {
    var scenario: String
    var objects: Int
    var saveEvery: Int?
    var runs: Int
    /// One JSON object per measured configuration (FORMATS: `results`).
    var results: [JSON]
    /// The table: a header row, then one row per configuration.
    var table: [[String]]
    /// One line a reader can act on: what was measured against what target.
    var verdict: String
    /// Charts over time for the HTML report (the table's columns are charted as bars anyway).
    var charts: [LineChart] = []

    var json: JSON {
        var pairs: [(key: String, value: JSON)] = [("scenario", .string(scenario)), ("objects", .int(Int64(objects)))]
        if let saveEvery { pairs.append(("saveEvery", .int(Int64(saveEvery)))) }
        pairs.append(("runs", .int(Int64(runs))))
        pairs.append(("results", .array(results)))
        pairs.append(("verdict", .string(verdict)))
        return .object(pairs)
    }
}

/// A scenario the sandbox can run.
protocol Scenario: Sendable {
    var name: String { get }
    var summary: String { get }
    /// The command-line options it has no use for (`--stacks`, `--save-every`, `--seed`).
    var ignoredOptions: [String] { get }
    /// The fewest objects it can measure what it measures with (`--objects` below this is
    /// raised to it, and the sandbox says so); `nil` for no minimum.
    var minimumObjects: Int? { get }
    func run(_ options: ScenarioOptions, progress: @Sendable (String) -> Void) async throws -> ScenarioReport
}

extension Scenario {
    var ignoredOptions: [String] { [] }
    var minimumObjects: Int? { nil }

    /// `--objects`, or `defaultObjects`, raised to ``minimumObjects``.
    func objectCount(_ options: ScenarioOptions, default defaultObjects: Int) -> Int {
        max(options.objects ?? defaultObjects, minimumObjects ?? 0)
    }
}

/// Formats a number for tables: three significant digits, no exponent.
func format(_ value: Double, digits: Int = 3) -> String {
    if value == 0 { return "0" }
    let magnitude = Int(floor(log10(abs(value))))
    let decimals = max(0, digits - 1 - magnitude)
    return String(format: "%.\(decimals)f", value)
}

/// A JSON number rounded to `decimals` places, but to no fewer significant digits than
/// ``format(_:digits:)`` prints in the table (three), so that the two agree.
func number(_ value: Double, decimals: Int = 4) -> JSON {
    let significant = value == 0 || !value.isFinite ? 0 : 2 - Int(floor(log10(abs(value))))
    let scale = pow(10, Double(max(decimals, significant)))
    return .double((value * scale).rounded() / scale)
}
