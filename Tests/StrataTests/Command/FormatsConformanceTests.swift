import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// The command line against docs FORMATS.md: behaviour that outside scripts rely on exactly.
@Suite struct FormatsConformanceTests {
    /// FORMATS §3: "`dump` of a store and `import` of that dump into a fresh store with the
    /// same model give an identical `dump`." A to-many list whose order is not the order in
    /// which its destinations appear in the dump must keep its order.
    @Test func aToManyListKeepsItsOrderThroughADump() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        try await catalog.load([
            #"{"entity": "Album", "values": {"albumID": 1, "title": "One"}}"#,
            #"{"entity": "Album", "values": {"albumID": 2, "title": "Two"}}"#,
            #"{"entity": "Album", "values": {"albumID": 3, "title": "Three"}}"#,
            #"{"entity": "Artist", "values": {"artistID": 1, "name": "A", "albums": [3, 1, 2]}}"#,
        ])
        let dump = await runTool(["dump", catalog.path])
        #expect(dump.status == 0, "\(dump.errors)")
        #expect(dump.output.contains(#""albums":[3,1,2]"#), "\(dump.output)")

        let fresh = CatalogStore()
        defer { fresh.remove() }
        try await fresh.create()
        let dumpFile = try fresh.file("dump.jsonl", dump.output.split(separator: "\n").map(String.init))
        let imported = await runTool(["import", fresh.path, dumpFile])
        #expect(imported.status == 0, "\(imported.errors)")
        let again = await runTool(["dump", fresh.path])
        #expect(again.output == dump.output)
    }

    /// The same guarantee where the line with the list comes before its destinations: the
    /// list keeps the order the line gave.
    @Test func aForwardReferencedListKeepsTheOrderItsLineGave() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        try await catalog.load([
            #"{"entity": "Artist", "values": {"artistID": 1, "name": "A", "albums": [3, 1, 2]}}"#,
            #"{"entity": "Album", "values": {"albumID": 1, "title": "One"}}"#,
            #"{"entity": "Album", "values": {"albumID": 2, "title": "Two"}}"#,
            #"{"entity": "Album", "values": {"albumID": 3, "title": "Three"}}"#,
        ])
        let query = await runTool(["query", catalog.path, "--entity", "Artist", "--where", "artistID == 1"])
        #expect(query.status == 0, "\(query.errors)")
        #expect(query.output.contains(#""albums":[3,1,2]"#), "\(query.output)")
    }

    /// FORMATS §3: the dump guarantee holds for an object whose optional unique key is a
    /// string and is null (the dump names it by "Entity/N").
    @Test func aDumpNamingAnObjectWithoutAStringKeyImportsBack() async throws {
        let dump = try await dumpRoundTrip(model: #"""
            {"name": "People", "version": 1, "entities": [
              {"name": "Person", "attributes": [{"name": "email", "type": "string", "unique": true, "optional": true}],
               "relationships": [{"name": "friend", "destination": "Person", "inverse": "friendOf"},
                                 {"name": "friendOf", "destination": "Person", "inverse": "friend", "toMany": true}]}
            ]}
            """#, input: [#"{"entity": "Person", "values": {"email": "a@example.com"}}"#,
                          #"{"entity": "Person", "values": {"friend": "a@example.com"}}"#])
        #expect(dump.second == dump.first)
    }

    /// FORMATS §3: an error's first line names the culprit, "file and line". A model file is
    /// written over many lines; a syntax error in it names the line.
    @Test func aMalformedModelFileNamesTheLine() async throws {
        let directory = TemporaryDirectory("strata-formats")
        defer { directory.remove() }
        let model = directory.appending("model.json")
        try """
        {
          "name": "Broken",
          "version": 1,
          "entities": [
            {"name": "A", "attributes": [{"name": "x", "type": "int"},]}
          ]
        }
        """.write(toFile: model, atomically: true, encoding: .utf8)
        let result = await runTool(["schema", model])
        #expect(result.status == 1)
        #expect(result.errors.firstLine.contains("line 5"), "\(result.errors)")
    }

    /// FORMATS §3: `verify` exits 1 naming "the first problem (file, offset, transaction)".
    /// A damaged schema record in a store holding committed transactions is damage at an
    /// offset, not an interrupted creation to be cured by removing the store.
    @Test(arguments: [20, 30, 200])  // the header's store ID, its fingerprint, the schema record
    func verifyNamesTheOffsetOfADamagedSchemaRecordInASmallStore(offset: Int) async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        try await catalog.load(CommandFixtures.sample)
        let segment = try #require(try FileManager.default.contentsOfDirectory(atPath: catalog.path).first { $0.hasPrefix("journal-") })
        let path = catalog.path + "/" + segment
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(bytes.count < 4096, "a small store: \(bytes.count) bytes")
        bytes[offset] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: path))

        let result = await runTool(["verify", catalog.path])
        #expect(result.status == 1)
        #expect(result.errors.firstLine.contains("offset"), "\(result.errors)")
        #expect(!result.errors.contains("create the store again"), "\(result.errors)")
    }

    /// FORMATS §1: "`uuid` is the canonical string form" — lower case on output (RFC 9562),
    /// whatever case the input used.
    @Test func uuidsAreWrittenInLowerCase() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        try await catalog.load(CommandFixtures.sample + [
            #"{"entity": "Song", "values": {"songID": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "title": "Upper", "milliseconds": 1, "album": 3}}"#,
        ])
        let query = await runTool(["query", catalog.path, "--entity", "Song", "--where", "title == 'Upper'"])
        #expect(query.status == 0, "\(query.errors)")
        #expect(query.output.contains("e621e1f8-c36c-495a-93fc-0c247a3e6e5f"), "\(query.output)")
    }
}