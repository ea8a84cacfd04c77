import Foundation
import Testing
@testable import Strata

/// Editors are discarded by dropping them, under every preset; a stack closed and dropped
/// lets go of its contexts, coordinators and store, and the store's files.
@Suite struct StackLifetimeTests {
    struct Fixture {
        let directory: TemporaryDirectory
        let store: Store
        let stack: Stack
        let log: EventLog
        let objects: ConstraintTests.Objects

        init(_ preset: StackPreset, durability: Durability = .relaxed) async throws {
            directory = TemporaryDirectory("strata-stack-lifetime")
            store = try StoreTesting.create(in: directory, durability: durability)
            let log = EventLog()
            self.log = log
            stack = Stack(preset, store: store, modelClasses: [Artist.self, Album.self, Song.self], observer: { log.append($0) })
            await stack.start()
            objects = try await seedSongbook(store)
        }

        /// Saves a context through the stack, and waits for the writer where the preset writes asynchronously.
        func saveDurably(_ context: ObjectContext) async throws {
            let outcomes = stack.writerSaves()
            try await stack.save(context)
            guard stack.savesAsynchronously(context) else { return }
            let outcome = try #require(await firstElement(of: outcomes, timeout: .seconds(10)), "the writer's save was never reported")
            if let error = outcome.error { throw error }
        }
    }

    @Test("a dropped editor is freed, saved or not, and does no work for later saves",
          arguments: StackPreset.allCases, [false, true])
    func droppedEditorIsFreed(preset: StackPreset, saved: Bool) async throws {
        let f = try await Fixture(preset)
        let o = f.objects
        let viewLink = f.stack.viewContext.link
        let followers = viewLink.changes.subscriberCount
        let name = "editor-\(UUID().uuidString)"
        var editor: ObjectContext? = await f.stack.newEditorContext(name: name)
        let (graph, held) = await editor!.perform { c -> (WeakReference<ObjectGraph>, [WeakReference<ManagedObject>]) in
            let artist = c.object(with: o.a1, as: Artist.self)
            artist.name = "edited"
            let album = c.insert(Album.self)
            album.albumID = 100
            album.title = "edited"
            album.artist = artist
            return (WeakReference(c.graph), [WeakReference(artist), WeakReference(album)])
        }
        if saved { try await f.saveDurably(editor!) }
        let reference = WeakReference(editor)
        editor = nil
        // A merge task holds its editor while it merges a save delivered before the drop
        // (under hybrid, the seed's commit reaches the editor through the view), and an
        // editor's deinit is isolated: it runs on the editor's queue after the last reference
        // goes, then tears the graph down and cancels the merge task, whose stream leaves the
        // view's broadcast when its iteration ends. Asynchronous by design: polled for, up to
        // a hard deadline.
        #expect(await eventually { reference.isGone }, "\(preset): something else holds the dropped editor")
        #expect(await eventually { graph.isGone && held.allSatisfy(\.isGone) }, "\(preset): the dropped editor's graph or objects live on")
        #expect(await eventually { viewLink.changes.subscriberCount == followers }, "\(preset): the dropped editor still follows the view context")
        let dropped = f.log.all.count

        // An import after the editor is gone reaches the view; the editor does nothing for it.
        let importer = f.stack.newImportContext()
        await importer.perform { c in c.object(with: o.a2, as: Artist.self).name = "imported" }
        try await f.saveDurably(importer)
        switch preset {
        case .sharedCoordinator, .separateCoordinators, .hybrid:
            #expect(await eventually { f.log.all[dropped...].contains { $0.context == "view" && $0.operation == .merge } },
                    "\(preset): the view never merged the import")
        case .mainParent, .nested:
            break  // the import was saved through the view
        }
        let editorEvents = f.log.all[dropped...].filter { $0.context == name }
        #expect(editorEvents.isEmpty, "\(preset): the dropped editor still works: \(editorEvents.map(\.operation))")
        await f.store.close()
        f.directory.remove()
    }

    @Test("a stack closed and dropped lets go of its contexts, coordinators and store, and closes the store's files",
          arguments: StackPreset.allCases)
    func closedStackIsFreed(preset: StackPreset) async throws {
        var f: Fixture? = try await Fixture(preset, durability: .full)
        let o = f!.objects
        let directory = f!.directory
        let stack = WeakReference(f!.stack), store = WeakReference(f!.store), journal = WeakReference(f!.store.journal)
        let coordinators = [WeakReference(f!.stack.coordinator), WeakReference(f!.stack.importCoordinator)]
        var contexts = [WeakReference(f!.stack.viewContext), WeakReference(f!.stack.writerContext)]
        do {
            let importer = f!.stack.newImportContext()
            await importer.perform { c in
                let artist = c.insert(Artist.self)
                artist.artistID = 100
                artist.name = "imported"
            }
            try await f!.saveDurably(importer)
            let background = f!.stack.newBackgroundContext()
            await background.perform { c in c.object(with: o.a2, as: Artist.self).name = "background" }
            try await f!.saveDurably(background)
            let editor = await f!.stack.newEditorContext()
            await editor.perform { c in c.object(with: o.a1, as: Artist.self).name = "edited" }
            try await f!.saveDurably(editor)
            contexts += [WeakReference(importer), WeakReference(background), WeakReference(editor)]
        }
        #expect(!openDescriptors(under: directory.path).isEmpty, "precondition: the open store has files open")
        await f!.stack.close()
        #expect(openDescriptors(under: directory.path).isEmpty, "\(preset): the closed stack's store still has \(openDescriptors(under: directory.path)) open")
        f = nil
        // A merge task holds its context while it merges a save that arrived before the
        // close, and a context's links hold the coordinators and the store: polled for, up
        // to a hard deadline.
        let everything = contexts
        #expect(await eventually { everything.allSatisfy(\.isGone) }, "\(preset): a context outlived the closed stack")
        #expect(await eventually { coordinators.allSatisfy(\.isGone) }, "\(preset): a coordinator outlived the closed stack")
        #expect(await eventually { stack.isGone && store.isGone && journal.isGone },
                "\(preset): the stack, the store or the journal outlived the closed stack")
        #expect(openDescriptors(under: directory.path).isEmpty)
        directory.remove()
    }
}

extension StackLifetimeTests {
    /// A coordinator's did-save stream and a stack's writer outcomes end when the store
    /// closes: each registers a hook with the store. One that goes away first must take its
    /// hook with it, or a long-lived store keeps one for every coordinator and stack ever
    /// made on it (a stack's holding its writer's state and outcome stream).
    @Test("coordinators and stacks that go away leave no close hooks on their store")
    func ownersTakeTheirCloseHooks() async throws {
        let directory = TemporaryDirectory("strata-stack-lifetime")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let before = store.closeHookCount
        for _ in 0..<20 { _ = Coordinator(store: store) }
        var stacks: [WeakReference<Stack>] = []
        for preset in StackPreset.allCases {
            let stack = Stack(preset, store: store, modelClasses: [Artist.self, Album.self, Song.self])
            await stack.start()
            stacks.append(WeakReference(stack))
        }
        // Stacks' contexts, which hold the coordinators, are freed by their isolated deinits,
        // asynchronously by design: polled for, up to a hard deadline.
        let dropped = stacks
        #expect(await eventually { dropped.allSatisfy(\.isGone) }, "precondition: the stacks are freed")
        #expect(await eventually { store.closeHookCount == before },
                "\(store.closeHookCount - before) close hooks of coordinators and stacks that went away stay with the store")
        await store.close()
    }

    /// Nothing can save through a stack that went away: the writer's outcomes end once the
    /// saves it accepted have reported, as a coordinator's did-save stream ends when the
    /// coordinator goes away, though the store stays open.
    @Test("the writer's outcomes of a stack dropped without closing end after its last save", arguments: StackPreset.allCases)
    func droppedStackEndsWriterSaves(preset: StackPreset) async throws {
        var f: Fixture? = try await Fixture(preset)
        let o = f!.objects
        let outcomes = f!.stack.writerSaves()
        let editor = await f!.stack.newEditorContext()
        await editor.perform { c in c.object(with: o.a1, as: Artist.self).name = "edited" }
        try await f!.stack.save(editor)
        let asynchronous = f!.stack.savesAsynchronously(editor)
        let store = f!.store, directory = f!.directory
        f = nil
        let reported = Locked(0)
        let ended = await returns(within: .seconds(10)) {
            for await outcome in outcomes {
                #expect(outcome.error == nil)
                reported.withLock { $0 += 1 }
            }
            return true
        }
        #expect(ended, "\(preset): the writer's outcomes of a dropped stack never end")
        #expect(reported.withLock { $0 } == (asynchronous ? 1 : 0), "\(preset): the writer's save was not reported before the end")
        #expect(store.currentGeneration.value(o.a1, "name") == .string("edited"))
        await store.close()
        directory.remove()
    }
}
