import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// The schema and helpers of the command tests: every attribute type, to-one, to-many and
/// many-to-many relationships, a required relationship, each delete rule, limits, and an
/// entity without a unique attribute (referred to by `Entity/N`).
enum CommandFixtures {
    static let catalog: Schema = try! Schema("Catalog", version: 1, entities: [
        // The songbook's artist; the albums and songs add limits, a required relationship and tags.
        Fixtures.songbook.entity(named: "Artist")!,
        Entity("Album",
               attributes: [Attribute("albumID", .int, unique: true), Attribute("title", .string, maxLength: 40),
                            Attribute("rating", .double, optional: true, min: .double(0), max: .double(5)),
                            Attribute("explicit", .bool, default: .bool(false))],
               relationships: [Relationship("artist", to: "Artist", inverse: "albums"),
                               Relationship("songs", to: "Song", inverse: "album", toMany: true, deleteRule: .deny)]),
        Entity("Song",
               attributes: [Attribute("songID", .uuid, unique: true), Attribute("title", .string),
                            Attribute("artwork", .data, optional: true), Attribute("milliseconds", .int, min: .int(0))],
               relationships: [Relationship("album", to: "Album", inverse: "songs", optional: false),
                               Relationship("tags", to: "Tag", inverse: "songs", toMany: true)]),
        Entity("Tag",
               attributes: [Attribute("label", .string)],
               relationships: [Relationship("songs", to: "Song", inverse: "tags", toMany: true)]),
    ])

    /// A UUID string for song `n`.
    static func song(_ n: Int) -> String { String(format: "00000000-0000-4000-8000-%012d", n) }

    /// A small catalog: two artists, three albums (one listed before its artist), two songs, a tag.
    static let sample = [
        #"{"entity": "Album", "values": {"albumID": 1, "title": "Let There Be Rock", "artist": 1, "rating": 4.5}}"#,
        #"{"entity": "Artist", "values": {"artistID": 1, "name": "AC/DC"}}"#,
        #"{"entity": "Album", "values": {"albumID": 2, "title": "Powerage", "artist": 1, "explicit": true}}"#,
        #"{"entity": "Artist", "values": {"artistID": 2, "name": "Motörhead", "albums": [3]}}"#,
        #"{"entity": "Album", "values": {"albumID": 3, "title": "Ace of Spades", "rating": 4.0}}"#,
        "{\"entity\": \"Song\", \"values\": {\"songID\": \"\(song(1))\", \"title\": \"Whole Lotta Rosie\", \"milliseconds\": 323000, \"album\": 1, \"tags\": [\"Tag/1\"]}}",
        "{\"entity\": \"Song\", \"values\": {\"songID\": \"\(song(2))\", \"title\": \"Ace of Spades\", \"milliseconds\": 169000, \"album\": 3}}",
        #"{"entity": "Tag", "id": "Tag/1", "values": {"label": "classic"}}"#,
    ]
}

/// A temporary directory with a catalog store in it (or a store of another model file's
/// text), driven through the tool.
struct CatalogStore {
    let directory = TemporaryDirectory("strata-cli")
    /// The model file's text; `nil` for the catalog.
    var model: String?
    var path: String { directory.appending("catalog.strata") }

    init(model: String? = nil) { self.model = model }

    /// Creates the store from a model file written for it.
    func create() async throws {
        let model = directory.appending("catalog.json")
        try (self.model ?? CommandFixtures.catalog.modelFileJSON.prettyText).write(toFile: model, atomically: true, encoding: .utf8)
        let created = await runTool(["create", path, "--model", model])
        #expect(created.status == 0, "\(created.errors)")
    }

    /// Writes lines to a file in the directory and returns its path.
    func file(_ name: String, _ lines: [String]) throws -> String {
        let file = directory.appending(name)
        try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    /// Imports lines (the import must succeed).
    func load(_ lines: [String], batchSize: Int? = nil) async throws {
        let file = try file("load-\(UUID().uuidString).jsonl", lines)
        let result = await runTool(["import", path, file] + (batchSize.map { ["--batch-size", String($0)] } ?? []))
        #expect(result.status == 0, "\(result.errors)")
    }

    /// Every file of the store and its bytes.
    func bytes() throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: path) {
            files[name] = try Data(contentsOf: URL(fileURLWithPath: path + "/" + name))
        }
        return files
    }

    /// The store's current contents (opened read-only).
    func generation() async throws -> Generation {
        let store = try Store.open(at: path, configuration: .init(readOnly: true))
        let generation = store.currentGeneration
        await store.close()
        return generation
    }

    func remove() { directory.remove() }
}

extension String {
    /// The first line (without its line break).
    var firstLine: String { String(split(separator: "\n", omittingEmptySubsequences: false).first ?? "") }
}
