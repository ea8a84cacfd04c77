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
        let directory = TemporaryDirectory("strata-merge-during-save")
        defer { directory.remove() }
        let gate = SaveGate(context: "writer", operation: .applyChildSave)
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let o = try await seedSongbook(store)
        let coordinator = Coordinator(store: store, name: "main", modelClasses: [Artist.self, Album.self, Song.self], observer: gate.observer)
        let writer = ObjectContext(coordinator: coordinator, executor: .privateQueue("writer"), name: "writer")
        let view = ObjectContext(parent: writer, executor: .privateQueue("view"), name: "view")
        await view.perform { c in c.delete(c.object(with: o.a2)) }
        let background = ObjectContext(coordinator: coordinator, name: "background")
        let album = await background.perform { c in
            let album = c.insert(Album.self)
            album.albumID = 99
            album.title = "z"
            album.artist = c.object(with: o.a2, as: Artist.self)
            return album.objectID
        }
        let saves = background.didSave()
        try await background.save()
        let insertion = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await writer.merge(insertion)  // the writer, following the store, merges it first
        let saving = Task { try await view.save() }
        #expect(await gate.waitUntilHeld(), "the writer applied the view's save")
        await view.merge(insertion)  // the view's automatic merge, landing mid-save
        let cascaded = await view.perform { c in c.deletedObjects.map(\.objectID) }
        #expect(cascaded.contains(album), "the artist's cascade reached the album in the view: \(cascaded)")
        gate.open()
        _ = try await saving.value
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
