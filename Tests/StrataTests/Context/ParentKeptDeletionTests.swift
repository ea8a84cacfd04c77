import Foundation
import Testing
@testable import Strata

/// A deletion a child saved into its parent, which the parent's save to the store dropped
/// (its merge policy kept the object another context changed meanwhile): a child that
/// follows its parent's changes shows the object again — registered, fetched and in its
/// live results — as the parent does; one that does not follow them fetches the object
/// and its instance agrees (not a tombstone of the old values).
@Suite struct ParentKeptDeletionTests {
    @Test("a deletion the parent's save dropped brings the object back in a child that follows the parent", arguments: [MergePolicy.storeWins, .rollback])
    @MainActor
    func childShowsKeptObject(policy: MergePolicy) async throws {
        let directory = TemporaryDirectory("strata-parent-kept-deletion")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        let o = try await seedSongbook(store)
        let parent = ObjectContext(coordinator: coordinator, name: "parent")
        let child = ObjectContext(parent: parent, executor: .main, name: "child")
        await parent.perform { c in c.mergePolicy = policy }
        await child.perform { c in c.mergePolicy = policy; c.automaticallyMergesChanges = true }
        let results = try child.performAndWait { c in
            try c.fetchedResults(Album.self, request: FetchRequest(entity: "Album", sortBy: [SortKey("albumID")]))
        }
        #expect(results.snapshot.sections.flatMap(\.ids) == [o.x, o.y])

        // The child deletes y (no song) and saves into the parent; meanwhile another context
        // retitles y and commits, which the parent merges.
        await child.perform { c in c.delete(c.object(with: o.y, as: Album.self)) }
        try await child.save()
        let other = ObjectContext(coordinator: coordinator, name: "other")
        let saves = other.didSave()
        await other.perform { c in c.object(with: o.y, as: Album.self).title = "theirs" }
        try await other.save()
        let theirs = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await parent.merge(theirs)
        // The parent's save meets the conflict: its policy keeps y.
        try await parent.save()
        #expect(store.currentGeneration.object(o.y) != nil, "the store kept y")
        #expect(await parent.perform { c in c.object(with: o.y, as: Album.self).isDeleted == false })

        let shown = await waitUntil(child, "the child shows y again") { c in !c.object(with: o.y, as: Album.self).isDeleted }
        #expect(shown)
        #expect(results.snapshot.sections.flatMap(\.ids) == [o.x, o.y], "the child's live results show y again")
        let (title, fetched, pending) = try await child.perform { c in
            (c.object(with: o.y, as: Album.self).title, try c.fetch(FetchRequest(entity: "Album")).map(\.objectID), c.hasChanges)
        }
        #expect(title == "theirs")
        #expect(Set(fetched) == [o.x, o.y])
        #expect(!pending)
    }

    @Test("a child that does not follow its parent finds the object its saved deletion lost alive, as its fetches return it", arguments: [MergePolicy.storeWins, .rollback])
    @MainActor
    func childNotFollowingFindsKeptObject(policy: MergePolicy) async throws {
        let directory = TemporaryDirectory("strata-parent-kept-deletion")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        let o = try await seedSongbook(store)
        let parent = ObjectContext(coordinator: coordinator, name: "parent")
        let child = ObjectContext(parent: parent, executor: .main, name: "child")
        await parent.perform { c in c.mergePolicy = policy }
        await child.perform { c in c.mergePolicy = policy }
        // The child holds y while it deletes it and saves the deletion into the parent (the
        // box keeps the instance alive between turns; the child runs on the main actor, as
        // the test does).
        let held = UncheckedBox()
        child.performAndWait { c in
            held.object = c.object(with: o.y)
            c.delete(held.object!)
        }
        try await child.save()
        #expect(child.performAndWait { _ in held.object!.isDeleted }, "deleted in the child while the parent holds the deletion")
        #expect(try child.performAndWait { c in try c.fetch(FetchRequest(entity: "Album")).map(\.objectID) } == [o.x])

        let other = ObjectContext(coordinator: coordinator, name: "other")
        let saves = other.didSave()
        await other.perform { c in c.object(with: o.y, as: Album.self).title = "theirs" }
        try await other.save()
        let theirs = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await parent.merge(theirs)
        try await parent.save()
        #expect(store.currentGeneration.object(o.y) != nil, "the store kept y")

        // Not told of the parent's save, the child still reads through it: its fetch returns
        // y, and the instance it holds is y as the parent has it.
        let (fetched, same, deleted, title, pending) = try child.performAndWait { c in
            let fetched = try c.fetch(FetchRequest(entity: "Album", sortBy: [SortKey("albumID")]))
            let y = held.object!
            return (fetched.map(\.objectID), fetched.last === y, y.isDeleted, try? y.value(forKey: "title"), c.hasChanges)
        }
        #expect(fetched == [o.x, o.y])
        #expect(same, "the fetch hands out the instance the child holds")
        #expect(!deleted)
        #expect(title == .string("theirs"))
        #expect(!pending)
        held.object = nil
    }
}
