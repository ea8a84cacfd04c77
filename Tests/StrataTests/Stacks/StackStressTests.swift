import Foundation
import Testing
@testable import Strata

/// Every stack preset under concurrent imports (with conflicting increments), UI fetches,
/// and editors saved or dropped; then the oracle: no lost update, every import present,
/// inverses consistent, the same state after reopening. Bounded by a hard timeout; clean
/// under `swift test --sanitize=thread`.
@Suite struct StackStressTests {
    static let rounds = 250
    static let editorRounds = 150

    @Test("concurrent imports, fetches and editors keep every invariant", arguments: StackPreset.allCases)
    func concurrentUse(preset: StackPreset) async throws {
        let directory = TemporaryDirectory("strata-stack-stress")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let seed = try await ContextStressTests.seed(store)
        let stack = Stack(preset, store: store, modelClasses: [Artist.self, Album.self, Song.self])
        await stack.start()

        let outcome = try await withThrowingTaskGroup(of: ContextStressTests.Outcome.self) { group in
            for n in 0..<2 {
                group.addTask { try await Self.importer(stack, seed: seed, number: n) }
            }
            group.addTask { try await Self.editors(stack, seed: seed) }
            group.addTask { try await Self.viewer(stack) }
            group.addTask {
                try await Task.sleep(for: .seconds(240) * TestTiming.slowdown)
                throw ContextStressTests.TimedOut()
            }
            var total = ContextStressTests.Outcome()
            for _ in 0..<4 { total.absorb(try await group.next()!) }
            group.cancelAll()
            return total
        }
        // Flush an asynchronous writer, then everything acknowledged must be in the store.
        if let writer = stack.writerContext { try await writer.save() }
        let generation = store.currentGeneration
        for (n, album) in seed.albums.enumerated() {
            #expect(generation.value(album, "rating") == .double(Double(outcome.increments[n])), "\(preset): \(album)")
            if let title = outcome.titles[n] { #expect(generation.value(album, "title") == .string(title), "\(preset): \(album)") }
        }
        #expect(generation.count(of: "Song") == outcome.operations, "\(preset): every imported song is there")
        #expect(generation.integrityProblems().isEmpty, "\(preset): \(generation.integrityProblems().prefix(3))")
        let live = generation.valuesByID
        await store.close()
        let reopened = try StoreTesting.open(in: directory)
        #expect(reopened.currentGeneration.valuesByID == live, "\(preset)")
        await reopened.close()
    }

    /// Increments album ratings (shared with the other importer) and adds a song each round;
    /// counts, in `operations`, the songs acknowledged.
    static func importer(_ stack: Stack, seed: ContextStressTests.Seed, number: Int) async throws -> ContextStressTests.Outcome {
        var rng = SeededGenerator(seed: UInt64(100 + number))
        var outcome = ContextStressTests.Outcome()
        let context = stack.newImportContext(name: "import-\(number)")
        for round in 0..<rounds {
            let n = Int.random(in: 0..<ContextStressTests.albums, using: &rng)
            var attempts = 0
            while true {
                attempts += 1
                if attempts > 200 { try await stack.save(context) }  // surfaces a conflict that never resolves
                await context.perform { c in
                    let album = c.object(with: seed.albums[n], as: Album.self)
                    album.rating = (album.rating ?? 0) + 1
                    let song = c.insert(Song.self)
                    song.songID = UUID()
                    song.title = "Import \(number)-\(round)"
                    song.milliseconds = round
                    song.album = album
                }
                if try await saveUnlessConflict(context, stack: stack) {
                    outcome.increments[n] += 1
                    outcome.operations += 1
                    break
                }
                await context.perform { c in
                    c.rollback()
                    for object in c.registeredObjects { c.refresh(object, mergeChanges: false) }
                }
            }
        }
        return outcome
    }

    static func saveUnlessConflict(_ context: ObjectContext, stack: Stack) async throws -> Bool {
        try await ContextStressTests.saveUnlessConflict { () throws(StoreError) in try await stack.save(context) }
    }

    /// Editors of album titles, saved or dropped.
    static func editors(_ stack: Stack, seed: ContextStressTests.Seed) async throws -> ContextStressTests.Outcome {
        var rng = SeededGenerator(seed: 7)
        var outcome = ContextStressTests.Outcome()
        for round in 0..<editorRounds {
            let n = Int.random(in: 0..<ContextStressTests.albums, using: &rng)
            let editor = await stack.newEditorContext(name: "editor-\(round)")
            let title = "Edited \(round)"
            await editor.perform { c in
                c.mergePolicy = .contextWins
                c.object(with: seed.albums[n], as: Album.self).title = title
            }
            if Bool.random(using: &rng) {
                var attempts = 0
                while true {
                    attempts += 1
                    if attempts > 50 { try await stack.save(editor) }  // surfaces the conflict
                    if try await saveUnlessConflict(editor, stack: stack) { break }
                    await editor.perform { c in c.object(with: seed.albums[n], as: Album.self).title = title }
                }
                outcome.titles[n] = title
            }
        }
        return outcome
    }

    /// The UI: fetches while everything else runs.
    static func viewer(_ stack: Stack) async throws -> ContextStressTests.Outcome {
        for _ in 0..<200 {
            _ = try await stack.viewContext.perform { c in try c.count(for: FetchRequest(entity: "Song")) }
            _ = try await stack.viewContext.perform { c in try c.fetchIDs(FetchRequest(entity: "Album", sortBy: [SortKey("rating")], limit: 5)).count }
        }
        return ContextStressTests.Outcome()
    }
}
