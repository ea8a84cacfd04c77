import Foundation
import Testing
@testable import Strata

@Suite struct ContextMergeTests {
    /// Two root contexts on one coordinator (or on two coordinators of one store).
    struct Pair {
        let directory: TemporaryDirectory
        let store: Store
        let a: ObjectContext
        let b: ObjectContext

        init(separateCoordinators: Bool = false) throws {
            directory = TemporaryDirectory("strata-merge")
            store = try StoreTesting.create(in: directory, durability: .relaxed)
            let classes: [ManagedObject.Type] = [Artist.self, Album.self, Song.self]
            let first = Coordinator(store: store, modelClasses: classes)
            let second = separateCoordinators ? Coordinator(store: store, name: "import", modelClasses: classes) : first
            a = ObjectContext(coordinator: first, name: "a")
            b = ObjectContext(coordinator: second, name: "b")
        }

        func close() async {
            await store.close()
            directory.remove()
        }
    }

    @Test("two contexts change the same key: the second save reports the conflict and changes nothing")
    func conflictReported() async throws {
        let p = try Pair()
        let o = try await seedSongbook(p.store)
        await p.a.perform { c in c.object(with: o.a1, as: Artist.self).name = "from a" }
        await p.b.perform { c in
            let artist = c.object(with: o.a1, as: Artist.self)
            artist.name = "from b"
            artist.createdAt = Date(timeIntervalSince1970: 7)
        }
        try await p.a.save()
        let before = StoreState(p.store)
        let error = await #expect(throws: StoreError.self) { try await p.b.save() }
        #expect(error?.code == .conflict)
        #expect(error?.conflicts.count == 1)
        let conflict = try #require(error?.conflicts.first)
        #expect(conflict.object == o.a1 && conflict.key == "name")
        #expect(conflict.base == .string("One") && conflict.ours == .string("from b") && conflict.theirs == .string("from a"))
        #expect(StoreState(p.store) == before)
        let stillPending = await p.b.hasChanges
        #expect(stillPending, "the refused save keeps the context's changes")
        await p.close()
    }

    @Test("merge policies decide per property", arguments: [MergePolicy.storeWins, .contextWins, .overwrite, .rollback])
    func policies(policy: MergePolicy) async throws {
        let p = try Pair()
        let o = try await seedSongbook(p.store)
        let later = Date(timeIntervalSince1970: 99)
        // a changes name and createdAt; b changes name (conflict) and, through a merge-free
        // path, nothing else.
        await p.a.perform { c in
            let artist = c.object(with: o.a1, as: Artist.self)
            artist.name = "theirs"
        }
        await p.b.perform { c in
            let artist = c.object(with: o.a1, as: Artist.self)
            artist.name = "ours"
            artist.createdAt = later
        }
        try await p.a.save()
        await p.b.perform { c in c.mergePolicy = policy }
        try await p.b.save()
        let g = p.store.currentGeneration
        let name = g.value(o.a1, "name")
        let created = g.value(o.a1, "createdAt")
        switch policy {
        case .storeWins:
            #expect(name == .string("theirs"))
            #expect(created == .date(later), "our non-conflicting key is saved")
        case .contextWins, .overwrite:
            #expect(name == .string("ours"))
            #expect(created == .date(later))
        case .rollback:
            #expect(name == .string("theirs"))
            #expect(created == .date(Songbook.epoch), "rollback drops every change to a conflicting object")
        case .error:
            Issue.record("not a case")
        }
        let (contextName, pending) = await p.b.perform { c in (c.object(with: o.a1, as: Artist.self).name, c.hasChanges) }
        #expect(contextName == name.flatMap { String(value: $0) })
        #expect(!pending)
        await p.close()
    }

    @Test("merging a did-save refreshes registered objects, keeps pending edits and marks deletions",
          arguments: [false, true])
    func mergeDidSave(separateCoordinators: Bool) async throws {
        let p = try Pair(separateCoordinators: separateCoordinators)
        let o = try await seedSongbook(p.store)
        await p.b.perform { c in
            _ = c.object(with: o.a1, as: Artist.self).name        // loaded
            c.object(with: o.a2, as: Artist.self).name = "mine"   // pending edit
            _ = c.object(with: o.s, as: Song.self).title          // loaded, deleted by a
        }
        let saves = p.a.didSave()
        await p.a.perform { c in
            c.object(with: o.a1, as: Artist.self).name = "new one"
            c.object(with: o.a2, as: Artist.self).createdAt = Date(timeIntervalSince1970: 5)
            c.delete(c.object(with: o.s))
        }
        try await p.a.save()
        var iterator = saves.makeAsyncIterator()
        let save = try #require(await iterator.next())
        #expect(save.transaction == 2)
        #expect(Set(save.updated).isSuperset(of: [o.a1, o.a2, o.x]))
        #expect(save.deleted == [o.s])
        let conflicts = await p.b.perform { c in c.merge(save) }
        #expect(conflicts.isEmpty)
        await p.b.perform { c in
            let a1 = c.object(with: o.a1, as: Artist.self)
            #expect(a1.name == "new one" && !a1.hasChanges)
            let a2 = c.object(with: o.a2, as: Artist.self)
            #expect(a2.name == "mine", "the pending edit is kept")
            #expect(a2.createdAt == Date(timeIntervalSince1970: 5), "their other key is merged")
            let song = c.object(with: o.s, as: Song.self)
            #expect(song.isDeletedElsewhere)
            #expect(song.title == "Song", "a tombstone keeps its last snapshot")
            let error = Result { () throws(StoreError) in try song.value(forKey: "title") }
            #expect(throws: StoreError.self) { try error.get() }
            #expect(c.object(with: o.x, as: Album.self).songs.isEmpty)
        }
        try await p.b.save()
        #expect(p.store.currentGeneration.value(o.a2, "name") == .string("mine"))
        #expect(p.store.currentGeneration.value(o.a2, "createdAt") == .date(Date(timeIntervalSince1970: 5)))
        await p.close()
    }

    @Test("a merged conflict is reported and the next save refuses it under the error policy")
    func mergeConflict() async throws {
        let p = try Pair()
        let o = try await seedSongbook(p.store)
        await p.b.perform { c in c.object(with: o.a1, as: Artist.self).name = "b's" }
        let saves = p.a.didSave()
        await p.a.perform { c in c.object(with: o.a1, as: Artist.self).name = "a's" }
        try await p.a.save()
        var iterator = saves.makeAsyncIterator()
        let save = try #require(await iterator.next())
        let conflicts = await p.b.perform { c in c.merge(save) }
        #expect(conflicts.map(\.key) == ["name"])
        let error = await #expect(throws: StoreError.self) { try await p.b.save() }
        #expect(error?.code == .conflict)
        await p.b.perform { c in c.mergePolicy = .contextWins }
        try await p.b.save()
        #expect(p.store.currentGeneration.value(o.a1, "name") == .string("b's"))
        await p.close()
    }

    @Test("automatic merging between siblings and across coordinators", arguments: [false, true])
    func automaticMerging(separateCoordinators: Bool) async throws {
        let p = try Pair(separateCoordinators: separateCoordinators)
        let o = try await seedSongbook(p.store)
        await p.b.perform { c in
            c.automaticallyMergesChanges = true
            _ = c.object(with: o.a1, as: Artist.self).name
        }
        await p.a.perform { c in c.object(with: o.a1, as: Artist.self).name = "merged" }
        try await p.a.save()
        await waitUntil(p.b, "b merges a's save") { c in c.object(with: o.a1, as: Artist.self).name == "merged" }
        await p.close()
    }

    @Test("a child following its parent merges the parent's saves and a sibling's")
    func childFollowsParent() async throws {
        let f = try ContextFixture(.child)
        let o = try await seedSongbook(f.store)
        let root = f.ancestors[0]
        let sibling = ObjectContext(parent: root, name: "sibling")
        await f.context.perform { c in
            c.automaticallyMergesChanges = true
            _ = c.object(with: o.a1, as: Artist.self).name
        }
        await sibling.perform { c in c.object(with: o.a1, as: Artist.self).name = "from sibling" }
        try await sibling.save()
        await waitUntil(f.context, "the child sees the sibling's save") { c in
            c.object(with: o.a1, as: Artist.self).name == "from sibling"
        }
        await f.close()
    }

    @Test("sibling children: a key both changed is a conflict in the parent; list additions merge")
    func siblingConflicts() async throws {
        let f = try ContextFixture(.root)
        let o = try await seedSongbook(f.store)
        let first = ObjectContext(parent: f.context, name: "first")
        let second = ObjectContext(parent: f.context, name: "second")
        let (s1, s2) = await (first.perform { c in
            c.object(with: o.a1, as: Artist.self).name = "first's"
            let song = c.insert(Song.self)
            song.songID = StoreTesting.uuid(21)
            song.title = "One more"
            song.milliseconds = 1
            song.album = c.object(with: o.y, as: Album.self)
            return song.objectID
        }, second.perform { c in
            c.object(with: o.a1, as: Artist.self).name = "second's"
            let song = c.insert(Song.self)
            song.songID = StoreTesting.uuid(22)
            song.title = "Another"
            song.milliseconds = 1
            song.album = c.object(with: o.y, as: Album.self)
            return song.objectID
        })
        try await first.save()
        let error = await #expect(throws: StoreError.self) { try await second.save() }
        #expect(error?.code == .conflict)
        #expect(error?.conflicts.map(\.key) == ["name"])
        await second.perform { c in c.mergePolicy = .storeWins }
        try await second.save()
        let (name, songs) = await f.context.perform { c in
            (c.object(with: o.a1, as: Artist.self).name, Set(c.object(with: o.y, as: Album.self).songs.map(\.objectID)))
        }
        #expect(name == "first's", "storeWins keeps the parent's value")
        #expect(songs == [s1, s2], "both children's additions to the list survive")
        try await f.context.save()
        #expect(f.store.currentGeneration.integrityProblems().isEmpty)
        await f.close()
    }

    @Test("objects-did-change reports inserts, updates with keys, and deletions once per turn")
    func objectsDidChange() async throws {
        let f = try ContextFixture(.root)
        let o = try await seedSongbook(f.store)
        let changes = f.context.objectsDidChange()
        let inserted = await f.context.perform { c in
            c.object(with: o.a2, as: Artist.self).name = "changed"
            c.delete(c.object(with: o.s))
            let new = c.insert(Artist.self)
            new.artistID = 77
            return new.objectID
        }
        var iterator = changes.makeAsyncIterator()
        let change = try #require(await iterator.next())
        #expect(change.inserted == [inserted])
        #expect(change.updated[o.a2] == ["name"])
        #expect(change.updated[o.x] == ["songs"], "the nullified inverse is an update too")
        #expect(change.deleted == [o.s])
        await f.close()
    }

    @Test("nested saves three levels deep reach the store only from the root")
    func nestedThreeLevels() async throws {
        let f = try ContextFixture(.grandchild)
        let o = try await seedSongbook(f.store)
        let (child, root) = (f.ancestors[0], f.ancestors[1])
        let id = await f.context.perform { c in
            c.object(with: o.a1, as: Artist.self).name = "deep"
            let song = c.insert(Song.self)
            song.songID = StoreTesting.uuid(9)
            song.title = "New"
            song.milliseconds = 1
            song.album = c.object(with: o.y, as: Album.self)
            return song.objectID
        }
        try await f.context.save()
        #expect(await child.hasChanges)
        #expect(!(await root.hasChanges))
        let seenInChild = await child.perform { c in c.object(with: o.a1, as: Artist.self).name }
        #expect(seenInChild == "deep")
        // A sibling of the grandchild, created now, reads the child's pending changes.
        let cousin = ObjectContext(parent: child, name: "cousin")
        let (cousinName, cousinSongs) = await cousin.perform { c in
            (c.object(with: o.a1, as: Artist.self).name, c.object(with: o.y, as: Album.self).songs.map(\.objectID))
        }
        #expect(cousinName == "deep")
        #expect(cousinSongs == [id])
        try await child.save()
        #expect(await root.hasChanges)
        #expect(f.store.currentGeneration.value(o.a1, "name") == .string("One"))
        try await root.save()
        #expect(f.store.currentGeneration.value(o.a1, "name") == .string("deep"))
        #expect(f.store.currentGeneration.value(id, "album") == .object(o.y))
        await f.close()
    }

    @Test("discarding an editor changes nothing anywhere", arguments: [Tier.root, .mainRoot, .child])
    func discardEditor(parentTier: Tier) async throws {
        let f = try ContextFixture(parentTier, durability: .relaxed)
        let o = try await seedSongbook(f.store)
        let parentChanges = await f.context.perform { c in
            _ = c.object(with: o.a1, as: Artist.self).name
            return c.hasChanges
        }
        #expect(!parentChanges)
        let before = StoreState(f.store)
        do {
            let editor = ObjectContext(parent: f.context, name: "editor")
            await editor.perform { c in
                c.object(with: o.a1, as: Artist.self).name = "edited"
                c.delete(c.object(with: o.s))
                let artist = c.insert(Artist.self)
                artist.artistID = 123
            }
        }
        let (name, pending) = await f.context.perform { c in (c.object(with: o.a1, as: Artist.self).name, c.hasChanges) }
        #expect(name == "One")
        #expect(!pending)
        for ancestor in f.ancestors { #expect(!(await ancestor.hasChanges)) }
        #expect(StoreState(f.store) == before)
        await f.close()
    }

    @Test("a pinned context reads its generation until it saves or merges")
    func queryGenerationPinning() async throws {
        let p = try Pair()
        let o = try await seedSongbook(p.store)
        let pinned = await p.b.perform { c in c.pinQueryGeneration() }
        #expect(pinned == 1)
        await p.a.perform { c in c.object(with: o.a1, as: Artist.self).name = "later" }
        try await p.a.save()
        let (seen, everyone) = await p.b.perform { c in
            (c.object(with: o.a1, as: Artist.self).name, c.objects(of: Artist.self).count)
        }
        #expect(seen == "One", "the pinned generation is read")
        #expect(everyone == 3)
        let unpinned = await p.b.perform { c in
            c.unpinQueryGeneration()
            c.reset()
            return c.object(with: o.a1, as: Artist.self).name
        }
        #expect(unpinned == "later")
        await p.close()
    }

    @Test("instrumentation reports each operation with its executor")
    func instrumentation() async throws {
        let directory = TemporaryDirectory("strata-instrument")
        let store = try StoreTesting.create(in: directory)
        let events = EventLog()
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self], observer: { events.append($0) })
        let context = ObjectContext(coordinator: coordinator, name: "worker")
        let child = ObjectContext(parent: context, name: "editor")
        await child.perform { c in
            let artist = c.insert(Artist.self)
            artist.artistID = 1
        }
        try await child.save()
        try await context.save()
        _ = await context.perform { c in c.objects(ofEntity: "Artist").count }
        let seen = events.all
        #expect(seen.contains { $0.context == "editor" && $0.operation == .save && $0.executor == .privateQueue })
        #expect(seen.contains { $0.context == "worker" && $0.operation == .applyChildSave && $0.objectCount == 1 })
        #expect(seen.contains { $0.context == "worker" && $0.operation == .save })
        #expect(seen.contains { $0.context == "worker" && $0.operation == .fetch && $0.objectCount == 1 })
        await store.close()
        directory.remove()
    }
}

/// Collects instrumentation events from any thread.
final class EventLog: Sendable {
    private let events = Locked<[ContextEvent]>([])
    func append(_ event: ContextEvent) { events.withLock { $0.append(event) } }
    var all: [ContextEvent] { events.withLock { $0 } }
}

extension ContextMergeTests {
    /// A context that reordered a to-many list keeps its order when it merges another
    /// context's addition to the same list (the other side's order used to win, undoing the
    /// reorder), and its save writes the merged list.
    @Test("a pending reorder of a to-many list survives merging another context's addition to it")
    func pendingReorderSurvivesMerge() async throws {
        let p = try Pair()
        let o = try await seedSongbook(p.store)
        // a1's albums: x, y, and a third album z.
        let z = try await p.a.perform { c in
            let artist = c.object(with: o.a1, as: Artist.self)
            let album = c.insert(Album.self)
            album.albumID = 12
            album.title = "z"
            artist.albums = artist.albums + [c.object(with: o.y, as: Album.self), album]
            try await c.save()
            return album.objectID
        }
        // b reorders them, z first, and waits; a adds one more.
        await p.b.perform { c in
            c.automaticallyMergesChanges = true
            let artist = c.object(with: o.a1, as: Artist.self)
            artist.albums = [c.object(with: z, as: Album.self), c.object(with: o.x, as: Album.self), c.object(with: o.y, as: Album.self)]
        }
        let w = try await p.a.perform { c in
            let album = c.insert(Album.self)
            album.albumID = 13
            album.title = "w"
            album.artist = c.object(with: o.a1, as: Artist.self)
            try await c.save()
            return album.objectID
        }
        await waitUntil(p.b, "b merges a's addition") { c in c.object(with: o.a1, as: Artist.self).albums.map(\.objectID).contains(w) }
        let order = await p.b.perform { c in c.object(with: o.a1, as: Artist.self).albums.map(\.objectID) }
        #expect(order == [z, o.x, o.y, w], "b's reorder was undone by the merge: \(order)")
        try await p.b.save()
        #expect(p.store.currentGeneration.value(o.a1, "albums") == .objects([z, o.x, o.y, w]))
        await p.close()
    }
}

extension ContextMergeTests {
    /// Each context inserts an album into the same artist; the second saves under a policy
    /// that resolves conflicts, without having merged the first's save. The artist's list
    /// both changed is merged: both albums keep their artist, and the second context shows
    /// both. (Under `storeWins` and `rollback` the store kept its list alone, and the save
    /// was refused as an inverse violation: the album inserted refers to the artist, which
    /// did not list it.)
    @Test("two contexts each insert an album into one artist; both albums stay",
          arguments: [MergePolicy.storeWins, .rollback, .contextWins], [false, true])
    func insertsIntoOneListBothStay(policy: MergePolicy, separateCoordinators: Bool) async throws {
        let p = try Pair(separateCoordinators: separateCoordinators)
        let o = try await seedSongbook(p.store)
        for (context, id) in [(p.a, 20), (p.b, 21)] {
            await context.perform { c in
                let album = c.insert(Album.self)
                album.albumID = id
                album.title = "Inserted by " + c.name
                album.artist = c.object(with: o.a2, as: Artist.self)
            }
        }
        try await p.a.save()
        let resolved = try await p.b.saveResolvingConflicts(mergePolicy: policy).resolved
        #expect(resolved.map(\.key) == ["albums"], "\(resolved)")
        let g = p.store.currentGeneration
        let listed = Set(g.value(o.a2, "albums")?.referencedObjects ?? [])
        #expect(listed.count == 2, "\(listed)")
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        let shown = await p.b.perform { c in Set(c.object(with: o.a2, as: Artist.self).albums.map(\.objectID)) }
        #expect(shown == listed, "the saving context shows the artist's albums as the store lists them")
        await p.close()
    }
}

extension ContextMergeTests {
    /// A context deletes a song another context then moves to another album; it reads that
    /// album afterwards (listing the song) and saves under a policy under which its deletion
    /// wins. The store makes the album let go of the song — a change the save did not send —
    /// and the saving context shows the album as the store has it. (It kept listing the
    /// deleted song: a context does not merge its own saves.)
    @Test("a deletion that wins: the album the store let go of the song shows it in the saving context",
          arguments: [MergePolicy.contextWins, .overwrite])
    func winningDeletionUpdatesTheAlbumItDidNotSend(policy: MergePolicy) async throws {
        let p = try Pair()
        let o = try await seedSongbook(p.store)
        await p.a.perform { c in c.delete(c.object(with: o.s)) }
        await p.b.perform { c in c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self) }
        try await p.b.save()
        let before = await p.a.perform { c in c.object(with: o.y, as: Album.self).songs.map(\.objectID) }
        #expect(before == [o.s], "the album read after the move lists the song")
        try await p.a.save(mergePolicy: policy)
        #expect(p.store.currentGeneration.object(o.s) == nil)
        #expect(p.store.currentGeneration.value(o.y, "songs") == .objects([]))
        let (shown, pending, problems) = await p.a.perform { c in
            (c.object(with: o.y, as: Album.self).songs.map(\.objectID), c.hasChanges, relationshipDisagreements(c))
        }
        #expect(shown.isEmpty, "the saving context still lists the deleted song in the album")
        #expect(!pending && problems.isEmpty, "\(pending) \(problems)")
        await p.close()
    }
}
