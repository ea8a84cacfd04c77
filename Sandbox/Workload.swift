import Foundation
import Strata

/// The songbook the sandbox works with: artists, albums, songs and their data, generated
/// deterministically from a seed.
enum Workload {
    static let schema: Schema = try! Schema("Songbook", version: 1, entities: [
        Entity("Artist",
               attributes: [Attribute("artistID", .int, unique: true), Attribute("name", .string, indexed: true)],
               relationships: [Relationship("albums", to: "Album", inverse: "artist", toMany: true, deleteRule: .cascade)],
               defaultSort: [SortKey("name")]),
        Entity("Album",
               attributes: [Attribute("albumID", .int, unique: true), Attribute("title", .string), Attribute("year", .int)],
               relationships: [Relationship("artist", to: "Artist", inverse: "albums"),
                               Relationship("songs", to: "Song", inverse: "album", toMany: true, deleteRule: .cascade)],
               defaultSort: [SortKey("title")]),
        Entity("Song",
               attributes: [Attribute("songID", .int, unique: true), Attribute("title", .string, indexed: true),
                            Attribute("milliseconds", .int, min: .int(0)), Attribute("rating", .double, optional: true)],
               relationships: [Relationship("album", to: "Album", inverse: "songs"),
                               Relationship("data", to: "SongData", inverse: "song", deleteRule: .cascade)],
               defaultSort: [SortKey("title")]),
        Entity("SongData",
               attributes: [Attribute("lyrics", .string, optional: true), Attribute("artwork", .data, optional: true)],
               relationships: [Relationship("song", to: "Song", inverse: "data")]),
    ])

    static let words = ["Highway", "Thunder", "Back", "Black", "Rock", "Night", "Let", "There", "Be", "Shoot", "Whole",
                        "Lotta", "Rosie", "Dirty", "Deeds", "Jailbreak", "Money", "Talks", "Hells", "Bells", "Stiff", "Upper"]

    static func title(_ rng: inout SplitMix64, words count: Int) -> String {
        (0..<count).map { _ in words[Int(rng.next() % UInt64(words.count))] }.joined(separator: " ")
    }

    /// Change sets inserting `objects` objects in batches of about `batch`: each artist with
    /// albums, each album with songs, each song with its data, both sides of every
    /// relationship set. Object IDs are allocated from `store`.
    static func insertions(objects: Int, batch: Int, seed: UInt64, store: Store) -> [ChangeSet] {
        var rng = SplitMix64(seed: seed)
        var sets: [ChangeSet] = []
        var current = ChangeSet(author: "importer")
        var made = 0
        var artistKey: Int64 = 0, albumKey: Int64 = 0, songKey: Int64 = 0
        while made < objects {
            let artist = store.allocateObjectIDs(for: "Artist")[0]
            artistKey += 1
            var albumIDs: [ObjectID] = []
            var rows: [RowImage] = []
            for _ in 0..<2 {
                let album = store.allocateObjectIDs(for: "Album")[0]
                albumKey += 1
                albumIDs.append(album)
                var songIDs: [ObjectID] = []
                for _ in 0..<3 {
                    let song = store.allocateObjectIDs(for: "Song")[0]
                    let data = store.allocateObjectIDs(for: "SongData")[0]
                    songKey += 1
                    songIDs.append(song)
                    rows.append(RowImage(id: song, values: [
                        .int(songKey), .string(title(&rng, words: 3)), .int(Int64(120_000 + rng.next() % 240_000)),
                        rng.next() % 4 == 0 ? .null : .double(Double(rng.next() % 50) / 10), .object(album), .object(data),
                    ]))
                    rows.append(RowImage(id: data, values: [.string(title(&rng, words: 12)), .null, .object(song)]))
                }
                rows.append(RowImage(id: album, values: [
                    .int(albumKey), .string(title(&rng, words: 2)), .int(Int64(1970 + rng.next() % 50)), .object(artist), .objects(songIDs),
                ]))
            }
            rows.append(RowImage(id: artist, values: [.int(artistKey), .string(title(&rng, words: 2)), .objects(albumIDs)]))
            current.inserted += rows
            made += rows.count
            if current.inserted.count >= batch {
                sets.append(current)
                current = ChangeSet(author: "importer")
            }
        }
        if !current.isEmpty { sets.append(current) }
        return sets
    }
}
