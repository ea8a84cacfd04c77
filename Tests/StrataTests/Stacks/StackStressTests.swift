import Foundation
import Testing
@testable import Strata

/// Every stack preset under concurrent imports (conflicting increments, songs added and
/// deleted, albums moved between artists), UI reads, and editors saved or dropped; then an
/// oracle built from what each save acknowledged: no lost update, exactly the songs, titles
/// and artists saved, inverses consistent in the store and in the view, every save handed
/// to the writer reported and written, the same state after the stack closes and the store
/// reopens. Bounded by a hard time limit; clean under `swift test --sanitize=thread`.
@Suite struct StackStressTests {
    static let rounds = 250
    static let editorRounds = 150
    typealias Seed = ContextStressTests.Seed

    @Test("concurrent imports, fetches and editors keep every invariant", arguments: StackPreset.allCases)
    func concurrentUse(preset: StackPreset) async throws {
        // Not a task group: a save stuck for good (a lost wake-up) fails the test, not the run.
        try await withHardTimeLimit(.seconds(240), "the \(preset) stress run") { try await Self.run(preset) }
    }

    static func run(_ preset: StackPreset) async throws {
        let directory = TemporaryDirectory("strata-stack-stress")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let seed = try await ContextStressTests.seed(store)
        let stack = Stack(preset, store: store, modelClasses: [Artist.self, Album.self, Song.self])
        await stack.start()
        let writerOutcomes = stack.writerSaves()
        // The UI holds every album and artist throughout: what saves and merges do to the
        // objects it shows is checked, not only what a fresh read finds.
        try await stack.viewContext.perform { c in
            c.retainsRegisteredObjects = true
            for id in seed.albums + seed.artists { _ = try c.existingObject(with: id) }
        }

        let acknowledged = try await withThrowingTaskGroup(of: Ledger.self) { group in
            for n in 0..<2 {
                group.addTask { try await Self.importer(stack, seed: seed, number: n) }
            }
            group.addTask { try await Self.editors(stack, seed: seed) }
            group.addTask { try await Self.viewer(stack, seed: seed) }
            var total = Ledger()
            for try await part in group { total.absorb(part) }
            return total
        }

        var expected = acknowledged
        // The view shows exactly what was acknowledged, its inverses agreeing (under the
        // asynchronous presets, whether or not the writer has written it yet).
        let converged = await waitUntil(stack.viewContext, "\(preset): the view shows every acknowledged save") { c in
            Self.viewDisagreements(in: c, seed: seed, expected: acknowledged).isEmpty
        }
        if !converged {
            let problems = await stack.viewContext.perform { c in Self.viewDisagreements(in: c, seed: seed, expected: acknowledged) }
            Issue.record("\(preset): the view: \(problems.prefix(5))")
        }

        // A last save, then the stack closed at once: under the asynchronous presets the
        // writer has just been handed it, and closing must write it.
        let closing = await stack.newEditorContext(name: "closing")
        await closing.perform { c in
            for id in seed.artists { c.object(with: id, as: Artist.self).name = "Closed" }
        }
        try await stack.save(closing)
        expected.artistNames = "Closed"
        if stack.savesAsynchronously(closing) { expected.writerSaves += 1 }
        await stack.close()
        if stack.writerContext != nil {
            var outcomes: [Stack.WriterSaveOutcome] = []
            for await outcome in writerOutcomes { outcomes.append(outcome) }  // ended by close()
            #expect(outcomes.count == expected.writerSaves, "\(preset): every save handed to the writer is reported")
            let failures = outcomes.compactMap(\.error)
            #expect(failures.isEmpty, "\(preset): writer saves failed: \(failures.prefix(3))")
            let pending = await stack.writerContext!.hasChanges
            #expect(!pending, "\(preset): the writer wrote everything it was handed")
        }
        let generation = store.currentGeneration
        let problems = Self.storeDisagreements(generation, seed: seed, expected: expected)
        #expect(problems.isEmpty, "\(preset), closed: \(problems.prefix(5))")
        let reopened = try StoreTesting.open(in: directory)
        let afterReopening = Self.storeDisagreements(reopened.currentGeneration, seed: seed, expected: expected)
        #expect(afterReopening.isEmpty, "\(preset), reopened: \(afterReopening.prefix(5))")
        #expect(reopened.currentGeneration.valuesByID == generation.valuesByID, "\(preset): the reopened store is the closed one")
        await reopened.close()
    }

    // MARK: - What the saves acknowledged

    /// A song as saved.
    struct ExpectedSong: Sendable, Hashable {
        var songID: UUID
        var title: String
        var album: ObjectID
    }

    /// What the tasks' acknowledged saves add up to.
    struct Ledger: Sendable {
        /// Acknowledged increments of each album's rating.
        var increments = [Int](repeating: 0, count: ContextStressTests.albums)
        /// Each album's last acknowledged title (`nil`: never saved).
        var titles = [String?](repeating: nil, count: ContextStressTests.albums)
        /// Each album's last acknowledged artist (an index into the seed's; `nil`: never moved).
        var artists = [Int?](repeating: nil, count: ContextStressTests.albums)
        /// The songs acknowledged inserted and not acknowledged deleted.
        var songs: [ObjectID: ExpectedSong] = [:]
        /// Saves acknowledged once the writer had them (to be reported on `writerSaves()`).
        var writerSaves = 0
        /// Every artist's name, once the last save set it.
        var artistNames: String?

        mutating func absorb(_ other: Ledger) {
            for i in increments.indices { increments[i] += other.increments[i] }
            for (i, title) in other.titles.enumerated() where title != nil { titles[i] = title }
            for (i, artist) in other.artists.enumerated() where artist != nil { artists[i] = artist }
            songs.merge(other.songs) { _, new in new }
            writerSaves += other.writerSaves
        }

        func title(_ album: Int) -> String { titles[album] ?? "Album \(album)" }
        func artist(_ album: Int) -> Int { artists[album] ?? album % ContextStressTests.artists }
    }

    // MARK: - The tasks

    /// Each round increments an album's rating (shared with the other importer), and on some
    /// rounds adds a song, deletes one of its earlier songs, or moves one of its own half of
    /// the albums (so that the last move it acknowledged is the album's artist). A conflict
    /// is retried from what the other side committed.
    static func importer(_ stack: Stack, seed: Seed, number: Int) async throws -> Ledger {
        var rng = SeededGenerator(seed: UInt64(100 + number))
        var ledger = Ledger()
        var mine: [ObjectID] = []  // this importer's songs in the store
        let context = stack.newImportContext(name: "import-\(number)")
        let durableWhenSaved = !stack.savesAsynchronously(context)
        for round in 0..<rounds {
            let n = Int.random(in: 0..<ContextStressTests.albums, using: &rng)
            let adds = round % 2 == 0  // odd rounds change only the rating: a lost update has no list conflict to hide behind
            let move: (album: Int, artist: Int)? = round % 5 == 1
                ? (2 * Int.random(in: 0..<ContextStressTests.albums / 2, using: &rng) + number, Int.random(in: 0..<ContextStressTests.artists, using: &rng))
                : nil
            let doomed: ObjectID? = round % 7 == 3 && !mine.isEmpty ? mine.remove(at: Int.random(in: 0..<mine.count, using: &rng)) : nil
            let song = ExpectedSong(songID: UUID(), title: "Import \(number)-\(round)", album: seed.albums[n])
            var attempts = 0
            while true {
                attempts += 1
                if attempts > 200 { try await stack.save(context) }  // surfaces a conflict that never resolves
                let inserted = await context.perform { c -> ObjectID? in
                    let album = c.object(with: seed.albums[n], as: Album.self)
                    album.rating = (album.rating ?? 0) + 1
                    var inserted: ObjectID?
                    if adds {
                        let new = c.insert(Song.self)
                        new.songID = song.songID
                        new.title = song.title
                        new.milliseconds = round
                        new.album = album
                        inserted = new.objectID
                    }
                    if let move {
                        c.object(with: seed.albums[move.album], as: Album.self).artist = c.object(with: seed.artists[move.artist], as: Artist.self)
                    }
                    if let doomed { c.delete(c.object(with: doomed)) }
                    return inserted
                }
                if try await saveUnlessConflict(context, stack: stack) {
                    ledger.increments[n] += 1
                    if let inserted {
                        ledger.songs[inserted] = song
                        mine.append(inserted)
                    }
                    if let doomed { ledger.songs[doomed] = nil }
                    if let move { ledger.artists[move.album] = move.artist }
                    if durableWhenSaved {
                        // Acknowledged: in the store now.
                        let generation = stack.store.currentGeneration
                        if let inserted, generation.value(inserted, "songID") != .uuid(song.songID) {
                            Issue.record("import-\(number) round \(round): the acknowledged \(inserted) is not in the store")
                        }
                        if let doomed, generation.object(doomed) != nil {
                            Issue.record("import-\(number) round \(round): the acknowledged deletion of \(doomed) is not in the store")
                        }
                        if let move, generation.value(seed.albums[move.album], "artist") != .object(seed.artists[move.artist]) {
                            Issue.record("import-\(number) round \(round): the acknowledged move of album \(move.album) is not in the store")
                        }
                    } else {
                        ledger.writerSaves += 1
                    }
                    break
                }
                await context.perform { c in
                    c.rollback()
                    for object in c.registeredObjects { c.refresh(object, mergeChanges: false) }
                }
            }
        }
        return ledger
    }

    static func saveUnlessConflict(_ context: ObjectContext, stack: Stack) async throws -> Bool {
        try await ContextStressTests.saveUnlessConflict { () throws(StoreError) in try await stack.save(context) }
    }

    /// Editors of album titles, saved or dropped. A saved title is in the store when the
    /// save returns, or (through the asynchronous writer) once the writer has written it; a
    /// dropped one never shows.
    static func editors(_ stack: Stack, seed: Seed) async throws -> Ledger {
        var rng = SeededGenerator(seed: 7)
        var ledger = Ledger()
        for round in 0..<editorRounds {
            let n = Int.random(in: 0..<ContextStressTests.albums, using: &rng)
            let album = seed.albums[n]
            let editor = await stack.newEditorContext(name: "editor-\(round)")
            let title = "Edited \(round)"
            await editor.perform { c in
                c.mergePolicy = .contextWins
                c.object(with: album, as: Album.self).title = title
            }
            guard Bool.random(using: &rng) else {
                let shown = await stack.viewContext.perform { c in c.object(with: album, as: Album.self).title }
                #expect(shown != title, "editor-\(round) was dropped, but the view shows its title")
                continue
            }
            var attempts = 0
            while true {
                attempts += 1
                if attempts > 50 { try await stack.save(editor) }  // surfaces the conflict
                if try await saveUnlessConflict(editor, stack: stack) { break }
                await editor.perform { c in c.object(with: album, as: Album.self).title = title }
            }
            ledger.titles[n] = title
            if stack.savesAsynchronously(editor) {
                ledger.writerSaves += 1
                // Only editors change titles, one at a time: the writer writes this one.
                guard await storeReaches(stack.store, { $0.value(album, "title") == .string(title) }) else {
                    throw TimedOut(what: "the writer to write editor-\(round)'s save, acknowledged", seconds: 10)
                }
            } else {
                #expect(stack.store.currentGeneration.value(album, "title") == .string(title), "editor-\(round)'s save, acknowledged, is in the store")
            }
        }
        return ledger
    }

    /// The UI: fetches, and reads the objects it holds, while everything else runs.
    static func viewer(_ stack: Stack, seed: Seed) async throws -> Ledger {
        for _ in 0..<200 {
            _ = try await stack.viewContext.perform { c in try c.count(for: FetchRequest(entity: "Song")) }
            _ = try await stack.viewContext.perform { c in try c.fetchIDs(FetchRequest(entity: "Album", sortBy: [SortKey("rating")], limit: 5)).count }
            _ = await stack.viewContext.perform { c in
                seed.albums.reduce(0) { sum, id in
                    let album = c.object(with: id, as: Album.self)
                    return sum + album.songs.count + (album.artist?.albums.count ?? 0)
                }
            }
        }
        return Ledger()
    }

    /// Waits until the store's current generation satisfies `condition`, re-checking after
    /// each commit, up to a hard timeout; `false` if it never does.
    static func storeReaches(_ store: Store, timeout: Duration = .seconds(10), _ condition: @escaping @Sendable (Generation) -> Bool) async -> Bool {
        let commits = store.commits()
        if condition(store.currentGeneration) { return true }
        return await returns(within: timeout) {
            for await _ in commits where condition(store.currentGeneration) { return true }
            return condition(store.currentGeneration)
        }
    }

    // MARK: - The oracle

    /// Where a store's state differs from what was acknowledged, and broken invariants.
    static func storeDisagreements(_ generation: Generation, seed: Seed, expected: Ledger) -> [String] {
        var problems = generation.integrityProblems().map(\.description)
        for (i, album) in seed.albums.enumerated() {
            let rating = generation.value(album, "rating"), title = generation.value(album, "title"), artist = generation.value(album, "artist")
            if rating != .double(Double(expected.increments[i])) { problems.append("\(album).rating is \(String(describing: rating)) after \(expected.increments[i]) increments") }
            if title != .string(expected.title(i)) { problems.append("\(album).title is \(String(describing: title)), the last saved is \(expected.title(i))") }
            if artist != .object(seed.artists[expected.artist(i)]) { problems.append("\(album).artist is \(String(describing: artist)), the last saved is \(seed.artists[expected.artist(i)])") }
            let songs = Set(generation.value(album, "songs")?.referencedObjects ?? [])
            let saved = Set(expected.songs.filter { $0.value.album == album }.keys)
            if songs != saved { problems.append("\(album).songs: \(songs.subtracting(saved).sorted()) not saved, \(saved.subtracting(songs).sorted()) missing") }
        }
        if let name = expected.artistNames {
            for artist in seed.artists where generation.value(artist, "name") != .string(name) {
                problems.append("\(artist).name is \(String(describing: generation.value(artist, "name"))), the last saved is \(name)")
            }
        }
        let stored = generation.objects(of: "Song")
        let storedIDs = Set(stored.map(\.id)), savedIDs = Set(expected.songs.keys)
        if storedIDs != savedIDs {
            problems.append("songs: \(storedIDs.subtracting(savedIDs).sorted().prefix(5)) not saved, \(savedIDs.subtracting(storedIDs).sorted().prefix(5)) missing")
        }
        for song in stored.sorted(by: { $0.id < $1.id }) {
            guard let saved = expected.songs[song.id] else { continue }
            let values = (generation.value(song.id, "songID"), generation.value(song.id, "title"), generation.value(song.id, "album"))
            if values != (.uuid(saved.songID), .string(saved.title), .object(saved.album)) {
                problems.append("\(song.id) is \(values), saved as \(saved)")
            }
        }
        return problems
    }

    /// Where the objects a context holds differ from what was acknowledged, and relationships
    /// whose two sides disagree.
    static func viewDisagreements(in c: isolated ObjectContext, seed: Seed, expected: Ledger) -> [String] {
        var problems: [String] = []
        for (i, id) in seed.albums.enumerated() {
            let album = c.object(with: id, as: Album.self)
            if album.rating != Double(expected.increments[i]) { problems.append("\(id).rating is \(String(describing: album.rating)) after \(expected.increments[i]) increments") }
            if album.title != expected.title(i) { problems.append("\(id).title is \(album.title), the last saved is \(expected.title(i))") }
            let artist = seed.artists[expected.artist(i)]
            if album.artist?.objectID != artist { problems.append("\(id).artist is \(String(describing: album.artist?.objectID)), the last saved is \(artist)") }
            if let holder = album.artist, !holder.albums.contains(where: { $0 === album }) {
                problems.append("\(id).artist is \(holder.objectID), whose albums are \(holder.albums.map(\.objectID))")
            }
            let songs = Set(album.songs.map(\.objectID))
            let saved = Set(expected.songs.filter { $0.value.album == id }.keys)
            if songs != saved { problems.append("\(id).songs: \(songs.subtracting(saved).sorted()) not saved, \(saved.subtracting(songs).sorted()) missing") }
            for song in album.songs where song.album !== album {
                problems.append("\(id).songs lists \(song.objectID), whose album is \(String(describing: song.album?.objectID))")
            }
        }
        for (j, id) in seed.artists.enumerated() {
            let albums = Set(c.object(with: id, as: Artist.self).albums.map(\.objectID))
            let saved = Set(seed.albums.indices.filter { expected.artist($0) == j }.map { seed.albums[$0] })
            if albums != saved { problems.append("\(id).albums is \(albums.sorted()), the saves give \(saved.sorted())") }
        }
        return problems
    }
}
