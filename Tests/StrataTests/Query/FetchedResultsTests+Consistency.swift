import Foundation
import Testing
@testable import Strata

/// Live results against a fresh fetch in the cases the randomized property test
/// (`FetchedResultsPropertyTests`) found, each shrunk to its few operations.
extension FetchedResultsTests {
    /// Holds a context's live results (and what its diffs built) between turns.
    final class Watch: @unchecked Sendable {
        var results: FetchedResults<Album>!
        var previous = ResultsSnapshot(sections: [])
        var diffs: [ResultsDiff] = []
        var misfits: [String] = []

        func start(_ c: isolated ObjectContext, _ request: FetchRequest, sectionedBy key: String? = nil) {
            results = try! c.fetchedResults(Album.self, request: request, sectionedBy: key)
            previous = results.snapshot
            results.onChange = { [unowned self] diff in
                diffs.append(diff)
                // Positions are checked before `applying`, which traps on one out of range.
                if let next = LiveResultsHarness.apply(diff, to: previous) {
                    if next != results.snapshot { misfits.append("\(diff) does not lead to \(results.snapshot)") }
                } else {
                    misfits.append("\(diff) does not fit \(previous.sections.map { "\($0.key): \($0.ids.map(\.number))" })")
                }
                previous = results.snapshot
            }
        }

        var ids: [UInt64] { results.snapshot.sections.flatMap(\.ids).map(\.number) }
        var sections: [String] { results.snapshot.sections.map { "\($0.key): \($0.ids.map(\.number))" } }
    }

    static func albumIDs(_ c: isolated ObjectContext, _ request: FetchRequest) -> [UInt64] {
        try! c.fetchIDs(request).map(\.number)
    }

    /// Commits albums (and artists) straight through a setup context.
    static func commit(_ coordinator: Coordinator, _ body: @escaping @Sendable (isolated ObjectContext) -> [ObjectID]) async throws -> [ObjectID] {
        let setup = ObjectContext(coordinator: coordinator, name: "setup")
        let ids = await setup.perform { c in body(c) }
        try await setup.save()
        return ids
    }

    /// Renaming an artist, with no album changed, reorders results sorted and sectioned by
    /// `artist.name` and changes which albums `artist.name == ...` matches.
    @Test("live results by a related object's key follow an unsaved change to that object", arguments: [Tier.root, .child])
    func relatedKeyChange(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let ids = try await Self.commit(f.coordinator) { c in
            let a = c.insert(Artist.self); a.artistID = 1; a.name = "a"
            let b = c.insert(Artist.self); b.artistID = 2; b.name = "b"
            let d = c.insert(Artist.self); d.artistID = 3; d.name = "c"
            let x = c.insert(Album.self); x.albumID = 1; x.title = "x"; x.artist = a
            let y = c.insert(Album.self); y.albumID = 2; y.title = "y"; y.artist = b
            let z = c.insert(Album.self); z.albumID = 3; z.title = "z"; z.artist = d
            return [a.objectID, x.objectID, y.objectID, z.objectID]
        }
        let sectioned = Watch(), matching = Watch()
        let byName = FetchRequest(entity: "Album", sortBy: [SortKey("artist.name"), SortKey("albumID")])
        let named = FetchRequest(entity: "Album", predicate: try ObjectPredicate(format: "artist.name == 'c'"), sortBy: [SortKey("albumID")])
        let failures = await f.context.perform { c -> [String] in
            sectioned.start(c, FetchRequest(entity: "Album", sortBy: [SortKey("albumID")]), sectionedBy: "artist.name")
            matching.start(c, named)
            c.object(with: ids[0], as: Artist.self).name = "c"
            c.processPendingChanges()
            var failures: [String] = []
            // Album x's artist is now "c", like album z's.
            let (x, y, z) = (ids[1].number, ids[2].number, ids[3].number)
            if Self.albumIDs(c, byName) != [y, x, z] { failures.append("a fetch by artist.name gives \(Self.albumIDs(c, byName)), not [\(y), \(x), \(z)]") }
            if Self.albumIDs(c, named) != [x, z] { failures.append("a fetch of artist.name == 'c' gives \(Self.albumIDs(c, named)), not [\(x), \(z)]") }
            if sectioned.sections != ["\"b\": [\(y)]", "\"c\": [\(x), \(z)]"] { failures.append("sections \(sectioned.sections)") }
            if matching.ids != [x, z] { failures.append("artist.name == 'c' shows \(matching.ids)") }
            return failures + sectioned.misfits + matching.misfits
        }
        #expect(failures.isEmpty, "\(failures)")
        await f.close()
    }

    /// A save whose deletion the merge policy drops (the object changed in the store since
    /// it was read) leaves the object in the store: the context shows it again.
    @Test("a deletion dropped by the merge policy brings the object back into live results", arguments: [MergePolicy.storeWins, .rollback])
    func droppedDeletion(policy: MergePolicy) async throws {
        let f = try ContextFixture(.root)
        let x = try await Self.commit(f.coordinator) { c in
            let x = c.insert(Album.self); x.albumID = 1; x.title = "x"; x.rating = 1
            return [x.objectID]
        }[0]
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        let watch = Watch()
        let request = FetchRequest(entity: "Album", sortBy: [SortKey("albumID")])
        await f.context.perform { c in
            c.mergePolicy = policy
            watch.start(c, request)
            c.delete(c.object(with: x))
        }
        let saves = other.didSave()
        await other.perform { o in o.object(with: x, as: Album.self).rating = 2 }
        try await other.save()
        await f.context.merge(await firstElement(of: saves, timeout: .seconds(30))!)
        try await f.context.save()
        #expect(f.store.currentGeneration.object(x) != nil, "the store keeps the album")
        let (fetched, shown, deleted) = await f.context.perform { c in (Self.albumIDs(c, request), watch.ids, c.object(with: x).isDeleted) }
        #expect(fetched == [x.number])
        #expect(shown == fetched, "live results \(shown), a fetch \(fetched)")
        #expect(!deleted, "the context's instance is a tombstone")
        await f.close()
    }

    /// A child deletes an artist; another context inserts an album of that artist, which the
    /// parent and the child merge; the child's save cascades to the album in the parent.
    @Test("a child's live results drop what its save cascaded to in the parent")
    func cascadeInParent() async throws {
        let f = try ContextFixture(.child)
        let artist = try await Self.commit(f.coordinator) { c in
            let r = c.insert(Artist.self); r.artistID = 1; r.name = "R"
            return [r.objectID]
        }[0]
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        let watch = Watch()
        let request = FetchRequest(entity: "Album", sortBy: [SortKey("albumID")])
        await f.context.perform { c in
            watch.start(c, request)
            c.delete(c.object(with: artist))
        }
        let saves = other.didSave()
        await other.perform { o in
            let a = o.insert(Album.self); a.albumID = 1; a.title = "x"; a.artist = o.object(with: artist, as: Artist.self)
        }
        try await other.save()
        let save = await firstElement(of: saves, timeout: .seconds(30))!
        await f.ancestors[0].merge(save)
        await f.context.merge(save)
        try await f.context.save()
        let (fetched, shown) = await f.context.perform { c in (Self.albumIDs(c, request), watch.ids) }
        #expect(shown == fetched, "live results \(shown), a fetch \(fetched)")
        await f.close()
    }

    /// A child moves an album to another artist and deletes its old artist: saved through
    /// the parent, the album must survive (it did in the child, and does in a root context).
    @Test("an album moved away from an artist deleted in a child survives the parent's save", arguments: [Tier.root, .child, .grandchild])
    func movedAlbum(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let ids = try await Self.commit(f.coordinator) { c in
            let a = c.insert(Artist.self); a.artistID = 1; a.name = "A"
            let b = c.insert(Artist.self); b.artistID = 2; b.name = "B"
            let x = c.insert(Album.self); x.albumID = 1; x.title = "x"; x.artist = a
            return [a.objectID, b.objectID, x.objectID]
        }
        let watch = Watch()
        let request = FetchRequest(entity: "Album", sortBy: [SortKey("albumID")])
        await f.context.perform { c in
            watch.start(c, request)
            c.object(with: ids[2], as: Album.self).artist = c.object(with: ids[1], as: Artist.self)
            c.delete(c.object(with: ids[0]))
        }
        try await f.saveThrough()
        #expect(f.store.currentGeneration.object(ids[2]) != nil, "the moved album was deleted")
        let (fetched, shown) = await f.context.perform { c in (Self.albumIDs(c, request), watch.ids) }
        #expect(fetched == [ids[2].number])
        #expect(shown == fetched, "live results \(shown), a fetch \(fetched)")
        await f.close()
    }

    /// The parent keeps its own value against a merged save (`contextWins`); the child,
    /// merging the same save, must see its parent's value, not the one the parent refused.
    @Test("a child merging a save sees the values its parent kept", arguments: [false, true])
    func childMergeUnderParent(automatic: Bool) async throws {
        let f = try ContextFixture(.child)
        let x = try await Self.commit(f.coordinator) { c in
            let x = c.insert(Album.self); x.albumID = 1; x.title = "x"; x.rating = 1
            return [x.objectID]
        }[0]
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        let (c, parent) = (f.context, f.ancestors[0])
        let watch = Watch()
        let request = FetchRequest(entity: "Album", predicate: try ObjectPredicate(format: "rating < 2"), sortBy: [SortKey("albumID")])
        await parent.perform { p in p.mergePolicy = .contextWins }
        await c.perform { c in
            c.mergePolicy = .contextWins
            watch.start(c, request)
            c.object(with: x, as: Album.self).rating = 0
        }
        try await c.save()
        if automatic {
            await parent.perform { p in p.automaticallyMergesChanges = true }
            await c.perform { c in c.automaticallyMergesChanges = true }
        }
        let saves = other.didSave()
        let followed = c.link.changes.subscribe()
        await other.perform { o in o.object(with: x, as: Album.self).rating = 2.5 }
        let transaction = try await other.save()
        if automatic {
            #expect(await LiveResultsHarness.waitForMerge(followed, transaction: transaction!))
        } else {
            let save = await firstElement(of: saves, timeout: .seconds(30))!
            await parent.merge(save)
            await c.merge(save)
        }
        let parentRating = await parent.perform { p in p.object(with: x, as: Album.self).rating }
        let childRating = await c.perform { c in c.object(with: x, as: Album.self).rating }
        #expect(parentRating == 0)
        #expect(childRating == parentRating, "the child reads \(childRating.map { "\($0)" } ?? "nil"), its parent \(parentRating.map { "\($0)" } ?? "nil")")
        try await parent.save()
        let (fetched, shown) = await c.perform { c in (Self.albumIDs(c, request), watch.ids) }
        #expect(fetched == [x.number])
        #expect(shown == fetched, "live results \(shown), a fetch \(fetched)")
        await f.close()
    }

    /// No diff when nothing the results show changed: a refresh that finds the values it
    /// had, a merged change that this context's own pending value overrides.
    @Test("no diff for a refresh or a merge that changes nothing shown")
    func noChangeNoDiff() async throws {
        let f = try ContextFixture(.root)
        let x = try await Self.commit(f.coordinator) { c in
            let x = c.insert(Album.self); x.albumID = 1; x.title = "x"; x.rating = 1
            return [x.objectID]
        }[0]
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        let watch = Watch()
        await f.context.perform { c in
            c.mergePolicy = .contextWins
            watch.start(c, FetchRequest(entity: "Album", sortBy: [SortKey("albumID")]))
            _ = c.object(with: x, as: Album.self).title
        }
        var spurious: [String] = []
        await f.context.perform { c in c.refresh(c.object(with: x), mergeChanges: false) }
        if !watch.diffs.isEmpty { spurious.append("refresh (mergeChanges false): \(watch.diffs)") }
        watch.diffs = []
        await f.context.perform { c in
            _ = c.object(with: x, as: Album.self).title
            c.refresh(c.object(with: x), mergeChanges: true)
        }
        if !watch.diffs.isEmpty { spurious.append("refresh (mergeChanges true): \(watch.diffs)") }
        await f.context.perform { c in c.object(with: x, as: Album.self).rating = 2 }
        watch.diffs = []
        let saves = other.didSave()
        await other.perform { o in o.object(with: x, as: Album.self).rating = 3 }
        try await other.save()
        await f.context.merge(await firstElement(of: saves, timeout: .seconds(30))!)
        let rating = await f.context.perform { c in c.object(with: x, as: Album.self).rating }
        #expect(rating == 2)
        if !watch.diffs.isEmpty { spurious.append("a merge our pending value overrides: \(watch.diffs)") }
        #expect(spurious.isEmpty, "\(spurious)")
        await f.close()
    }

    /// A child watching its live results, whose parent holds a change of y's (the child's
    /// saved title, "edited") while the child, reset, holds none; and another context's save
    /// retitling y `theirs` (and rating it `theirRating`, if given), not merged yet.
    struct ChildOverParentChange {
        let f: ParentAndChild
        let watch = Watch()
        let y: ObjectID
        let save: DidSave

        @MainActor init(policy: MergePolicy, theirTitle: String, theirRating: Double? = nil) async throws {
            f = try await ParentAndChild(policy: policy, childFollows: false)
            let (watch, y) = (self.watch, f.o.y)
            self.y = y
            f.child.performAndWait { c in watch.start(c, FetchRequest(entity: "Album", sortBy: []), sectionedBy: "artist.name") }
            await f.child.perform { c in c.object(with: y, as: Album.self).title = "edited" }
            try await f.child.save()
            await f.child.reset()
            let other = ObjectContext(coordinator: f.coordinator, name: "other")
            let saves = other.didSave()
            await other.perform { c in
                let album = c.object(with: y, as: Album.self)
                album.title = theirTitle
                if let theirRating { album.rating = theirRating }
            }
            try await other.save()
            save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        }

        /// Merges the save into the child; returns the diffs its results delivered meanwhile,
        /// and every misfit so far.
        @MainActor func childMerges() async -> (diffs: [ResultsDiff], misfits: [String]) {
            let watch = self.watch
            let before = f.child.performAndWait { _ in watch.diffs.count }
            await f.child.merge(save)
            return f.child.performAndWait { _ in (Array(watch.diffs.dropFirst(before)), watch.misfits) }
        }

        @MainActor func finish() {
            let watch = self.watch
            f.child.performAndWait { _ in watch.results.onChange = nil }
            f.directory.remove()
        }
    }

    /// A child's live results show a merged object they do not hold as changed only when its
    /// parent took the save's values: a parent that kept its own (`contextWins`,
    /// `overwrite`) changed nothing the child shows, and the child reported an updated row.
    @Test("a merge whose values the child's parent did not take reports no updated row in the child's live results",
          arguments: [MergePolicy.overwrite, .contextWins, .storeWins])
    @MainActor
    func mergeKeptByParentIsNoUpdate(policy: MergePolicy) async throws {
        let fixture = try await ChildOverParentChange(policy: policy, theirTitle: "theirs")
        defer { fixture.finish() }
        let y = fixture.y
        await fixture.f.parent.merge(fixture.save)
        let took = await fixture.f.parent.perform { c in c.object(with: y, as: Album.self).title == "theirs" }
        #expect(took == (policy == .storeWins), "the parent keeps its own y under \(policy)")
        let (diffs, misfits) = await fixture.childMerges()
        if took {
            #expect(diffs.flatMap(\.updatedRows).count == 1, "y changed where the child reads it: \(diffs)")
        } else {
            #expect(diffs.isEmpty, "nothing the child shows changed: \(diffs)")
        }
        #expect(misfits.isEmpty, "\(misfits)")
    }

    /// The same when the save gives an object the value its parent already holds as a change
    /// of its own (the merge leaves it as it was), and when the child merges the save before
    /// its parent does (the parent's change still hides it): the child reported an updated row
    /// for an object whose values it showed unchanged.
    @Test("a merge that leaves what the child reads through its parent as it was reports no updated row",
          arguments: [MergePolicy.overwrite, .storeWins], [true, false])
    @MainActor
    func mergeLeavingParentUnchangedIsNoUpdate(policy: MergePolicy, parentFirst: Bool) async throws {
        let fixture = try await ChildOverParentChange(policy: policy, theirTitle: "edited")
        defer { fixture.finish() }
        let (parent, y) = (fixture.f.parent, fixture.y)
        if parentFirst { await parent.merge(fixture.save) }
        let (diffs, misfits) = await fixture.childMerges()
        if !parentFirst { await parent.merge(fixture.save) }
        #expect(diffs.isEmpty, "y shows \"edited\" where the child reads it before and after: \(diffs)")
        #expect(misfits.isEmpty, "\(misfits)")
        let shown = await fixture.f.child.perform { c in c.object(with: y, as: Album.self).title }
        #expect(shown == "edited")
    }

    /// A parent merging under `error` keeps its conflicting value and its row's version (the
    /// next save reports the conflict) but takes the save's other values: that changed what
    /// the child shows, and its results say so.
    @Test("a merge under error that keeps the parent's conflicting value and takes the others reports the updated row")
    @MainActor
    func conflictKeptByParentStillUpdates() async throws {
        let fixture = try await ChildOverParentChange(policy: .error, theirTitle: "theirs", theirRating: 4.5)
        defer { fixture.finish() }
        let (parent, y) = (fixture.f.parent, fixture.y)
        await parent.merge(fixture.save)
        let (diffs, misfits) = await fixture.childMerges()
        #expect(diffs.flatMap(\.updatedRows).count == 1, "y's rating changed where the child reads it: \(diffs)")
        #expect(misfits.isEmpty, "\(misfits)")
        let shown = await fixture.f.child.perform { c in
            let album = c.object(with: y, as: Album.self)
            return (album.title, album.rating)
        }
        #expect(shown.0 == "edited" && shown.1 == 4.5, "the parent's title and the save's rating: \(shown)")
    }
}
