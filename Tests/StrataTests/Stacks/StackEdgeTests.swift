import Foundation
import Testing
@testable import Strata

/// Saves through a stack in states an editor or the view reaches by ordinary use: an
/// editor's new object asked for in the view before it is saved, a stale editor deleting
/// an object the view has related to another since, a refresh of an object whose related
/// object was deleted in the same context.
@Suite struct StackEdgeTests {
    struct Fixture {
        let directory = TemporaryDirectory("strata-stack-edge")
        let store: Store
        let stack: Stack
        let objects: ConstraintTests.Objects

        init(_ preset: StackPreset) async throws {
            store = try StoreTesting.create(in: directory, durability: .relaxed)
            objects = try await seedSongbook(store)
            stack = Stack(preset, store: store, modelClasses: [Artist.self, Album.self, Song.self])
            await stack.start()
        }

        func close() async {
            await stack.close()
            directory.remove()
        }
    }

    /// The view asked for an editor's new object before the editor saved it (the lookup
    /// found nothing and left a tombstone): the editor's save then failed with
    /// `invalidTransaction` ("already exists in view"). The instance asked for becomes the
    /// object once it is saved, as `existingObject(with:)` says.
    @Test(arguments: StackPreset.allCases)
    func anObjectAskedForBeforeItsSaveIsSavedAndFound(preset: StackPreset) async throws {
        let f = try await Fixture(preset)
        let editor = await f.stack.newEditorContext()
        let id = await editor.perform { c in
            let artist = c.insert(Artist.self); artist.artistID = 100; artist.name = "New"
            return artist.objectID
        }
        let found = await f.stack.viewContext.perform { c in
            let missing = (try? c.existingObject(with: id)) == nil
            _ = c.object(with: id).lifecycle
            return !missing
        }
        #expect(!found)
        try await f.stack.save(editor)
        let name = try await f.stack.viewContext.perform { c in (try c.existingObject(with: id) as? Artist)?.name }
        #expect(name == "New")
        await f.close()
    }

    /// An editor whose copy of an artist is stale (the view has since given the artist an
    /// album) adds a song to that album and deletes the artist, whose cascade reaches the
    /// album in the view. Checking the view's delete rules registered the editor's new song
    /// before the save was applied, and applying it trapped. The save is now applied or
    /// refused as a whole, and the view stays consistent either way.
    @Test(arguments: StackPreset.allCases)
    func aStaleCascadeOverANewObjectIsAppliedOrRefusedWhole(preset: StackPreset) async throws {
        let f = try await Fixture(preset)
        let o = f.objects
        let editor = await f.stack.newEditorContext()
        _ = await editor.perform { c in c.object(with: o.a2, as: Artist.self).albums.count }
        await f.stack.viewContext.perform { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        try await f.stack.save(f.stack.viewContext)
        await editor.perform { c in
            let song = c.insert(Song.self)
            song.songID = StoreTesting.uuid(50); song.title = "new"; song.milliseconds = 1
            song.album = c.object(with: o.y, as: Album.self)
            c.delete(c.object(with: o.a2))
        }
        do {
            try await f.stack.save(editor)
        } catch {
            #expect([.deleteRule, .conflict].contains(error.code), "\(error)")
        }
        let problems = await f.stack.viewContext.perform { c in relationshipDisagreements(c) }
        #expect(problems.isEmpty, "\(problems)")
        await #expect(throws: Never.self) { try await f.stack.save(f.stack.viewContext) }
        await f.close()
    }

    /// An editor renames an album the view then deletes (with its song): the editor's save,
    /// under `storeWins`, drops the rename and makes the album a tombstone. The artist and
    /// the song the editor had read still named the deleted album — the artist listed a
    /// deleted object — until the editor was dropped. They let go of it, and nothing is
    /// pending.
    @Test(arguments: StackPreset.allCases)
    func anEditorsSaveMeetingTheViewsDeletionLetsGoOfTheDeletedAlbum(preset: StackPreset) async throws {
        let f = try await Fixture(preset)
        let o = f.objects
        let editor = await f.stack.newEditorContext()
        await editor.setMergePolicy(.storeWins)
        let read = await editor.perform { c in
            c.object(with: o.x, as: Album.self).title = "editor's"
            return (c.object(with: o.a1, as: Artist.self).albums.map(\.objectID), c.object(with: o.s, as: Song.self).album?.objectID)
        }
        #expect(read.0 == [o.x] && read.1 == o.x)
        await f.stack.viewContext.perform { c in
            c.delete(c.object(with: o.s))
            c.delete(c.object(with: o.x))
        }
        try await f.stack.save(editor)
        let after = await editor.perform { c in
            (c.object(with: o.x).isDeleted, c.object(with: o.a1, as: Artist.self).albums.map(\.objectID),
             c.object(with: o.s, as: Song.self).album?.objectID, c.hasChanges, relationshipDisagreements(c))
        }
        #expect(after.0 && after.1 == [] && after.2 == nil && !after.3,
                "deleted \(after.0), A1.albums \(after.1), S.album \(String(describing: after.2)), pending \(after.3)")
        #expect(after.4.isEmpty, "\(after.4)")
        await editor.perform { c in c.object(with: o.a1, as: Artist.self).name = "renamed" }
        try await f.stack.save(editor)
        let problems = await f.stack.viewContext.perform { c in relationshipDisagreements(c) }
        #expect(problems.isEmpty, "\(problems)")
        try await f.stack.save(f.stack.viewContext)
        await f.stack.close()
        let g = f.store.currentGeneration
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        #expect(g.object(o.x) == nil && g.object(o.s) == nil && g.value(o.a1, "albums") == .objects([]))
        #expect(g.value(o.a1, "name") == .string("renamed"))
        f.directory.remove()
    }

    /// Refreshing an album without merging, right after deleting one of its songs: the album
    /// went back to the parent's row, listing the deleted song, and the save was refused
    /// with `inverseViolation` (or smoothed over by a writer). The album lets go of the
    /// song again.
    @Test(arguments: StackPreset.allCases)
    func refreshingAnObjectKeepsOutObjectsDeletedHere(preset: StackPreset) async throws {
        let f = try await Fixture(preset)
        let o = f.objects
        let (problems, songs) = await f.stack.viewContext.perform { c -> ([String], Int) in
            c.delete(c.object(with: o.s))
            c.refresh(c.object(with: o.x), mergeChanges: false)
            return (relationshipDisagreements(c), c.object(with: o.x, as: Album.self).songs.count)
        }
        #expect(problems.isEmpty, "\(problems)")
        #expect(songs == 0)
        try await f.stack.save(f.stack.viewContext)
        await f.close()
    }
}
