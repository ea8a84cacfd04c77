import Foundation
import Testing
@testable import Strata

/// A root context saves an object it inserted; once the store holds the insert, another
/// transaction changes the object (an album given to the new artist), and the context merges
/// that transaction before its save ends. The object ends the save with the merged values,
/// as an object it had updated would, under a key set while the save ran too. (The merge
/// passed over it — still "inserted" — and the save's end gave it the values of its own
/// commit: a stack's writer showed the new artist with no album while the store listed
/// one — `hybrid` seed 12129 of the soak.)
@Suite struct MergedDuringInsertTests {
    @Test("an object whose insert is being saved takes a commit that changed it after the store had it",
          arguments: [false, true])
    func commitAfterTheInsertReachesIt(renamedDuringTheSave: Bool) async throws {
        let gate = SyncGate()
        let io = HookedFileIO(wrapping: InMemoryFileIO(), hook: { gate.observe($0) })
        let store = try Store.create(at: "/store", schema: Fixtures.songbook, configuration: Store.Configuration(durability: .full, fileIO: io))
        _ = try await ConstraintTests.Objects.commit(into: store)
        let coordinator = Coordinator(store: store, name: "main", modelClasses: [Artist.self, Album.self, Song.self])
        // A writer as the stacks make it: its saves wait for the disk without holding its queue.
        let writer = ObjectContext(coordinator: coordinator, executor: .privateQueue("writer"), name: "writer", mayBlockQueueOnCommit: false)
        let artist = await writer.perform { c in
            let new = c.insert(Artist.self)
            new.artistID = 45
            new.name = "New"
            new.createdAt = Songbook.epoch
            return new.objectID
        }
        let inserted = store.currentGeneration.transaction + 1

        // The insert's sync is held, so that the save is still waiting for it when the
        // writer's queue is held (from then on, until the merge below has run).
        gate.hold(sync: gate.syncs)
        let saving = Task { try await writer.save() }
        try #require(await eventually(within: 30) { gate.isHolding }, "the insert's sync is held")
        let commit = Locked<DidSave?>(nil)
        let holding = await QueueHold(writer, "the writer") { c in
            if renamedDuringTheSave { c.object(with: artist, as: Artist.self).name = "During" }
            if let save = commit.withLock({ $0 }) { _ = c.merge(save) }
        }
        // The insert goes on to the disk and is published; the save's end waits for the queue.
        // (Released before anything else commits: a commit made while the sync was held could
        // wait for it on one of the concurrency pool's threads — with both of them held so,
        // nothing was left to release it, and the whole test process stalled for 30 s.)
        gate.releaseHeld()
        try #require(await eventually(within: 30) { store.currentGeneration.transaction >= inserted }, "the insert is published")

        // Another transaction gives the new artist an album, based on the insert.
        let album = store.allocateObjectIDs(for: "Album")[0]
        let given = try await store.commit(ChangeSet(author: "other", inserted: [Songbook.album(album, albumID: 99, artist: artist)],
                                                     updated: [store.currentGeneration.update(artist, ["albums": .objects([album])])]))
        commit.withLock { $0 = given.notification.map(DidSave.init) }
        await holding.release()
        let transaction = try await withTimeout(30, "the writer's save") { try await saving.value }
        #expect(transaction == inserted)

        let (albums, name, problems, pending) = await writer.perform { c in
            let shown = c.object(with: artist, as: Artist.self)
            return (shown.albums.map(\.objectID), shown.name, relationshipDisagreements(c), c.hasChanges)
        }
        #expect(albums == [album], "the artist lists the album the store gave it")
        #expect(problems.isEmpty, "\(problems)")
        // A name set while the save ran stays a change, on top of what the save committed.
        #expect(name == (renamedDuringTheSave ? "During" : "New"))
        #expect(pending == renamedDuringTheSave)
        // Its next change is based on the merged version: no conflict.
        try await writer.perform { c in
            c.object(with: artist, as: Artist.self).name = "Renamed"
            try await c.save(mergePolicy: .error)
        }
        let generation = store.currentGeneration
        #expect(generation.value(artist, "name") == .string("Renamed"))
        #expect(generation.value(artist, "albums") == .objects([album]))
        #expect(generation.integrityProblems().isEmpty)
        await store.close()
    }
}
