import Foundation
import Strata

/// A scratch editor makes many edits and is thrown away: what it cost, and proof that
/// nothing of it reached the view context or the store.
struct EditorCancelScenario: Scenario {
    let name = "editor-cancel"
    let summary = "a scratch editor makes thousands of edits and is discarded: its cost, and proof nothing leaked into the view context or the store"
    let ignoredOptions = ["--save-every"]
    let minimumObjects: Int? = 6_000

    func run(_ options: ScenarioOptions, progress: @Sendable (String) -> Void) async throws -> ScenarioReport {
        let presets = options.stacks ?? StackName.all.map(\.preset)
        let objects = objectCount(options, default: 15_000)
        var results: [JSON] = []
        var table: [[String]] = [["stack", "edits", "edit ms", "main busy ms", "editor freed", "view unchanged", "store unchanged"]]
        var clean = true
        var hybridEdit: Double?
        for preset in presets {
            progress("editor-cancel: \(StackName.name(of: preset)), a store of \(objects) objects × \(options.runs) runs")
            var editTimes: [Double] = [], busy: [Double] = [], edits = 0
            var freed = true, viewUnchanged = true, storeUnchanged = true
            for _ in 0..<options.runs {
                let bench = try StackBench(preset, label: "editor-cancel")
                do {
                    try await bench.populate(objects: objects, seed: options.seed)
                    let outcome = try await Self.measure(bench)
                    editTimes.append(outcome.editMs)
                    busy.append(outcome.busyMs)
                    edits = outcome.edits
                    freed = freed && outcome.freed
                    viewUnchanged = viewUnchanged && outcome.viewUnchanged
                    storeUnchanged = storeUnchanged && outcome.storeUnchanged
                    await bench.close()
                } catch {
                    await bench.close()
                    throw error
                }
            }
            clean = clean && freed && viewUnchanged && storeUnchanged
            if preset == .hybrid { hybridEdit = Measure.median(editTimes) }
            let name = StackName.name(of: preset)
            table.append([name, String(edits), format(Measure.median(editTimes)), format(Measure.median(busy)),
                          freed ? "yes" : "NO", viewUnchanged ? "yes" : "NO", storeUnchanged ? "yes" : "NO"])
            results.append(.object([
                ("stack", .string(name)), ("edits", .int(Int64(edits))), ("editMs", number(Measure.median(editTimes))),
                ("mainActorBusySeconds", number(Measure.median(busy) / 1000, decimals: 6)),
                ("editorFreed", .bool(freed)), ("viewContextUnchanged", .bool(viewUnchanged)), ("storeByteIdentical", .bool(storeUnchanged)),
            ]))
        }
        let verdict = "discarding a scratch editor leaves the view context and the store byte-identical in every stack: \(clean ? "holds" : "MISSED")"
            + (hybridEdit.map { "; its edits took \(format($0)) ms under hybrid, none of it on the main actor" } ?? "")
        return ScenarioReport(scenario: name, objects: objects, saveEvery: nil, runs: options.runs, results: results, table: table, verdict: verdict)
    }

    struct Outcome {
        var edits: Int
        var editMs, busyMs: Double
        var freed, viewUnchanged, storeUnchanged: Bool
    }

    static func measure(_ bench: StackBench) async throws -> Outcome {
        let stack = bench.stack
        await stack.start()
        let view = stack.viewContext
        // Everything the view context shows: every object of every entity, with every value.
        let page = { @MainActor () throws -> [String] in
            try view.performAndWait { context in
                var lines: [String] = []
                for entity in context.schema.entities {
                    let keys = entity.attributes.map(\.name) + entity.relationships.map(\.name)
                    for object in try context.fetch(FetchRequest(entity: entity.name)) {
                        lines.append("\(object.objectID) " + keys.map { "\((try? object.value(forKey: $0)) ?? .null)" }.joined(separator: " | "))
                    }
                }
                return lines
            }
        }
        let pageBefore = try await page()
        let filesBefore = Self.files(bench.directory + "/store")
        let transactionBefore = bench.store.currentGeneration.transaction

        bench.meter.start()
        let started = Measure.now()
        weak var weakEditor: ObjectContext?
        var edits = 0
        do {
            let editor = await stack.newEditorContext()
            weakEditor = editor
            edits = try await editor.perform { context in
                for song in try StackBench.songs(1...2_000, in: context) {
                    song.title += " (draft)"
                    song.rating = 5
                }
                for album in try context.fetch(FetchRequest(entity: "Album", predicate: .written("albumID <= 100"))) { context.delete(album) }
                for number in 0..<200 {
                    let artist = context.insert(entity: "Artist")
                    try artist.setValue(.int(1_000_000 + Int64(number)), forKey: "artistID")
                    try artist.setValue(.string("Scratch \(number)"), forKey: "name")
                }
                context.processPendingChanges()
                return context.insertedObjects.count + context.updatedObjects.count + context.deletedObjects.count
            }
        }
        let editMs = Double(Measure.now() - started) / 1e6
        // The editor is gone once the last reference is: wait (briefly) for its deinit.
        let deadline = Measure.now() + 2_000_000_000
        while weakEditor != nil, Measure.now() < deadline { await Task.yield() }
        let busy = bench.meter.stop()

        let viewClean = await MainActor.run { view.performAndWait { !$0.hasChanges } }
        let pageAfter = try await page()
        let filesAfter = Self.files(bench.directory + "/store")
        return Outcome(
            edits: edits, editMs: editMs, busyMs: busy.busy.milliseconds, freed: weakEditor == nil,
            viewUnchanged: viewClean && pageBefore == pageAfter,
            storeUnchanged: filesBefore == filesAfter && bench.store.currentGeneration.transaction == transactionBefore)
    }

    /// Every file of a directory with its bytes.
    static func files(_ directory: String) -> [String: Data] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return Dictionary(uniqueKeysWithValues: names.map { ($0, FileManager.default.contents(atPath: directory + "/" + $0) ?? Data()) })
    }
}
