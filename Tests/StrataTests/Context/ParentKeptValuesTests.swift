import Foundation
import Testing
@testable import Strata

/// A parent's save to the store whose merge policy kept the store's value of a key a child
/// had saved into it: the children that follow the parent's changes take the kept value
/// (they skip the parent's own saves, whose values they saw through it).
@Suite struct ParentKeptValuesTests {
    @Test("a value the parent's save kept from the store reaches the child that follows the parent", arguments: [MergePolicy.storeWins, .rollback])
    @MainActor
    func childTakesKeptValue(policy: MergePolicy) async throws {
        let directory = TemporaryDirectory("strata-parent-kept-values")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        let o = try await seedSongbook(store)
        let parent = ObjectContext(coordinator: coordinator, name: "parent")
        let child = ObjectContext(parent: parent, executor: .main, name: "child")
        await parent.perform { c in c.mergePolicy = policy }
        await child.perform { c in c.mergePolicy = policy; c.automaticallyMergesChanges = true }
        let results = try child.performAndWait { c in
            try c.fetchedResults(Album.self, request: FetchRequest(entity: "Album", sortBy: [SortKey("title")]))
        }

        // The child retitles y and saves into the parent; another context retitles y too and
        // commits first. The parent, not told of that commit, saves: its policy keeps theirs.
        await child.perform { c in c.object(with: o.y, as: Album.self).title = "mine" }
        try await child.save()
        let other = ObjectContext(coordinator: coordinator, name: "other")
        await other.perform { c in c.object(with: o.y, as: Album.self).title = "A theirs" }
        try await other.save()
        try await parent.save()
        #expect(store.currentGeneration.object(o.y)?.values[1] == .string("A theirs"), "the store kept theirs")
        #expect(await parent.perform { c in c.object(with: o.y, as: Album.self).title } == "A theirs")

        let took = await waitUntil(child, "the child takes the title the parent kept") { c in
            c.object(with: o.y, as: Album.self).title == "A theirs"
        }
        #expect(took)
        let (pending, fetched) = try child.performAndWait { c in
            (c.hasChanges, try c.fetchIDs(FetchRequest(entity: "Album", sortBy: [SortKey("title")])))
        }
        #expect(!pending)
        #expect(fetched == [o.y, o.x])
        #expect(results.snapshot.sections.flatMap(\.ids) == [o.y, o.x], "the child's live results order y by the kept title")
    }
}
