import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// Object numbers an input gives by "id", on its lines and in its references: one beyond
/// what a store can count to is refused, naming the line, and the store is unchanged and
/// still numbers new objects.
extension ImportCommandTests {
    @Test(arguments: [
        #"{"entity": "Tag", "id": "Tag/18446744073709551615", "values": {"label": "last"}}"#,
        #"{"entity": "Tag", "id": "Tag/9223372036854775808", "values": {"label": "past"}}"#,
        "{\"entity\": \"Song\", \"values\": {\"songID\": \"\(CommandFixtures.song(9))\", \"title\": \"t\", \"milliseconds\": 1, \"album\": 1, \"tags\": [\"Tag/18446744073709551615\"]}}",
        #"{"entity": "Album", "values": {"albumID": 9, "title": "x", "artist": "Artist/18446744073709551615"}}"#,
        #"{"entity": "Album", "values": {"albumID": 9, "title": "x", "artist": {"id": "Artist/18446744073709551615"}}}"#,
    ])
    func anObjectNumberBeyondWhatAStoreCountsToIsRefused(_ line: String) async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        try await catalog.load(CommandFixtures.sample)
        let before = try catalog.bytes()
        let file = try catalog.file("numbers.jsonl", [#"{"entity": "Tag", "values": {"label": "first"}}"#, line])
        let result = await runTool(["import", catalog.path, file])
        #expect(result.status == 1)
        #expect(result.errors.firstLine.hasPrefix("strata import: \(file):2: "), "\(result.errors)")
        #expect(result.errors.firstLine.contains("18446744073709551615") || result.errors.firstLine.contains("9223372036854775808"), "\(result.errors)")
        #expect(result.errors.firstLine.contains("9223372036854775807"), "\(result.errors)")
        #expect(try catalog.bytes() == before)
        try await catalog.load([#"{"entity": "Tag", "values": {"label": "next"}}"#])
        #expect(try await catalog.generation().count(of: "Tag") == 2)
    }

    /// The largest number accepted leaves the store room to number the objects after it,
    /// and a later line finds them by their numbers.
    @Test func theLargestObjectNumberIsAcceptedAndNumbersGoOnAfterIt() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        try await catalog.load([#"{"entity": "Tag", "id": "Tag/9223372036854775807", "values": {"label": "last"}}"#,
                                #"{"entity": "Tag", "values": {"label": "after"}}"#,
                                #"{"entity": "Tag", "values": {"label": "after that"}}"#,
                                #"{"entity": "Tag", "id": "Tag/9223372036854775809", "values": {"label": "renamed"}}"#])
        let generation = try await catalog.generation()
        #expect(generation.count(of: "Tag") == 3)
        #expect(generation.object(ObjectID(entity: "Tag", number: 9_223_372_036_854_775_807))?.values[0] == .string("last"))
        #expect(generation.object(ObjectID(entity: "Tag", number: 9_223_372_036_854_775_809))?.values[0] == .string("renamed"))
        #expect(generation.integrityProblems().isEmpty)
    }

    /// A store numbered past 2^63 − 1 (a line gave the largest number, the store numbered the
    /// objects after it) dumps numbers above it: they import back, so the dump round trip
    /// holds (the import refused them), and the next line still may not leap far past them.
    @Test func aDumpNumberedPastTheLargestGivenNumberImportsBack() async throws {
        let model = #"{"name": "R", "version": 1, "entities": [{"name": "T", "attributes": [{"name": "k", "type": "string", "unique": true}]}]}"#
        let (first, second) = try await dumpRoundTrip(model: model, input: [
            #"{"entity": "T", "id": "T/9223372036854775807", "values": {"k": "x"}}"#,
            #"{"entity": "T", "values": {"k": "y"}}"#,
            #"{"entity": "T", "values": {"k": "z"}}"#,
            #"{"entity": "T", "id": "T/9223372036854775812", "values": {"k": "w"}}"#,
        ])
        #expect(first.contains(#""id":"T/9223372036854775808""#), "\(first)")
        #expect(first.contains(#""id":"T/9223372036854775812""#), "\(first)")
        #expect(second == first)

        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        try await catalog.load([#"{"entity": "Tag", "id": "Tag/9223372036854775807", "values": {"label": "last"}}"#,
                                #"{"entity": "Tag", "values": {"label": "after"}}"#])
        let before = try catalog.bytes()
        let file = try catalog.file("leap.jsonl", [#"{"entity": "Tag", "id": "Tag/9223372041149743105", "values": {"label": "leap"}}"#])
        let result = await runTool(["import", catalog.path, file])
        #expect(result.status == 1)
        #expect(result.errors.firstLine.contains("past the highest the store has handed out (Tag/9223372036854775808)"), "\(result.errors)")
        #expect(try catalog.bytes() == before)
    }
}
