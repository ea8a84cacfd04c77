import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// A batch is committed only when none of its lines waits for an object further on, optional
/// relationships included: every line an acknowledged commit counts is applied in full, and a
/// reference never resolved leaves its line (and everything after the last commit) out.
extension ImportCommandTests {
    @Test func aBatchWaitsForAnOptionalReferenceFurtherOn() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        var lines = [#"{"entity": "Album", "values": {"albumID": 1, "title": "x", "artist": 3}}"#]
        lines += (1...4).map { #"{"entity": "Artist", "values": {"artistID": \#($0)}}"# }
        let file = try catalog.file("albums.jsonl", lines)
        let result = await runTool(["import", catalog.path, file, "--batch-size", "2", "--progress", "json"])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output == """
            {"event":"committed","transaction":1,"objects":4}
            {"event":"committed","transaction":2,"objects":5}

            """)
        let generation = try await catalog.generation()
        #expect(generation.object(of: "Album", uniqueValue: .int(1))?.values[4] == .object(ObjectID(entity: "Artist", number: 3)))
    }

    @Test func anOptionalReferenceNeverResolvedCommitsNothingOfItsLine() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        var lines = (1...2).map { #"{"entity": "Artist", "values": {"artistID": \#($0)}}"# }
        lines.append(#"{"entity": "Album", "values": {"albumID": 1, "title": "x", "artist": 9}}"#)  // no artist 9
        lines += (3...6).map { #"{"entity": "Artist", "values": {"artistID": \#($0)}}"# }
        let file = try catalog.file("dangling.jsonl", lines)
        let result = await runTool(["import", catalog.path, file, "--batch-size", "2", "--progress", "json"])
        #expect(result.status == 1)
        #expect(result.output == """
            {"event":"committed","transaction":1,"objects":2}

            """)
        #expect(result.errors.firstLine == "strata import: \(file):3: Album.artist: no Artist with artistID 9; the reference is still unresolved at the end of the input", "\(result.errors)")
        #expect(result.errors.contains("nothing after the last acknowledged commit was imported"))
        let generation = try await catalog.generation()
        #expect(generation.transaction == 1)
        #expect(generation.count(of: "Album") == 0)
        #expect(generation.count(of: "Artist") == 2)
    }

    @Test func aReplacedReferenceDoesNotHoldItsBatch() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let file = try catalog.file("replaced.jsonl", [
            #"{"entity": "Album", "values": {"albumID": 1, "title": "x", "artist": 9}}"#,
            #"{"entity": "Artist", "values": {"artistID": 1, "albums": [1]}}"#,  // takes the album: artist 9 is not awaited
            #"{"entity": "Artist", "values": {"artistID": 2}}"#,
        ])
        let result = await runTool(["import", catalog.path, file, "--batch-size", "2", "--progress", "json"])
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output == """
            {"event":"committed","transaction":1,"objects":2}
            {"event":"committed","transaction":2,"objects":3}

            """)
        #expect(try await catalog.generation().object(of: "Album", uniqueValue: .int(1))?.values[4] == .object(ObjectID(entity: "Artist", number: 1)))
    }
}
