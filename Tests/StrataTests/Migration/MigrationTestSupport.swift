import Foundation
import Testing
@testable import Strata

/// Three historical versions of a small music model, and stores written with each.
///
/// - v1: Artist, Album, Song (with `name`, `lyrics`, `length`), Genre, Label.
/// - v2 (inferred from v1): Genre renamed Style, Label removed, Song.name renamed title,
///   Song.length removed, Song.rating added (default 0), Album.year optional → required
///   (default 2000), Album.songs renamed tracks, Artist.styles added, Artist.name made optional.
/// - v3 (custom): Song split into Song + SongData (lyrics), linked by the shared songID.
enum MusicModel {
    /// Albums and their songs, titled: the smallest model with a to-many relationship and
    /// its inverse, for migration edge cases.
    static let disc: Schema = try! Schema("Disc", version: 1, entities: [
        Entity("Album", attributes: [Attribute("title", .string)],
               relationships: [Relationship("songs", to: "Song", inverse: "album", toMany: true)]),
        Entity("Song", attributes: [Attribute("title", .string)],
               relationships: [Relationship("album", to: "Album", inverse: "songs")]),
    ])
    static let v1: Schema = try! Schema("Music", version: 1, entities: [
        Entity("Artist",
               attributes: [Attribute("artistID", .int, unique: true), Attribute("name", .string)],
               relationships: [Relationship("albums", to: "Album", inverse: "artist", toMany: true, deleteRule: .cascade)]),
        Entity("Album",
               attributes: [Attribute("albumID", .int, unique: true), Attribute("title", .string),
                            Attribute("year", .int, optional: true)],
               relationships: [Relationship("artist", to: "Artist", inverse: "albums"),
                               Relationship("songs", to: "Song", inverse: "album", toMany: true, deleteRule: .cascade)]),
        Entity("Song",
               attributes: [Attribute("songID", .int, unique: true), Attribute("name", .string),
                            Attribute("lyrics", .string, optional: true), Attribute("length", .int)],
               relationships: [Relationship("album", to: "Album", inverse: "songs")]),
        Entity("Genre", attributes: [Attribute("name", .string, unique: true)]),
        Entity("Label", attributes: [Attribute("name", .string)]),
    ])

    static let v2: Schema = try! Schema("Music", version: 2, entities: [
        Entity("Artist",
               attributes: [Attribute("artistID", .int, unique: true), Attribute("name", .string, optional: true)],
               relationships: [Relationship("albums", to: "Album", inverse: "artist", toMany: true, deleteRule: .cascade),
                               Relationship("styles", to: "Style", inverse: "artists", toMany: true)]),
        Entity("Album",
               attributes: [Attribute("albumID", .int, unique: true), Attribute("title", .string),
                            Attribute("year", .int, default: .int(2000))],
               relationships: [Relationship("artist", to: "Artist", inverse: "albums"),
                               Relationship("tracks", to: "Song", inverse: "album", toMany: true, deleteRule: .cascade,
                                            renamedFrom: "songs")]),
        Entity("Song",
               attributes: [Attribute("songID", .int, unique: true), Attribute("title", .string, renamedFrom: "name"),
                            Attribute("lyrics", .string, optional: true), Attribute("rating", .int, default: .int(0))],
               relationships: [Relationship("album", to: "Album", inverse: "tracks")]),
        Entity("Style", attributes: [Attribute("name", .string, unique: true)],
               relationships: [Relationship("artists", to: "Artist", inverse: "styles", toMany: true)],
               renamedFrom: "Genre"),
    ])

    static let v3: Schema = try! Schema("Music", version: 3, entities: [
        Entity("Artist",
               attributes: [Attribute("artistID", .int, unique: true), Attribute("name", .string, optional: true)],
               relationships: [Relationship("albums", to: "Album", inverse: "artist", toMany: true, deleteRule: .cascade),
                               Relationship("styles", to: "Style", inverse: "artists", toMany: true)]),
        Entity("Album",
               attributes: [Attribute("albumID", .int, unique: true), Attribute("title", .string),
                            Attribute("year", .int, default: .int(2000))],
               relationships: [Relationship("artist", to: "Artist", inverse: "albums"),
                               Relationship("tracks", to: "Song", inverse: "album", toMany: true, deleteRule: .cascade)]),
        Entity("Song",
               attributes: [Attribute("songID", .int, unique: true), Attribute("title", .string),
                            Attribute("rating", .int, default: .int(0))],
               relationships: [Relationship("album", to: "Album", inverse: "tracks"),
                               Relationship("data", to: "SongData", inverse: "song", optional: false, deleteRule: .cascade)]),
        Entity("SongData",
               attributes: [Attribute("songID", .int, unique: true), Attribute("lyrics", .string, optional: true),
                            Attribute("source", .string)],
               relationships: [Relationship("song", to: "Song", inverse: "data", optional: false)]),
        Entity("Style", attributes: [Attribute("name", .string, unique: true)],
               relationships: [Relationship("artists", to: "Artist", inverse: "styles", toMany: true)]),
    ])

    /// The v2 → v3 split: each Song becomes a Song and a SongData sharing its songID.
    static var split: MigrationStep {
        var step = MigrationStep(from: v2, to: v3)
        step.transform("Song") { song, destination in
            try destination.insert("Song", values: ["songID": song["songID"], "title": song["title"], "rating": song["rating"]])
            try destination.insert("SongData", values: ["songID": song["songID"], "lyrics": song["lyrics"]])
        }
        step.link("Song") { song, destination in
            let key = try destination.value(forKey: "songID", of: song)
            guard let data = destination.object("SongData", uniqueValue: key) else {
                throw MigrationError(.transformFailed, "no SongData with songID \(key)", object: song, key: "data")
            }
            try destination.setValue(.object(data), forKey: "data", of: song)
        }
        return step
    }

    static func plan(modelClasses: [ManagedObject.Type] = [SongDataModel.self]) throws -> MigrationPlan {
        try MigrationPlan(schemas: [v1, v2, v3], steps: [split], modelClasses: modelClasses)
    }

    /// A row of `entity` from values by key (relationships as given; the rest new-object values).
    static func row(_ schema: Schema, _ entity: String, _ number: UInt64, _ values: [String: Value]) -> RowImage {
        let e = schema.entity(named: entity)!
        var row = e.newObjectValues
        for (key, value) in values { row[e.propertyIndex(named: key)!] = value }
        return RowImage(id: ObjectID(entity: entity, number: number), values: row)
    }

    static func id(_ entity: String, _ number: UInt64) -> ObjectID { ObjectID(entity: entity, number: number) }

    /// Two artists, three albums (one without a year), six songs, two genres, one label.
    static func v1Rows() -> [RowImage] {
        let s = v1
        let head: [RowImage] = [
            row(s, "Artist", 1, ["artistID": .int(1), "name": .string("AC/DC"), "albums": .objects([id("Album", 1), id("Album", 2)])]),
            row(s, "Artist", 2, ["artistID": .int(2), "name": .string("Björk"), "albums": .objects([id("Album", 3)])]),
            row(s, "Album", 1, ["albumID": .int(10), "title": .string("Let There Be Rock"), "year": .int(1977),
                                "artist": .object(id("Artist", 1)), "songs": .objects([id("Song", 1), id("Song", 2)])]),
            row(s, "Album", 2, ["albumID": .int(11), "title": .string("Powerage"),
                                "artist": .object(id("Artist", 1)), "songs": .objects([id("Song", 3), id("Song", 4)])]),
            row(s, "Album", 3, ["albumID": .int(12), "title": .string("Homogenic"), "year": .int(1997),
                                "artist": .object(id("Artist", 2)), "songs": .objects([id("Song", 5), id("Song", 6)])]),
        ]
        let songs: [RowImage] = (1...6).map { (n: Int) -> RowImage in
            let lyrics: Value = n == 6 ? .null : .string("words \(n)")
            let album = Value.object(id("Album", UInt64((n + 1) / 2)))
            let values: [String: Value] = ["songID": .int(Int64(100 + n)), "name": .string("Song \(n)"), "lyrics": lyrics,
                                           "length": .int(Int64(200 + n)), "album": album]
            return row(s, "Song", UInt64(n), values)
        }
        return head + songs + [
            row(s, "Genre", 1, ["name": .string("Rock")]),
            row(s, "Genre", 2, ["name": .string("Electronic")]),
            row(s, "Label", 1, ["name": .string("Albert")]),
        ]
    }

    /// The same music written with v2 (what v1's rows become).
    static func v2Rows() -> [RowImage] {
        let s = v2
        let head: [RowImage] = [
            row(s, "Artist", 1, ["artistID": .int(1), "name": .string("AC/DC"), "albums": .objects([id("Album", 1), id("Album", 2)])]),
            row(s, "Artist", 2, ["artistID": .int(2), "name": .string("Björk"), "albums": .objects([id("Album", 3)])]),
            row(s, "Album", 1, ["albumID": .int(10), "title": .string("Let There Be Rock"), "year": .int(1977),
                                "artist": .object(id("Artist", 1)), "tracks": .objects([id("Song", 1), id("Song", 2)])]),
            row(s, "Album", 2, ["albumID": .int(11), "title": .string("Powerage"), "year": .int(2000),
                                "artist": .object(id("Artist", 1)), "tracks": .objects([id("Song", 3), id("Song", 4)])]),
            row(s, "Album", 3, ["albumID": .int(12), "title": .string("Homogenic"), "year": .int(1997),
                                "artist": .object(id("Artist", 2)), "tracks": .objects([id("Song", 5), id("Song", 6)])]),
        ]
        let songs: [RowImage] = (1...6).map { (n: Int) -> RowImage in
            let lyrics: Value = n == 6 ? .null : .string("words \(n)")
            let album = Value.object(id("Album", UInt64((n + 1) / 2)))
            let values: [String: Value] = ["songID": .int(Int64(100 + n)), "title": .string("Song \(n)"), "lyrics": lyrics,
                                           "album": album]
            return row(s, "Song", UInt64(n), values)
        }
        return head + songs + [
            row(s, "Style", 1, ["name": .string("Rock")]),
            row(s, "Style", 2, ["name": .string("Electronic")]),
        ]
    }

    /// Creates a store written with `version` (1 or 2) at `path`, in two transactions.
    static func createStore(version: Int, at path: String, fileIO: any FileIO = POSIXFileIO()) async throws {
        let schema = version == 1 ? v1 : v2
        let rows = version == 1 ? v1Rows() : v2Rows()
        let store = try Store.create(at: path, schema: schema, configuration: .init(durability: .full, fileIO: fileIO))
        for entity in schema.entities {
            _ = store.allocateObjectIDs(for: entity.name, count: rows.filter { $0.id.entity == entity.name }.count)
        }
        try await store.commit(ChangeSet(author: "fixture", inserted: rows))
        _ = store.allocateObjectIDs(for: version == 1 ? "Genre" : "Style")
        try await store.commit(ChangeSet(author: "fixture", inserted: [row(schema, version == 1 ? "Genre" : "Style", 3, ["name": .string("Jazz")])]))
        await store.close()
    }

    /// Everything a v3 store must hold after migrating the fixture (from v1 or v2).
    static func checkMigrated(_ generation: Generation, sourceVersion: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(generation.schema.version == 3, sourceLocation: sourceLocation)
        #expect(generation.integrityProblems().isEmpty, "\(generation.integrityProblems())", sourceLocation: sourceLocation)
        #expect(generation.count(of: "Song") == 6, sourceLocation: sourceLocation)
        #expect(generation.count(of: "SongData") == 6, sourceLocation: sourceLocation)
        #expect(generation.count(of: "Album") == 3, sourceLocation: sourceLocation)
        #expect(generation.count(of: "Style") == 3, sourceLocation: sourceLocation)
        let s = generation.schema.entity(named: "Song")!
        let d = generation.schema.entity(named: "SongData")!
        for n in UInt64(1)...6 {
            guard let song = generation.object(id("Song", n)) else {
                Issue.record("Song/\(n) is missing", sourceLocation: sourceLocation)
                continue
            }
            #expect(song.values[s.propertyIndex(named: "songID")!] == .int(Int64(100 + n)), sourceLocation: sourceLocation)
            #expect(song.values[s.propertyIndex(named: "title")!] == .string("Song \(n)"), sourceLocation: sourceLocation)
            #expect(song.values[s.propertyIndex(named: "rating")!] == .int(0), sourceLocation: sourceLocation)
            #expect(song.values[s.propertyIndex(named: "album")!] == .object(id("Album", (n + 1) / 2)), sourceLocation: sourceLocation)
            guard case .object(let dataID) = song.values[s.propertyIndex(named: "data")!], let data = generation.object(dataID) else {
                Issue.record("Song/\(n) has no SongData", sourceLocation: sourceLocation)
                continue
            }
            #expect(data.values[d.propertyIndex(named: "songID")!] == .int(Int64(100 + n)), sourceLocation: sourceLocation)
            #expect(data.values[d.propertyIndex(named: "lyrics")!] == (n == 6 ? .null : .string("words \(n)")), sourceLocation: sourceLocation)
            #expect(data.values[d.propertyIndex(named: "song")!] == .object(song.id), sourceLocation: sourceLocation)
            #expect(data.values[d.propertyIndex(named: "source")!] == .string("migrated"), sourceLocation: sourceLocation)
        }
        let album = generation.schema.entity(named: "Album")!
        let powerage = generation.object(id("Album", 2))!
        #expect(powerage.values[album.propertyIndex(named: "year")!] == .int(2000), sourceLocation: sourceLocation)
        #expect(powerage.values[album.propertyIndex(named: "tracks")!] == .objects([id("Song", 3), id("Song", 4)]), sourceLocation: sourceLocation)
        #expect(generation.object(of: "Style", uniqueValue: .string("Electronic")) != nil, sourceLocation: sourceLocation)
        #expect(generation.schema.entity(named: "Label") == nil && generation.schema.entity(named: "Genre") == nil, sourceLocation: sourceLocation)
        let artist = generation.schema.entity(named: "Artist")!
        for object in generation.objects(of: "Artist") {
            #expect(object.values[artist.propertyIndex(named: "styles")!] == .objects([]), sourceLocation: sourceLocation)
        }
        let acdc = generation.object(id("Artist", 1))!
        #expect(acdc.values[artist.propertyIndex(named: "albums")!] == .objects([id("Album", 1), id("Album", 2)]), sourceLocation: sourceLocation)
        #expect(acdc.values[artist.propertyIndex(named: "name")!] == .string("AC/DC"), sourceLocation: sourceLocation)
    }

    /// Every file of a store directory, by name.
    static func files(_ path: String) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: path) {
            result[name] = try Data(contentsOf: URL(fileURLWithPath: path + "/" + name))
        }
        return result
    }
}

/// Small stores of a test's own schema, and migrations whose failure is a value.
enum MigrationFixture {
    /// Creates a store of `schema` holding `rows` (one transaction).
    static func makeStore(at path: String, _ schema: Schema, _ rows: [RowImage]) async throws {
        let store = try Store.create(at: path, schema: schema, configuration: .init(durability: .none))
        for entity in schema.entities {
            let count = rows.filter { $0.id.entity == entity.name }.count
            if count > 0 { _ = store.allocateObjectIDs(for: entity.name, count: count) }
        }
        try await store.commit(ChangeSet(author: "fixture", inserted: rows))
        await store.close()
    }

    /// Migrates the store at `path` and closes it; the error, if any.
    static func migrate(_ path: String, _ plan: MigrationPlan) async -> MigrationError? {
        do throws(MigrationError) {
            let store = try await Store.open(at: path, migratingWith: plan)
            await store.close()
            return nil
        } catch {
            return error
        }
    }

    /// Album.songs ↔ Song.album and Album.featured ↔ Song.featuredOn in v1; v2 keeps every
    /// name, type and destination but pairs them the other way round (a model whose inverses
    /// were crossed, repaired).
    static let crossedV1: Schema = try! Schema("Disco", version: 1, entities: [
        Entity("Album", attributes: [Attribute("title", .string)],
               relationships: [Relationship("songs", to: "Song", inverse: "album", toMany: true),
                               Relationship("featured", to: "Song", inverse: "featuredOn", toMany: true)]),
        Entity("Song", attributes: [Attribute("title", .string)],
               relationships: [Relationship("album", to: "Album", inverse: "songs"),
                               Relationship("featuredOn", to: "Album", inverse: "featured")]),
    ])
    static let crossedV2: Schema = try! Schema("Disco", version: 2, entities: [
        Entity("Album", attributes: [Attribute("title", .string)],
               relationships: [Relationship("songs", to: "Song", inverse: "featuredOn", toMany: true),
                               Relationship("featured", to: "Song", inverse: "album", toMany: true)]),
        Entity("Song", attributes: [Attribute("title", .string)],
               relationships: [Relationship("album", to: "Album", inverse: "featured"),
                               Relationship("featuredOn", to: "Album", inverse: "songs")]),
    ])
    /// Song/1 is on Album/1 and featured on Album/2.
    static func crossedRows() -> [RowImage] {
        let s = crossedV1
        return [
            MusicModel.row(s, "Album", 1, ["title": .string("A"), "songs": .objects([MusicModel.id("Song", 1)]), "featured": .objects([])]),
            MusicModel.row(s, "Album", 2, ["title": .string("B"), "songs": .objects([]), "featured": .objects([MusicModel.id("Song", 1)])]),
            MusicModel.row(s, "Song", 1, ["title": .string("S"), "album": .object(MusicModel.id("Album", 1)),
                                          "featuredOn": .object(MusicModel.id("Album", 2))]),
        ]
    }
}

/// SongData's model class: its `awakeFromInsert` sets where the object came from.
final class SongDataModel: ManagedObject {
    override class var entityName: String { "SongData" }
    @Managed("source") var source: String
    override func awakeFromInsert() {
        super.awakeFromInsert()
        source = "migrated"
    }
}
