import Foundation
import Testing
@testable import Strata

/// The child deletes a song and saves into its parent; while the save is in flight another
/// commit moves the song to an album the child holds, and the merge makes that album let go
/// of the song pending deletion — a change of the child's own. Once the parent has the
/// deletion (and let go of the song there too), that change is no longer the child's: the
/// album is as the parent holds it. It once stayed a pending change on a base still listing
/// the deleted song, and a rollback (after an editor's save the writer refused, in
/// `hybrid`) showed the album with a song deleted in the store.
extension MergeDuringSaveTests {
    @Test("a move of a song the child deletes, merged while its save is in flight: the album ends as the parent holds it")
    func moveOfASongDeletedHereMergedWhileSaveInFlight() async throws {
        let directory = TemporaryDirectory("strata-merge-during-save")
        defer { directory.remove() }
        // The writer's merge of the move is held on its queue, so that the view's save waits
        // behind it (the view free meanwhile), as when the writer merges first.
        let gate = SaveGate(context: "writer", operation: .merge)
        let (captured, capturedContinuation) = AsyncStream.makeStream(of: Void.self)
        let observer: ContextObserver = { event in
            gate.observer(event)
            if event.context == "view", event.operation == .save { capturedContinuation.yield() }
        }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let coordinator = Coordinator(store: store, name: "main", modelClasses: [Artist.self, Album.self, Song.self], observer: observer)
        let seeder = ObjectContext(coordinator: coordinator, name: "seed")
        let (first, second, song) = await seeder.perform { c in
            let a = c.insert(Album.self); a.albumID = 1; a.title = "first"
            let b = c.insert(Album.self); b.albumID = 2; b.title = "second"
            let s = c.insert(Song.self); s.songID = StoreTesting.uuid(1); s.title = "s"; s.milliseconds = 1; s.album = a
            return (a.objectID, b.objectID, s.objectID)
        }
        try await seeder.save()
        let writer = ObjectContext(coordinator: coordinator, executor: .privateQueue("writer"), name: "writer")
        let view = ObjectContext(parent: writer, executor: .privateQueue("view"), name: "view")
        // The view holds the second album, and deletes the song (whatever was done to it
        // since it was read: its deletion wins).
        await view.perform { c in
            c.mergePolicy = .overwrite
            _ = c.object(with: second, as: Album.self).songs
            c.delete(c.object(with: song))
        }
        // The writer holds what the move changes, read before it, so that its merge touches them.
        await writer.perform { c in _ = c.object(with: second, as: Album.self).songs; _ = c.object(with: song, as: Song.self).album }
        // Another context moves the song to the second album.
        let importer = ObjectContext(coordinator: coordinator, name: "import")
        await importer.perform { c in c.object(with: song, as: Song.self).album = c.object(with: second, as: Album.self) }
        let saves = importer.didSave()
        try await importer.save()
        let move = try #require(await firstElement(of: saves, timeout: .seconds(10)))

        let writerMerge = Task { _ = await writer.merge(move) }  // the writer, following the store
        #expect(await gate.waitUntilHeld(), "the writer merged the move")
        let saving = Task { try await view.save() }
        #expect(await firstElement(of: captured, timeout: .seconds(10)) != nil, "the view captured its save")
        await view.merge(move)  // the view, following the writer, while its save waits
        let merged = await view.perform { c in c.object(with: second, as: Album.self).songs.map(\.objectID) }
        #expect(merged.isEmpty, "the album lets go of the song pending deletion: \(merged)")
        gate.open()
        await writerMerge.value
        _ = try await saving.value

        let inWriter = await writer.perform { c in c.object(with: second, as: Album.self).songs.map(\.objectID) }
        #expect(inWriter.isEmpty)
        let (inView, pending) = await view.perform { c in (c.object(with: second, as: Album.self).songs.map(\.objectID), c.hasChanges) }
        #expect(inView.isEmpty)
        #expect(!pending, "the view made no change of its own after its save")
        await view.rollback()
        let afterRollback = await view.perform { c in c.object(with: second, as: Album.self).songs.map(\.objectID) }
        #expect(afterRollback.isEmpty, "after a rollback the view shows the album with \(afterRollback)")
        try await writer.save()
        let g = store.currentGeneration
        #expect(g.object(song) == nil && g.value(second, "songs") == .objects([]) && g.value(first, "songs") == .objects([]))
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        await store.close()
    }
}

extension MergeDuringSaveTests {
    /// The view inserts a song and saves it into the writer; while the writer's save of it
    /// waits for its sync, the view deletes the song and saves that into the writer too.
    /// When the writer's first save lands (the song in the store, its deletion pending in
    /// the writer) and before the writer takes the result, the view asks for the song: it
    /// stays deleted — it is not brought back as an object whose deletion the parent had
    /// undone — and after the writer saves the deletion the view holds nothing of it.
    @Test("a song deleted while the writer saves its insertion stays deleted in the view")
    func deletionWhileTheWriterSavesTheInsertion() async throws {
        let directory = TemporaryDirectory("strata-merge-during-save")
        defer { directory.remove() }
        let (store, hold) = try StoreWinsInFlightTests.storeHoldingSyncs(in: directory)
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        // As a stack's writer: its saves wait for the disk without holding its queue, so the
        // view's save lands in it meanwhile.
        let writer = ObjectContext(coordinator: coordinator, executor: .privateQueue("writer"), name: "writer", mayBlockQueueOnCommit: false)
        let view = ObjectContext(parent: writer, executor: .privateQueue("view"), name: "view")
        let seeder = ObjectContext(coordinator: coordinator, name: "seed")
        let album = await seeder.perform { c in
            let a = c.insert(Album.self); a.albumID = 1; a.title = "album"
            return a.objectID
        }
        try await seeder.save()
        let song = await view.perform { c in
            let s = c.insert(Song.self); s.songID = StoreTesting.uuid(1); s.title = "s"; s.milliseconds = 1
            s.album = c.object(with: album, as: Album.self)
            return s.objectID
        }
        try await view.save()

        hold.arm()
        let saving = Task { try await writer.save() }
        #expect(await signalled(hold.reached), "the writer's save reached its sync")
        await view.perform { c in c.delete(c.object(with: song)) }
        try await view.save()
        // The writer's queue is held, so that it cannot take its save's result once the sync
        // is let go: the song is in the store, the writer's save not finished.
        let queueHeld = DispatchSemaphore(value: 0), queueRelease = DispatchSemaphore(value: 0)
        let holder = Task.detached {
            await writer.perform { _ in
                queueHeld.signal()
                _ = queueRelease.wait(timeout: .now() + .seconds(30 * TestTiming.slowdown))
            }
        }
        #expect(await signalled(queueHeld), "the writer's queue is held")
        hold.open()
        #expect(await eventually { store.currentGeneration.object(song) != nil }, "the writer's save was published")
        let deletedMeanwhile = await view.perform { c in c.object(with: song).isDeleted }
        #expect(deletedMeanwhile, "the view brought back the song it deleted, between the writer's commit and its taking the result")
        queueRelease.signal()
        await holder.value
        _ = try await withTimeout(30, "the writer's save") { try await saving.value }

        func viewState() async -> (songDeleted: Bool, listed: [ObjectID], problems: [String]) {
            await view.perform { c in
                (c.object(with: song).isDeleted, c.object(with: album, as: Album.self).songs.map(\.objectID), relationshipDisagreements(c))
            }
        }
        var state = await viewState()
        #expect(state.songDeleted, "the view brought the song back")
        #expect(state.listed.isEmpty && state.problems.isEmpty, "\(state)")
        try await writer.save()
        #expect(store.currentGeneration.object(song) == nil)
        state = await viewState()
        #expect(state.songDeleted && state.listed.isEmpty && state.problems.isEmpty, "\(state)")
        await store.close()
    }
}
