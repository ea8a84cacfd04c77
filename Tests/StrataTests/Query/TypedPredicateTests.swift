import Foundation
import Testing
@testable import Strata

@Suite struct TypedPredicateTests {
    @Test("typed key paths name the same keys a format string does, and fetch the same objects", arguments: Tier.allCases)
    func sameAsFormat(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let results = try await f.context.perform { c -> [String] in
            let typed: TypedPredicate<Album> = \.artist?.name == "One" && !(\.albumID > 10) || \.title == "nothing"
            let resolved = c.resolve(typed)
            let parsed = try ObjectPredicate(format: "artist.name == \"One\" AND NOT albumID > 10 OR title == \"nothing\"")
            #expect(resolved == parsed, "\(resolved) vs \(parsed)")
            let byTyped = try c.fetch(Album.self, where: typed).map(\.objectID)
            let byFormat = try c.findAll(Album.self, where: "artist.name == 'One' AND NOT albumID > 10 OR title == 'nothing'").map(\.objectID)
            #expect(byTyped == [o.x])
            #expect(byTyped == byFormat)
            let songs = try c.fetch(Song.self, where: \.album?.artist?.artistID >= 1 && .compare(\.title, .beginsWith, "s", options: .caseInsensitive))
            return songs.map(\.title)
        }
        #expect(results == ["Song"])
        await f.close()
    }

    @Test("finders, counts and aggregates over pending changes", arguments: Tier.allCases)
    func findersAndAggregates(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        try await f.context.perform { c in
            c.object(with: o.a2, as: Artist.self).name = "Zwei"
            let artist = c.insert(Artist.self)
            artist.artistID = 4
            artist.name = "Four"
            #expect(try c.count(Artist.self) == 4)
            #expect(try c.count(Artist.self, where: "name BEGINSWITH 'T'") == 1)  // Three (Two was renamed)
            #expect(try c.findFirst(Artist.self, sortedBy: [SortKey("artistID", ascending: false)])?.artistID == 4)
            #expect(try c.findAll(Artist.self).map(\.name) == ["Four", "One", "Three", "Zwei"], "the default sort is by name")
            let sum = try c.aggregate(.sum, of: "artistID", entity: "Artist")
            #expect(sum == [AggregateRow(group: nil, value: .int(10))])
            let counts = try c.aggregate(.count, entity: "Album", groupBy: "artist.name")
            #expect(counts == [AggregateRow(group: .null, value: .int(1)), AggregateRow(group: .string("One"), value: .int(1))])
            let error = Result { () throws(StoreError) in try c.findAll(Artist.self, where: "nickname == 'x'") }
            #expect(throws: StoreError.self) { try error.get() }
        }
        await f.close()
    }
}
