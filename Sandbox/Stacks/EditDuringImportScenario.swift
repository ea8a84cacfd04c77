import Foundation
import Strata

/// An editor is open while an import changes the objects it shows, once merging the
/// import's changes and once not: what the editor sees, which conflicts it reports, and
/// that after it saves (policy: the editor's changes win) no update of either side is lost.
struct EditDuringImportScenario: Scenario {
    let name = "edit-during-import"
    let summary = "an editor open during an import, with and without merging: what it sees, conflicts reported and resolved by policy, no lost update"
    let minimumObjects: Int? = 3_000

    static let shown = 1_000, edited = 200, contested = 100

    func run(_ options: ScenarioOptions, progress: @Sendable (String) -> Void) async throws -> ScenarioReport {
        let presets = options.stacks ?? StackName.all.map(\.preset)
        let objects = objectCount(options, default: 15_000)
        let saveEvery = options.saveEvery ?? 250
        var results: [JSON] = []
        var table: [[String]] = [["stack", "editor merges", "import seen", "conflicts", "editor save ms", "lost updates"]]
        var lost = 0
        var hybridSeen: Int?
        for preset in presets {
            for merging in [true, false] {
                progress("edit-during-import: \(StackName.name(of: preset)), editor \(merging ? "merging" : "not merging"), × \(options.runs) runs")
                var outcomes: [Outcome] = []
                for _ in 0..<options.runs {
                    let bench = try StackBench(preset, label: "edit-during-import")
                    do {
                        try await bench.populate(objects: objects, seed: options.seed)
                        outcomes.append(try await Self.measure(bench, merging: merging, saveEvery: saveEvery))
                        await bench.close()
                    } catch {
                        await bench.close()
                        throw error
                    }
                }
                let seen = Int(Measure.medianCount(outcomes.map { Double($0.seen) }))
                let conflicts = Int(Measure.medianCount(outcomes.map { Double($0.conflicts) }))
                let saveMs = Measure.median(outcomes.map(\.saveMs))
                let lostHere = outcomes.map(\.lost).max() ?? 0
                lost += lostHere
                if preset == .hybrid && merging { hybridSeen = seen }
                let name = StackName.name(of: preset)
                table.append([name, merging ? "yes" : "no", "\(seen) of \(Self.shown)", String(conflicts), format(saveMs), String(lostHere)])
                results.append(.object([
                    ("stack", .string(name)), ("editorMerges", .bool(merging)), ("importedChangesSeen", .int(Int64(seen))),
                    ("objectsShown", .int(Int64(Self.shown))), ("conflictsReported", .int(Int64(conflicts))),
                    ("mergePolicy", .string("contextWins")), ("editorSaveMs", number(saveMs)), ("lostUpdates", .int(Int64(lostHere))),
                ]))
            }
        }
        var verdict = "the editor's changes win every contested key (policy contextWins) and no update of the import or the editor is lost in any stack: \(lost == 0 ? "holds" : "MISSED (\(lost) lost)")"
        if let hybridSeen { verdict += "; a merging hybrid editor sees \(hybridSeen) of the \(Self.shown) songs it shows change during the import" }
        return ScenarioReport(scenario: name, objects: objects, saveEvery: saveEvery, runs: options.runs, results: results, table: table, verdict: verdict)
    }

    struct Outcome {
        var seen, conflicts, lost: Int
        var saveMs: Double
    }

    static let importedRating = 4.25

    static func measure(_ bench: StackBench, merging: Bool, saveEvery: Int) async throws -> Outcome {
        let stack = bench.stack
        await stack.start()
        let conflicts = Collector<Int>()
        let listener: Task<Bool, Never>
        let originalTitles: [Int: String], seen: Int, saveMs: Double
        do {
            let editor = await stack.newEditorContext()
            let conflictStream = editor.mergeConflicts()
            listener = Task {
                for await found in conflictStream { conflicts.append(found.count) }
                return !Task.isCancelled
            }
            // The editor shows songs 1...1000 and retitles 1...200.
            originalTitles = try await editor.perform { context in
                context.automaticallyMergesChanges = merging
                context.mergePolicy = .contextWins
                var titles: [Int: String] = [:]
                for song in try StackBench.songs(1...shown, in: context) {
                    titles[song.songID] = song.title
                    if song.songID <= edited { song.title = "Edited \(song.songID)" }
                }
                return titles
            }
            // The import rates every shown song and retitles 1...100 (contested with the editor).
            let importer = stack.newImportContext()
            for first in stride(from: 1, through: shown, by: saveEvery) {
                try await importer.perform { context in
                    for song in try StackBench.songs(first...min(first + saveEvery - 1, shown), in: context) {
                        song.rating = importedRating
                        if song.songID <= contested { song.title = "Imported \(song.songID)" }
                    }
                }
                try await stack.save(importer)
                await importer.perform { context in context.reset() }
            }
            if let writer = stack.writerContext { try await writer.save() }
            // A merging editor takes the import's saves asynchronously: give it until it has them all.
            func seenCount() async -> Int {
                await editor.perform { context in
                    context.registeredObjects.compactMap { $0 as? Song }.filter { $0.rating == importedRating }.count
                }
            }
            var seenNow = await seenCount()
            let deadline = Measure.now() + 10_000_000_000
            while merging, seenNow < shown, Measure.now() < deadline {
                try await Task.sleep(for: .milliseconds(1))
                seenNow = await seenCount()
            }
            seen = seenNow
            let started = Measure.now()
            try await stack.save(editor)
            saveMs = Double(Measure.now() - started) / 1e6
            if let writer = stack.writerContext { try await writer.save() }
        }
        // The editor is gone: its conflict stream ends when its deinit runs, after every
        // conflict it reported (cancelling the listener instead could drop some still buffered).
        let watchdog = Task {
            try? await Task.sleep(for: .seconds(10))
            listener.cancel()
        }
        defer { watchdog.cancel() }
        guard await listener.value else { throw ScenarioError("the editor was not released within 10 s of its save, so its conflicts cannot all be counted") }

        // The store must hold the editor's titles, the import's ratings and its titles where
        // the editor did not edit, and the original titles elsewhere.
        let generation = bench.store.currentGeneration
        let stored = try generation.fetch(FetchRequest(entity: "Song", predicate: .written("songID <= \(shown)")))
        let schema = Workload.schema.entities.first { $0.name == "Song" }!
        let key = schema.attributes.firstIndex { $0.name == "songID" }!, title = schema.attributes.firstIndex { $0.name == "title" }!
        let rating = schema.attributes.firstIndex { $0.name == "rating" }!
        var lost = 0
        for song in stored {
            guard case .int(let id64) = song.values[key] else { lost += 1; continue }
            let id = Int(id64)
            let expectedTitle = id <= edited ? "Edited \(id)" : originalTitles[id] ?? ""
            if song.values[title] != .string(expectedTitle) { lost += 1 }
            if song.values[rating] != .double(importedRating) { lost += 1 }
        }
        if stored.count != shown { lost += abs(shown - stored.count) }
        return Outcome(seen: seen, conflicts: conflicts.values.reduce(0, +), lost: lost, saveMs: saveMs)
    }
}
