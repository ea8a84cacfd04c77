import Foundation
import Strata

/// Each shootout run in a process of its own: the sandbox starts itself with
/// `--shootout-run STACK OBJECTS SAVE_EVERY SEED`, which measures one import through one
/// stack and writes the run as JSON on stdout. So no stack's run inherits another's heap
/// (peak resident memory depended on the stacks measured before it in the same process),
/// threads, or merge subscriptions left behind.
extension ShootoutScenario {
    static let childFlag = "--shootout-run"

    /// Measures one run in a new process of this executable.
    static func measureInOwnProcess(_ preset: StackPreset, objects: Int, saveEvery: Int, seed: UInt64) async throws -> Run {
        let arguments = [childFlag, StackName.name(of: preset), String(objects), String(saveEvery), String(seed)]
        let output = try await runOwnExecutable(arguments)
        do {
            return try Run(json: JSON.parse(output))
        } catch {
            throw ScenarioError("the \(StackName.name(of: preset)) run's process wrote no run: \(error)")
        }
    }

    /// The child's side: measures the run the arguments name and prints it. Never returns.
    @MainActor
    static func runChild(_ arguments: [String]) async -> Never {
        guard arguments.count == 4, case .success(let presets) = StackName.parse(arguments[0]), presets.count == 1,
              let objects = Int(arguments[1]), let saveEvery = Int(arguments[2]), let seed = UInt64(arguments[3])
        else { fail("usage: sandbox \(childFlag) STACK OBJECTS SAVE_EVERY SEED") }
        do {
            let run = try await measure(presets[0], feed: SongbookImport(objects: objects, saveEvery: saveEvery, seed: seed))
            printLine(run.json.text)
            exit(0)
        } catch {
            fail("\(error)", status: 1)
        }
    }

    /// Runs this executable with `arguments` on a thread of its own (the wait blocks) and
    /// returns what it wrote on stdout; its stderr is this process's.
    private static func runOwnExecutable(_ arguments: [String]) async throws -> Data {
        #if os(Linux)
        let executable = URL(fileURLWithPath: "/proc/self/exe")
        #else
        let executable = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        #endif
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, any Error>) in
            Thread {
                do {
                    let process = Process()
                    process.executableURL = executable
                    process.arguments = arguments
                    let output = Pipe()
                    process.standardOutput = output
                    try process.run()
                    let data = output.fileHandleForReading.readDataToEndOfFile()
                    process.waitUntilExit()
                    guard process.terminationReason == .exit, process.terminationStatus == 0 else {
                        throw ScenarioError("`sandbox \(arguments.joined(separator: " "))` failed (status \(process.terminationStatus))")
                    }
                    continuation.resume(returning: data)
                } catch {
                    continuation.resume(throwing: error)
                }
            }.start()
        }
    }
}

extension ShootoutScenario.Run {
    /// The run as the child process writes it.
    var json: JSON {
        func numbers(_ values: [Double]) -> JSON { .array(values.map { .double($0) }) }
        var pairs: [(key: String, value: JSON)] = [
            ("importSeconds", .double(importSeconds)), ("busySeconds", .double(busySeconds)), ("wallSeconds", .double(wallSeconds)),
            ("longestMs", .double(longestMs)), ("longestOperation", .string(longestOperation)), ("lateness", numbers(lateness)),
            ("droppedFrames", .int(Int64(droppedFrames))),
            ("latenessSeries", .array(latenessSeries.map { .array([.double($0.x), .double($0.y)]) })),
            ("visibleAfter", numbers(visibleAfter)), ("durableAfter", numbers(durableAfter)), ("peakMegabytes", .double(peakMegabytes)),
            ("busyByOperation", .object(busyByOperation.map { ($0.key.rawValue, .double($0.value)) }.sorted { $0.0 < $1.0 })),
        ]
        if let hostStealPercent { pairs.append(("hostStealPercent", .double(hostStealPercent))) }
        return .object(pairs)
    }

    /// Reads a run written by ``json``.
    init(json: JSON) throws {
        func double(_ key: String) throws -> Double {
            switch json[key] {
            case .double(let value)?: return value
            case .int(let value)?: return Double(value)
            default: throw ScenarioError("no number \"\(key)\"")
            }
        }
        func doubles(_ value: JSON?) throws -> [Double] {
            guard case .array(let items)? = value else { throw ScenarioError("no list of numbers") }
            return try items.map { item in
                switch item {
                case .double(let number): return number
                case .int(let number): return Double(number)
                default: throw ScenarioError("not a number: \(item.text)")
                }
            }
        }
        guard case .string(let longestOperation)? = json["longestOperation"], case .array(let series)? = json["latenessSeries"],
              case .object(let byOperation)? = json["busyByOperation"]
        else { throw ScenarioError("a run needs longestOperation, latenessSeries and busyByOperation") }
        self.init(
            importSeconds: try double("importSeconds"), busySeconds: try double("busySeconds"), wallSeconds: try double("wallSeconds"),
            longestMs: try double("longestMs"), longestOperation: longestOperation, lateness: try doubles(json["lateness"]),
            droppedFrames: Int(try double("droppedFrames")),
            latenessSeries: try series.map { point in
                let pair = try doubles(point)
                guard pair.count == 2 else { throw ScenarioError("a lateness point is [x, y]") }
                return (pair[0], pair[1])
            },
            visibleAfter: try doubles(json["visibleAfter"]), durableAfter: try doubles(json["durableAfter"]),
            peakMegabytes: try double("peakMegabytes"),
            busyByOperation: Dictionary(uniqueKeysWithValues: try byOperation.map { pair in
                guard let operation = ContextEvent.Operation(rawValue: pair.key), case .double(let value) = pair.value else {
                    throw ScenarioError("unknown operation \(pair.key)")
                }
                return (operation, value)
            }),
            hostStealPercent: json["hostStealPercent"] == nil ? nil : try double("hostStealPercent"))
    }
}
