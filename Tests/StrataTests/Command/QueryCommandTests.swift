import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

@Suite struct QueryCommandTests {
    /// A catalog store loaded with the sample.
    func sampleStore() async throws -> CatalogStore {
        let catalog = CatalogStore()
        try await catalog.create()
        try await catalog.load(CommandFixtures.sample)
        return catalog
    }

    @Test func queryFiltersSortsAndWindows() async throws {
        let catalog = try await sampleStore()
        defer { catalog.remove() }
        let count = await runTool(["query", catalog.path, "--entity", "Album", "--where", "rating >= 4 AND artist.name BEGINSWITH[c] 'ac'", "--count"])
        #expect(count.status == 0 && count.output == "1\n", "\(count.errors)")
        let sorted = await runTool(["query", catalog.path, "--entity", "Album", "--sort", "title desc", "--limit", "2", "--offset", "1"])
        #expect(sorted.output.split(separator: "\n").map { try! JSON.parse(String($0))["id"] } == [.string("Album/1"), .string("Album/3")])
        let many = await runTool(["query", catalog.path, "--entity", "Artist", "--where", "albums.@count >= 2"])
        #expect(many.output.split(separator: "\n").count == 1 && many.output.contains(#""name":"AC/DC""#))
        let any = await runTool(["query", catalog.path, "--entity", "Album", "--where", "ANY songs.milliseconds > 300000", "--count"])
        #expect(any.output == "1\n")
        let song = await runTool(["query", catalog.path, "--entity", "Song", "--where", "title == 'Ace of Spades'"])
        #expect(song.output == "{\"entity\":\"Song\",\"id\":\"Song/2\",\"values\":{\"songID\":\"\(CommandFixtures.song(2).uppercased())\",\"title\":\"Ace of Spades\",\"artwork\":null,\"milliseconds\":169000,\"album\":3,\"tags\":[]}}\n")
        let tagged = await runTool(["query", catalog.path, "--entity", "Tag"])
        #expect(tagged.output.contains(#""songs":[""#))
    }

    @Test func queryTableIsForPeople() async throws {
        let catalog = try await sampleStore()
        defer { catalog.remove() }
        let table = await runTool(["query", catalog.path, "--entity", "Artist", "--format", "table"])
        #expect(table.status == 0)
        #expect(table.output == """
            id        artistID  name       createdAt             albums
            -----------------------------------------------------------
            Artist/1  1         AC/DC      2020-01-01T00:00:00Z  [1, 2]
            Artist/2  2         Motörhead  2020-01-01T00:00:00Z  [3]
            (2 objects)

            """)
    }

    /// A table row stays one line whatever a string holds, and an empty string is told
    /// apart from nil (a line break in a name once broke the table in two).
    @Test func queryTableWritesControlCharactersEscaped() async throws {
        let catalog = try await sampleStore()
        defer { catalog.remove() }
        let set = await runTool(["update", catalog.path, "--entity", "Artist", "--where", "artistID == 2", "--set", "name=line\nbreak\tand\u{7}bell\u{7F}"])
        #expect(set.status == 0, "\(set.errors)")
        let empty = await runTool(["update", catalog.path, "--entity", "Artist", "--where", "artistID == 1", "--set", "name="])
        #expect(empty.status == 0, "\(empty.errors)")
        let table = await runTool(["query", catalog.path, "--entity", "Artist", "--format", "table"])
        let lines = table.output.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 6, "\(table.output)")
        #expect(lines.contains { $0.hasPrefix("Artist/2") && $0.contains(#"line\nbreak\tand\u0007bell\u007f"#) }, "\(table.output)")
        #expect(lines.contains { $0.hasPrefix("Artist/1") && $0.contains(#"  ""  "#) }, "\(table.output)")
    }

    @Test func queryErrorsNameTheColumnOrTheKey() async throws {
        let catalog = try await sampleStore()
        defer { catalog.remove() }
        let syntax = await runTool(["query", catalog.path, "--entity", "Album", "--where", "rating >= "])
        #expect(syntax.status == 1)
        #expect(syntax.errors.firstLine.hasPrefix("strata query: --where: expected a value after '>=' at column"), "\(syntax.errors)")
        let key = await runTool(["query", catalog.path, "--entity", "Album", "--where", "ratin > 1"])
        #expect(key.status == 1)
        #expect(key.errors.firstLine.contains("\"ratin\""), "\(key.errors)")
        #expect(key.errors.firstLine.contains("albumID"), "\(key.errors)")
        let entity = await runTool(["query", catalog.path, "--entity", "Painter"])
        #expect(entity.status == 1 && entity.errors.contains("no entity \"Painter\""))
        let usage = await runTool(["query", catalog.path])
        #expect(usage.status == 2 && usage.errors.hasPrefix("strata query: --entity is required\nusage: strata query STORE --entity E"))
        let sort = await runTool(["query", catalog.path, "--entity", "Album", "--sort", "title sideways"])
        #expect(sort.status == 2 && sort.errors.hasPrefix("strata query: --sort: 'sideways' after 'title' must be asc or desc"))
        // An empty key between commas (or after the last) is a mistake, not nothing.
        for text in ["title,,year", "title,", ",title", "title, ,year"] {
            let gap = await runTool(["query", catalog.path, "--entity", "Album", "--sort", text])
            #expect(gap.status == 2 && gap.errors.hasPrefix("strata query: --sort: a key is missing between commas in '\(text)'"), "\(text): \(gap.errors)")
        }
        let missing = await runTool(["query", catalog.directory.appending("none.strata"), "--entity", "Album"])
        #expect(missing.status == 1 && missing.errors.hasPrefix("strata query: notFound"))
    }

    @Test func boolKeysCompareWithOneAndZero() async throws {
        let catalog = try await sampleStore()
        defer { catalog.remove() }
        #expect(await runTool(["query", catalog.path, "--entity", "Album", "--where", "explicit == 1", "--count"]).output == "1\n")
        #expect(await runTool(["query", catalog.path, "--entity", "Album", "--where", "explicit == 0", "--count"]).output == "2\n")
        let two = await runTool(["query", catalog.path, "--entity", "Album", "--where", "explicit == 2"])
        #expect(two.status == 1 && two.errors.contains("\"explicit\" is a bool; compare it with true or false"), "\(two.errors)")
    }

    @Test func aggregateComputesPerGroup() async throws {
        let catalog = try await sampleStore()
        defer { catalog.remove() }
        #expect(await runTool(["aggregate", catalog.path, "--entity", "Album", "--function", "count"]).output == "3\n")
        #expect(await runTool(["aggregate", catalog.path, "--entity", "Song", "--function", "sum", "--key", "milliseconds"]).output == "492000\n")
        #expect(await runTool(["aggregate", catalog.path, "--entity", "Album", "--function", "avg", "--key", "rating", "--where", "rating != nil"]).output == "4.25\n")
        let grouped = await runTool(["aggregate", catalog.path, "--entity", "Album", "--function", "max", "--key", "title", "--group-by", "artist.name"])
        #expect(grouped.output == "\"AC/DC\"\t\"Powerage\"\n\"Motörhead\"\t\"Ace of Spades\"\n")
        // Grouped by a relationship: each group named by its unique key, as `query` names it,
        // in the order of the keys.
        let byAlbum = await runTool(["aggregate", catalog.path, "--entity", "Song", "--function", "count", "--group-by", "album"])
        #expect(byAlbum.output == "1\t1\n3\t1\n", "\(byAlbum.output)")
        let byArtist = await runTool(["aggregate", catalog.path, "--entity", "Album", "--function", "count", "--group-by", "artist"])
        #expect(byArtist.output == "1\t2\n2\t1\n", "\(byArtist.output)")
        let bad = await runTool(["aggregate", catalog.path, "--entity", "Album", "--function", "median", "--key", "rating"])
        #expect(bad.status == 2 && bad.errors.hasPrefix("strata aggregate: --function must be one of count, sum, min, max, avg, not 'median'"))
        let noKey = await runTool(["aggregate", catalog.path, "--entity", "Album", "--function", "sum"])
        #expect(noKey.status == 2 && noKey.errors.hasPrefix("strata aggregate: --function sum needs --key K"), "\(noKey.errors)")
        let notNumeric = await runTool(["aggregate", catalog.path, "--entity", "Album", "--function", "sum", "--key", "title"])
        #expect(notNumeric.status == 1 && notNumeric.errors.contains("sum needs a numeric key"))
        // A relationship has no sum, mean, least or greatest: refused naming it (sum and avg
        // once printed 0 and 0.0, max an object ID), and counted as any key is.
        for function in ["sum", "avg", "min", "max"] {
            let related = await runTool(["aggregate", catalog.path, "--entity", "Song", "--function", function, "--key", "album"])
            #expect(related.status == 1 && related.output.isEmpty, "\(function): \(related.output)")
            #expect(related.errors.contains("\(function) needs an attribute; \"album\" is a relationship to Album"), "\(related.errors)")
        }
        #expect(await runTool(["aggregate", catalog.path, "--entity", "Song", "--function", "count", "--key", "album"]).output == "2\n")
    }

    @Test func updateSetsAttributesOrChangesNothing() async throws {
        let catalog = try await sampleStore()
        defer { catalog.remove() }
        let updated = await runTool(["update", catalog.path, "--entity", "Album", "--where", "artist.artistID == 1", "--set", "rating=3.5", "--set", "title=Re-issued"])
        #expect(updated.status == 0, "\(updated.errors)")
        #expect(updated.output == "updated 2 of 2 matching Album objects (transaction 2)\n")
        let generation = try await catalog.generation()
        #expect(generation.object(of: "Album", uniqueValue: .int(2))?.values[1] == .string("Re-issued"))
        #expect(generation.object(of: "Album", uniqueValue: .int(1))?.values[2] == .double(3.5))

        let before = try catalog.bytes()
        let invalid = await runTool(["update", catalog.path, "--entity", "Album", "--where", "TRUEPREDICATE", "--set", "rating=9"])
        #expect(invalid.status == 1)
        #expect(invalid.errors.firstLine == "strata update: invalidValue: Album.rating: 9.0 is greater than the maximum 5.0", "\(invalid.errors)")
        let unique = await runTool(["update", catalog.path, "--entity", "Album", "--where", "TRUEPREDICATE", "--set", "albumID=1"])
        #expect(unique.status == 1 && unique.errors.firstLine.hasPrefix("strata update: uniqueViolation: unique key \"albumID\" = 1"), "\(unique.errors)")
        let relationship = await runTool(["update", catalog.path, "--entity", "Album", "--where", "albumID == 1", "--set", "artist=2"])
        #expect(relationship.status == 1 && relationship.errors.contains("Album.artist is a relationship"))
        let noWhere = await runTool(["update", catalog.path, "--entity", "Album", "--set", "rating=1"])
        #expect(noWhere.status == 2 && noWhere.errors.hasPrefix("strata update: --where is required"))
        #expect(try catalog.bytes() == before)
    }

    @Test func deleteAppliesDeleteRules() async throws {
        let catalog = try await sampleStore()
        defer { catalog.remove() }
        // Album 1 has a song (deny): deleting AC/DC would cascade to it.
        let before = try catalog.bytes()
        let denied = await runTool(["delete", catalog.path, "--entity", "Artist", "--where", "artistID == 1"])
        #expect(denied.status == 1)
        #expect(denied.errors.firstLine == "strata delete: deleteRule: Album/1.songs (delete rule deny) still refers to Song/1; delete or detach it first. Nothing was deleted [Album/1.songs]")
        #expect(try catalog.bytes() == before)

        // Deleting the song nullifies the album's and the tag's lists; then the cascade goes through.
        let song = await runTool(["delete", catalog.path, "--entity", "Song", "--where", "milliseconds > 300000"])
        #expect(song.output == "deleted 1 objects (1 matching, 0 by cascade), 2 related objects updated (transaction 2)\n", "\(song.errors)")
        let artist = await runTool(["delete", catalog.path, "--entity", "Artist", "--where", "artistID == 1"])
        #expect(artist.output == "deleted 3 objects (1 matching, 2 by cascade), 0 related objects updated (transaction 3)\n", "\(artist.errors)")
        let generation = try await catalog.generation()
        #expect(generation.count(of: "Album") == 1 && generation.count(of: "Artist") == 1)
        #expect(generation.object(ObjectID(entity: "Tag", number: 1))?.values[1] == .objects([]))
        #expect(generation.integrityProblems().isEmpty)
        let none = await runTool(["delete", catalog.path, "--entity", "Artist", "--where", "artistID == 99"])
        #expect(none.status == 0 && none.output.hasPrefix("deleted 0 objects"))
    }

    @Test func historyListsTransactions() async throws {
        let catalog = try await sampleStore()
        defer { catalog.remove() }
        #expect(await runTool(["update", catalog.path, "--entity", "Album", "--where", "albumID == 2", "--set", "rating=2"]).status == 0)
        let text = await runTool(["history", catalog.path, "--format", "text"])
        #expect(text.status == 0)
        let lines = text.output.split(separator: "\n")
        #expect(lines.first?.hasPrefix("transaction 1  ") == true && lines.first?.hasSuffix("  import  8 inserted, 0 updated, 0 deleted") == true, "\(text.output)")
        #expect(text.output.contains("  ~ Album/2: rating = 2.0\n"))
        // JSON Lines is the default, the one format FORMATS.md gives.
        let jsonl = await runTool(["history", catalog.path, "--since", "1"])
        #expect(jsonl.output == (await runTool(["history", catalog.path, "--since", "1", "--format", "jsonl"])).output)
        let records = jsonl.output.split(separator: "\n").map { try! JSON.parse(String($0)) }
        #expect(records.count == 1)
        #expect(records[0]["transaction"] == .int(2) && records[0]["author"] == .string("strata update"))
        #expect(records[0]["updated"] == .object([("Album/2", .object([("rating", .double(2))]))]))
        #expect(await runTool(["history", catalog.path, "--since", "two"]).status == 2)
        // After a compaction the text says what went into the checkpoint (a migration folds
        // the history in too: it says either).
        #expect(await runTool(["compact", catalog.path]).status == 0)
        let compacted = await runTool(["history", catalog.path, "--format", "text"])
        #expect(compacted.output == "(transactions 1–2 were folded into a checkpoint, by a compaction or a migration)\n", "\(compacted.output)")
        // In JSON Lines, standard output holds transactions only; the gap is said on standard error.
        let cursor = await runTool(["history", catalog.path, "--since", "1"])
        #expect(cursor.status == 0 && cursor.output.isEmpty)
        #expect(cursor.errors == "strata history: note: transaction 2 was folded into a checkpoint, by a compaction or a migration; the history starts at 3\n", "\(cursor.errors)")
        #expect(await runTool(["history", catalog.path]).errors.hasPrefix("strata history: note: transactions 1–2 were folded"))
        #expect(await runTool(["history", catalog.path, "--since", "2"]).errors.isEmpty)
    }

    @Test func schemaAsTextDotAndMermaid() async throws {
        let catalog = try await sampleStore()
        defer { catalog.remove() }
        let model = catalog.directory.appending("catalog.json")
        let text = await runTool(["schema", model])
        #expect(text.status == 0)
        #expect(text.output.hasPrefix("schema Catalog version 1 (fingerprint \(CommandFixtures.catalog.fingerprint))\n\nentity Artist\n"))
        #expect(text.output.contains("  albums     to-many Album  inverse artist, delete rule cascade\n"), "\(text.output)")
        #expect(text.output.contains("  album         to-one Album  inverse songs, delete rule nullify, required\n"), "\(text.output)")
        #expect(await runTool(["schema", catalog.path]).output == text.output)
        let dot = await runTool(["schema", catalog.path, "--format", "dot"])
        #expect(dot.output.hasPrefix("digraph \"Catalog\" {\n"))
        #expect(dot.output.contains(#""Album" -> "Artist" [dir=both, arrowhead=tee, arrowtail=crow, headlabel="artist", taillabel="albums (cascade)"];"#), "\(dot.output)")
        #expect(dot.output.hasSuffix("}\n"))
        let mermaid = await runTool(["schema", catalog.path, "--format", "mermaid"])
        #expect(mermaid.output.hasPrefix("erDiagram\n    Artist {\n        int artistID UK \"unique\"\n"), "\(mermaid.output)")
        #expect(mermaid.output.contains("    Album ||--o{ Song : \"songs / album\"\n"), "\(mermaid.output)")
        #expect(mermaid.output.contains("    Album }o--o| Artist : \"artist / albums\"\n"), "\(mermaid.output)")
        #expect(mermaid.output.contains("    Song }o--o{ Tag : \"tags / songs\"\n"), "\(mermaid.output)")
        let bad = await runTool(["schema", catalog.directory.appending("missing.json")])
        #expect(bad.status == 1)
    }

    @Test func infoShowsDurabilityAndSizes() async throws {
        let catalog = try await sampleStore()
        defer { catalog.remove() }
        let info = await runTool(["info", catalog.path])
        #expect(info.output.contains("durability:   full"))
        #expect(info.output.contains("  Tag     1\n"), "\(info.output)")
        let json = try JSON.parse(await runTool(["info", catalog.path, "--format", "json"]).output)
        #expect(json["durability"] == .string("full"))
        #expect(json["objects"]?["Song"] == .int(2))
        #expect(await runTool(["verify", catalog.path]).status == 0)
    }
}
