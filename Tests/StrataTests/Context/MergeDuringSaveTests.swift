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
        let stack: GatedWriter<(artist: ObjectID, album: ObjectID)>
        var directory: TemporaryDirectory { stack.directory }
        var gate: SaveGate { stack.gate }
        var writer: ObjectContext { stack.writer }
        var view: ObjectContext { stack.view }
        var album: ObjectID { stack.seeded.album }
        let song: ObjectID
        let deletion: DidSave

        init() async throws {
            stack = try await GatedWriter("strata-merge-during-save") { _, coordinator in
                let seeder = ObjectContext(coordinator: coordinator, name: "seed")
                let seeded = await seeder.perform { c in
                    let a = c.insert(Artist.self); a.artistID = 1
                    let al = c.insert(Album.self); al.albumID = 1; al.title = "t"; al.artist = a
                    return (artist: a.objectID, album: al.objectID)
                }
                try await seeder.save()
                return seeded
            }
            let (artist, album) = stack.seeded
            await stack.view.perform { c in c.mergePolicy = .overwrite }
            song = await stack.view.perform { c in
                let s = c.insert(Song.self)
                s.songID = StoreTesting.uuid(1); s.title = "s"; s.milliseconds = 1
                s.album = c.object(with: album, as: Album.self)
                return s.objectID
            }
            // The artist's cascade takes the album; the writer, following the store, merges it first.
            (_, deletion) = try await stack.commitElsewhere { c in c.delete(c.object(with: artist)) }
            #expect(deletion.deleted.contains(album))
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
