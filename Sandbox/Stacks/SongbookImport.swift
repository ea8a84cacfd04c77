import Foundation
import Strata

/// One record of the songbook import, as an importer reads it from a feed: attributes and
/// references to other records by key.
enum SongbookRecord: Sendable {
    case artist(key: Int64, name: String)
    case album(key: Int64, title: String, year: Int64, artist: Int64)
    case song(key: Int64, title: String, milliseconds: Int64, rating: Double?, album: Int64, data: Int64)
    case songData(key: Int64, lyrics: String)
}

/// The importer of the stack scenarios: reads songbook records, creates the objects in an
/// import context, resolves the references by key in a second pass, and saves every
/// `saveEvery` objects through the stack — Kugler's importer.
struct SongbookImport: Sendable {
    /// The records, in feed order: every group of an artist with its albums, songs and song
    /// data is contiguous, and references point forward within it (a song names its album
    /// before the album record arrives), so the second pass is needed.
    let records: [SongbookRecord]
    let saveEvery: Int

    /// What one save did and when.
    struct Save: Sendable {
        /// When the importer called save and when the call returned.
        var called: UInt64
        var returned: UInt64
        /// The largest song key in the store once the save is committed.
        var newestSong: Int64
        var objects: Int
    }

    init(objects: Int, saveEvery: Int, seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var records: [SongbookRecord] = []
        records.reserveCapacity(objects + 15)
        var artist: Int64 = 0, album: Int64 = 0, song: Int64 = 0, data: Int64 = 0
        while records.count < objects {
            artist += 1
            var group: [SongbookRecord] = []
            var albums: [SongbookRecord] = []
            for _ in 0..<2 {
                album += 1
                for _ in 0..<3 {
                    song += 1
                    data += 1
                    let rating: Double? = rng.next() % 4 == 0 ? nil : Double(rng.next() % 50) / 10
                    group.append(.song(key: song, title: Workload.title(&rng, words: 3), milliseconds: Int64(120_000 + rng.next() % 240_000),
                                       rating: rating, album: album, data: data))
                    group.append(.songData(key: data, lyrics: Workload.title(&rng, words: 12)))
                }
                albums.append(.album(key: album, title: Workload.title(&rng, words: 2), year: Int64(1970 + rng.next() % 50), artist: artist))
            }
            records += group + albums + [.artist(key: artist, name: Workload.title(&rng, words: 2))]
        }
        self.records = records
        self.saveEvery = saveEvery
    }

    /// Batches of records, each ending at a group boundary once it holds `saveEvery` records.
    var batches: [ArraySlice<SongbookRecord>] {
        var result: [ArraySlice<SongbookRecord>] = []
        var start = 0
        for (index, record) in records.enumerated() {
            guard case .artist = record, index + 1 - start >= saveEvery || index + 1 == records.count else { continue }
            result.append(records[start...index])
            start = index + 1
        }
        if start < records.count { result.append(records[start...]) }
        return result
    }

    /// Runs the import through `stack` in `importer` (one of its import contexts), calling
    /// `saved` after every save.
    func run(on stack: Stack, in importer: ObjectContext, saved: @Sendable (Save) -> Void) async throws {
        var newestSong: Int64 = 0
        for batch in batches {
            let count = try await importer.perform { context throws -> Int64 in
                try Self.insert(batch, into: context)
            }
            newestSong = max(newestSong, count)
            let called = Measure.now()
            try await stack.save(importer)
            saved(Save(called: called, returned: Measure.now(), newestSong: newestSong, objects: batch.count))
            // What was saved is the store's now: the importer lets go of it.
            await importer.perform { context in context.reset() }
        }
    }

    /// Pass one creates every object of the batch with its attributes; pass two connects
    /// them by key. Returns the largest song key inserted.
    private static func insert(_ batch: ArraySlice<SongbookRecord>, into context: isolated ObjectContext) throws(StoreError) -> Int64 {
        var artists: [Int64: ManagedObject] = [:], albums: [Int64: ManagedObject] = [:]
        var songs: [(object: ManagedObject, album: Int64, data: Int64)] = []
        var songData: [Int64: ManagedObject] = [:]
        var albumArtists: [(object: ManagedObject, artist: Int64)] = []
        var newest: Int64 = 0
        for record in batch {
            switch record {
            case .artist(let key, let name):
                let artist = context.insert(entity: "Artist")
                try artist.setValue(.int(key), forKey: "artistID")
                try artist.setValue(.string(name), forKey: "name")
                artists[key] = artist
            case .album(let key, let title, let year, let artist):
                let album = context.insert(entity: "Album")
                try album.setValue(.int(key), forKey: "albumID")
                try album.setValue(.string(title), forKey: "title")
                try album.setValue(.int(year), forKey: "year")
                albums[key] = album
                albumArtists.append((album, artist))
            case .song(let key, let title, let milliseconds, let rating, let album, let data):
                let song = context.insert(entity: "Song")
                try song.setValue(.int(key), forKey: "songID")
                try song.setValue(.string(title), forKey: "title")
                try song.setValue(.int(milliseconds), forKey: "milliseconds")
                try song.setValue(rating.map(Value.double) ?? .null, forKey: "rating")
                songs.append((song, album, data))
                newest = max(newest, key)
            case .songData(let key, let lyrics):
                let data = context.insert(entity: "SongData")
                try data.setValue(.string(lyrics), forKey: "lyrics")
                songData[key] = data
            }
        }
        for (album, key) in albumArtists {
            guard let artist = artists[key] else { throw StoreError(.danglingReference, "album \(album.objectID) names artist \(key), which is not in the feed") }
            try album.setRelatedObject(artist, forKey: "artist")
        }
        for (song, albumKey, dataKey) in songs {
            guard let album = albums[albumKey], let data = songData[dataKey] else {
                throw StoreError(.danglingReference, "song \(song.objectID) names album \(albumKey) or song data \(dataKey), which is not in the feed")
            }
            try song.setRelatedObject(album, forKey: "album")
            try song.setRelatedObject(data, forKey: "data")
        }
        return newest
    }
}
