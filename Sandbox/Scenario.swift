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
    func run(_ options: ScenarioOptions, progress: @Sendable (String) -> Void) async throws -> ScenarioReport
}

extension Scenario {
    var ignoredOptions: [String] { [] }
}

/// Formats a number for tables: three significant digits, no exponent.
func format(_ value: Double, digits: Int = 3) -> String {
    if value == 0 { return "0" }
    let magnitude = Int(floor(log10(abs(value))))
    let decimals = max(0, digits - 1 - magnitude)
    return String(format: "%.\(decimals)f", value)
}

/// A JSON number rounded to a sensible precision.
func number(_ value: Double, decimals: Int = 4) -> JSON {
    let scale = pow(10, Double(decimals))
    return .double((value * scale).rounded() / scale)
}
