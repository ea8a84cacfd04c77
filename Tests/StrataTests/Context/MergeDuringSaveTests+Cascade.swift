import Foundation
import Testing
@testable import Strata

extension MergeDuringSaveTests {
    /// A view deletes an artist and saves into its writer; another context has added an album
    /// to the artist, which the writer merged first. While the view's save is in flight the
    /// view merges the album too: the artist's cascade deletes it here, as the writer's did
    /// there. When the save ends that deletion is the writer's, not a change of the view's:
    /// it stayed pending in the view, which showed unsaved changes nobody made (in `hybrid`,
    /// after the writer had deleted the album in the store).
    @Test("an album a merge cascades while the artist's deletion is saved into the parent is the parent's deletion afterwards")
    func cascadeMergedWhileTheDeletionIsSaved() async throws {
        let f = try await GatedWriter("strata-merge-during-save")
        defer { f.directory.remove() }
        let (store, o, writer, view) = (f.store, f.seeded, f.writer, f.view)
        await view.perform { c in c.delete(c.object(with: o.a2)) }
        let (album, insertion) = try await f.commitElsewhere { c in
            let album = c.insert(Album.self)
            album.albumID = 99
            album.title = "z"
            album.artist = c.object(with: o.a2, as: Artist.self)
            return album.objectID
        }
        let cascaded = try await f.saveViewMerging(insertion) { c in c.deletedObjects.map(\.objectID) }
        #expect(cascaded.contains(album), "the artist's cascade reached the album in the view: \(cascaded)")
        let inWriter = await writer.perform { c in c.deletedObjects.map(\.objectID).sorted() }
        #expect(inWriter == [o.a2, album].sorted())
        let (pending, shown) = await view.perform { c in
            (c.hasChanges, ((try? c.fetch(FetchRequest(entity: "Album"))) ?? []).map(\.objectID))
        }
        #expect(!pending, "the view made no change of its own after its save")
        #expect(!shown.contains(album))
        try await writer.save()
        #expect(store.currentGeneration.object(album) == nil && store.currentGeneration.object(o.a2) == nil)
        await view.rollback()
        #expect(await view.perform { c in ((try? c.fetch(FetchRequest(entity: "Album"))) ?? []).map(\.objectID) }.contains(album) == false)
        await store.close()
    }
}
