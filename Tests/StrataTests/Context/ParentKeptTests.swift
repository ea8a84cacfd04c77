import Foundation
import Testing
@testable import Strata

/// What a parent's save to the store kept instead of what a child had saved into it (its
/// merge policy kept the store's side of a conflict with another context's commit). A
/// deletion the save dropped: a child that follows its parent's changes shows the object
/// again — registered, fetched and in its live results — as the parent does; one that does
/// not follow them fetches the object and its instance agrees (not a tombstone of the old
/// values). A value the store kept: the following child takes it (it skips the parent's
/// own saves, whose values it saw through it).
@Suite struct ParentKeptTests {
    @Test("a deletion the parent's save dropped brings the object back in a child that follows the parent", arguments: [MergePolicy.storeWins, .rollback])
    @MainActor
    func childShowsKeptObject(policy: MergePolicy) async throws {
        let f = try await ParentAndChild(policy: policy, childFollows: true)
        defer { f.directory.remove() }
        let (store, o, parent, child) = (f.store, f.o, f.parent, f.child)
        let results = try child.performAndWait { c in
            try c.fetchedResults(Album.self, request: FetchRequest(entity: "Album", sortBy: [SortKey("albumID")]))
        }
        #expect(results.snapshot.sections.flatMap(\.ids) == [o.x, o.y])

        // The child deletes y (no song) and saves into the parent; meanwhile another context
        // retitles y and commits, which the parent merges.
        await child.perform { c in c.delete(c.object(with: o.y, as: Album.self)) }
        try await child.save()
        try await f.anotherContextRetitlesY("theirs", parentMerges: true)
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
        let f = try await ParentAndChild(policy: policy, childFollows: false)
        defer { f.directory.remove() }
        let (store, o, parent, child) = (f.store, f.o, f.parent, f.child)
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

        try await f.anotherContextRetitlesY("theirs", parentMerges: true)
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

    @Test("a value the parent's save kept from the store reaches the child that follows the parent", arguments: [MergePolicy.storeWins, .rollback])
    @MainActor
    func childTakesKeptValue(policy: MergePolicy) async throws {
        let f = try await ParentAndChild(policy: policy, childFollows: true)
        defer { f.directory.remove() }
        let (store, o, parent, child) = (f.store, f.o, f.parent, f.child)
        let results = try child.performAndWait { c in
            try c.fetchedResults(Album.self, request: FetchRequest(entity: "Album", sortBy: [SortKey("title")]))
        }

        // The child retitles y and saves into the parent; another context retitles y too and
        // commits first. The parent, not told of that commit, saves: its policy keeps theirs.
        await child.perform { c in c.object(with: o.y, as: Album.self).title = "mine" }
        try await child.save()
        try await f.anotherContextRetitlesY("A theirs", parentMerges: false)
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

    @Test("what the parent's merge did to changes a child saved into it reaches the child that follows the parent",
          arguments: [MergePolicy.storeWins, .rollback])
    @MainActor
    func childFollowsParentsMergeOfItsChanges(policy: MergePolicy) async throws {
        let f = try await ParentAndChild(policy: policy, childFollows: true)
        defer { f.directory.remove() }
        let (o, parent, child) = (f.o, f.parent, f.child)
        // The child gives y to a2 and saves into the parent: y's artist and a2's albums are
        // the parent's pending changes now.
        await child.perform { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        try await child.save()
        // Another context gives y to a3 and commits; the parent merges the commit, and its
        // policy keeps theirs: y goes to a3, and a2 lets go of it — which the commit does
        // not say (the store's a2 never had y).
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        let saves = other.didSave()
        await other.perform { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a3, as: Artist.self) }
        try await other.save()
        let theirs = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await parent.merge(theirs)
        let inParent = await parent.perform { c in
            (c.object(with: o.y, as: Album.self).artist?.objectID, c.object(with: o.a2, as: Artist.self).albums.map(\.objectID))
        }
        #expect(inParent.0 == o.a3 && inParent.1 == [], "the parent: \(inParent)")

        // The child, which follows the parent's merges, shows y and a2 as the parent does.
        let same = await waitUntil(child, "the child shows y and a2 as the parent does") { c in
            c.object(with: o.y, as: Album.self).artist?.objectID == o.a3 && c.object(with: o.a2, as: Artist.self).albums.isEmpty
        }
        #expect(same)
        #expect(child.performAndWait { c in !c.hasChanges })
    }

    /// How a parent drops the changes a child saved into it.
    enum Drop: String, CaseIterable, Sendable {
        case rollback, reset
    }

    @Test("a parent's rollback or reset of what a child saved into it reaches the child that follows the parent, and its live results",
          arguments: Drop.allCases)
    @MainActor
    func childFollowsParentsDrop(_ drop: Drop) async throws {
        let f = try await ParentAndChild(policy: .error, childFollows: true)
        defer { f.directory.remove() }
        let (o, parent, child) = (f.o, f.parent, f.child)
        func dropInParent() async {
            switch drop {
            case .rollback: await parent.rollback()
            case .reset: await parent.reset()
            }
        }
        let results = try child.performAndWait { c in
            try c.fetchedResults(Album.self, request: FetchRequest(entity: "Album", sortBy: [SortKey("albumID")]))
        }
        let title = await child.perform { c in c.object(with: o.y, as: Album.self).title }
        // The child retitles y and inserts z, and saves both into the parent, which then
        // drops them.
        let z = await child.perform { c -> ObjectID in
            c.object(with: o.y, as: Album.self).title = "mine"
            let z = c.insert(Album.self)
            z.albumID = 99
            z.title = "new"
            return z.objectID
        }
        try await child.save()
        #expect(results.snapshot.sections.flatMap(\.ids) == [o.x, o.y, z])
        await dropInParent()
        let undone = await waitUntil(child, "the child shows y's title and no z, as the parent does") { c in
            c.object(with: o.y, as: Album.self).title == title && c.object(with: z).isDeleted
        }
        #expect(undone)
        #expect(results.snapshot.sections.flatMap(\.ids) == [o.x, o.y], "the child's live results drop z")
        let (pending, fetched) = try child.performAndWait { c in (c.hasChanges, try c.fetchIDs(FetchRequest(entity: "Album"))) }
        #expect(!pending)
        #expect(!fetched.contains(z))

        // A deletion the child saved into the parent comes back with it.
        await child.perform { c in c.delete(c.object(with: o.y, as: Album.self)) }
        try await child.save()
        #expect(results.snapshot.sections.flatMap(\.ids) == [o.x])
        await dropInParent()
        let back = await waitUntil(child, "the child shows y again") { c in !c.object(with: o.y, as: Album.self).isDeleted }
        #expect(back)
        #expect(results.snapshot.sections.flatMap(\.ids) == [o.x, o.y], "the child's live results show y again")
        #expect(child.performAndWait { c in !c.hasChanges })
    }
}

/// A store seeded with the songbook, a parent context on it and a child on the main actor
/// under it, both with the merge policy; the child follows its parent's changes or not.
struct ParentAndChild {
    let directory = TemporaryDirectory("strata-parent-kept")
    let store: Store
    let coordinator: Coordinator
    let o: ConstraintTests.Objects
    let parent: ObjectContext
    let child: ObjectContext

    @MainActor init(policy: MergePolicy, childFollows: Bool) async throws {
        store = try StoreTesting.create(in: directory)
        coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        o = try await seedSongbook(store)
        parent = ObjectContext(coordinator: coordinator, name: "parent")
        child = ObjectContext(parent: parent, executor: .main, name: "child")
        await parent.perform { c in c.mergePolicy = policy }
        await child.perform { c in c.mergePolicy = policy; c.automaticallyMergesChanges = childFollows }
    }

    /// Another context retitles album y and commits; the parent merges the commit, or is
    /// not told of it.
    func anotherContextRetitlesY(_ title: String, parentMerges: Bool) async throws {
        let other = ObjectContext(coordinator: coordinator, name: "other")
        let saves = other.didSave()
        let y = o.y
        await other.perform { c in c.object(with: y, as: Album.self).title = title }
        try await other.save()
        let theirs = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        if parentMerges { await parent.merge(theirs) }
    }
}
