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
