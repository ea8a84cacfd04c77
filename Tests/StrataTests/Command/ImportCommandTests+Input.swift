import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// What editors and other tools leave in a file: a UTF-8 byte order mark at its start and a
/// last line ending in a lone carriage return are read past; an integer too large for 64
/// bits is named as such.
extension ImportCommandTests {
    @Test func aByteOrderMarkAndALoneFinalCarriageReturnAreReadPast() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let path = catalog.directory.appending("edited.jsonl")
        var bytes = Data([0xEF, 0xBB, 0xBF])
        bytes.append(Data((#"{"entity": "Artist", "values": {"artistID": 1, "name": "One"}}"# + "\r\n"
            + #"{"entity": "Artist", "values": {"artistID": 2, "name": "Two"}}"# + "\r").utf8))
        try bytes.write(to: URL(fileURLWithPath: path))
        let result = await runTool(["import", catalog.path, path])
        #expect(result.status == 0, "\(result.errors)")
        let generation = try await catalog.generation()
        #expect(generation.object(of: "Artist", uniqueValue: .int(1))?.values[1] == .string("One"))
        #expect(generation.object(of: "Artist", uniqueValue: .int(2))?.values[1] == .string("Two"))
    }

    @Test func anIDOrReferenceNamingAnotherEntityIsRefusedWithoutInterningIt() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        for (line, message) in [
            (#"{"entity": "Artist", "id": "ImportedStranger/1", "values": {"artistID": 1}}"#, #""id" "ImportedStranger/1" is not an ID of Artist"#),
            (#"{"entity": "Album", "values": {"albumID": 1, "title": "T", "artist": {"id": "ReferencedStranger/1"}}}"#, #"a reference by ID is {"id": "Artist/1"}"#),
        ] {
            let file = try catalog.file("strangers.jsonl", [line])
            let result = await runTool(["import", catalog.path, file])
            #expect(result.status == 1)
            #expect(result.errors.contains(message), "\(result.errors)")
        }
        // Entity names are interned for the life of the process; input naming other
        // entities must not grow that table.
        #expect(!EntityName.isInterned("ImportedStranger"))
        #expect(!EntityName.isInterned("ReferencedStranger"))
    }

    @Test func anIntegerTooLargeForSixtyFourBitsIsNamedSo() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let file = try catalog.file("large.jsonl", [#"{"entity": "Artist", "values": {"artistID": 9223372036854775808, "name": "Big"}}"#])
        let result = await runTool(["import", catalog.path, file])
        #expect(result.status == 1)
        #expect(result.errors.contains("large.jsonl:1"), "\(result.errors)")
        #expect(result.errors.contains("outside the range of a 64-bit integer"), "\(result.errors)")
    }
}

extension ImportCommandTests {
    /// FORMATS §3: the first line of standard error names the culprit, whole, even when the
    /// culprit the input gives holds a line break: it is written escaped, as JSON writes it.
    @Test(arguments: [
        (#"{"entity": "Art\nist", "values": {}}"#, #"unknown entity "Art\nist"; the entities are Artist, Album, Song, Tag"#),
        (#"{"entity": "Artist", "values": {"artistID": 5, "na\r\nme": "x"}}"#, #"Artist has no key "na\r\nme"; its keys are artistID"#),
        (#"{"entity": "Artist", "values": {"artistID": 5, "createdAt": "2020-01-01\nT00:00:00Z"}}"#, #""2020-01-01\nT00:00:00Z" is not an ISO-8601 date such as"#),
    ])
    func aCulpritWithALineBreakStaysOnTheFirstLine(_ line: String, _ culprit: String) async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let file = try catalog.file("breaks.jsonl", [line])
        let result = await runTool(["import", catalog.path, file])
        #expect(result.status == 1)
        #expect(result.errors.firstLine.hasPrefix("strata import: \(file):1: "), "\(result.errors)")
        #expect(result.errors.firstLine.contains(culprit), "\(result.errors)")
        #expect(result.errors.split(separator: "\n").count == 2, "\(result.errors)")  // the culprit, then what was imported
    }

    @Test func aPredicateWithALineBreakStaysOnTheFirstLine() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let result = await runTool(["query", catalog.path, "--entity", "Artist", "--where", "name ==\n"])
        #expect(result.status == 1)
        #expect(result.errors.split(separator: "\n", omittingEmptySubsequences: false).count == 2, "\(result.errors)")
        #expect(result.errors.firstLine.hasPrefix("strata query: --where: expected a value after '=='"), "\(result.errors)")
    }
}

extension ImportCommandTests {
    /// FORMATS §2: a key given twice in one line is an error, also when the two spellings
    /// differ in bytes but name one property (Swift compares names by canonical equivalence:
    /// "é" composed and decomposed, or the Kelvin sign and "K").
    @Test(arguments: [
        (#"{"entity": "Thing", "values": {"caf\u00e9": 1, "cafe\u0301": 2}}"#, "Thing.café"),
        (#"{"entity": "Thing", "values": {"Kelvin": 1, "\u212Aelvin": 2}}"#, "Thing.Kelvin"),
    ])
    func aKeyGivenTwiceInDifferentSpellingsIsRefused(_ line: String, _ property: String) async throws {
        let model = #"""
            {"name": "Things", "version": 1, "entities": [
              {"name": "Thing", "attributes": [{"name": "caf\u00e9", "type": "int", "optional": true},
                                               {"name": "Kelvin", "type": "int", "optional": true}]}
            ]}
            """#
        let things = CatalogStore(model: model)
        defer { things.remove() }
        try await things.create()
        let store = things.path
        let file = try things.file("twice.jsonl", [line])
        let result = await runTool(["import", store, file])
        #expect(result.status == 1)
        #expect(result.errors.firstLine.hasPrefix("strata import: \(file):1: duplicate key"), "\(result.errors)")
        #expect(result.errors.firstLine.contains(property), "\(result.errors)")
        #expect(await runTool(["query", store, "--entity", "Thing", "--count"]).output == "0\n")
    }
}
