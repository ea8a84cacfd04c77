import Foundation
import Testing
@testable import Strata

/// Writers on two coordinators, a reader following their commits, and editors saving into
/// or discarded from the reader, all at once; then an oracle: no lost update, inverses
/// consistent, every acknowledged save present after reopening. Bounded by a hard timeout;
/// run it under `swift test --sanitize=thread` too.
@Suite struct ContextStressTests {
    static let albums = 16
    static let artists = 8
    /// Saves per writer; the whole run is well over 10,000 context operations.
    static let writerSaves = 1_500
    static let editorRounds = 1_500

    struct Seed: Sendable {
        var artists: [ObjectID]
        var albums: [ObjectID]
    }

    @Test("concurrent writers, a following reader and editors keep every invariant")
    func concurrentContexts() async throws {
        // Not a task group: a save stuck for good (a lost wake-up) fails the test, not the run.
        try await withHardTimeLimit(.seconds(240), "the stress run") { try await Self.run() }
    }

    static func run() async throws {
        let directory = TemporaryDirectory("strata-stress")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let seed = try await Self.seed(store)
        let classes: [ManagedObject.Type] = [Artist.self, Album.self, Song.self]
        let main = Coordinator(store: store, name: "main", modelClasses: classes)
        let imports = Coordinator(store: store, name: "import", modelClasses: classes)
        let writers = [ObjectContext(coordinator: main, name: "writer-0"), ObjectContext(coordinator: imports, name: "writer-1")]
        let reader = ObjectContext(coordinator: main, name: "reader")
        await reader.perform { c in
            c.automaticallyMergesChanges = true
            c.pinQueryGeneration()
            _ = Self.inverseProblems(in: c, seed: seed)  // loads every album and artist
        }

        let outcome = try await withThrowingTaskGroup(of: Outcome.self) { group in
            for (n, writer) in writers.enumerated() {
                group.addTask { try await Self.write(writer, seed: seed, rngSeed: UInt64(n + 1)) }
            }
            group.addTask { try await Self.edit(under: reader, seed: seed) }
            var total = Outcome()
            for try await part in group { total.absorb(part) }
            return total
        }

        // Reader consistency: once it has merged every commit (a last marker commit shows it
        // has, merges arriving in order), every album and artist it holds agree.
        let marker = ObjectContext(coordinator: imports, name: "marker")
        await marker.perform { c in c.object(with: seed.artists[0], as: Artist.self).name = "marker" }
        try await marker.save()
        await waitUntil(reader, "the reader merges the marker") { c in
            c.object(with: seed.artists[0], as: Artist.self).name == "marker"
        }
        let problems = await reader.perform { c in Self.inverseProblems(in: c, seed: seed) }
        #expect(problems.isEmpty, "reader: \(problems.prefix(5))")

        // No lost update: every increment that was acknowledged is counted exactly once.
        let generation = store.currentGeneration
        for (n, album) in seed.albums.enumerated() {
            let rating = generation.value(album, "rating")
            #expect(rating == .double(Double(outcome.increments[n])), "\(album): \(String(describing: rating)) after \(outcome.increments[n]) increments")
            if let title = outcome.titles[n] {
                #expect(generation.value(album, "title") == .string(title), "\(album): the last saved title")
            }
        }
        #expect(generation.integrityProblems().isEmpty, "\(generation.integrityProblems().prefix(3))")
        #expect(outcome.operations >= 10_000, "\(outcome.operations) operations")

        // Every acknowledged save is there after reopening.
        let live = generation.valuesByID
        await store.close()
        let reopened = try StoreTesting.open(in: directory)
        #expect(reopened.currentGeneration.valuesByID == live)
        await reopened.close()
    }

    /// What the tasks did: acknowledged increments per album, last saved titles, operations.
    struct Outcome: Sendable {
        var increments = [Int](repeating: 0, count: ContextStressTests.albums)
        var titles = [String?](repeating: nil, count: ContextStressTests.albums)
        var operations = 0

        mutating func absorb(_ other: Outcome) {
            for i in increments.indices { increments[i] += other.increments[i] }
            for (i, title) in other.titles.enumerated() where title != nil { titles[i] = title }
            operations += other.operations
        }
    }

    static func seed(_ store: Store) async throws -> Seed {
        let artists = store.allocateObjectIDs(for: "Artist", count: Self.artists)
        let albums = store.allocateObjectIDs(for: "Album", count: Self.albums)
        var rows: [RowImage] = []
        for (i, id) in artists.enumerated() {
            let owned = albums.indices.filter { $0 % Self.artists == i }.map { albums[$0] }
            rows.append(Songbook.artist(id, artistID: Int64(i + 1), name: "Artist \(i)", albums: owned))
        }
        for (i, id) in albums.enumerated() {
            rows.append(Songbook.album(id, albumID: Int64(100 + i), title: "Album \(i)", rating: 0, artist: artists[i % Self.artists]))
        }
        try await store.commit(ChangeSet(author: "seed", inserted: rows))
        return Seed(artists: artists, albums: albums)
    }

    /// Increments ratings (shared with the other writer: conflicts are retried after a
    /// refresh) and moves albums between artists.
    static func write(_ context: ObjectContext, seed: Seed, rngSeed: UInt64) async throws -> Outcome {
        var rng = SeededGenerator(seed: rngSeed)
        var outcome = Outcome()
        for round in 0..<Self.writerSaves {
            let n = Int.random(in: 0..<Self.albums, using: &rng)
            let move = round % 5 == 0 ? Int.random(in: 0..<Self.artists, using: &rng) : nil
            while true {
                await context.perform { c in
                    let album = c.object(with: seed.albums[n], as: Album.self)
                    album.rating = (album.rating ?? 0) + 1
                    if let move { album.artist = c.object(with: seed.artists[move], as: Artist.self) }
                }
                outcome.operations += 1
                let saved = try await Self.saveUnlessConflict(context)
                outcome.operations += 1
                if saved {
                    outcome.increments[n] += 1
                    // Inverses agree after every save (the generation the save published, or a later one).
                    let problems = context.coordinator.currentGeneration.integrityProblems()
                    if !problems.isEmpty { Issue.record("after a save of \(context.name): \(problems.prefix(3))") }
                    break
                } else {
                    // Someone else saved these objects: start again from what they committed.
                    await context.perform { c in
                        c.rollback()
                        for object in c.registeredObjects { c.refresh(object, mergeChanges: false) }
                    }
                }
            }
        }
        return outcome
    }

    /// Saves; `false` if the save was refused for a conflict.
    static func saveUnlessConflict(_ context: ObjectContext) async throws -> Bool {
        try await saveUnlessConflict { () throws(StoreError) in try await context.save() }
    }

    /// Runs a save; `false` if it was refused for a conflict (refused whole where it was
    /// found: nothing to undo elsewhere).
    static func saveUnlessConflict(_ save: () async throws(StoreError) -> Void) async throws -> Bool {
        let result: Result<Void, StoreError>
        do {
            try await save()
            result = .success(())
        } catch {
            result = .failure(error)
        }
        switch result {
        case .success: return true
        case .failure(let error) where error.code == .conflict: return false
        case .failure(let error): throw error
        }
    }

    /// Editors on the reader: each changes an album's title, and is saved (then the reader
    /// saves) or dropped. The reader checks its objects' inverses as it goes.
    static func edit(under reader: ObjectContext, seed: Seed) async throws -> Outcome {
        var rng = SeededGenerator(seed: 99)
        var outcome = Outcome()
        for round in 0..<Self.editorRounds {
            let n = Int.random(in: 0..<Self.albums, using: &rng)
            let keep = Bool.random(using: &rng)
            let title = "Edited \(round)"
            let editor = ObjectContext(parent: reader, name: "editor-\(round)")
            await editor.perform { c in c.object(with: seed.albums[n], as: Album.self).title = title }
            outcome.operations += 1
            if keep {
                try await editor.save()
                try await reader.save()  // only the title changed: never a conflict with the writers
                outcome.titles[n] = title
                outcome.operations += 2
            }
            // Reading while merges arrive: objects loaded at different moments may disagree
            // until every commit is merged, so consistency is checked once all have been.
            _ = await reader.perform { c in Self.inverseProblems(in: c, seed: seed).count }
            outcome.operations += 1
        }
        return outcome
    }

    /// Albums and artists whose relationships disagree, among the objects a context holds.
    static func inverseProblems(in context: isolated ObjectContext, seed: Seed) -> [String] {
        var problems: [String] = []
        for id in seed.albums {
            let album = context.object(with: id, as: Album.self)
            guard let artist = album.artist else { continue }
            if !artist.albums.contains(where: { $0 === album }) {
                problems.append("\(id).artist is \(artist.objectID), whose albums are \(artist.albums.map(\.objectID))")
            }
        }
        return problems
    }
}
