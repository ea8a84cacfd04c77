import Foundation
import Strata

/// Bulk commits straight to a store: a catalogue of artists, albums and songs (unique
/// integer keys on all three, both sides of every relationship) committed in change sets
/// of about 10,000 objects, at `.full` and at `.relaxed` — the store's whole commit pipeline
/// (identity, conflict and unique checks, validation and encoding, the journal, the new
/// generation, the notification), without contexts.
///
/// Reported against the two yardsticks the goals name: a raw sequential `write`+`fsync` of
/// the same bytes in the same chunks, and SQLite (through Python's `sqlite3`, WAL mode,
/// `synchronous=FULL` and `OFF`) inserting the same rows into tables with the same unique
/// keys, foreign keys and indexes on them, in transactions of the same size — see
/// `sqlite_bulk_commit.py` next to this file. `.full` is compared with `synchronous=FULL`
/// (each commit synced) and `.relaxed` with `OFF` (each commit written, not synced).
/// Processor time (every thread of the process) is reported beside wall time: on a shared
/// machine it moves far less. Two differences the figures do not hide: SQLite's side pays
/// for Python (binding each row through `executemany`; `sqlite_bulk_commit.c` is the same
/// work in C), and SQLite keeps an ordered B-tree for each unique key while the store keeps
/// a hash of them, building ordered indexes only when a query first needs one.
enum BulkCommit {
    static let name = "bulk-commit"

    static let schema: Schema = {
        do {
            return try Schema("Catalog", entities: [
                Entity("Artist", attributes: [Attribute("artistID", .int, unique: true), Attribute("name", .string)],
                       relationships: [Relationship("albums", to: "Album", inverse: "artist", toMany: true)]),
                Entity("Album", attributes: [Attribute("albumID", .int, unique: true), Attribute("title", .string), Attribute("year", .int)],
                       relationships: [Relationship("artist", to: "Artist", inverse: "albums"),
                                       Relationship("songs", to: "Song", inverse: "album", toMany: true)]),
                Entity("Song", attributes: [Attribute("songID", .int, unique: true), Attribute("title", .string),
                                            Attribute("duration", .int), Attribute("rating", .double, optional: true)],
                       relationships: [Relationship("album", to: "Album", inverse: "songs")]),
            ])
        } catch {
            fatalError("the catalogue schema is invalid: \(error)")
        }
    }()

    /// Albums per artist and songs per album: 13 objects per artist.
    static let albumsPerArtist = 2, songsPerAlbum = 5
    static let objectsPerArtist = 1 + albumsPerArtist * (1 + songsPerAlbum)

    static func run(_ context: BenchmarkContext) async throws -> GroupReport {
        let objects = context.quick ? 52_000 : 1_000_000
        let batch = 10_000
        let rounds = context.quick ? 1 : 3
        let artists = objects / objectsPerArtist
        let artistsPerBatch = batch / objectsPerArtist
        var report = GroupReport(name: name, title: "Bulk commits to a store (songs, albums, artists; change sets of ~10,000 objects)")
        report.parameters = ["objects": String(artists * objectsPerArtist), "objects per change set": String(artistsPerBatch * objectsPerArtist),
                             "rounds": String(rounds)]

        var strata: [Durability: [Outcome]] = [:]
        var raw: [Double] = []
        for round in 0..<rounds {
            for durability in round % 2 == 0 ? [Durability.full, .relaxed] : [.relaxed, .full] {
                let outcome = try await commit(context.path("bulk-commit"), artists: artists, artistsPerBatch: artistsPerBatch, durability: durability)
                strata[durability, default: []].append(outcome)
                if durability == .full { raw.append(try rawWrites(context.path("bulk-commit-raw"), bytes: outcome.bytes, chunks: outcome.batches)) }
            }
        }
        let sqlite = try runSQLite(directory: context.path("bulk-commit-sqlite"), artists: artists, artistsPerBatch: artistsPerBatch, rounds: rounds)

        let count = Double(artists * objectsPerArtist)
        for durability in [Durability.full, .relaxed] {
            let outcomes = strata[durability] ?? []
            let label = durability.rawValue
            report.add("\(label): commit time", "s", runs: outcomes.map(\.seconds))
            report.add("\(label): time per object", "µs", runs: outcomes.map { $0.seconds / count * 1e6 })
            report.add("\(label): processor time per object", "µs", runs: outcomes.map { $0.processorSeconds / count * 1e6 })
            report.add("\(label): journal throughput", "MB/s", runs: outcomes.map { Double($0.bytes) / $0.seconds / 1e6 })
        }
        let full = strata[.full] ?? []
        report.add("raw write+fsync of the same bytes and chunks", "MB/s", runs: zip(full, raw).map { Double($0.bytes) / $1 / 1e6 })
        report.add("full: commit throughput as share of raw", "%", runs: zip(full, raw).map { $1 / $0.seconds * 100 })
        for (mode, label) in [("full", "full"), ("off", "relaxed")] {
            guard let runs = sqlite.modes[mode] else { continue }
            report.add("SQLite synchronous=\(mode.uppercased()): time", "s", runs: runs.seconds)
            report.add("SQLite synchronous=\(mode.uppercased()): processor time per object", "µs", runs: runs.processorSeconds.map { $0 / count * 1e6 })
            let ours = (strata[label == "full" ? .full : Durability.relaxed] ?? []).map(\.seconds)
            report.add("Strata \(label) time / SQLite synchronous=\(mode.uppercased()) time", "×", runs: zip(ours, runs.seconds).map { $0 / $1 })
        }
        report.parameters["SQLite"] = "\(sqlite.sqliteVersion) via Python \(sqlite.pythonVersion), WAL, foreign keys on, indexes on the foreign keys"
        report.goals.append(GoalCheck("commit of 1,000,000 objects at full: at least 50 % of raw write+fsync",
                                      measured: report.median("full: commit throughput as share of raw"), atLeast: 50))
        return report
    }

    struct Outcome {
        var seconds: Double
        var processorSeconds: Double
        var bytes: Int64
        var batches: Int
    }

    /// The change sets: artist `a` (1-based) with albums `2a-1, 2a` and their songs; every
    /// object's number equals its key, as the store allocates them in order.
    static func changeSets(store: Store, artists: Int, artistsPerBatch: Int) -> [ChangeSet] {
        var sets: [ChangeSet] = []
        var first = 1
        while first <= artists {
            let last = min(first + artistsPerBatch - 1, artists)
            let count = last - first + 1
            let artistIDs = store.allocateObjectIDs(for: "Artist", count: count)
            let albumIDs = store.allocateObjectIDs(for: "Album", count: count * albumsPerArtist)
            let songIDs = store.allocateObjectIDs(for: "Song", count: count * albumsPerArtist * songsPerAlbum)
            var rows: [RowImage] = []
            rows.reserveCapacity(count * objectsPerArtist)
            for (a, artist) in artistIDs.enumerated() {
                let albums = Array(albumIDs[a * albumsPerArtist..<(a + 1) * albumsPerArtist])
                rows.append(RowImage(id: artist, values: [.int(Int64(artist.number)), .string("Artist \(artist.number)"), .objects(albums)]))
                for (b, album) in albums.enumerated() {
                    let start = (a * albumsPerArtist + b) * songsPerAlbum
                    let songs = Array(songIDs[start..<start + songsPerAlbum])
                    let n = Int64(album.number)
                    rows.append(RowImage(id: album, values: [.int(n), .string("Album \(n)"), .int(1960 + n % 60), .object(artist), .objects(songs)]))
                    for song in songs {
                        let s = Int64(song.number)
                        rows.append(RowImage(id: song, values: [
                            .int(s), .string("Song \(s)"), .int(120_000 + (s * 7919) % 240_000),
                            s % 4 == 0 ? .null : .double(Double(s % 50) / 10), .object(album),
                        ]))
                    }
                }
            }
            sets.append(ChangeSet(author: "catalogue", inserted: rows))
            first = last + 1
        }
        return sets
    }

    static func commit(_ path: String, artists: Int, artistsPerBatch: Int, durability: Durability) async throws -> Outcome {
        let store = try Store.create(at: path, schema: schema, configuration: .init(durability: durability))
        defer { removeItem(path) }
        let sets = changeSets(store: store, artists: artists, artistsPerBatch: artistsPerBatch)
        let bytesBefore = store.journal.statistics.bytes
        let processorStart = processorNanoseconds()
        let start = monotonicNanoseconds()
        for set in sets { try await store.commit(set) }
        let seconds = secondsSince(start)
        let processor = Double(processorNanoseconds() - processorStart) / 1e9
        let bytes = store.journal.statistics.bytes - bytesBefore
        let generation = store.currentGeneration
        await store.close()
        try verify(generation, artists: artists)
        return Outcome(seconds: seconds, processorSeconds: processor, bytes: bytes, batches: sets.count)
    }

    /// Checks what the store holds: every object, and each entity's keys 1...n (their sum),
    /// every song linked to its album and every album to its artist.
    static func verify(_ generation: Generation, artists: Int) throws {
        let expected = ["Artist": artists, "Album": artists * albumsPerArtist, "Song": artists * albumsPerArtist * songsPerAlbum]
        var counts: [String: Int] = [:], keySums: [String: Int64] = [:], linked = 0
        generation.forEachRow { row in
            counts[row.id.entity, default: 0] += 1
            if case .int(let key) = row.values[0] { keySums[row.id.entity, default: 0] += key }
            if row.id.entity != "Artist", case .object = row.values[row.id.entity == "Album" ? 3 : 4] { linked += 1 }
        }
        for (entity, count) in expected {
            let n = Int64(count)
            guard counts[entity] == count, keySums[entity] == n * (n + 1) / 2 else {
                throw BenchmarkError("bulk-commit: the store holds \(counts[entity] ?? 0) \(entity) objects with keys summing to \(keySums[entity] ?? 0); expected \(count) with keys 1...\(count)")
            }
        }
        guard linked == expected["Album"]! + expected["Song"]! else {
            throw BenchmarkError("bulk-commit: \(linked) albums and songs refer to their artist or album; expected \(expected["Album"]! + expected["Song"]!)")
        }
    }

    /// Seconds to write `bytes` to a plain file in `chunks` sequential writes, each followed
    /// by `fsync`.
    static func rawWrites(_ path: String, bytes: Int64, chunks: Int) throws -> Double {
        var file = try RawFile(creating: path)
        defer { removeItem(path) }
        let chunk = filler(Int(bytes) / max(chunks, 1))
        let start = monotonicNanoseconds()
        for _ in 0..<chunks {
            try chunk.withUnsafeBytes { try file.append($0) }
            try file.sync()
        }
        return secondsSince(start)
    }

    // MARK: - SQLite

    struct SQLiteSpec: Codable {
        var directory: String
        var artists: Int
        var artistsPerBatch: Int
        var albumsPerArtist: Int
        var songsPerAlbum: Int
        var rounds: Int
    }

    struct SQLiteRuns: Codable {
        var seconds: [Double]
        var processorSeconds: [Double]
        var objects: Int
    }

    struct SQLiteResult: Codable {
        var sqliteVersion: String
        var pythonVersion: String
        var modes: [String: SQLiteRuns]
    }

    static func runSQLite(directory: String, artists: Int, artistsPerBatch: Int, rounds: Int) throws -> SQLiteResult {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { removeItem(directory) }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("sqlite_bulk_commit.py").path
        let spec = SQLiteSpec(directory: directory, artists: artists, artistsPerBatch: artistsPerBatch,
                              albumsPerArtist: albumsPerArtist, songsPerAlbum: songsPerAlbum, rounds: rounds)
        let result: SQLiteResult = try runPythonScript(script, input: spec)
        for (mode, runs) in result.modes where runs.objects != artists * objectsPerArtist {
            throw BenchmarkError("bulk-commit: SQLite (\(mode)) stored \(runs.objects) rows, expected \(artists * objectsPerArtist)")
        }
        return result
    }
}
