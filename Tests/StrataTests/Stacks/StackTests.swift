import Foundation
import Testing
@testable import Strata

@Suite struct StackTests {
    struct Fixture {
        let directory: TemporaryDirectory
        let store: Store
        let stack: Stack

        init(_ preset: StackPreset) async throws {
            directory = TemporaryDirectory("strata-stack")
            store = try StoreTesting.create(in: directory, durability: .relaxed)
            stack = Stack(preset, store: store, modelClasses: [Artist.self, Album.self, Song.self])
            await stack.start()
        }

        /// Saves a context through the stack, and waits for the writer where the preset writes asynchronously.
        func saveDurably(_ context: ObjectContext) async throws {
            let outcomes = stack.writerSaves()
            try await stack.save(context)
            guard stack.savesAsynchronously(context) else { return }
            var iterator = outcomes.makeAsyncIterator()
            if let error = await iterator.next()?.error { throw error }
        }

        func close() async {
            await store.close()
            directory.remove()
        }
    }

    @Test("imports become visible in the view context and durable", arguments: StackPreset.allCases)
    func importsReachTheView(preset: StackPreset) async throws {
        let f = try await Fixture(preset)
        let importer = f.stack.newImportContext()
        let ids = await importer.perform { c -> [ObjectID] in
            (1...20).map { n in
                let artist = c.insert(Artist.self)
                artist.artistID = n
                artist.name = "Artist \(n)"
                return artist.objectID
            }
        }
        try await f.saveDurably(importer)
        #expect(f.store.currentGeneration.count(of: "Artist") == 20, "\(preset): durable")
        let seen = try await f.stack.viewContext.perform { c in try c.count(Artist.self) }
        #expect(seen == 20, "\(preset): visible in the view context")
        let name = await f.stack.viewContext.perform { c in c.object(with: ids[4], as: Artist.self).name }
        #expect(name == "Artist 5")
        await f.close()
    }

    @Test("editors: saved edits reach the store, dropped ones change nothing", arguments: StackPreset.allCases)
    func editors(preset: StackPreset) async throws {
        let f = try await Fixture(preset)
        let o = try await seedSongbook(f.store)
        let before = StoreState(f.store)
        do {
            let dropped = await f.stack.newEditorContext()
            await dropped.perform { c in c.object(with: o.a1, as: Artist.self).name = "dropped" }
        }
        let viewChanges = await f.stack.viewContext.hasChanges
        #expect(!viewChanges)
        #expect(StoreState(f.store) == before, "\(preset): a dropped editor changes nothing")
        let editor = await f.stack.newEditorContext()
        await editor.perform { c in
            c.object(with: o.a1, as: Artist.self).name = "edited"
            c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
        }
        try await f.saveDurably(editor)
        let g = f.store.currentGeneration
        #expect(g.value(o.a1, "name") == .string("edited"), "\(preset)")
        #expect(g.value(o.x, "artist") == .object(o.a2), "\(preset)")
        #expect(g.integrityProblems().isEmpty, "\(preset)")
        await f.close()
    }

    @Test("the hybrid stack's editors follow imports and report conflicting keys")
    func hybridEditorFollowsImports() async throws {
        let f = try await Fixture(.hybrid)
        let o = try await seedSongbook(f.store)
        let editor = await f.stack.newEditorContext()
        let conflicts = editor.mergeConflicts()
        await editor.perform { c in
            let artist = c.object(with: o.a1, as: Artist.self)
            artist.name = "editor's"
            _ = c.object(with: o.a2, as: Artist.self).name
        }
        let importer = f.stack.newImportContext()
        await importer.perform { c in
            c.object(with: o.a1, as: Artist.self).name = "import's"
            c.object(with: o.a2, as: Artist.self).name = "renamed by import"
        }
        try await f.saveDurably(importer)
        await waitUntil(editor, "the editor merges the import") { c in c.object(with: o.a2, as: Artist.self).name == "renamed by import" }
        var iterator = conflicts.makeAsyncIterator()
        let reported = await iterator.next()
        #expect(reported?.map(\.key) == ["name"])
        #expect(reported?.first?.object == o.a1)
        let kept = await editor.perform { c in c.object(with: o.a1, as: Artist.self).name }
        #expect(kept == "editor's", "the editor's own change is kept until its policy says otherwise")
        await f.close()
    }

    @Test("an editor's stale cascade over an album the view context moved since is a conflict, and changes nothing",
          arguments: StackPreset.allCases)
    func editorStaleCascadeIsAConflict(preset: StackPreset) async throws {
        let f = try await Fixture(preset)
        let o = try await seedSongbook(f.store)
        let editor = await f.stack.newEditorContext()
        // The editor reads A1 and its album X; the view context then gives X to A2.
        #expect(await editor.perform { c in c.object(with: o.a1, as: Artist.self).albums.map(\.title) } == ["Album"])
        await f.stack.viewContext.perform { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        // The editor deletes X's song (songs: deny), then A1, whose cascade takes X as the editor saw it.
        await editor.perform { c in
            c.delete(c.object(with: o.s))
            c.delete(c.object(with: o.a1))
        }
        let error = await #expect(throws: StoreError.self) { try await f.stack.save(editor) }
        #expect(error?.code == .conflict && error?.conflicts.map(\.object) == [o.x], "\(preset): \(String(describing: error))")
        let xDeleted = await f.stack.viewContext.perform { c in c.object(with: o.x).isDeleted }
        #expect(!xDeleted, "\(preset): the view context lost the album it moved")
        try await f.saveDurably(f.stack.viewContext)
        let g = f.store.currentGeneration
        #expect(g.value(o.x, "artist") == .object(o.a2) && g.object(o.a1) != nil && g.object(o.s) != nil, "\(preset)")
        #expect(g.integrityProblems().isEmpty, "\(preset)")
        await f.close()
    }

    @Test("an album an import adds for an artist the view context has deleted goes with the artist's cascade",
          arguments: StackPreset.allCases)
    func importedMemberOfPendingCascade(preset: StackPreset) async throws {
        let f = try await Fixture(preset)
        let o = try await seedSongbook(f.store)
        let view = f.stack.viewContext
        await view.setMergePolicy(.contextWins)
        let importer = f.stack.newImportContext()
        await importer.setMergePolicy(.contextWins)  // (its save into the view, where the view is its parent, meets the deletion)
        _ = await importer.perform { c in c.object(with: o.a2, as: Artist.self).name }
        // The user deletes A2 (albums: cascade); an import then adds an album for it.
        await view.perform { c in c.delete(c.object(with: o.a2)) }
        let z = await importer.perform { c in
            let album = c.insert(Album.self)
            album.albumID = 50
            album.title = "Imported"
            album.artist = c.object(with: o.a2, as: Artist.self)
            return album.objectID
        }
        try await f.saveDurably(importer)
        await waitUntil(view, "\(preset): the view context takes the imported album with the artist") { c in c.object(with: z).isDeleted }
        try await f.saveDurably(view)
        let g = f.store.currentGeneration
        #expect(g.object(o.a2) == nil && g.object(z) == nil, "\(preset): the album outlived its artist")
        #expect(g.integrityProblems().isEmpty, "\(preset): \(g.integrityProblems())")
        await f.close()
    }

    @Test("a save resolves conflicts by the saving context's policy and reports them", arguments: StackPreset.allCases)
    func saveReportsResolvedConflicts(preset: StackPreset) async throws {
        let f = try await Fixture(preset)
        let o = try await seedSongbook(f.store)
        let editor = await f.stack.newEditorContext()
        let conflicts = editor.mergeConflicts()
        await editor.perform { c in
            c.automaticallyMergesChanges = false
            c.mergePolicy = .contextWins
            c.object(with: o.a1, as: Artist.self).name = "editor's"
        }
        let importer = f.stack.newImportContext()
        await importer.perform { c in c.object(with: o.a1, as: Artist.self).name = "import's" }
        try await f.saveDurably(importer)
        try await f.saveDurably(editor)
        let reported = await firstElement(of: conflicts, timeout: .seconds(10))
        #expect(reported?.map(\.key) == ["name"], "\(preset)")
        #expect(reported?.first?.ours == .string("editor's"), "\(preset)")
        #expect(reported?.first?.theirs == .string("import's"), "\(preset)")
        #expect(f.store.currentGeneration.value(o.a1, "name") == .string("editor's"), "\(preset): the editor's policy keeps its change")
        await f.close()
    }
}
