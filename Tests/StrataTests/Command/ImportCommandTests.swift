import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

@Suite struct ImportCommandTests {
    @Test func importResolvesForwardReferencesAndKeepsInverses() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let file = try catalog.file("sample.jsonl", CommandFixtures.sample)
        let result = await runTool(["import", catalog.path, file])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output == "imported 8 lines from \(file): 8 objects created, 0 updated, 1 transaction(s), last 1\n")
        let generation = try await catalog.generation()
        #expect(generation.integrityProblems().isEmpty)
        let acdc = try #require(generation.object(of: "Artist", uniqueValue: .int(1)))
        #expect(acdc.values[3] == .objects([ObjectID(entity: "Album", number: 1), ObjectID(entity: "Album", number: 2)]))
        #expect(acdc.values[2] == .date(Date(timeIntervalSince1970: 1_577_836_800)))  // the default
        let spades = try #require(generation.object(of: "Album", uniqueValue: .int(3)))
        #expect(spades.values[4] == .object(ObjectID(entity: "Artist", number: 2)))
        let tag = try #require(generation.object(ObjectID(entity: "Tag", number: 1)))
        #expect(tag.values[1] == .objects([ObjectID(entity: "Song", number: 1)]))

        let query = await runTool(["query", catalog.path, "--entity", "Artist", "--where", "artistID == 1"])
        #expect(query.output == #"{"entity":"Artist","id":"Artist/1","values":{"artistID":1,"name":"AC/DC","createdAt":"2020-01-01T00:00:00Z","albums":[1,2]}}"# + "\n")
    }

    @Test func upsertChangesOnlyTheKeysGiven() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        try await catalog.load(CommandFixtures.sample)
        try await catalog.load([
            #"{"entity": "Artist", "values": {"artistID": 1, "name": "AC-DC"}}"#,
            #"{"entity": "Album", "values": {"albumID": 3, "artist": 1}}"#,  // moves the album to AC/DC
            #"{"entity": "Artist", "values": {"artistID": 3, "name": "New"}}"#,
        ])
        let generation = try await catalog.generation()
        #expect(generation.count(of: "Artist") == 3)
        let acdc = try #require(generation.object(of: "Artist", uniqueValue: .int(1)))
        #expect(acdc.values[1] == .string("AC-DC"))
        #expect(acdc.values[3] == .objects([1, 2, 3].map { ObjectID(entity: "Album", number: $0) }))
        let motorhead = try #require(generation.object(of: "Artist", uniqueValue: .int(2)))
        #expect(motorhead.values[3] == .objects([]))
        #expect(generation.object(of: "Album", uniqueValue: .int(3))?.values[1] == .string("Ace of Spades"))
        #expect(generation.integrityProblems().isEmpty)
    }

    @Test func aLaterLineReplacesAReferenceStillWaiting() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        try await catalog.load([
            #"{"entity": "Artist", "values": {"artistID": 1}}"#,
            #"{"entity": "Album", "values": {"albumID": 1, "title": "x", "artist": 5}}"#,
            #"{"entity": "Album", "values": {"albumID": 1, "artist": 1}}"#,
            #"{"entity": "Album", "values": {"albumID": 2, "title": "y", "artist": 9}}"#,
            #"{"entity": "Album", "values": {"albumID": 2, "artist": null}}"#,
            #"{"entity": "Artist", "values": {"artistID": 5}}"#,
        ])
        let generation = try await catalog.generation()
        #expect(generation.object(of: "Album", uniqueValue: .int(1))?.values[4] == .object(ObjectID(entity: "Artist", number: 1)))
        #expect(generation.object(of: "Artist", uniqueValue: .int(5))?.values[3] == .objects([]))
        #expect(generation.object(of: "Album", uniqueValue: .int(2))?.values[4] == .null)
        #expect(generation.integrityProblems().isEmpty)
    }

    @Test func longListsStayConsistent() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        var lines = [#"{"entity": "Album", "values": {"albumID": 1, "title": "big"}}"#, #"{"entity": "Album", "values": {"albumID": 2, "title": "small"}}"#]
        for n in 1...100 {
            lines.append("{\"entity\": \"Song\", \"values\": {\"songID\": \"\(CommandFixtures.song(n))\", \"title\": \"s\", \"milliseconds\": 1, \"album\": 1}}")
        }
        for n in stride(from: 2, through: 100, by: 3) {  // moved to the small album, then some back
            lines.append("{\"entity\": \"Song\", \"values\": {\"songID\": \"\(CommandFixtures.song(n))\", \"album\": 2}}")
        }
        lines.append("{\"entity\": \"Album\", \"values\": {\"albumID\": 1, \"songs\": [\"\(CommandFixtures.song(2))\", \"\(CommandFixtures.song(1))\", \"\(CommandFixtures.song(3))\"]}}")
        let file = try catalog.file("long.jsonl", lines)
        let result = await runTool(["import", catalog.path, file])
        // Songs 4... left without an album by the last line break the required relationship.
        #expect(result.status == 1)
        #expect(result.errors.firstLine.contains("Song.album: the relationship is required"), "\(result.errors)")
        lines.removeLast()
        lines.append(#"{"entity": "Album", "values": {"albumID": 3, "title": "more"}}"#)
        let retry = await runTool(["import", catalog.path, try catalog.file("long2.jsonl", lines)])
        #expect(retry.status == 0, "\(retry.errors)")
        let generation = try await catalog.generation()
        #expect(generation.integrityProblems().isEmpty)
        let small = try #require(generation.object(of: "Album", uniqueValue: .int(2)))
        #expect(small.values[5].referencedObjects.count == 33)
        #expect(generation.object(of: "Album", uniqueValue: .int(1))?.values[5].referencedObjects.count == 67)
    }

    @Test func batchesReportDurableCommitsAsJSON() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let lines = (1...5).map { #"{"entity": "Artist", "values": {"artistID": \#($0)}}"# }
        let file = try catalog.file("artists.jsonl", lines)
        let result = await runTool(["import", catalog.path, file, "--batch-size", "2", "--progress", "json"])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output == """
            {"event":"committed","transaction":1,"objects":2}
            {"event":"committed","transaction":2,"objects":4}
            {"event":"committed","transaction":3,"objects":5}

            """)
        #expect(result.errors.isEmpty)
    }

    @Test func aBatchWaitsForARequiredReferenceFurtherOn() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        // The songs' required album comes three lines later: the first batch grows to include it.
        let file = try catalog.file("songs.jsonl", [
            "{\"entity\": \"Song\", \"values\": {\"songID\": \"\(CommandFixtures.song(1))\", \"title\": \"a\", \"milliseconds\": 1, \"album\": 9}}",
            "{\"entity\": \"Song\", \"values\": {\"songID\": \"\(CommandFixtures.song(2))\", \"title\": \"b\", \"milliseconds\": 2, \"album\": 9}}",
            #"{"entity": "Artist", "values": {"artistID": 1}}"#,
            #"{"entity": "Album", "values": {"albumID": 9, "title": "Later"}}"#,
            #"{"entity": "Artist", "values": {"artistID": 2}}"#,
        ])
        let result = await runTool(["import", catalog.path, file, "--batch-size", "2", "--progress", "json"])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output == """
            {"event":"committed","transaction":1,"objects":4}
            {"event":"committed","transaction":2,"objects":5}

            """)
        let album = try #require(try await catalog.generation().object(of: "Album", uniqueValue: .int(9)))
        #expect(album.values[5] == .objects([1, 2].map { ObjectID(entity: "Song", number: $0) }))
    }

    /// One bad line after good ones: what the tool must say about it.
    struct BadInput: Sendable, CustomTestStringConvertible {
        var name: String
        var line: String
        var culprit: String
        var testDescription: String { name }
    }

    static let badInputs: [BadInput] = [
        BadInput(name: "malformed JSON", line: #"{"entity": "Artist", "values": {"artistID": 5,}}"#,
                 culprit: "not valid JSON: expected a key string at column 47"),
        BadInput(name: "unknown entity", line: #"{"entity": "Painter", "values": {}}"#,
                 culprit: #"unknown entity "Painter"; the entities are Artist, Album, Song, Tag"#),
        BadInput(name: "unknown key", line: #"{"entity": "Artist", "values": {"artistID": 5, "nmae": "x"}}"#,
                 culprit: #"Artist has no key "nmae"; its keys are artistID, name, createdAt, albums"#),
        BadInput(name: "unknown line key", line: #"{"entity": "Artist", "value": {"artistID": 5}}"#,
                 culprit: #"unknown key "value""#),
        BadInput(name: "wrong type", line: #"{"entity": "Artist", "values": {"artistID": "five"}}"#,
                 culprit: "Artist.artistID: expected an int, got a string"),
        BadInput(name: "bad date", line: #"{"entity": "Artist", "values": {"artistID": 5, "createdAt": "yesterday"}}"#,
                 culprit: #"Artist.createdAt: "yesterday" is not an ISO-8601 date"#),
        BadInput(name: "missing required value", line: #"{"entity": "Album", "values": {"albumID": 9}}"#,
                 culprit: "Album.title: a value is required"),
        BadInput(name: "null for a required value", line: #"{"entity": "Album", "values": {"albumID": 9, "title": null}}"#,
                 culprit: "Album.title: a value is required"),
        BadInput(name: "above the maximum", line: #"{"entity": "Album", "values": {"albumID": 9, "title": "x", "rating": 7.5}}"#,
                 culprit: "Album.rating: 7.5 is greater than the maximum 5.0"),
        BadInput(name: "too long", line: #"{"entity": "Album", "values": {"albumID": 9, "title": "\#(String(repeating: "x", count: 41))"}}"#,
                 culprit: "Album.title: 41 characters is longer than the maximum length 40"),
        BadInput(name: "duplicate key in a line", line: #"{"entity": "Artist", "values": {"artistID": 5, "artistID": 6}}"#,
                 culprit: #"not valid JSON: duplicate key "artistID""#),
        BadInput(name: "dangling reference", line: #"{"entity": "Album", "values": {"albumID": 9, "title": "x", "artist": 99}}"#,
                 culprit: "Album.artist: no Artist with artistID 99; the reference is still unresolved at the end of the input"),
        BadInput(name: "dangling ID reference",
                 line: "{\"entity\": \"Song\", \"values\": {\"songID\": \"\(CommandFixtures.song(8))\", \"title\": \"t\", \"milliseconds\": 1, \"album\": 1, \"tags\": [\"Tag/99\"]}}",
                 culprit: "Song.tags: no Tag with ID Tag/99"),
        BadInput(name: "reference of the wrong type", line: #"{"entity": "Album", "values": {"albumID": 9, "title": "x", "artist": "one"}}"#,
                 culprit: #"Album.artist: a reference to Artist by "artistID": expected an int, got a string"#),
        BadInput(name: "reference by ID of the wrong form", line: #"{"entity": "Album", "values": {"albumID": 9, "title": "x", "artist": {"artistID": 1}}}"#,
                 culprit: #"Album.artist: a reference by ID is {"id": "Artist/1"}, not {"artistID":1}"#),
        BadInput(name: "missing required relationship",
                 line: "{\"entity\": \"Song\", \"values\": {\"songID\": \"\(CommandFixtures.song(7))\", \"title\": \"t\", \"milliseconds\": 1}}",
                 culprit: "Song.album: the relationship is required"),
        BadInput(name: "an existing object left without its required relationship",
                 line: #"{"entity": "Album", "values": {"albumID": 1, "songs": []}}"#,
                 culprit: "Song.album: the relationship is required (give a Album key); this line leaves Song/1 without one"),
        BadInput(name: "to-one given an array", line: #"{"entity": "Album", "values": {"albumID": 9, "title": "x", "artist": [1]}}"#,
                 culprit: "Album.artist is a to-one relationship"),
        BadInput(name: "not an object", line: "[1, 2]", culprit: "expected an object"),
        // A long culprit is quoted by its start and its length, not echoed whole.
        BadInput(name: "a long unknown entity", line: #"{"entity": ""# + String(repeating: "E", count: 100_000) + #"", "values": {}}"#,
                 culprit: "unknown entity \"" + String(repeating: "E", count: 80) + "… (100000 characters)\"; the entities are Artist, Album, Song, Tag"),
        BadInput(name: "a number too long", line: #"{"entity": "Artist", "values": {"artistID": "# + String(repeating: "9", count: 100_000) + "}}",
                 culprit: "not valid JSON: the number " + String(repeating: "9", count: 80) + "… (100000 characters) is out of range at column 45"),
    ]

    @Test(arguments: badInputs)
    func badInputNamesTheLineAndCommitsNothing(_ bad: BadInput) async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        try await catalog.load(CommandFixtures.sample)
        let before = try catalog.bytes()
        let file = try catalog.file("bad.jsonl", [
            #"{"entity": "Artist", "values": {"artistID": 7, "name": "Not committed"}}"#,
            "",
            bad.line,
            #"{"entity": "Artist", "values": {"artistID": 8}}"#,
        ])
        let result = await runTool(["import", catalog.path, file])
        #expect(result.status == 1)
        let first = result.errors.firstLine
        #expect(first.hasPrefix("strata import: \(file):3: "), "\(first)")
        #expect(first.contains(bad.culprit), "\(first)")
        #expect(try catalog.bytes() == before)
    }

    @Test func aDanglingReferenceNamesTheLineThatMadeIt() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let file = try catalog.file("dangling.jsonl", [
            #"{"entity": "Artist", "values": {"artistID": 1, "albums": [1, 2]}}"#,
            #"{"entity": "Album", "values": {"albumID": 1, "title": "x"}}"#,
        ])
        let result = await runTool(["import", catalog.path, file])
        #expect(result.status == 1)
        #expect(result.errors.firstLine == "strata import: \(file):1: Artist.albums: no Album with albumID 2; the reference is still unresolved at the end of the input")
        #expect(try await catalog.generation().totalCount == 0)
    }

    @Test func badInputInABatchKeepsTheAcknowledgedBatches() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        var lines = (1...5).map { #"{"entity": "Artist", "values": {"artistID": \#($0)}}"# }
        lines.append(#"{"entity": "Artist", "values": {"artistID": 6, "name": 6}}"#)
        let file = try catalog.file("batches.jsonl", lines)
        let result = await runTool(["import", catalog.path, file, "--batch-size", "2", "--progress", "json"])
        #expect(result.status == 1)
        #expect(result.output == """
            {"event":"committed","transaction":1,"objects":2}
            {"event":"committed","transaction":2,"objects":4}

            """)
        #expect(result.errors.firstLine == "strata import: \(file):6: Artist.name: expected a string, got a number")
        let generation = try await catalog.generation()
        #expect(generation.count(of: "Artist") == 4)  // line 5 was in the refused batch
        #expect(generation.transaction == 2)
    }

    @Test func importUsageErrors() async throws {
        let missing = await runTool(["import", "/tmp/nowhere.strata"])
        #expect(missing.status == 2)
        #expect(missing.errors.hasPrefix("strata import: FILE.jsonl is required\nusage: strata import STORE FILE.jsonl|-"))
        let zero = await runTool(["import", "/tmp/nowhere.strata", "x.jsonl", "--batch-size", "0"])
        #expect(zero.status == 2 && zero.errors.hasPrefix("strata import: --batch-size must be a positive integer, not '0'"))
        let progress = await runTool(["import", "/tmp/nowhere.strata", "x.jsonl", "--progress", "dots"])
        #expect(progress.status == 2 && progress.errors.hasPrefix("strata import: --progress must be one of bar, json, none"))
        let unreadable = await runTool(["import", "/tmp/nowhere.strata", "/tmp/no-such-file-\(UUID().uuidString).jsonl"])
        #expect(unreadable.status == 1 && unreadable.errors.hasPrefix("strata import: cannot read /tmp/no-such-file-"))
    }

    @Test func dumpThenImportIntoAFreshStoreGivesTheSameDump() async throws {
        let original = CatalogStore(), copy = CatalogStore()
        defer { original.remove(); copy.remove() }
        try await original.create()
        try await copy.create()
        try await original.load(Self.generatedCatalog(seed: 42), batchSize: 97)
        // Gaps in the object numbers, changed values, moved relationships.
        #expect(await runTool(["delete", original.path, "--entity", "Tag", "--where", "label ENDSWITH \"3\""]).status == 0)
        #expect(await runTool(["delete", original.path, "--entity", "Song", "--where", "milliseconds < 50000"]).status == 0)
        #expect(await runTool(["update", original.path, "--entity", "Album", "--where", "albumID < 5", "--set", "rating=null"]).status == 0)
        let dump = await runTool(["dump", original.path])
        #expect(dump.status == 0)
        #expect(dump.output.split(separator: "\n").count == (try await original.generation()).totalCount)
        let file = try copy.file("dump.jsonl", [String(dump.output.dropLast())])
        let imported = await runTool(["import", copy.path, file])
        #expect(imported.status == 0, "\(imported.errors)")
        let again = await runTool(["dump", copy.path])
        let difference = zip(dump.output.split(separator: "\n"), again.output.split(separator: "\n")).first { $0 != $1 }
        #expect(difference == nil, "first difference: \(difference.map { "\($0)\n\($1)" } ?? "")")
        #expect(again.output == dump.output)
        #expect(try await copy.generation().integrityProblems().isEmpty)
    }

    @Test func infiniteDoublesRoundTripAsStrings() async throws {
        let directory = TemporaryDirectory("strata-cli")
        defer { directory.remove() }
        let model = directory.appending("songbook.json")
        try Fixtures.songbook.modelFileJSON.prettyText.write(toFile: model, atomically: true, encoding: .utf8)
        let first = directory.appending("a.strata"), second = directory.appending("b.strata")
        #expect(await runTool(["create", first, "--model", model]).status == 0)
        #expect(await runTool(["create", second, "--model", model]).status == 0)
        let file = directory.appending("albums.jsonl")
        try """
            {"entity": "Album", "values": {"albumID": 1, "title": "up", "rating": "Infinity"}}
            {"entity": "Album", "values": {"albumID": 2, "title": "down", "rating": "-Infinity"}}
            {"entity": "Album", "values": {"albumID": 3, "title": "lost", "rating": "NaN"}}
            """.write(toFile: file, atomically: true, encoding: .utf8)
        #expect(await runTool(["import", first, file]).status == 0)
        let dump = await runTool(["dump", first])
        #expect(dump.output.contains(#""rating":"Infinity""#) && dump.output.contains(#""rating":"-Infinity""#) && dump.output.contains(#""rating":"NaN""#))
        let copy = directory.appending("dump.jsonl")
        try dump.output.write(toFile: copy, atomically: true, encoding: .utf8)
        #expect(await runTool(["import", second, copy]).status == 0)
        #expect(await runTool(["dump", second]).output == dump.output)
    }

    /// A catalog with every attribute type (unicode, escapes, fractional dates, data) and
    /// relationships given from both sides, forward and backward.
    static func generatedCatalog(seed: UInt64) -> [String] {
        var rng = SplitMix64(seed: seed)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let names = ["AC/DC", "Motörhead", "日本語", "quote \\\" and \\\\ backslash", "line\\nbreak", "emoji 🎸", ""]
        var lines: [String] = []
        for tag in 1...12 { lines.append(#"{"entity": "Tag", "id": "Tag/\#(tag)", "values": {"label": "tag \#(tag)"}}"#) }
        for album in 1...40 {
            let rating = rng.next(below: 3) == 0 ? "null" : String(Double(rng.next(below: 500)) / 100)
            lines.append(#"{"entity": "Album", "values": {"albumID": \#(album), "title": "\#(names[rng.next(below: names.count)]) \#(album)", "rating": \#(rating), "explicit": \#(rng.next(below: 2) == 0), "artist": \#(1 + rng.next(below: 15))}}"#)
        }
        for artist in 1...15 {
            let millis = 1_600_000_000_000 + Int(rng.next(below: 1_000_000_000))
            let date = formatter.string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
            lines.append(#"{"entity": "Artist", "values": {"artistID": \#(artist), "name": \#(rng.next(below: 4) == 0 ? "null" : "\"artist \(artist)\""), "createdAt": "\#(date)"}}"#)
        }
        for song in 1...120 {
            let bytes = (0..<rng.next(below: 20)).map { _ in UInt8(rng.next(below: 256)) }
            let artwork = bytes.isEmpty && rng.next(below: 2) == 0 ? "null" : "\"\(Data(bytes).base64EncodedString())\""
            let tags = (0..<rng.next(below: 4)).map { _ in 1 + rng.next(below: 12) }
            let tagList = Array(Set(tags)).sorted().map { "\"Tag/\($0)\"" }.joined(separator: ", ")
            lines.append("{\"entity\": \"Song\", \"values\": {\"songID\": \"\(CommandFixtures.song(song))\", \"title\": \"song \(song)\", "
                         + "\"artwork\": \(artwork), \"milliseconds\": \(rng.next(below: 400_000)), \"album\": \(1 + rng.next(below: 40)), \"tags\": [\(tagList)]}}")
        }
        return lines
    }
}
