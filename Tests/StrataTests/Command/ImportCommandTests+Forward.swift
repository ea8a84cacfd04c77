import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// Forward references take effect in the input's order: a later line that sets the
/// relationship through its inverse wins over a reference still waiting, as it would if the
/// object had been there all along; and a reference by ID waits for the line that names
/// that ID, never for an object that happens to be numbered so.
extension ImportCommandTests {
    @Test func aLaterLineSettingTheInverseWinsOverAReferenceStillWaiting() async throws {
        let album = #"{"entity": "Album", "values": {"albumID": 1, "title": "x", "artist": 5}}"#
        let otherArtist = #"{"entity": "Artist", "values": {"artistID": 6, "albums": [1]}}"#  // moves the album
        let artist = #"{"entity": "Artist", "values": {"artistID": 5}}"#
        // The album's artist comes later (a reference waits) or first (it is linked at once).
        for lines in [[album, otherArtist, artist], [artist, album, otherArtist]] {
            let catalog = CatalogStore()
            defer { catalog.remove() }
            try await catalog.create()
            try await catalog.load(lines)
            let generation = try await catalog.generation()
            let six = try #require(generation.object(of: "Artist", uniqueValue: .int(6)))
            let five = try #require(generation.object(of: "Artist", uniqueValue: .int(5)))
            let first = try #require(generation.object(of: "Album", uniqueValue: .int(1)))
            #expect(first.values[4] == .object(six.id), "\(lines)")
            #expect(six.values[3] == .objects([first.id]), "\(lines)")
            #expect(five.values[3] == .objects([]), "\(lines)")
            #expect(generation.integrityProblems().isEmpty)
        }
    }

    @Test func aForwardReferenceByIDWaitsForTheLineThatNamesTheID() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let song = "{\"entity\": \"Song\", \"values\": {\"songID\": \"\(CommandFixtures.song(1))\", \"title\": \"s\", \"milliseconds\": 1, \"album\": 1, \"tags\": [\"Tag/1\"]}}"
        let lines = [
            #"{"entity": "Album", "values": {"albumID": 1, "title": "x"}}"#,
            song,  // waits for Tag/1
            #"{"entity": "Tag", "values": {"label": "numbered by the store"}}"#,
            #"{"entity": "Tag", "id": "Tag/1", "values": {"label": "named"}}"#,
        ]
        try await catalog.load(lines)
        let generation = try await catalog.generation()
        #expect(generation.count(of: "Tag") == 2)
        let named = try #require(generation.object(ObjectID(entity: "Tag", number: 1)))
        #expect(named.values[0] == .string("named"))
        #expect(named.values[1].referencedObjects.count == 1)
        let numbered = try #require(generation.objects(of: "Tag").first { $0.values[0] == .string("numbered by the store") })
        #expect(numbered.id != named.id)
        #expect(numbered.values[1] == .objects([]))
        #expect(generation.integrityProblems().isEmpty)

        // Without a line naming Tag/1 the reference is unresolved, and the error says what to do.
        let other = CatalogStore()
        defer { other.remove() }
        try await other.create()
        let file = try other.file("unnamed.jsonl", Array(lines.dropLast()))
        let result = await runTool(["import", other.path, file])
        #expect(result.status == 1)
        #expect(result.errors.firstLine == "strata import: \(file):2: Song.tags: no Tag with ID Tag/1; the reference is still unresolved at the end of the input (give the line that creates it \"id\": \"Tag/1\")", "\(result.errors)")
        #expect(try await other.generation().totalCount == 0)

        // A number the store has handed out (here, a deleted object's) cannot be created again.
        #expect(await runTool(["delete", catalog.path, "--entity", "Tag", "--where", "label == 'numbered by the store'"]).status == 0)
        let deleted = numbered.id.description
        let again = try catalog.file("deleted.jsonl", [
            "{\"entity\": \"Song\", \"values\": {\"songID\": \"\(CommandFixtures.song(2))\", \"title\": \"t\", \"milliseconds\": 1, \"album\": 1, \"tags\": [\"\(deleted)\"]}}",
        ])
        let refused = await runTool(["import", catalog.path, again])
        #expect(refused.status == 1)
        #expect(refused.errors.firstLine.hasSuffix("(the store has handed out that number already, so no line can create it: refer to an existing Tag)"), "\(refused.errors)")
    }
}

extension ImportCommandTests {
    /// One object named twice in a list, by key and by ID, is refused when it comes later in
    /// the input, as it is when it is there already: the line's error, whichever line creates it.
    @Test func aListNamingALaterObjectByKeyAndByIDIsRefused() async throws {
        for batchSize in [nil, 1] as [Int?] {
            let catalog = CatalogStore()
            defer { catalog.remove() }
            try await catalog.create()
            try await catalog.load(CommandFixtures.sample)
            let before = try catalog.bytes()
            let file = try catalog.file("twice.jsonl", [
                #"{"entity": "Artist", "values": {"artistID": 1, "albums": [77, {"id": "Album/9"}]}}"#,
                #"{"entity": "Album", "id": "Album/9", "values": {"albumID": 77, "title": "x"}}"#,
            ])
            let result = await runTool(["import", catalog.path, file] + (batchSize.map { ["--batch-size", String($0)] } ?? []))
            #expect(result.status == 1, "\(batchSize as Any)")
            #expect(result.errors.firstLine.hasPrefix("strata import: \(file):1: Artist.albums lists Album/9 twice"), "\(result.errors)")
            #expect(try catalog.bytes() == before)
        }
    }
}

extension ImportCommandTests {
    /// A line whose references are still unresolved at the end names the first of them, in
    /// its list's order: the same input gives the same error every time.
    @Test func theFirstUnresolvedReferenceOfALineIsNamed() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let keys = (1...40).map(String.init).joined(separator: ", ")
        let file = try catalog.file("unresolved.jsonl", [#"{"entity": "Artist", "values": {"artistID": 1, "albums": [\#(keys)]}}"#])
        let result = await runTool(["import", catalog.path, file])
        #expect(result.status == 1)
        #expect(result.errors.firstLine == "strata import: \(file):1: Artist.albums: no Album with albumID 1; the reference is still unresolved at the end of the input")
    }
}
