import Foundation
import Testing
@testable import Strata

// Change notifications (objects-did-change, did-save): each test states what a notification
// must say after one kind of operation — no object in two contradictory sets, nothing
// reported that nobody could see change, every visible change reported, a did-save naming
// only what was written — and that streams end when what posts them goes away.

/// Every objects-did-change `context` posted since the last call: a marker turn is posted
/// now (through the context's own pending notification, changing no object), and the
/// stream is read up to it, under a hard timeout.
private let markerCounter = Locked<UInt64>(0)

func postedChanges(_ stream: AsyncStream<ObjectsDidChange>, of context: ObjectContext) async throws -> [ObjectsDidChange] {
    let marker = ObjectID(entity: "Song", number: UInt64.max - markerCounter.withLock { $0 += 1; return $0 })
    await context.perform { c in _ = c.graph.pendingNotification.merged.insert(marker) }
    return try await withTimeout(20, "the marker notification") {
        var posted: [ObjectsDidChange] = []
        for await change in stream {
            guard change.merged.contains(marker) else {
                posted.append(change)
                continue
            }
            var rest = change
            rest.merged.remove(marker)
            if !rest.isEmpty { posted.append(rest) }
            return posted
        }
        return posted
    }
}

/// The objects a notification reports as changed in any way (not counting `merged`).
func reported(_ change: ObjectsDidChange) -> Set<ObjectID> {
    change.inserted.union(change.updated.keys).union(change.deleted).union(change.refreshed).union(change.invalidated)
}

/// What objects-did-change and did-save say after each kind of operation: deletions,
/// rollbacks and resets within a turn, changes undone in the turn, merges, nested saves
/// whose parent keeps its own values or merges a list, saves the store's merge policy
/// dropped, and the end of a coordinator's stream.
@Suite struct ContextNotificationTests {
    // MARK: - Contradictory sets in one notification

    @Test("a cascade delete, or a change then a delete in one turn, reports no object as both updated and deleted",
          arguments: [Tier.root, .child])
    func updatedAndDeleted(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let changes = f.context.objectsDidChange()
        await f.context.perform { c in
            c.object(with: o.a2, as: Artist.self).name = "renamed, then deleted"
            c.delete(c.object(with: o.a2))
            c.delete(c.object(with: o.s))
            c.delete(c.object(with: o.a1))  // cascades to album x
        }
        let posted = try await postedChanges(changes, of: f.context)
        #expect(posted.count == 1)
        for change in posted {
            #expect(change.deleted == [o.a1, o.a2, o.x, o.s])
            for id in change.deleted {
                #expect(change.updated[id] == nil, "\(id) is reported deleted and updated (\(change.updated[id] ?? []))")
            }
        }
        await f.close()
    }

    @Test("a rollback in the turn that deleted and inserted objects does not report them deleted/inserted and refreshed/invalidated",
          arguments: [Tier.root, .child])
    func rollbackInSameTurn(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let changes = f.context.objectsDidChange()
        let inserted = await f.context.perform { c in
            _ = c.object(with: o.a3, as: Artist.self).name
            c.delete(c.object(with: o.a2))
            let new = c.insert(Artist.self)
            new.artistID = 99
            c.rollback()
            return new.objectID
        }
        let alive = await f.context.perform { c in !c.object(with: o.a2).isDeleted }
        #expect(alive)
        let posted = try await postedChanges(changes, of: f.context)
        for change in posted {
            #expect(!change.deleted.contains(o.a2), "\(o.a2) is alive after the turn but reported deleted (and refreshed: \(change.refreshed.contains(o.a2)))")
            #expect(!change.inserted.contains(inserted), "\(inserted) is gone after the turn but reported inserted (and invalidated: \(change.invalidated.contains(inserted)))")
        }
        await f.close()
    }

    @Test("a reset in a turn with changes reports every object invalidated, not also inserted or updated")
    func resetInSameTurn() async throws {
        let f = try ContextFixture(.root)
        let o = try await seedSongbook(f.store)
        let changes = f.context.objectsDidChange()
        await f.context.perform { c in
            c.object(with: o.a2, as: Artist.self).name = "changed"
            c.insert(Artist.self).artistID = 98
            c.reset()
        }
        let posted = try await postedChanges(changes, of: f.context)
        for change in posted where change.invalidatedAll {
            #expect(change.inserted.isEmpty && change.updated.isEmpty,
                    "invalidatedAll together with inserted \(change.inserted) and updated \(change.updated)")
        }
        await f.close()
    }

    // MARK: - Reported without a change

    @Test("a key changed and changed back within one turn is not reported", arguments: [Tier.root, .child])
    func changedAndBack(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        await f.context.perform { c in _ = c.object(with: o.a2, as: Artist.self).name; _ = c.object(with: o.x, as: Album.self).title }
        let changes = f.context.objectsDidChange()
        let hasChanges = await f.context.perform { c in
            let artist = c.object(with: o.a2, as: Artist.self)
            artist.name = "temporary"
            artist.name = "Two"
            let album = c.object(with: o.x, as: Album.self)
            album.artist = c.object(with: o.a2, as: Artist.self)
            album.artist = c.object(with: o.a1, as: Artist.self)
            return c.hasChanges
        }
        #expect(!hasChanges)
        let posted = try await postedChanges(changes, of: f.context)
        #expect(posted.isEmpty, "nothing visible changed, yet posted: \(posted)")
        await f.close()
    }

    @Test("a merge that keeps every value here (a conflict under .error) does not report the object refreshed")
    func conflictingMergeChangesNothingVisible() async throws {
        let f = try ContextFixture(.root)
        let o = try await seedSongbook(f.store)
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        await f.context.perform { c in c.object(with: o.a2, as: Artist.self).name = "ours" }
        let saves = other.didSave()
        await other.perform { c in c.object(with: o.a2, as: Artist.self).name = "theirs" }
        try await other.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        let changes = f.context.objectsDidChange()
        let conflicts = await f.context.merge(save)
        #expect(conflicts.count == 1)
        let name = await f.context.perform { $0.object(with: o.a2, as: Artist.self).name }
        #expect(name == "ours")
        let posted = try await postedChanges(changes, of: f.context)
        for change in posted {
            #expect(!change.refreshed.contains(o.a2), "\(o.a2) shows the same values before and after, yet is reported refreshed")
        }
        await f.close()
    }

    // MARK: - Changes not reported

    @Test("a merge that adds to a to-many list this context changed reports the object", arguments: [Tier.root, .child])
    func mergedListNotReported(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        // Ours: a new album of a2 (a2.albums changed here).
        await f.context.perform { c in
            let album = c.insert(Album.self)
            album.albumID = 500
            album.title = "ours"
            album.artist = c.object(with: o.a2, as: Artist.self)
        }
        // Theirs: another new album of a2, committed.
        let saves = other.didSave()
        let theirs = await other.perform { c in
            let album = c.insert(Album.self)
            album.albumID = 501
            album.title = "theirs"
            album.artist = c.object(with: o.a2, as: Artist.self)
            return album.objectID
        }
        try await other.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        let changes = f.context.objectsDidChange()
        await f.context.merge(save)
        let albums = await f.context.perform { c in c.object(with: o.a2, as: Artist.self).albums.map(\.objectID) }
        #expect(albums.contains(theirs), "precondition: the merge adds their album to a2.albums")
        let posted = try await postedChanges(changes, of: f.context)
        let reportedAll = posted.reduce(into: Set<ObjectID>()) { $0.formUnion(reported($1)) }
        #expect(reportedAll.contains(o.a2), "a2.albums changed by the merge (\(albums)), but a2 is not reported: \(posted)")
        await f.close()
    }

    @Test("a rollback while a child's save is in flight: the saved values the object then takes are reported")
    func rollbackDuringChildSave() async throws {
        let directory = TemporaryDirectory("strata-notify")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let captured = DispatchSemaphore(value: 0)
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self], observer: { event in
            if event.context == "child" && event.operation == .save { captured.signal() }
        })
        let objects = try await seedSongbook(store)
        let root = ObjectContext(coordinator: coordinator, name: "root")
        let child = ObjectContext(parent: root, name: "child")
        let changes = child.objectsDidChange()
        await child.perform { $0.object(with: objects.a1, as: Artist.self).name = "Changed" }
        let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let blocker = Task { await root.perform { _ in entered.signal(); _ = release.wait(timeout: .now() + .seconds(30 * TestTiming.slowdown)) } }
        #expect(await signalled(entered))
        let saving = Task { try await child.save() }
        #expect(await signalled(captured))
        await child.rollback()
        let before = await child.perform { $0.object(with: objects.a1, as: Artist.self).name }
        #expect(before == "One")
        _ = try await postedChanges(changes, of: child)  // the rollback's own notification
        release.signal()
        _ = try await withTimeout(30, "the child's save") { try await saving.value }
        await blocker.value
        let after = await child.perform { $0.object(with: objects.a1, as: Artist.self).name }
        let posted = try await postedChanges(changes, of: child)
        if after != before {
            let reportedAll = posted.reduce(into: Set<ObjectID>()) { $0.formUnion(reported($1)) }
            #expect(reportedAll.contains(objects.a1),
                    "a1.name went from \(before ?? "nil") to \(after ?? "nil") in the child with no notification: \(posted)")
        }
        await store.close()
    }

    @Test("a sibling that follows its parent learns of the objects the parent's delete rules took with a child's deletion")
    func siblingMissesParentCascade() async throws {
        let f = try ContextFixture(.root)
        let o = try await seedSongbook(f.store)
        let parent = f.context
        let saver = ObjectContext(parent: parent, name: "saver")
        let follower = ObjectContext(parent: parent, name: "follower")
        await follower.perform { c in c.automaticallyMergesChanges = true }
        await saver.perform { c in _ = c.object(with: o.a2, as: Artist.self).albums }  // read before the parent's insert
        let album = await parent.perform { c in
            let album = c.insert(Album.self)
            album.albumID = 600
            album.title = "parent's"
            album.artist = c.object(with: o.a2, as: Artist.self)
            return album.objectID
        }
        await follower.perform { c in
            _ = c.object(with: o.a2, as: Artist.self).name
            _ = c.object(with: album, as: Album.self).title
        }
        let changes = follower.objectsDidChange()
        await saver.perform { c in c.delete(c.object(with: o.a2)) }
        try await saver.save()
        let parentHas = await parent.perform { c in !c.object(with: album).isDeleted }
        #expect(!parentHas, "precondition: the parent's cascade took the album")
        await waitUntil(follower, "the follower merged the deletion") { c in c.object(with: o.a2).isDeleted }
        let followerHas = await follower.perform { c in !c.object(with: album).isDeleted }
        let posted = try await postedChanges(changes, of: follower)
        let reportedAll = posted.reduce(into: Set<ObjectID>()) { $0.formUnion(reported($1)) }
        #expect(!followerHas, "the follower still shows \(album), which its parent no longer has")
        #expect(reportedAll.contains(album), "the follower was not told that \(album) went: \(posted)")
        await f.close()
    }

    // MARK: - Did-save contents

    @Test("a root save whose every change the store's merge policy dropped does not claim to have written them")
    func rootSaveAllDropped() async throws {
        let f = try ContextFixture(.root)
        let o = try await seedSongbook(f.store)
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        await f.context.perform { c in
            c.mergePolicy = .storeWins
            c.object(with: o.a2, as: Artist.self).name = "ours"
        }
        await other.perform { c in c.object(with: o.a2, as: Artist.self).name = "theirs" }
        let theirs = try #require(try await other.save())
        let saves = f.context.didSave()
        let transaction = try await f.context.save()
        #expect(f.store.currentGeneration.transaction == theirs, "precondition: nothing was committed")
        #expect(transaction == nil, "save() returned transaction \(transaction.map(String.init) ?? "nil"), which is the other context's")
        if let save = await firstElement(of: saves, timeout: .seconds(2)) {
            #expect(save.updated.isEmpty && save.changedKeys.isEmpty,
                    "did-save claims transaction \(save.transaction.map(String.init) ?? "nil") wrote \(save.updated) \(save.changedKeys)")
        }
        await f.close()
    }

    @Test("a child's did-save lists what its parent applied, not changes the child's merge policy dropped",
          arguments: [MergePolicy.storeWins, .rollback])
    func childSaveDroppedChanges(policy: MergePolicy) async throws {
        let f = try ContextFixture(.root)
        let o = try await seedSongbook(f.store)
        let parent = f.context
        let child = ObjectContext(parent: parent, name: "child")
        await child.perform { c in
            c.mergePolicy = policy
            _ = c.object(with: o.a2, as: Artist.self).name
        }
        await parent.perform { c in c.object(with: o.a2, as: Artist.self).name = "parent" }
        await child.perform { c in c.object(with: o.a2, as: Artist.self).name = "child" }
        let saves = child.didSave()
        try await child.save()
        let parentName = await parent.perform { $0.object(with: o.a2, as: Artist.self).name }
        #expect(parentName == "parent", "precondition: the policy kept the parent's value")
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        #expect(save.changedKeys[o.a2] == nil && !save.updated.contains(o.a2),
                "the child's did-save says it wrote a2.name = \(save.values[o.a2].map { "\($0[1])" } ?? "?"); the parent holds \(parentName ?? "nil")")
        let childName = await child.perform { $0.object(with: o.a2, as: Artist.self).name }
        #expect(childName == parentName, "after the save the child shows \(childName ?? "nil") (no pending change), its parent \(parentName ?? "nil")")
        await f.close()
    }

    // MARK: - Streams end

    @Test("a coordinator's did-save stream ends when the coordinator goes away")
    func coordinatorStreamEnds() async throws {
        let directory = TemporaryDirectory("strata-notify")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        var coordinator: Coordinator? = Coordinator(store: store)
        let stream = coordinator!.didSave()
        let another = coordinator!.didSave()
        weak let gone = coordinator
        coordinator = nil
        #expect(gone == nil, "precondition: the coordinator is deallocated")
        let ended = await returns(within: .seconds(3)) {
            for await _ in stream {}
            return true
        }
        #expect(ended, "the did-save stream of a deallocated coordinator never ends")
        await store.close()
        let endedAfterClose = await returns(within: .seconds(3)) {
            for await _ in another {}
            return true
        }
        #expect(endedAfterClose, "nor when the store closes")
    }
}

/// A child's save of a to-many list its parent changed too: the parent merges the lists, and
/// the child's did-save and objects show the merged list.
@Suite struct ContextNotificationChildListTests {
    @Test("under the default policy, a child's did-save of a to-many list its parent merged lists the parent's list")
    func childSaveMergedList() async throws {
        let f = try ContextFixture(.root)
        let o = try await seedSongbook(f.store)
        let parent = f.context
        let child = ObjectContext(parent: parent, name: "child")
        await child.perform { c in _ = c.object(with: o.a2, as: Artist.self).albums }
        let parents = await parent.perform { c in
            let album = c.insert(Album.self)
            album.albumID = 700
            album.title = "parent's"
            album.artist = c.object(with: o.a2, as: Artist.self)
            return album.objectID
        }
        let childs = await child.perform { c in
            let album = c.insert(Album.self)
            album.albumID = 701
            album.title = "child's"
            album.artist = c.object(with: o.a2, as: Artist.self)
            return album.objectID
        }
        let saves = child.didSave()
        try await child.save()
        let parentList = await parent.perform { c in c.object(with: o.a2, as: Artist.self).albums.map(\.objectID) }
        #expect(Set(parentList) == [parents, childs], "precondition: the parent merged both additions")
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        let albumsIndex = Fixtures.songbook.entity(named: "Artist")!.propertyNames.firstIndex(of: "albums")!
        let listed = save.values[o.a2]?[albumsIndex]
        #expect(listed == .objects(parentList), "the child's did-save lists a2.albums = \(listed.map { "\($0)" } ?? "nil"); the parent holds \(parentList)")
        let (childList, pending) = await child.perform { c in (c.object(with: o.a2, as: Artist.self).albums.map(\.objectID), c.hasChanges) }
        #expect(childList == parentList, "after the save the child shows a2.albums = \(childList) (pending changes: \(pending)); the parent \(parentList)")
        await f.close()
    }
}

/// A context's streams end when the context goes away.
@Suite struct ContextNotificationStreamEndTests {
    @Test("a context's streams end when the context goes away", arguments: [Tier.root, .child])
    func contextStreamsEnd(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        var context: ObjectContext? = tier == .root
            ? ObjectContext(coordinator: f.coordinator, name: "short-lived")
            : ObjectContext(parent: f.context, name: "short-lived")
        await context!.perform { c in c.automaticallyMergesChanges = true }
        let (changes, saves, conflicts) = (context!.objectsDidChange(), context!.didSave(), context!.mergeConflicts())
        context = nil
        let ended = await returns(within: .seconds(10)) {
            for await _ in changes {}
            for await _ in saves {}
            for await _ in conflicts {}
            return true
        }
        #expect(ended)
        await f.close()
    }
}
