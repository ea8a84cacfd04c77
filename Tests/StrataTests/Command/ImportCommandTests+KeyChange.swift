import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// A line that names an object by its `"id"` may give it a new unique key: the key changes
/// (it used to be ignored without a word), the old key is free for later lines, references
/// to the new key resolve to it, and a key another object holds is refused — also by a line
/// whose "id" names no object.
extension ImportCommandTests {
    @Test func aLineWithAnIDChangesTheObjectsUniqueKey() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        try await catalog.load(CommandFixtures.sample)
        let before = try await catalog.generation()
        let acdc = try #require(before.object(of: "Artist", uniqueValue: .int(1))).id
        try await catalog.load([
            #"{"entity": "Album", "values": {"albumID": 40, "title": "Forward", "artist": 7}}"#,  // waits for key 7
            #"{"entity": "Artist", "id": "\#(acdc)", "values": {"artistID": 7, "name": "AC-DC"}}"#,
            #"{"entity": "Artist", "values": {"artistID": 1, "name": "Another"}}"#,  // key 1 is free again: a new artist
        ])
        let generation = try await catalog.generation()
        #expect(generation.object(acdc)?.values[0] == .int(7))
        #expect(generation.object(acdc)?.values[1] == .string("AC-DC"))
        #expect(generation.object(of: "Artist", uniqueValue: .int(7))?.id == acdc)
        let another = try #require(generation.object(of: "Artist", uniqueValue: .int(1)))
        #expect(another.id != acdc && another.values[1] == .string("Another"))
        #expect(generation.object(of: "Album", uniqueValue: .int(40))?.values[4] == .object(acdc))
        #expect(generation.integrityProblems().isEmpty)

        // A key another object holds is refused, naming the line, and nothing is committed.
        let file = try catalog.file("clash.jsonl", [#"{"entity": "Artist", "id": "\#(acdc)", "values": {"artistID": 2}}"#])
        let clash = await runTool(["import", catalog.path, file])
        #expect(clash.status == 1)
        #expect(clash.errors.contains("clash.jsonl:1"), "\(clash.errors)")
        #expect(try await catalog.generation().object(acdc)?.values[0] == .int(7))

        // So is a line whose "id" names no object while its key belongs to one: it used to
        // update the key's holder without a word about the "id".
        let bytes = try catalog.bytes()
        let unknown = try catalog.file("unknown.jsonl", [
            #"{"entity": "Tag", "values": {"label": "fine"}}"#,
            #"{"entity": "Artist", "id": "Artist/90", "values": {"artistID": 2, "name": "Not Motörhead"}}"#,
        ])
        let refused = await runTool(["import", catalog.path, unknown])
        #expect(refused.status == 1)
        #expect(refused.errors.firstLine.hasPrefix("strata import: \(unknown):2: "), "\(refused.errors)")
        #expect(refused.errors.firstLine.contains("Artist/90"), "\(refused.errors)")
        #expect(try catalog.bytes() == bytes)
    }
}
