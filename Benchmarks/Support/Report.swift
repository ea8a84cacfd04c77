import Foundation

/// One figure a benchmark produced: its value in every run and the median of those.
struct Measurement: Codable {
    var name: String
    var unit: String
    /// The median of `runs`: the figure to quote.
    var median: Double
    var runs: [Double]

    init(_ name: String, _ unit: String, runs: [Double]) {
        self.name = name
        self.unit = unit
        self.runs = runs
        self.median = Distribution(runs).median
    }
}

/// A performance goal and whether the measured median meets it.
struct GoalCheck: Codable {
    var goal: String
    var measured: Double
    var target: Double
    /// `"<="` or `">="`.
    var comparison: String
    var holds: Bool

    init(_ goal: String, measured: Double, atMost target: Double) {
        self.goal = goal
        self.measured = measured
        self.target = target
        comparison = "<="
        holds = measured <= target
    }

    init(_ goal: String, measured: Double, atLeast target: Double) {
        self.goal = goal
        self.measured = measured
        self.target = target
        comparison = ">="
        holds = measured >= target
    }
}

/// What one benchmark group measured.
struct GroupReport: Codable {
    var name: String
    var title: String
    /// Sizes and counts the group used, for the record.
    var parameters: [String: String] = [:]
    var measurements: [Measurement] = []
    var goals: [GoalCheck] = []
    /// Findings that are not single figures (diagnostics, explanations).
    var notes: [String] = []

    init(name: String, title: String) {
        self.name = name
        self.title = title
    }

    mutating func add(_ name: String, _ unit: String, runs: [Double]) {
        measurements.append(Measurement(name, unit, runs: runs))
    }

    func median(_ name: String) -> Double {
        measurements.first { $0.name == name }?.median ?? .nan
    }
}

/// Everything one invocation measured.
struct RunReport: Codable {
    var machine: MachineDescription
    var mode: String
    var directory: String
    var startedAt: String
    var loadAverageBefore: String
    var loadAverageAfter: String
    var groups: [GroupReport] = []
}

// MARK: - Formatting

/// A number with about three significant figures, without exponent notation.
func formatted(_ value: Double) -> String {
    guard value.isFinite else { return "-" }
    let magnitude = abs(value)
    let decimals = magnitude >= 100 ? 0 : magnitude >= 10 ? 1 : magnitude >= 1 ? 2 : magnitude >= 0.1 ? 3 : 4
    return String(format: "%.\(decimals)f", value)
}

func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
    let gap = max(0, width - text.count)
    return right ? String(repeating: " ", count: gap) + text : text + String(repeating: " ", count: gap)
}

/// The group as a table: figure, median, unit, and the range over runs.
func table(_ group: GroupReport) -> String {
    var lines = ["", "== \(group.title) [\(group.name)]"]
    if !group.parameters.isEmpty {
        lines.append("   " + group.parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "  "))
    }
    let nameWidth = max(40, (group.measurements.map(\.name.count).max() ?? 0) + 2)
    lines.append("   " + pad("figure", nameWidth) + pad("median", 12, right: true) + "  " + pad("unit", 11)
                 + pad("runs", 5, right: true) + "  min … max")
    for m in group.measurements {
        let d = Distribution(m.runs)
        let range = m.runs.count > 1 ? "\(formatted(d.min)) … \(formatted(d.max))" : ""
        lines.append("   " + pad(m.name, nameWidth) + pad(formatted(m.median), 12, right: true) + "  " + pad(m.unit, 11)
                     + pad(String(m.runs.count), 5, right: true) + "  " + range)
    }
    for goal in group.goals {
        lines.append("   goal: \(goal.goal): measured \(formatted(goal.measured)) \(goal.comparison) \(formatted(goal.target)) — "
                     + (goal.holds ? "HOLDS" : "MISSED"))
    }
    for note in group.notes { lines.append("   note: \(note)") }
    return lines.joined(separator: "\n")
}

func writeJSON(_ report: RunReport, to path: String) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
    try encoder.encode(report).write(to: URL(fileURLWithPath: path))
}
