import Foundation
import Testing
@testable import Strata

@Suite struct ValueOrderingTests {
    /// NaN sorts after every number (as the index comparison intends), the same way for
    /// any order the rows arrive in, in the store and in a context with pending changes.
    @Test("a sort over a double with NaN values is a total order, the same in the store and in a context")
    func nanSortsLast() async throws {
        let directory = TemporaryDirectory("query-nan-sort")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let ratings: [Double?] = [3, .nan, 1, 2, nil, .nan, 0.5, 4, .nan, 2.5]
        let ids = store.allocateObjectIDs(for: "Album", count: ratings.count)
        try await store.commit(ChangeSet(inserted: ratings.enumerated().map { i, rating in
            Songbook.album(ids[i], albumID: Int64(i + 1), rating: rating)
        }))
        let request = FetchRequest(entity: "Album", sortBy: [SortKey("rating")])
        let stored = try store.currentGeneration.fetch(request).map { $0.values[2] }
        @Sendable func describe(_ values: [Value]) -> [String] { values.map { $0.isNull ? "nil" : "\($0)" } }
        let expected: [String] = ["nil", "0.5", "1.0", "2.0", "2.5", "3.0", "4.0", "nan", "nan", "nan"]
        #expect(describe(stored) == expected)

        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        let context = ObjectContext(coordinator: coordinator, name: "nan-sort")
        let inContext = await context.perform { c -> [String] in
            // A pending change to one album makes the fetch evaluate it in memory.
            let album = c.object(with: ids[4]) as! Album
            album.title = "Edited"
            return describe(try! c.fetch(request).map { try! $0.value(forKey: "rating") })
        }
        #expect(inContext == expected)
        await store.close()
    }
}

extension ValueOrderingTests {
    /// Section names that are canonically equivalent but spelled with different scalars
    /// ("é" precomposed and "e" + combining acute) sort apart, byte-wise; the results must
    /// still deliver diffs that turn the old snapshot into the new one.
    @Test("live results sectioned by a string deliver correct diffs when names differ only in Unicode normal form")
    func sectionsWithUnicodeNormalForms() async throws {
        let directory = TemporaryDirectory("query-sections-nfc")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let decomposed = "e\u{301}"  // "é" as e + combining acute
        let precomposed = "\u{E9}"  // "é" as one scalar
        let ids = store.allocateObjectIDs(for: "Artist", count: 3)
        try await store.commit(ChangeSet(inserted: [
            Songbook.artist(ids[0], artistID: 1, name: decomposed),
            Songbook.artist(ids[1], artistID: 2, name: "f"),
            Songbook.artist(ids[2], artistID: 3, name: precomposed),
        ]))
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        let context = ObjectContext(coordinator: coordinator, name: "sections")
        let failures = await context.perform { c -> [String] in
            var failures: [String] = []
            let results = try! c.fetchedResults(Artist.self, request: FetchRequest(entity: "Artist", sortBy: [SortKey("artistID")]),
                                                sectionedBy: "name")
            var previous = results.snapshot
            results.onChange = { diff in
                let next = previous.applying(diff)
                if next != results.snapshot { failures.append("diff \(diff.version) gives \(next.sections.map(\.ids)), results are \(results.snapshot.sections.map(\.ids))") }
                previous = results.snapshot
            }
            // Three sections: "é" (decomposed), "f", "é" (precomposed). Deleting the artist
            // of "f" leaves the two spellings next to each other.
            c.delete(c.object(with: ids[1]))
            c.processPendingChanges()
            return failures
        }
        #expect(failures.isEmpty, "\(failures)")
        await store.close()
    }
}

extension ValueOrderingTests {
    /// Sorting by a to-one relationship groups objects by their destination; the next sort
    /// key orders each group.
    @Test("a sort by a to-one relationship, then an attribute, orders each group by the attribute")
    func sortByToOneThenAttribute() async throws {
        let directory = TemporaryDirectory("query-sort-to-one")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let artist = store.allocateObjectIDs(for: "Artist", count: 1)[0]
        let albums = store.allocateObjectIDs(for: "Album", count: 6)
        let albumIDs: [Int64] = [60, 10, 50, 20, 40, 30]
        try await store.commit(ChangeSet(inserted: [Songbook.artist(artist, artistID: 1, name: "AC/DC", albums: albums)]
            + albums.enumerated().map { i, id in Songbook.album(id, albumID: albumIDs[i], artist: artist) }))
        for ascending in [true, false] {
            let request = FetchRequest(entity: "Album", sortBy: [SortKey("artist", ascending: ascending), SortKey("albumID")])
            let sorted = try store.currentGeneration.fetch(request).map { $0.values[0] }
            #expect(sorted == [10, 20, 30, 40, 50, 60].map { Value.int($0) }, "artist ascending: \(ascending)")
        }
        await store.close()
    }
}

extension ValueOrderingTests {
    /// Predicates compare strings byte-wise, so a value changed to another spelling of the
    /// same text (precomposed instead of decomposed) is a change: saved, and found by an
    /// equality on the new spelling, in the context and in the store.
    @Test("setting a string to a canonically equivalent spelling is saved and fetched by it")
    func respellingIsAChange() async throws {
        let directory = TemporaryDirectory("query-respelling")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let decomposed = "Beyonce\u{301}"
        let precomposed = "Beyonc\u{E9}"
        let id = store.allocateObjectIDs(for: "Artist", count: 1)[0]
        try await store.commit(ChangeSet(inserted: [Songbook.artist(id, artistID: 1, name: decomposed)]))
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        let context = ObjectContext(coordinator: coordinator, name: "respelling")
        let request = FetchRequest(entity: "Artist", predicate: try ObjectPredicate(format: "name == '\(precomposed)'"))
        let found = try await context.perform { c -> (inContext: Int, hasChanges: Bool) in
            (c.object(with: id) as! Artist).name = precomposed
            return (try c.fetchIDs(request).count, c.hasChanges)
        }
        #expect(found.inContext == 1)
        #expect(found.hasChanges)
        try await context.save()
        #expect(try store.currentGeneration.fetch(request).count == 1)
        await store.close()
    }
}

extension ValueOrderingTests {
    static let points = try! Schema("Points", version: 1, entities: [
        Entity("Point", attributes: [Attribute("x", .double, indexed: true), Attribute("label", .int)]),
    ])
    static let unindexedPoints = try! Schema("Points", version: 1, entities: [
        Entity("Point", attributes: [Attribute("x", .double), Attribute("label", .int)]),
    ])

    /// A plain double keeps NaN; a range condition finds the same objects whether an index
    /// answers it or a scan does, and NaN (which orders with nothing) matches no range.
    @Test("a range over a double holding NaN finds the same objects with and without an index")
    func indexedRangeWithNaN() async throws {
        let xs: [Double] = [3, .nan, 1, 2, 5, .nan, 4, 0.5, .nan, 6]
        func labels(_ schema: Schema) async throws -> [Value] {
            let directory = TemporaryDirectory("query-nan-index")
            defer { directory.remove() }
            let store = try StoreTesting.create(in: directory, schema: schema)
            for (i, x) in xs.enumerated() {
                let id = store.allocateObjectIDs(for: "Point", count: 1)[0]
                try await store.commit(ChangeSet(inserted: [RowImage(id: id, values: [.double(x), .int(Int64(i))])]))
            }
            let request = FetchRequest(entity: "Point", predicate: try ObjectPredicate(format: "x >= 2"), sortBy: [SortKey("label")])
            let found = try store.currentGeneration.fetch(request).map { $0.values[1] }
            await store.close()
            return found
        }
        let expected = xs.indices.filter { xs[$0] >= 2 }.map { Value.int(Int64($0)) }
        let indexed = try await labels(Self.points)
        let scanned = try await labels(Self.unindexedPoints)
        #expect(indexed == scanned)
        #expect(scanned == expected)
        #expect(indexed == expected)
    }
}
