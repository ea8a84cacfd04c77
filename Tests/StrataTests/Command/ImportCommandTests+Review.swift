import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

extension ImportCommandTests {
    /// A to-many list that names one object twice, once by key and once by {"id"}, is the
    /// same object twice: refused like a key given twice, never stored as a list with a duplicate.
    @Test func aListNamingAnObjectByKeyAndByIDIsRefused() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let file = try catalog.file("twice.jsonl", [
            #"{"entity": "Album", "values": {"albumID": 1, "title": "One"}}"#,
            #"{"entity": "Artist", "values": {"artistID": 1, "albums": [1, {"id": "Album/1"}]}}"#,
        ])
        let result = await runTool(["import", catalog.path, file])
        let generation = try await catalog.generation()
        let artist = generation.object(of: "Artist", uniqueValue: .int(1))
        #expect(result.status == 1 || artist?.values[3] == .objects([ObjectID(entity: "Album", number: 1)]),
                "exit \(result.status): \(artist?.values[3] as Any)")
        // What was stored does not even import back.
        let dump = await runTool(["dump", catalog.path])
        let fresh = CatalogStore()
        defer { fresh.remove() }
        try await fresh.create()
        let reimported = await runTool(["import", fresh.path, try fresh.file("dump.jsonl", dump.output.split(separator: "\n").map(String.init))])
        #expect(reimported.status == 0, "\(dump.output)\n\(reimported.errors)")
    }

    /// A to-many list waiting for objects keeps its line's order even when an object it
    /// already holds changes its key (by a line with its "id") before the rest arrive.
    @Test func aListKeepsItsOrderWhenAMemberChangesItsKey() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        try await catalog.load([
            #"{"entity": "Artist", "values": {"artistID": 1, "albums": [1, 2]}}"#,
            #"{"entity": "Album", "values": {"albumID": 1, "title": "One"}}"#,
            #"{"entity": "Album", "id": "Album/1", "values": {"albumID": 10}}"#,
            #"{"entity": "Album", "values": {"albumID": 2, "title": "Two"}}"#,
        ])
        let generation = try await catalog.generation()
        let one = try #require(generation.object(of: "Album", uniqueValue: .int(10))).id
        let two = try #require(generation.object(of: "Album", uniqueValue: .int(2))).id
        #expect(generation.object(of: "Artist", uniqueValue: .int(1))?.values[3] == .objects([one, two]))
    }

    /// FORMATS §3: the dump round trip, for a destination whose unique key is data. Base64
    /// text can read like an ID ("File/123" is valid base64), so a reference by such a key
    /// must not be read as an ID.
    @Test func aDataKeyThatReadsLikeAnIDSurvivesADump() async throws {
        let digest = try #require(Data(base64Encoded: "File/123"))
        #expect(digest.base64EncodedString() == "File/123")
        let dump = try await dumpRoundTrip(model: #"""
            {"name": "Files", "version": 1, "entities": [
              {"name": "File", "attributes": [{"name": "digest", "type": "data", "unique": true}],
               "relationships": [{"name": "folder", "destination": "Folder", "inverse": "files"}]},
              {"name": "Folder", "attributes": [{"name": "name", "type": "string", "unique": true}],
               "relationships": [{"name": "files", "destination": "File", "inverse": "folder", "toMany": true}]}
            ]}
            """#, input: [#"{"entity": "Folder", "values": {"name": "docs"}}"#,
                          #"{"entity": "File", "values": {"digest": "File/123", "folder": "docs"}}"#])
        #expect(dump.first.contains(#""files":["File/123"]"#), "\(dump.first)")
        #expect(dump.second == dump.first)
    }

    /// FORMATS §3: the dump round trip for a self-inverse one-to-one and a self-referencing
    /// many-to-many.
    @Test func selfReferencesSurviveADump() async throws {
        let dump = try await dumpRoundTrip(model: #"""
            {"name": "People", "version": 1, "entities": [
              {"name": "Person", "attributes": [{"name": "name", "type": "string", "unique": true}],
               "relationships": [{"name": "spouse", "destination": "Person", "inverse": "spouse"},
                                 {"name": "follows", "destination": "Person", "inverse": "followers", "toMany": true},
                                 {"name": "followers", "destination": "Person", "inverse": "follows", "toMany": true},
                                 {"name": "friends", "destination": "Person", "inverse": "friends", "toMany": true}]}
            ]}
            """#, input: [#"{"entity": "Person", "values": {"name": "a", "spouse": "c", "follows": ["c", "b", "a"], "friends": ["c", "b"]}}"#,
                          #"{"entity": "Person", "values": {"name": "b", "follows": ["c", "a"], "friends": ["b"]}}"#,
                          #"{"entity": "Person", "values": {"name": "c", "follows": ["b"], "friends": ["b"]}}"#])
        #expect(dump.second == dump.first, "\(dump.first)\n---\n\(dump.second)")
    }

    /// FORMATS §3: the dump round trip for unusual values.
    @Test func unusualValuesSurviveADump() async throws {
        let dump = try await dumpRoundTrip(model: #"""
            {"name": "Things", "version": 1, "entities": [
              {"name": "Thing", "attributes": [{"name": "text", "type": "string", "optional": true},
                                               {"name": "number", "type": "double", "optional": true},
                                               {"name": "when", "type": "date", "optional": true},
                                               {"name": "blob", "type": "data", "optional": true},
                                               {"name": "uuid", "type": "uuid", "optional": true}]}
            ]}
            """#, input: [
                #"{"entity": "Thing", "values": {"text": "quote \" backslash \\ newline \n tab \t nul \u0000 del \u007f ls \u2028 emoji 😀 \ud83d\ude00", "number": -0.0}}"#,
                #"{"entity": "Thing", "values": {"text": "Thing/1", "number": "NaN", "when": "1969-12-31T23:59:59.999Z"}}"#,
                #"{"entity": "Thing", "values": {"text": "", "number": "-Infinity", "when": "2020-02-29T12:34:56.789Z", "blob": ""}}"#,
                #"{"entity": "Thing", "values": {"number": 1e300, "when": "0001-01-01T00:00:00Z", "uuid": "6BA7B810-9DAD-11D1-80B4-00C04FD430C8"}}"#,
                #"{"entity": "Thing", "values": {"number": 5e-324, "when": "9999-12-31T23:59:59.999Z"}}"#,
                #"{"entity": "Thing", "values": {"number": 0.1, "when": "2020-01-01T00:00:00.0005Z"}}"#,
                #"{"entity": "Thing", "values": {"number": 123456789012345678, "when": "1900-01-01T00:00:00.5Z"}}"#,
            ])
        #expect(dump.second == dump.first, "\(dump.first)\n---\n\(dump.second)")
    }
}

extension ImportCommandTests {
    /// More than 4,096 numbers held for lines that name them by "id" put the object created
    /// meanwhile out of the importer's dense run of numbers; objects created after the held
    /// ones are claimed must not hide it. Here a later line upserting it by its key finds it.
    @Test func anObjectCreatedPastManyHeldNumbersIsStillFound() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let held = 4100
        let albums = (1...held).map { "\"Album/\($0)\"" }.joined(separator: ", ")
        var lines = [#"{"entity": "Artist", "values": {"artistID": 1, "albums": [\#(albums)]}}"#]
        lines.append(#"{"entity": "Album", "values": {"albumID": 1, "title": "numbered by the store"}}"#)  // Album/4101
        lines += (1...held).map { #"{"entity": "Album", "id": "Album/\#($0)", "values": {"albumID": \#($0 + 1), "title": "named"}}"# }
        lines.append(#"{"entity": "Album", "values": {"albumID": 99999, "title": "after"}}"#)  // Album/4102
        lines.append(#"{"entity": "Album", "values": {"albumID": 1, "title": "changed"}}"#)  // upserts Album/4101
        try await catalog.load(lines)
        let generation = try await catalog.generation()
        #expect(generation.count(of: "Album") == held + 2)
        #expect(generation.object(of: "Album", uniqueValue: .int(1))?.values[1] == .string("changed"))
        #expect(generation.integrityProblems().isEmpty)
    }
}

extension ImportCommandTests {
    /// A song that never gets its required album is the fault of its own line, not of a later
    /// line that only takes the song out of a tag.
    @Test func aMissingRequiredRelationshipNamesTheLineThatLeftItOut() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let file = try catalog.file("untagged.jsonl", [
            #"{"entity": "Tag", "id": "Tag/1", "values": {"label": "a"}}"#,
            "{\"entity\": \"Song\", \"values\": {\"songID\": \"\(CommandFixtures.song(1))\", \"title\": \"s\", \"milliseconds\": 1, \"tags\": [\"Tag/1\"]}}",
            #"{"entity": "Tag", "id": "Tag/1", "values": {"songs": []}}"#,
        ])
        let result = await runTool(["import", catalog.path, file])
        #expect(result.status == 1)
        #expect(result.errors.firstLine.hasPrefix("strata import: \(file):2: Song.album: the relationship is required"), "\(result.errors)")
    }

    /// A song whose album's line comes later and lists it: valid as one transaction, and so
    /// in batches too (the batch waits as it does for a reference further on).
    @Test func aRequiredRelationshipSetByALaterLineWorksInBatches() async throws {
        let lines = [
            "{\"entity\": \"Song\", \"values\": {\"songID\": \"\(CommandFixtures.song(1))\", \"title\": \"s\", \"milliseconds\": 1}}",
            "{\"entity\": \"Album\", \"values\": {\"albumID\": 1, \"title\": \"a\", \"songs\": [\"\(CommandFixtures.song(1))\"]}}",
        ]
        for batchSize in [nil, 1] as [Int?] {
            let catalog = CatalogStore()
            defer { catalog.remove() }
            try await catalog.create()
            let file = try catalog.file("songs.jsonl", lines)
            let result = await runTool(["import", catalog.path, file] + (batchSize.map { ["--batch-size", String($0)] } ?? []))
            #expect(result.status == 0, "batch size \(batchSize as Any): \(result.errors)")
        }
    }
}

extension ImportCommandTests {
    /// A dump lists an artist's albums before the albums' lines: every album that appears
    /// takes the place the artist's line gave it — here in reverse order of the lines, so
    /// that every one moves.
    @Test func aLongForwardReferencedListKeepsItsLineOrder() async throws {
        let n = 2000
        let order = Array((1...n).reversed())
        let artist = #"{"entity": "Artist", "id": "Artist/1", "values": {"artistID": 1, "albums": [\#(order.map(String.init).joined(separator: ","))]}}"#
        let albumLines = (1...n).map { #"{"entity": "Album", "values": {"albumID": \#($0), "title": "t"}}"# }
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        try await catalog.load([artist] + albumLines)
        let generation = try await catalog.generation()
        let listed = generation.object(of: "Artist", uniqueValue: .int(1))?.values[3].referencedObjects ?? []
        let keys = listed.map { generation.object($0)?.values[0] }
        #expect(keys == order.map { Value.int(Int64($0)) })
    }
}

extension ImportCommandTests {
    /// FORMATS §3: the dump round trip for dates a fraction of a millisecond apart, as
    /// `Date()` gives them — here a unique key: written to the millisecond they were one
    /// date, and importing the dump merged the two objects into one (exit 0).
    @Test func datesFinerThanAMillisecondSurviveADump() async throws {
        let dump = try await dumpRoundTrip(model: #"""
            {"name": "Events", "version": 1, "entities": [
              {"name": "Event", "attributes": [{"name": "at", "type": "date", "unique": true}]}
            ]}
            """#, input: [
                #"{"entity": "Event", "values": {"at": "2026-11-25T09:30:00.1234Z"}}"#,
                #"{"entity": "Event", "values": {"at": "2026-11-25T09:30:00.1232Z"}}"#,
                #"{"entity": "Event", "values": {"at": "2001-01-01T00:00:00.000000000123Z"}}"#,
            ])
        #expect(dump.second == dump.first, "\(dump.first)\n---\n\(dump.second)")
        #expect(dump.second.split(separator: "\n").count == 3, "\(dump.second)")
    }
}

extension ImportCommandTests {
    /// New objects given numbers that go down: the second is refused, and the error says
    /// why a number nothing holds cannot be given (numbers only go up) and what to do.
    @Test func descendingNumbersForNewObjectsAreRefusedWithTheReason() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let file = try catalog.file("tags.jsonl", [#"{"entity": "Tag", "id": "Tag/5", "values": {"label": "five"}}"#,
                                                   #"{"entity": "Tag", "id": "Tag/3", "values": {"label": "three"}}"#])
        let refused = await runTool(["import", catalog.path, file])
        #expect(refused.status == 1)
        #expect(refused.errors.firstLine.contains(":2: "), "\(refused.errors)")
        #expect(refused.errors.firstLine.hasSuffix("numbers after it (they only go up, and a number passed is never given): give new objects increasing numbers, or leave \"id\" out"),
                "\(refused.errors)")
        #expect(try await catalog.generation().count(of: "Tag") == 0)
    }
}
