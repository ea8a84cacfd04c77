import Foundation
import Testing
import Strata

/// The code example in README.md, compiled and run here. The test also checks that the
/// README shows exactly this code, so the two cannot drift apart.
@Suite struct ReadmeExampleTests {
    func example(path: String) async throws -> String {
        // README-EXAMPLE-BEGIN
        let schema = try Schema("Songbook", entities: [
            Entity("Artist",
                   attributes: [Attribute("artistID", .int, unique: true), Attribute("name", .string)],
                   relationships: [Relationship("albums", to: "Album", inverse: "artist",
                                                toMany: true, deleteRule: .cascade)]),
            Entity("Album",
                   attributes: [Attribute("title", .string)],
                   relationships: [Relationship("artist", to: "Artist", inverse: "albums")]),
        ])

        // A store is a directory; its journal is the durable history of transactions.
        let journal = try Journal.create(at: path, schema: schema)
        let acdc = ObjectID(entity: "Artist", number: 1)
        try await journal.append(TransactionRecord(number: 1, author: "readme", inserted: [
            RowImage(id: acdc, values: [.int(1), .string("AC/DC"), .objects([])]),
        ]))   // returns once the transaction is on stable storage
        await journal.close()

        // Opening replays the newest checkpoint and every transaction after it.
        let (reader, state) = try Journal.read(at: path)
        print(state.rows[acdc]!)   // [1, "AC/DC", []]
        await reader.close()
        // README-EXAMPLE-END
        return state.rows[acdc]!.description
    }

    @Test func exampleRuns() async throws {
        let directory = TemporaryDirectory("strata-readme")
        defer { directory.remove() }
        #expect(try await example(path: directory.appending("songs.strata")) == "[1, \"AC/DC\", []]")
    }

    @Test func readmeShowsThisExample() throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: here, encoding: .utf8)
        let lines = source.components(separatedBy: "\n")
        let begin = try #require(lines.firstIndex { $0.hasSuffix("// README-EXAMPLE-BEGIN") })
        let end = try #require(lines.firstIndex { $0.hasSuffix("// README-EXAMPLE-END") })
        let indent = lines[begin].prefix { $0 == " " }.count
        let code = lines[(begin + 1)..<end].map { String($0.dropFirst(min(indent, $0.prefix { $0 == " " }.count))) }
            .joined(separator: "\n")
        #expect(readme.contains(code), "README.md must contain the example exactly as in ReadmeExampleTests.swift")
    }
}
