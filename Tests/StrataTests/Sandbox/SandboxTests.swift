import Foundation
import Testing

/// The `sandbox` executable end to end, at sizes that run in seconds: its command line, the
/// JSON every outside script reads (FORMATS.md §4), the self-contained HTML page, and the
/// invariants its scenarios prove (nothing leaked, nothing lost).
@Suite(.serialized) struct SandboxTests {
    static let executable: URL? = BuiltExecutable.url(named: "sandbox")

    /// Runs the sandbox with a hard timeout; returns its exit status and standard output.
    /// The waiting happens on a thread of its own, never on one of the concurrency pool's
    /// few threads, which tests running alongside need.
    func run(_ arguments: [String], timeout: Double = 120) async throws -> (status: Int32, output: String, errors: String) {
        let executable = try #require(Self.executable, "the sandbox executable is built next to the tests")
        let outcome = try await onOwnThread { try Self.runBlocking(executable, arguments, timeout: timeout) }
        if outcome.timedOut {
            Issue.record("sandbox \(arguments.joined(separator: " ")) ran longer than \(timeout) s")
        }
        return (outcome.status, outcome.output, outcome.errors)
    }

    private static func runBlocking(_ executable: URL, _ arguments: [String], timeout: Double) throws
        -> (status: Int32, output: String, errors: String, timedOut: Bool)
    {
        let child = try ChildProcess(arguments, executable: executable, readsErrors: true)
        // Read while it runs, so a full pipe never blocks it.
        let read = child.remainingOutput(until: .now + .seconds(timeout))
        if read.timedOut { child.sendKill() }
        let exit = try child.waitForExit(within: .seconds(read.timedOut ? 10 : timeout))
        return (exit.status, String(decoding: read.output, as: UTF8.self), String(decoding: read.errors, as: UTF8.self), read.timedOut)
    }

    func temporaryPath(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("strata-sandbox-test-\(UUID().uuidString)-\(name)").path
    }

    func json(at path: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("merge-scaling: one result per configuration, with its main-actor busy time; the view context holds as many objects as each row says while the save is merged")
    func mergeScalingHoldsWhatItSays() async throws {
        let jsonPath = temporaryPath("merge-scaling.json")
        defer { try? FileManager.default.removeItem(atPath: jsonPath) }
        let result = try await run(["merge-scaling", "--stacks", "hybrid", "--runs", "1", "--json", jsonPath])
        #expect(result.status == 0, "\(result.errors)")
        let rows = try #require(try json(at: jsonPath)["results"] as? [[String: Any]])
        // One row per configuration: 4 registered counts × 2 save sizes, each with the
        // main actor's busy time under the key every scenario uses.
        #expect(rows.count == 8)
        for row in rows {
            #expect(row["heldObjects"] as? Int == row["registeredObjects"] as? Int, "\(row)")
            #expect([1_000, 10_000].contains(row["changedObjects"] as? Int ?? 0), "\(row)")
            #expect((row["mainActorBusySeconds"] as? Double ?? -1) >= 0, "\(row)")
        }
    }

    @Test("the HTML page charts the durability scenario's saves per second, with 1 and 4 writers told apart")
    func durabilityCharts() async throws {
        let htmlPath = temporaryPath("durability.html")
        defer { try? FileManager.default.removeItem(atPath: htmlPath) }
        let result = try await run(["durability", "--objects", "40", "--runs", "1", "--html", htmlPath])
        #expect(result.status == 0, "\(result.errors)")
        let html = try String(contentsOfFile: htmlPath, encoding: .utf8)
        #expect(html.contains("font-weight=\"bold\">saves/s</text>"), "a bar chart of saves/s")
        #expect(!html.contains("font-weight=\"bold\">writers</text>"), "the number of writers labels bars, it is not charted")
        let labels = html.components(separatedBy: "<text x=\"0\" y=\"").dropFirst().compactMap { part -> String? in
            guard let open = part.firstIndex(of: ">"), let close = part.firstIndex(of: "<") else { return nil }
            return String(part[part.index(after: open)..<close])
        }
        #expect(Array(labels.drop { !$0.hasPrefix("full") }.prefix(2)) == ["full writers 1", "full writers 4"], "\(labels.prefix(4))")
        // A bar's colour follows its row's first cell, as a stack's does in every chart: the
        // saves/s chart's two `full` bars share one, `relaxed` has another.
        let savesChart = try #require(html.components(separatedBy: "font-weight=\"bold\">saves/s</text>").dropFirst().first?
            .components(separatedBy: "</svg>").first)
        var colours: [String: String] = [:]
        for bar in savesChart.components(separatedBy: "<text x=\"0\" y=\"").dropFirst() {
            guard let label = bar.split(separator: ">").dropFirst().first?.split(separator: "<").first,
                  let fill = bar.components(separatedBy: "fill=\"").dropFirst().first?.split(separator: "\"").first else { continue }
            colours[String(label)] = String(fill)
        }
        #expect(colours["full writers 1"] != nil && colours["full writers 1"] == colours["full writers 4"], "\(colours)")
        #expect(colours["relaxed writers 1"] != nil && colours["relaxed writers 1"] != colours["full writers 1"], "\(colours)")
    }

    @Test("list names every scenario and stack; a wrong name is a usage error")
    func commandLine() async throws {
        let list = try await run(["list"])
        #expect(list.status == 0)
        for name in ["shootout", "editor-cancel", "edit-during-import", "concurrent-writers", "merge-scaling", "fanout", "durability", "cold-open"] {
            #expect(list.output.contains(name + " "), "sandbox list names \(name)")
        }
        let lines = list.output.split(separator: "\n")
        for stack in ["main-parent", "nested", "shared-coordinator", "separate-coordinators", "hybrid"] {
            #expect(lines.filter { $0.hasPrefix("stack \(stack) ") }.count == 1, "sandbox list gives \(stack) a line of its own")
        }
        let seeded = try await run(["durability", "--seed", "0", "--objects", "no"])
        #expect(seeded.status == 2)
        #expect(seeded.errors.contains("--objects"), "a seed of 0 is accepted; the error is the objects': \(seeded.errors)")
        let help = try await run(["--help"])
        #expect(help.status == 0)
        #expect(help.output.hasPrefix("usage: sandbox"))
        let unknown = try await run(["no-such-scenario"])
        #expect(unknown.status == 2)
        #expect(unknown.errors.contains("unknown scenario 'no-such-scenario'"))
        for empty in ["", ","] {
            let none = try await run(["shootout", "--stacks", empty, "--objects", "30"])
            #expect(none.status == 2, "--stacks '\(empty)' names no stack, so nothing would be measured")
            #expect(none.errors.contains("--stacks: no stack named"), "\(none.errors)")
        }
        let badStack = try await run(["shootout", "--stacks", "hybrid,lonely"])
        #expect(badStack.status == 2)
        #expect(badStack.errors.contains("unknown stack 'lonely'"))
        for option in ["--json", "--html"] {
            let dash = try await run(["durability", option, "-"])
            #expect(dash.status == 2 && dash.errors.contains("\(option) writes a file; give its name, not -"), "\(dash.errors)")
        }
        let extra = try await run(["list", "durability"])
        #expect(extra.status == 2 && extra.errors.contains("list takes no arguments, not 'durability'"), "\(extra.errors)")
    }

    @Test("--help after a scenario prints the usage (exit 0); an option the scenario does not use is named; an output file that cannot be written is refused before the run")
    func helpAndOutputFiles() async throws {
        let help = try await run(["durability", "--help"])
        #expect(help.status == 0, "\(help.errors)")
        #expect(help.output.hasPrefix("usage: sandbox"))
        #expect(help.output.contains("durability: "), "the scenario's own line")
        // An option the scenario has no use for is named on standard error, not silently dropped.
        let ignored = try await run(["durability", "--objects", "40", "--runs", "1", "--stacks", "hybrid", "--seed", "7"])
        #expect(ignored.status == 0, "\(ignored.errors)")
        #expect(ignored.errors.contains("sandbox: durability does not use --stacks, --seed; ignored"), "\(ignored.errors)")
        let missing = temporaryPath("no-such-directory") + "/report.json"
        let refused = try await run(["durability", "--objects", "40", "--runs", "1", "--json", missing])
        #expect(refused.status == 1)
        #expect(refused.errors.contains("cannot write \(missing): there is no directory"), "\(refused.errors)")
        // A size below what a scenario can measure with is raised, and the sandbox says so
        // (here before the output file is refused, so that nothing runs).
        let small = try await run(["editor-cancel", "--objects", "100", "--json", missing])
        #expect(small.status == 1)
        #expect(small.errors.contains("sandbox: editor-cancel needs at least 6000 objects; it runs with 6000, not 100"), "\(small.errors)")
        #expect(!refused.output.contains("→ "), "refused before the scenario ran: \(refused.output)")
        let directory = FileManager.default.temporaryDirectory.path
        let onDirectory = try await run(["durability", "--objects", "40", "--runs", "1", "--html", directory])
        #expect(onDirectory.status == 1)
        #expect(onDirectory.errors.contains("it is a directory"), "\(onDirectory.errors)")
        #expect(!onDirectory.output.contains("→ "))
    }

    @Test("shootout: a table, JSON with every documented key for every stack, and a self-contained HTML page")
    func shootout() async throws {
        let jsonPath = temporaryPath("shootout.json"), htmlPath = temporaryPath("shootout.html")
        defer {
            try? FileManager.default.removeItem(atPath: jsonPath)
            try? FileManager.default.removeItem(atPath: htmlPath)
        }
        let result = try await run(["shootout", "--stacks", "all", "--objects", "600", "--save-every", "150", "--runs", "1",
                              "--json", jsonPath, "--html", htmlPath])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("→ "), "a verdict line")
        let report = try json(at: jsonPath)
        #expect(report["scenario"] as? String == "shootout")
        #expect(report["objects"] as? Int ?? 0 >= 600)
        #expect(report["saveEvery"] as? Int == 150)
        #expect(report["runs"] as? Int == 1)
        let results = try #require(report["results"] as? [[String: Any]])
        #expect(results.compactMap { $0["stack"] as? String } == ["main-parent", "nested", "shared-coordinator", "separate-coordinators", "hybrid"])
        for stack in results {
            for key in ["importSeconds", "mainActorBusySeconds", "droppedFrames", "stallsOver100ms", "peakResidentMegabytes"] {
                #expect(stack[key] is NSNumber, "\(stack["stack"] ?? "?"): \(key)")
            }
            #expect((stack["tickLatenessMs"] as? [String: Any]).map { Set($0.keys) } == ["p50", "p99", "max"])
            #expect((stack["visibleAfterMs"] as? [String: Any]).map { Set($0.keys) } == ["p50", "max"])
            #expect((stack["durableAfterMs"] as? [String: Any]).map { Set($0.keys) } == ["p50", "max"])
            #expect((stack["importSeconds"] as? Double ?? 0) > 0)
            #if os(Linux)
            // The hypervisor's share of the processors during the import, from /proc/stat.
            let steal = try #require(stack["hostStealPercent"] as? Double, "\(stack["stack"] ?? "?"): hostStealPercent")
            #expect((0...100).contains(steal))
            #endif
        }
        #if os(Linux)
        #expect(result.output.contains("% during the import)"), "the verdict says how much the host stole")
        #endif
        let html = try String(contentsOfFile: htmlPath, encoding: .utf8)
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(html.contains("<svg") && html.contains("<polyline"), "a lateness chart")
        #expect(!html.contains("src=") && !html.contains("href=") && !html.contains("<script"), "no external assets, no scripts")
        // The lateness chart's vertical axis: evenly spaced round numbers from 0, the last
        // past the one-frame line (16.7 ms), written without trailing zeros.
        let axis = html.components(separatedBy: "text-anchor=\"end\">").dropFirst().compactMap { $0.components(separatedBy: "</text>").first }
        let ticks = axis.compactMap(Double.init)
        #expect(ticks.count == axis.count && ticks.count >= 4 && ticks.first == 0, "vertical axis labels: \(axis)")
        if ticks.count >= 4 {
            let step = ticks[1]
            let mantissa = step / pow(10, floor(log10(step)))
            #expect([1.0, 2, 5].contains { abs($0 - mantissa) < 1e-9 }, "a round step: \(axis)")
            #expect(ticks.enumerated().allSatisfy { abs($1 - Double($0) * step) < step * 1e-9 }, "evenly spaced: \(axis)")
            #expect(ticks.last! >= 16.7, "the axis reaches the one-frame line: \(axis)")
            #expect(!axis.contains { $0.contains(".") && $0.hasSuffix("0") }, "no trailing zeros: \(axis)")
        }
    }

    @Test("shootout: visible-after runs from each save's own commit, also where the writer makes saves durable later (nested)")
    func visibleAfterFromEachCommit() async throws {
        // One nested run in the process the shootout starts for it: its figures, per save.
        let child = try await run(["--shootout-run", "nested", "1500", "15", "1"])
        #expect(child.status == 0, "\(child.errors)")
        let run = try #require(try JSONSerialization.jsonObject(with: Data(child.output.utf8)) as? [String: Any])
        let visible = try #require(run["visibleAfter"] as? [Double]), durable = try #require(run["durableAfter"] as? [Double])
        #expect(visible.count == durable.count, "a figure for every save")
        // Each save returns at its own moment, so two saves are never visible the same time
        // after their commits (measured from the writer's later durability, every save made
        // durable at the import's end was given the time from that end to the next tick).
        let positive = visible.filter { $0 > 0 }
        #expect(Set(positive).count == positive.count, "\(visible)")
    }

    @Test("shootout: hybrid's main-actor busy time counts the view's merge of the import, also of a last save merged after the import's end")
    func busyCountsTheLastMerge() async throws {
        // One save: its merge into the view comes after the import's end, when the view
        // takes it in (metered up to the import's end, some runs counted no merge at all).
        for seed in 1...3 {
            let child = try await run(["--shootout-run", "hybrid", "300", "500", String(seed)])
            #expect(child.status == 0, "\(child.errors)")
            let run = try #require(try JSONSerialization.jsonObject(with: Data(child.output.utf8)) as? [String: Any])
            let busy = try #require(run["busyByOperation"] as? [String: Double])
            #expect((busy["merge"] ?? 0) > 0, "seed \(seed): the view's merge of the import is counted: \(busy)")
        }
    }

    @Test("durability: every durability with 1 and 4 writers, the raw floors (appending, and into zero-filled space), and group commit sharing syncs")
    func durability() async throws {
        let jsonPath = temporaryPath("durability.json")
        defer { try? FileManager.default.removeItem(atPath: jsonPath) }
        let result = try await run(["durability", "--objects", "40", "--runs", "2", "--json", jsonPath])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output.contains("→ context saves: 4 writers at .full make"))
        #expect(result.output.contains("; store commits: 4 writers at .full make"))
        // Each run's pair of one writer and four, beside the ratio of the medians.
        let perRun = try Regex(#"1 writer \(run by run: [0-9.]+, [0-9.]+\) \(target"#)
        #expect(result.output.matches(of: perRun).count == 2, "\(result.output)")
        let results = try #require(try json(at: jsonPath)["results"] as? [[String: Any]])
        #expect(results.map { "\($0["durability"] ?? "?")/\($0["writers"] ?? "?")/\($0["committer"] ?? "-")" }
                == ["full/1/context", "full/4/context", "relaxed/1/context", "relaxed/4/context", "none/1/context", "none/4/context",
                    "full/1/store commit", "full/4/store commit", "raw append+fsync/1/-", "raw write+fsync into zeros/1/-"])
        for row in results {
            #expect(row["savesPerSecond"] is NSNumber && row["fsyncsPerSave"] is NSNumber, "\(row)")
            #expect((row["latencyMs"] as? [String: Any]).map { Set($0.keys) } == ["p50", "p99"], "\(row)")
        }
        for row in results.prefix(8) { #expect((row["processorMicrosecondsPerSave"] as? Double ?? 0) > 0, "\(row)") }
        // One writer syncs once per save, whether it writes its own transaction (a context
        // save) or the journal's writer does (a store commit); without syncs nothing is synced.
        #expect(results[0]["fsyncsPerSave"] as? Double == 1 && results[6]["fsyncsPerSave"] as? Double == 1)
        #expect(results[2]["fsyncsPerSave"] as? Double == 0 && results[4]["fsyncsPerSave"] as? Double == 0)
    }

    @Test("editor-cancel, edit-during-import and concurrent-writers hold their invariants in every stack")
    func invariants() async throws {
        let cancelPath = temporaryPath("cancel.json"), editPath = temporaryPath("edit.json"), writersPath = temporaryPath("writers.json")
        defer { for path in [cancelPath, editPath, writersPath] { try? FileManager.default.removeItem(atPath: path) } }
        let cancel = try await run(["editor-cancel", "--objects", "6000", "--runs", "1", "--json", cancelPath])
        #expect(cancel.status == 0, "\(cancel.errors)")
        for stack in try #require(try json(at: cancelPath)["results"] as? [[String: Any]]) {
            #expect(stack["storeByteIdentical"] as? Bool == true, "\(stack["stack"] ?? "?")")
            #expect(stack["viewContextUnchanged"] as? Bool == true, "\(stack["stack"] ?? "?")")
            #expect(stack["editorFreed"] as? Bool == true, "\(stack["stack"] ?? "?")")
        }
        let edit = try await run(["edit-during-import", "--objects", "3000", "--runs", "1", "--json", editPath])
        #expect(edit.status == 0, "\(edit.errors)")
        for stack in try #require(try json(at: editPath)["results"] as? [[String: Any]]) {
            let name = "\(stack["stack"] ?? "?") merging \(stack["editorMerges"] ?? "?")"
            #expect(stack["lostUpdates"] as? Int == 0, "\(name)")
            #expect(stack["conflictsReported"] as? Int == 100, "\(name): the 100 contested titles")
            if stack["editorMerges"] as? Bool == true { #expect(stack["importedChangesSeen"] as? Int == 1000, "\(name)") }
        }
        let writers = try await run(["concurrent-writers", "--objects", "80", "--runs", "1", "--json", writersPath])
        #expect(writers.status == 0, "\(writers.errors)")
        for stack in try #require(try json(at: writersPath)["results"] as? [[String: Any]]) {
            #expect(stack["lostUpdates"] as? Int == 0, "\(stack["stack"] ?? "?")")
            // A conflict is retried once the commit it met can be read: far fewer conflicts
            // than saves (retried at once, a save met the same commit again and again).
            let conflicts = try #require(stack["conflictsRetried"] as? Int), saves = try #require(stack["saves"] as? Int)
            #expect(conflicts <= saves, "\(stack["stack"] ?? "?"): \(conflicts) conflicts retried in \(saves) saves")
        }
    }
}
