import Foundation
import Strata

// The sandbox: runs deterministic workloads through every stack preset and reports what
// they cost, as a table on stdout (progress on stderr), as JSON with --json and as an HTML
// page with charts with --html. `sandbox list` names the scenarios and stacks.

let scenarios: [any Scenario] = [
    ShootoutScenario(), EditorCancelScenario(), EditDuringImportScenario(), ConcurrentWritersScenario(), MergeScalingScenario(),
    FanoutScenario(), DurabilityScenario(), ColdOpenScenario(),
]
let usage = "usage: sandbox [list | all | SCENARIO] [--stacks all|name,name] [--objects N] [--save-every N] [--runs N] [--seed N] [--json FILE] [--html FILE]"

func fail(_ message: String, status: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("sandbox: \(message)\n".utf8))
    exit(status)
}

func printLine(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }

/// The command line, parsed and run.
@MainActor
enum SandboxMain {
    static func run() async {
        var arguments = Array(CommandLine.arguments.dropFirst())

        if arguments.first == "--probe-decode", arguments.count == 2 {
            do {
                var target = DiscardingTarget()
                var start = Measure.now()
                let journal = try Journal.open(at: arguments[1], configuration: .init(readOnly: true), replayingInto: &target)
                printLine("decode only: \(Measure.seconds(since: start)) s, \(target.rows) rows")
                await journal.close()
                start = Measure.now()
                let store = try Store.open(at: arguments[1], configuration: .init(readOnly: true))
                printLine("store open: \(Measure.seconds(since: start)) s, \(store.currentGeneration.totalCount) objects")
                await store.close()
            } catch { fail("\(error)", status: 1) }
            exit(0)
        }
        if arguments.first == ShootoutScenario.childFlag {
            await ShootoutScenario.runChild(Array(arguments.dropFirst()))
        }
        if arguments.first == "--probe-commit", arguments.count == 3 || arguments.count == 4, let objects = Int(arguments[1]),
           let durability = Durability(rawValue: arguments[2]), arguments.count == 3 || arguments[3] == "awaited" {
            // `sandbox --probe-commit OBJECTS full|relaxed|none [awaited]`: `awaited` commits
            // each change set with its own awaited `commit(_:)` instead of `commit(inOrder:)`.
            do {
                try await ColdOpenScenario.probeCommit(objects: objects, durability: durability, inOrder: arguments.count == 3)
            } catch {
                fail("\(error)", status: 1)
            }
        }
        if arguments.first == "--probe-durability", arguments.count == 4 || arguments.count == 5, let writers = Int(arguments[1]),
           let durability = Durability(rawValue: arguments[2]), let saves = Int(arguments[3]), writers > 0, saves > 0,
           arguments.count == 4 || arguments[4] == "store" || arguments[4] == "context" {
            // `sandbox --probe-durability WRITERS full|relaxed|none SAVES [context|store]`: one
            // configuration of the durability scenario (context saves unless `store`), for
            // profiling: saves per second and processor time per save.
            do {
                let path: DurabilityScenario.Saves = arguments.count == 5 && arguments[4] == "store" ? .store : .context
                let outcome = try await DurabilityScenario().measure(durability: durability, writers: writers, saves: saves, through: path)
                printLine("\(writers) writers, \(durability.rawValue): \(Int(outcome.rate)) saves/s, \(Int(outcome.processorPerSave * 1e6)) µs of processor per save, \(outcome.syncsPerSave) fsyncs per save")
            } catch { fail("\(error)", status: 1) }
            exit(0)
        }
        if arguments.first == "--probe-open", arguments.count == 2 {
            do { try ColdOpenScenario.probeOpen(arguments[1]) } catch { fail("\(error)", status: 1) }
            exit(0)
        }

        // `--help` anywhere (`sandbox shootout --help` too): no option takes a value that starts with `-`.
        if arguments.contains("--help") || arguments.contains("-h") || arguments.first == "help" {
            printLine(usage)
            if let scenario = scenarios.first(where: { $0.name == arguments.first }) { printLine("\(scenario.name): \(scenario.summary)") }
            printLine("With no scenario: the shootout. `sandbox list` names the scenarios and the stacks;")
            printLine("docs/PERFORMANCE.md gives the figures of each on the project's machine.")
            exit(0)
        }
        if arguments.first == "list" {
            guard arguments.count == 1 else { fail("list takes no arguments, not '\(arguments[1])'") }
            for scenario in scenarios { printLine("\(scenario.name.padding(toLength: 20, withPad: " ", startingAt: 0)) \(scenario.summary)") }
            printLine("all                  every scenario above, one after another")
            for stack in StackName.all { printLine("stack \(stack.name.padding(toLength: 22, withPad: " ", startingAt: 0)) \(stack.summary)") }
            exit(0)
        }

        var chosen: [any Scenario] = []
        var options = ScenarioOptions()
        var jsonPath: String?
        var htmlPath: String?
        if let first = arguments.first, !first.hasPrefix("--") {
            if first == "all" {
                chosen = scenarios
            } else if let scenario = scenarios.first(where: { $0.name == first }) {
                chosen = [scenario]
            } else {
                fail("unknown scenario '\(first)'; `sandbox list` shows the scenarios")
            }
            arguments.removeFirst()
        }
        var index = 0
        var given: [String] = []
        func value() -> String {
            index += 1
            guard index < arguments.count else { fail("\(arguments[index - 1]) needs a value") }
            return arguments[index]
        }
        // An output file: `-` would be a file of that name (standard output has the table).
        func outputFile() -> String {
            let option = arguments[index]
            let path = value()
            if path == "-" { fail("\(option) writes a file; give its name, not - (the table goes to standard output)") }
            return path
        }
        func integer() -> Int {
            let text = value()
            guard let n = Int(text), n > 0 else { fail("\(arguments[index - 1]) needs a positive whole number, not '\(text)'") }
            return n
        }
        func seed() -> UInt64 {
            let text = value()
            guard let n = UInt64(text) else { fail("--seed needs a whole number from 0 to \(UInt64.max), not '\(text)'") }
            return n
        }
        while index < arguments.count {
            if !given.contains(arguments[index]) { given.append(arguments[index]) }
            switch arguments[index] {
            case "--objects": options.objects = integer()
            case "--save-every": options.saveEvery = integer()
            case "--runs": options.runs = integer()
            case "--seed": options.seed = seed()
            case "--json": jsonPath = outputFile()
            case "--stacks":
                switch StackName.parse(value()) {
                case .success(let presets): options.stacks = presets
                case .failure(let error): fail("--stacks: \(error)")
                }
            case "--html": htmlPath = outputFile()
            default: fail("unknown option \(arguments[index]); \(usage)")
            }
            index += 1
        }

        // A scenario that cannot measure at the size asked for runs at its minimum: say so.
        if let asked = options.objects {
            for scenario in chosen {
                if let minimum = scenario.minimumObjects, asked < minimum {
                    FileHandle.standardError.write(Data("sandbox: \(scenario.name) needs at least \(minimum) objects; it runs with \(minimum), not \(asked)\n".utf8))
                }
            }
        }

        // An output file that cannot be written is refused before the scenarios run, not
        // after (a cold-open run takes minutes, and its figures would be lost).
        for path in [jsonPath, htmlPath].compactMap({ $0 }) {
            if let problem = unwritable(path) { fail("cannot write \(path): \(problem)", status: 1) }
        }

        // An option the named scenario has no use for would change nothing: say so.
        if chosen.count == 1 {
            let ignored = given.filter(chosen[0].ignoredOptions.contains)
            if !ignored.isEmpty {
                FileHandle.standardError.write(Data("sandbox: \(chosen[0].name) does not use \(ignored.joined(separator: ", ")); ignored\n".utf8))
            }
        }

        // With no scenario named: the shootout, the default comparison.
        let plan: [(any Scenario, ScenarioOptions)] = (chosen.isEmpty ? [ShootoutScenario()] : chosen).map { ($0, options) }

        var reports: [ScenarioReport] = []
        // The reports so far, written as asked after every scenario, so that the figures of
        // those that finished are kept when a later one fails or the run is stopped. One
        // scenario's report is an object; several scenarios' (`all`) an array of them.
        func writeReports() {
            if let jsonPath {
                let json: JSON = reports.count == 1 && plan.count == 1 ? reports[0].json : .array(reports.map(\.json))
                do {
                    try json.prettyText.write(toFile: jsonPath, atomically: true, encoding: .utf8)
                } catch {
                    fail("cannot write \(jsonPath): \(error)", status: 1)
                }
            }
            if let htmlPath {
                do {
                    try HTMLReport(reports).text.write(toFile: htmlPath, atomically: true, encoding: .utf8)
                } catch {
                    fail("cannot write \(htmlPath): \(error)", status: 1)
                }
            }
        }
        for (scenario, scenarioOptions) in plan {
            do {
                let report = try await scenario.run(scenarioOptions) { FileHandle.standardError.write(Data("… \($0)\n".utf8)) }
                reports.append(report)
                printLine("\n\(report.scenario)")
                for line in columnsText(report.table) { printLine("  " + line) }
                printLine("  → \(report.verdict)")
                writeReports()
            } catch {
                if !reports.isEmpty && (jsonPath != nil || htmlPath != nil) {
                    FileHandle.standardError.write(Data("sandbox: the reports of \(reports.map(\.scenario).joined(separator: ", ")) are written\n".utf8))
                }
                fail("\(scenario.name): \(error)", status: 1)
            }
        }
    }
}

/// Why `path` cannot be written as an output file (`nil` when it can).
func unwritable(_ path: String) -> String? {
    let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue { return "it is a directory" }
    guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
        return "there is no directory \(directory); create it first"
    }
    guard FileManager.default.isWritableFile(atPath: directory) else { return "the directory \(directory) is not writable" }
    return nil
}

func columnsText(_ rows: [[String]]) -> [String] {
    let widths = (0..<(rows.map(\.count).max() ?? 0)).map { c in rows.map { c < $0.count ? $0[c].count : 0 }.max() ?? 0 }
    return rows.map { row in
        row.enumerated().map { c, cell in c == 0 ? cell.padding(toLength: widths[c], withPad: " ", startingAt: 0)
            : String(repeating: " ", count: widths[c] - cell.count) + cell }.joined(separator: "  ")
    }
}

await SandboxMain.run()
