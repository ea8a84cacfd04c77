import Foundation
import Testing
import Strata

// Model classes as the DocC examples declare them.
final class Artist: ManagedObject {
    @Managed("artistID") var artistID: Int
    @Managed("name") var name: String
    @Managed("founded") var founded: Date?
    @ToMany("albums") var albums: [Album]
    @ToMany("songs") var songs: [Song]
}

final class Album: ManagedObject {
    @Managed("title") var title: String
    @ToOne("artist") var artist: Artist?
    @ToMany("songs") var songs: [Song]
}

final class Song: ManagedObject {
    @Managed("title") var title: String
    @Managed("duration") var duration: Double?
    @Managed("milliseconds") var milliseconds: Int
    @ToOne("artist") var artist: Artist?
    @ToOne("album") var album: Album?
}

func musicSchema() throws -> Schema {
    try Schema("Music", entities: [
        Entity("Artist",
               attributes: [Attribute("artistID", .int, default: .int(0)), Attribute("name", .string),
                            Attribute("founded", .date, optional: true)],
               relationships: [Relationship("albums", to: "Album", inverse: "artist", toMany: true, deleteRule: .cascade),
                               Relationship("songs", to: "Song", inverse: "artist", toMany: true)]),
        Entity("Album",
               attributes: [Attribute("title", .string)],
               relationships: [Relationship("artist", to: "Artist", inverse: "albums"),
                               Relationship("songs", to: "Song", inverse: "album", toMany: true)]),
        Entity("Song",
               attributes: [Attribute("title", .string), Attribute("duration", .double, optional: true),
                            Attribute("milliseconds", .int, default: .int(0))],
               relationships: [Relationship("artist", to: "Artist", inverse: "songs"),
                               Relationship("album", to: "Album", inverse: "songs")]),
    ])
}

/// Each test's stores live in a directory of its own, removed when the test ends (a class
/// suite: one instance per test).
@Suite final class DocumentationExampleTests: Sendable {
    let directory = NSTemporaryDirectory() + "strata-api-docs-" + UUID().uuidString

    init() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func temporaryPath(_ name: String) -> String { directory + "/" + name }

    /// ObjectContext's DocC example, verbatim apart from the set-up.
    @Test func objectContextExample() async throws {
        let store = try Store.create(at: temporaryPath("music.strata"), schema: try musicSchema())
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])

        let viewContext = ObjectContext(coordinator: coordinator, executor: .main, name: "view")
        let id = await viewContext.perform { context in
            let artist = context.insert(Artist.self)
            artist.name = "AC/DC"
            return artist.objectID
        }
        try await viewContext.save()

        let editor = ObjectContext(parent: viewContext, executor: .privateQueue("editor"), name: "editor")
        await editor.perform { context in
            context.object(with: id, as: Artist.self).name = "AC⚡︎DC"
        }
        // Drop `editor` to discard the edit, or save it into the view context:
        try await editor.save()

        let name = await viewContext.perform { c in c.object(with: id, as: Artist.self).name }
        #expect(name == "AC⚡︎DC")
        await store.close()
    }

    /// ManagedObject's, @Managed's, @ToMany's, FetchRequest's, TypedPredicate's and
    /// FetchedResults' DocC examples.
    @Test func objectAndQueryExamples() async throws {
        let store = try Store.create(at: temporaryPath("music.strata"), schema: try musicSchema())
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        let context = ObjectContext(coordinator: coordinator)
        let r = try await context.perform { context in
            let artist = context.insert(Artist.self); artist.name = "AC/DC"
            let album = context.insert(Album.self); album.title = "The Razors Edge"; album.artist = artist
            let song = context.insert(Song.self)
            song.title = "Thunderstruck"          // typed
            song["title"] = .string("T.N.T.")     // dynamic, for every key
            song.milliseconds = 400_000
            song.album = album
            artist.songs.append(song)
            let intro = context.insert(Song.self); intro.title = "Intro"; intro.milliseconds = 500_000; intro.album = album

            var request = FetchRequest(entity: "Song", predicate: try ObjectPredicate(format: "milliseconds > 300000"))
            request.sortBy = [SortKey("title")]
            request.limit = 50
            let songs = try context.fetch(request)

            let long: TypedPredicate<Song> = \.milliseconds > 300_000 && !(\.title == "Intro")
            let longSongs = try context.fetch(Song.self, where: long)
            let byArtist: TypedPredicate<Song> = \.album?.artist?.name == "AC/DC"   // through to-one relationships
            let byArtistSongs = try context.fetch(Song.self, where: byArtist)

            let results = try context.fetchedResults(Song.self, request: FetchRequest(entity: "Song", sortBy: [SortKey("title")]),
                                                     sectionedBy: "album.title")
            var diffs: [ResultsDiff] = []
            results.onChange = { diff in diffs.append(diff) }
            results.searchPredicate = try ObjectPredicate(format: "title CONTAINS[c] 'tnt'")
            return (songs.count, longSongs.map(\.title), byArtistSongs.count, artist.songs.map(\.title), song.artist === artist,
                    results.objects.count, diffs.count, results.sections.map(\.key))
        }
        #expect(r.0 == 2)
        #expect(r.1 == ["T.N.T."])
        #expect(r.2 == 2)
        #expect(r.3 == ["T.N.T."])
        #expect(r.4)
        #expect(r.5 == 0 && r.6 == 1)
        await store.close()
    }

    /// Store's DocC example (with its own two-entity schema, as its row values imply).
    @Test func storeExample() async throws {
        let schema = try Schema("Songbook", version: 1, entities: [
            Entity("Artist",
                   attributes: [Attribute("artistID", .int, unique: true),
                                Attribute("name", .string, optional: true, indexed: true)],
                   relationships: [Relationship("albums", to: "Album", inverse: "artist",
                                                toMany: true, deleteRule: .cascade)],
                   defaultSort: [SortKey("name")]),
            Entity("Album",
                   attributes: [Attribute("albumID", .int, unique: true), Attribute("title", .string)],
                   relationships: [Relationship("artist", to: "Artist", inverse: "albums")]),
        ])
        let path = temporaryPath("songs.strata")
        let store = try Store.create(at: path, schema: schema)
        let artist = store.allocateObjectIDs(for: "Artist")[0]
        try await store.commit(ChangeSet(author: "importer", inserted: [
            RowImage(id: artist, values: [.int(1), .string("AC/DC"), .objects([])])
        ]))
        #expect(store.currentGeneration.count(of: "Artist") == 1)
        await store.close()

        // Coordinator's example
        let reopened = try Store.open(at: path, schema: schema)
        let coordinator = Coordinator(store: reopened, modelClasses: [])
        let viewContext = ObjectContext(coordinator: coordinator, executor: .main, name: "view")
        let count = await viewContext.perform { c in c.objects(ofEntity: "Artist").count }
        #expect(count == 1)
        await reopened.close()
    }

    /// Stack's DocC example.
    @Test func stackExample() async throws {
        let store = try Store.create(at: temporaryPath("music.strata"), schema: try musicSchema())
        let stack = Stack(.hybrid, store: store, modelClasses: [Artist.self, Album.self])
        let importer = stack.newImportContext()
        let id = await importer.perform { c in let a = c.insert(Artist.self); a.name = "imported"; return a.objectID }
        try await stack.save(importer)               // durable when it returns
        #expect(store.currentGeneration.count(of: "Artist") == 1)
        let editor = await stack.newEditorContext()
        await editor.perform { c in c.object(with: id, as: Artist.self).name = "edited" }
        let writes = stack.writerSaves()
        try await stack.save(editor)                 // into the view context, then on to the store
        var outcome: Stack.WriterSaveOutcome?
        for await o in writes { outcome = o; break }
        #expect(outcome?.error == nil && outcome?.transaction != nil)
        await store.close()
    }

    /// MigrationPlan's and MigrationStep's DocC examples.
    @Test func migrationExamples() async throws {
        let v1 = try Schema("Songs", version: 1, entities: [
            Entity("Song", attributes: [Attribute("songID", .int, unique: true), Attribute("title", .string)]),
        ])
        let v2 = try Schema("Songs", version: 2, entities: [
            Entity("Song", attributes: [Attribute("songID", .int, unique: true), Attribute("title", .string),
                                        Attribute("lyrics", .string, default: .string(""))]),
        ])
        let v3 = try Schema("Songs", version: 3, entities: [
            Entity("Song", attributes: [Attribute("songID", .int, unique: true), Attribute("title", .string)],
                   relationships: [Relationship("data", to: "SongData", inverse: "song")]),
            Entity("SongData", attributes: [Attribute("songID", .int, unique: true), Attribute("lyrics", .string)],
                   relationships: [Relationship("song", to: "Song", inverse: "data")]),
        ])
        let path = temporaryPath("songs.strata")
        let old = try Store.create(at: path, schema: v1)
        let ids = old.allocateObjectIDs(for: "Song", count: 2)
        try await old.commit(ChangeSet(inserted: [RowImage(id: ids[0], values: [.int(1), .string("a")]),
                                                  RowImage(id: ids[1], values: [.int(2), .string("b")])]))
        await old.close()

        var step = MigrationStep(from: v2, to: v3)
        step.transform("Song") { song, destination in
            try destination.insert("Song", values: ["songID": song["songID"], "title": song["title"]])
            try destination.insert("SongData", values: ["songID": song["songID"], "lyrics": song["lyrics"]])
        }
        step.link("Song") { song, destination in
            let key = try destination.value(forKey: "songID", of: song)
            if let data = destination.object("SongData", uniqueValue: key) {
                try destination.setValue(.object(data), forKey: "data", of: song)   // SongData.song follows
            }
        }
        let plan = try MigrationPlan(schemas: [v1, v2, v3], steps: [step])
        let store = try await Store.open(at: path, migratingWith: plan) { progress in
        }
        #expect(store.schema.version == 3)
        #expect(store.currentGeneration.count(of: "SongData") == 2)
        await store.close()
    }
}
