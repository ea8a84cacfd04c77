import Foundation
import Testing
@testable import Strata

/// A deletion merged into a child while its save into the parent is in flight (the child is
/// free while it waits): the parent let go of the deleted object in the child's new object,
/// and the child ends as the parent holds it. It once kept the reference in the new object's
/// base — the values it had sent — with its removal as a change nobody made, and a rollback
/// brought the deleted object back (in `hybrid`, the view showed a song on a deleted album).
@Suite struct MergeDuringSaveTests {
    struct Setup {
        let directory = TemporaryDirectory("strata-merge-during-save")
        let gate = SaveGate(context: "writer", operation: .applyChildSave)
        let writer: ObjectContext
        let view: ObjectContext
        let album: ObjectID
        let song: ObjectID
        let deletion: DidSave

        init() async throws {
            let store = try StoreTesting.create(in: directory, durability: .relaxed)
            let coordinator = Coordinator(store: store, name: "main", modelClasses: [Artist.self, Album.self, Song.self], observer: gate.observer)
            let seeder = ObjectContext(coordinator: coordinator, name: "seed")
            let (artist, album) = await seeder.perform { c in
                let a = c.insert(Artist.self); a.artistID = 1
                let al = c.insert(Album.self); al.albumID = 1; al.title = "t"; al.artist = a
                return (a.objectID, al.objectID)
            }
            try await seeder.save()
            writer = ObjectContext(coordinator: coordinator, executor: .privateQueue("writer"), name: "writer")
            view = ObjectContext(parent: writer, executor: .privateQueue("view"), name: "view")
            await view.perform { c in c.mergePolicy = .overwrite }
            song = await view.perform { c in
                let s = c.insert(Song.self)
                s.songID = StoreTesting.uuid(1); s.title = "s"; s.milliseconds = 1
                s.album = c.object(with: album, as: Album.self)
                return s.objectID
            }
            let background = ObjectContext(coordinator: coordinator, name: "background")
            await background.perform { c in c.delete(c.object(with: artist)) }  // the cascade takes the album
            let saves = background.didSave()
            try await background.save()
            deletion = try #require(await firstElement(of: saves, timeout: .seconds(10)))
            #expect(deletion.deleted.contains(album))
            await writer.merge(deletion)  // the writer, following the store, merges it first
            self.album = album
        }
    }

    @Test("a deletion merged into a child while its save into the parent is in flight: the child ends as the parent holds it")
    func deletionMergedWhileSaveInFlight() async throws {
        let h = try await Setup()
        defer { h.directory.remove() }
        let (view, writer, song) = (h.view, h.writer, h.song)
        let saving = Task { try await view.save() }
        #expect(await h.gate.waitUntilHeld(), "the writer applied the view's save")
        await view.merge(h.deletion)  // the view's automatic merge, landing mid-save
        h.gate.open()
        _ = try await saving.value
        let inWriter = await writer.perform { c in c.object(with: song, as: Song.self).album?.objectID }
        #expect(inWriter == nil)
        let (inView, pending) = await view.perform { c in (c.object(with: song, as: Song.self).album?.objectID, c.hasChanges) }
        #expect(inView == nil)
        #expect(!pending, "the view made no change of its own after its save")
        await view.rollback()
        let afterRollback = await view.perform { c in c.object(with: song, as: Song.self).album?.objectID }
        #expect(afterRollback == nil, "after a rollback the view shows the song on \(String(describing: afterRollback))")
    }

    @Test("the same deletion merged after the save")
    func deletionMergedAfterSave() async throws {
        let h = try await Setup()
        defer { h.directory.remove() }
        let saving = Task { try await h.view.save() }
        #expect(await h.gate.waitUntilHeld())
        h.gate.open()
        _ = try await saving.value
        await h.view.merge(h.deletion)
        let (inView, pending) = await h.view.perform { c in (c.object(with: h.song, as: Song.self).album?.objectID, c.hasChanges) }
        #expect(inView == nil)
        #expect(!pending)
        await h.view.rollback()
        #expect(await h.view.perform { c in c.object(with: h.song, as: Song.self).album?.objectID } == nil)
    }
}
