import Foundation
import Testing
@testable import Strata

/// What the view context shows after the asynchronous writer (`nested`, `hybrid`) met a
/// conflict and saved again with the store's values for the conflicting keys: those
/// values, in the view's objects, on both sides of each relationship, in its live results
/// and its change notifications — unless the view changed a key again after handing it to
/// the writer: that newer edit stays pending, and the next save writes it.
///
/// The other commit lands while the writer's save of the view's changes is held on the
/// writer's queue (``SaveGate``): from an import context under `hybrid`, and under `nested`
/// (where every context the stack makes saves through the view) from a context of the
/// application's own on the stack's coordinator. Every wait is on an event with a hard
/// timeout; nothing sleeps.
@Suite struct StackWriterConflictTests {
    static let presets: [StackPreset] = [.nested, .hybrid]

    /// A stack of a preset with a writer, over the seeded songbook, whose writer's first
    /// save is held by a gate.
    struct Gated {
        let directory = TemporaryDirectory("strata-stack-writer-conflict")
        let store: Store
        let gate: SaveGate
        let stack: Stack
        let objects: ConstraintTests.Objects
        let outcomes: AsyncStream<Stack.WriterSaveOutcome>

        /// `heldSaves`: how many of the writer's saves the gate holds (the second is its
        /// retry after a conflict). `started: false` leaves the stack not started: the
        /// merges a started stack makes by itself are landed by hand, when a test needs.
        init(_ preset: StackPreset, heldSaves: Int = 1, started: Bool = true) async throws {
            gate = SaveGate(context: "writer", saves: heldSaves)
            store = try StoreTesting.create(in: directory, durability: .relaxed)
            stack = Stack(preset, store: store, modelClasses: [Artist.self, Album.self, Song.self], observer: gate.observer)
            if started { await stack.start() }
            objects = try await seedSongbook(store)
            outcomes = stack.writerSaves()
        }

        /// A context committing straight to the store beside the writer: the import context
        /// under `hybrid`; under `nested`, one on the stack's coordinator.
        func otherContext() -> ObjectContext {
            stack.preset == .hybrid ? stack.newImportContext() : ObjectContext(coordinator: stack.coordinator, name: "other")
        }

        /// Once the writer's save is held, another context (``otherContext()``) makes
        /// `change` and commits it: the conflict the held save will meet.
        /// Returns the other context's did-save, for a test that lands its merges by hand.
        @discardableResult
        func commitElsewhere(_ change: @Sendable (isolated ObjectContext) -> Void,
                             sourceLocation: SourceLocation = #_sourceLocation) async throws -> DidSave {
            #expect(await gate.waitUntilHeld(), "the writer's save started", sourceLocation: sourceLocation)
            let other = otherContext()
            let saves = other.didSave()
            await other.perform(change)
            try await other.save()
            return try #require(await firstElement(of: saves, timeout: .seconds(10)), sourceLocation: sourceLocation)
        }

        /// In a stack not started: lands another context's commit where a started stack
        /// merges it by itself — under `hybrid` the writer, then the view; under `nested`
        /// nowhere (everything reaches the store through the view).
        func mergeByHand(_ save: DidSave) async {
            guard stack.preset == .hybrid else { return }
            await stack.writerContext!.merge(save)
            await stack.viewContext.merge(save)
        }

        /// Waits until the writer and the view each hold nothing pending and show what
        /// `shows` checks; records, for each that does not, what `describe` tells of it.
        func expectWriterAndViewShow(
            _ what: String, _ shows: @escaping @Sendable (isolated ObjectContext) -> Bool,
            describe: @escaping @Sendable (isolated ObjectContext) -> String, sourceLocation: SourceLocation = #_sourceLocation
        ) async {
            for (context, name) in [(stack.writerContext!, "writer"), (stack.viewContext, "view")] {
                let held = await waitUntil(context, "the \(name) to show \(what)", reportingTimeout: false) { c in !c.hasChanges && shows(c) }
                let shown = await context.perform { c in "\(describe(c)), pending \(c.updatedObjects.map(\.objectID))" }
                #expect(held, "\(stack.preset) \(name), expected to show \(what): \(shown)", sourceLocation: sourceLocation)
            }
        }

        /// The to-one conflict: the user takes album x from artist a1 (and retitles it) and
        /// saves; while the writer's save is held, another context gives x to a3 (x's artist
        /// and a1's albums conflict; a1's lists agree, without x); then the save goes on.
        func takeAlbumXWhileAnotherGivesItToA3() async throws {
            let o = objects
            await stack.viewContext.perform { c in o.takeAlbumX(in: c) }
            try await stack.save(stack.viewContext)
            try await commitElsewhere { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a3, as: Artist.self) }
            gate.open()
        }

        func close() async {
            await stack.close()
            directory.remove()
        }
    }

    /// Waits (with a hard timeout) for an objects-did-change notification of the view
    /// that reports `id` refreshed.
    static func refreshed(_ id: ObjectID, in changes: AsyncStream<ObjectsDidChange>) async -> Bool {
        await returns(within: .seconds(10)) {
            for await change in changes where change.refreshed.contains(id) { return true }
            return false
        }
    }

    @Test("a conflicting attribute the writer saved again with the store's value shows that value in the view, its live results and its notifications",
          arguments: presets)
    @MainActor
    func attributeTakesStoreValue(_ preset: StackPreset) async throws {
        let h = try await Gated(preset)
        let (store, gate, stack, o, outcomes) = (h.store, h.gate, h.stack, h.objects, h.outcomes)
        let view = stack.viewContext
        let results = try view.performAndWait { c in
            try c.fetchedResults(Artist.self, request: FetchRequest(entity: "Artist", predicate: try ObjectPredicate(format: "name == 'theirs'"),
                                                                   sortBy: [SortKey("artistID")]))
        }
        #expect(results.snapshot.sections.flatMap(\.ids).isEmpty)

        await view.perform { c in
            c.object(with: o.a1, as: Artist.self).name = "mine"
            c.object(with: o.a3, as: Artist.self).name = "also mine"
        }
        try await stack.save(view)
        try await h.commitElsewhere { c in c.object(with: o.a1, as: Artist.self).name = "theirs" }
        let changes = view.objectsDidChange()
        gate.open()

        let outcome = try #require(await StackConsistencyTests.nextOutcome(outcomes))
        #expect(outcome.error?.code == .conflict && outcome.error?.conflicts.map(\.object) == [o.a1], "\(String(describing: outcome.error))")
        #expect(store.currentGeneration.value(o.a1, "name") == .string("theirs"))
        #expect(store.currentGeneration.value(o.a3, "name") == .string("also mine"))
        // Once the outcome is reported, the view shows what the store has (not only once a
        // merge of the other commit reaches it, which under `nested` none does).
        let (name, pending) = await view.perform { c in (c.object(with: o.a1, as: Artist.self).name, c.hasChanges) }
        #expect(name == "theirs", "\(preset): the view shows the value the store kept, not one it never will have")
        #expect(!pending, "\(preset): nothing is pending in the view")
        #expect(await Self.refreshed(o.a1, in: changes), "\(preset): the view announces the object's new value")
        #expect(results.snapshot.sections.flatMap(\.ids) == [o.a1], "\(preset): the view's live results show the store's value")
        let writerPending = await stack.writerContext!.hasChanges
        #expect(!writerPending)
        await h.close()
    }

    @Test("a key another commit changed while the writer's retry was on its way is reported with the first attempt's conflicts",
          arguments: presets)
    func retryConflictsReported(_ preset: StackPreset) async throws {
        let h = try await Gated(preset, heldSaves: 2)
        let (store, gate, stack, o, outcomes) = (h.store, h.gate, h.stack, h.objects, h.outcomes)
        let view = stack.viewContext
        await view.perform { c in
            c.object(with: o.a1, as: Artist.self).name = "mine"
            c.object(with: o.a3, as: Artist.self).name = "also mine"
        }
        try await stack.save(view)
        // The first attempt meets a1's conflict; while its retry is held, a3 changes too.
        try await h.commitElsewhere { c in c.object(with: o.a1, as: Artist.self).name = "theirs" }
        gate.open()
        try await h.commitElsewhere { c in c.object(with: o.a3, as: Artist.self).name = "theirs too" }
        gate.open()

        let outcome = try #require(await StackConsistencyTests.nextOutcome(outcomes))
        let error = try #require(outcome.error)
        #expect(error.code == .conflict)
        #expect(Set(error.conflicts.map(\.object)) == [o.a1, o.a3], "\(preset): both attempts' conflicts are listed: \(error)")
        #expect(error.conflicts.first { $0.object == o.a3 }?.theirs == .string("theirs too"))
        #expect(error.message.hasPrefix("2 conflict(s)"), "\(error.message)")
        #expect(store.currentGeneration.value(o.a1, "name") == .string("theirs"))
        #expect(store.currentGeneration.value(o.a3, "name") == .string("theirs too"))
        let names = await view.perform { c in
            (c.object(with: o.a1, as: Artist.self).name, c.object(with: o.a3, as: Artist.self).name, c.hasChanges)
        }
        #expect(names.0 == "theirs" && names.1 == "theirs too" && !names.2, "\(preset): the view shows what the store kept: \(names)")
        await h.close()
    }

    @Test("a conflicting to-one relationship the writer saved again with the store's value shows that value in the view, both sides in step",
          arguments: presets)
    func toOneTakesStoreValue(_ preset: StackPreset) async throws {
        let h = try await Gated(preset)
        let (store, stack, o, outcomes) = (h.store, h.stack, h.objects, h.outcomes)
        let view = stack.viewContext
        try await h.takeAlbumXWhileAnotherGivesItToA3()

        let outcome = try #require(await StackConsistencyTests.nextOutcome(outcomes))
        #expect(outcome.error?.code == .conflict, "\(String(describing: outcome.error))")
        #expect(outcome.error?.conflicts.contains { $0.object == o.x && $0.key == "artist" } == true, "\(String(describing: outcome.error))")
        #expect(outcome.transaction != nil, "the title is written")
        let generation = store.currentGeneration
        #expect(generation.value(o.x, "artist") == .object(o.a3))
        #expect(generation.value(o.x, "title") == .string("retitled"))
        #expect(generation.integrityProblems().isEmpty, "\(generation.integrityProblems().prefix(3))")

        let shown = await view.perform { c in o.albumX(in: c) }
        #expect(shown.artist == o.a3, "\(preset): x shows the artist the store kept")
        #expect(shown.title == "retitled")
        #expect(shown.a3 == [o.x], "\(preset): a3 lists x, as x refers to it")
        #expect(shown.a1 == [], "\(preset): a1 lists nothing")
        #expect(!shown.pending, "\(preset): nothing is pending in the view")
        let writerPending = await stack.writerContext!.hasChanges
        #expect(!writerPending, "\(preset): nothing is pending in the writer")
        await h.close()
    }

    @Test("a to-many list the writer saved again with the store's value leaves the album the store moved elsewhere as the store has it, nothing pending",
          arguments: presets)
    func listKeptLeavesMovedAlbumAsStored(_ preset: StackPreset) async throws {
        // Not started: under `hybrid` the writer merges the other commit by hand, after its
        // save (a started writer may merge it between its first try and its retry).
        let h = try await Gated(preset, started: false)
        let (store, stack, o, outcomes) = (h.store, h.stack, h.objects, h.outcomes)
        // The writer holds x with a1, as the store had it.
        await stack.writerContext!.perform { c in o.readAlbums(of: [o.a1, o.a3], artistsOf: [o.x], in: c) }
        // The user gives y to a1 (a1's list: x and y) and saves; while the writer's save is
        // held, another context moves x to a3 (a1's list conflicts: the store's is empty).
        await stack.viewContext.perform { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a1, as: Artist.self) }
        try await stack.save(stack.viewContext)
        let moved = try await h.commitElsewhere { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a3, as: Artist.self) }
        h.gate.open()

        let outcome = try #require(await StackConsistencyTests.nextOutcome(outcomes))
        #expect(outcome.error?.code == .conflict && outcome.error?.conflicts.contains { $0.object == o.a1 && $0.key == "albums" } == true,
                "\(String(describing: outcome.error))")
        let generation = store.currentGeneration
        #expect(generation.value(o.a1, "albums") == .objects([o.y]))
        #expect(generation.value(o.x, "artist") == .object(o.a3))
        #expect(generation.integrityProblems().isEmpty, "\(generation.integrityProblems().prefix(3))")
        await h.mergeByHand(moved)
        // The writer read x with a1; the store's list of a1 let go of x because x went to a3,
        // not to no artist: the writer shows x with a3 and keeps nothing pending (a pending
        // "no artist" for x would undo the other commit's move at the next save).
        await h.expectWriterAndViewShow("x with a3, a1 with y") { c in
            o.artists(of: [o.x], in: c) == [o.a3] && o.albums(of: [o.a1, o.a3], in: c) == [[o.y], [o.x]]
        } describe: { c in "x with \(o.artists(of: [o.x], in: c)), a1 and a3 with \(o.albums(of: [o.a1, o.a3], in: c))" }
        await h.close()
    }

    @Test("a to-many list the writer saved again with the store's value names an album the writer read with another artist: the album and that artist show the store's values",
          arguments: presets)
    func listKeptGainsAlbumReadElsewhere(_ preset: StackPreset) async throws {
        let h = try await Gated(preset, started: false)
        let (store, stack, o, outcomes) = (h.store, h.stack, h.objects, h.outcomes)
        // y belongs to a2 first; the writer and the view hold it so.
        let setup = ObjectContext(coordinator: stack.coordinator, name: "setup")
        await setup.perform { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        try await setup.save()
        for context in [stack.writerContext!, stack.viewContext] {
            await context.perform { c in o.readAlbums(of: [o.a1, o.a2], artistsOf: [o.x, o.y], in: c) }
        }
        // The user takes x from a1 and saves; while the writer's save is held, another
        // context moves y from a2 to a1 (a1's list conflicts: the store's kept one is y).
        await stack.viewContext.perform { c in c.object(with: o.x, as: Album.self).artist = nil }
        try await stack.save(stack.viewContext)
        let moved = try await h.commitElsewhere { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a1, as: Artist.self) }
        h.gate.open()

        let outcome = try #require(await StackConsistencyTests.nextOutcome(outcomes))
        #expect(outcome.error?.code == .conflict, "\(String(describing: outcome.error))")
        let generation = store.currentGeneration
        #expect(generation.value(o.a1, "albums") == .objects([o.y]) && generation.value(o.a2, "albums") == .objects([]))
        #expect(generation.value(o.x, "artist") == .null)
        await h.mergeByHand(moved)
        // a2, which the writer read listing y, lets go of it as the store has it: no pending
        // change of its own (which the next save would write).
        await h.expectWriterAndViewShow("y with a1, a2 with no album") { c in
            o.artists(of: [o.y], in: c) == [o.a1] && o.albums(of: [o.a1, o.a2], in: c) == [[o.y], []]
        } describe: { c in "y with \(o.artists(of: [o.y], in: c)), a1 and a2 with \(o.albums(of: [o.a1, o.a2], in: c))" }
        await h.close()
    }

    @Test("a deletion the writer's retry dropped, the object given an album meanwhile, shows both as the store has them, nothing pending",
          arguments: presets)
    func deletionDroppedKeepsGivenAlbum(_ preset: StackPreset) async throws {
        let h = try await Gated(preset, started: false)
        let (store, stack, o, outcomes) = (h.store, h.stack, h.objects, h.outcomes)
        // Both hold x with a1, and a2 with no album, as the store had them.
        for context in [stack.writerContext!, stack.viewContext] {
            await context.perform { c in o.readAlbums(of: [o.a1, o.a2], artistsOf: [o.x], in: c) }
        }
        // The user deletes a2 and saves; while the writer's save is held, another context
        // moves x to a2 (the deletion conflicts: a2 changed since it was read).
        await stack.viewContext.perform { c in c.delete(c.object(with: o.a2, as: Artist.self)) }
        try await stack.save(stack.viewContext)
        let moved = try await h.commitElsewhere { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        h.gate.open()

        let outcome = try #require(await StackConsistencyTests.nextOutcome(outcomes))
        #expect(outcome.error?.code == .conflict && outcome.error?.conflicts.map(\.object) == [o.a2], "\(String(describing: outcome.error))")
        let generation = store.currentGeneration
        #expect(generation.value(o.a2, "albums") == .objects([o.x]), "the store keeps a2, with x")
        #expect(generation.value(o.x, "artist") == .object(o.a2))
        #expect(generation.integrityProblems().isEmpty, "\(generation.integrityProblems().prefix(3))")
        await h.mergeByHand(moved)
        // a2 comes back as the store keeps it, listing x, which the writer read with a1: x
        // names a2 and a1 lists nothing (a2 came back listing no album, as a pending change
        // the next save would have written).
        await h.expectWriterAndViewShow("a2 with x, a1 with no album") { c in
            o.artists(of: [o.x], in: c) == [o.a2] && o.albums(of: [o.a1, o.a2], in: c) == [[], [o.x]]
        } describe: { c in "x with \(o.artists(of: [o.x], in: c)), a1 and a2 with \(o.albums(of: [o.a1, o.a2], in: c))" }
        await h.close()
    }

    @Test("hybrid: an editor open while the writer saved again with the store's values for a conflicting to-one shows them, both sides in step")
    func editorFollows() async throws {
        let h = try await Gated(.hybrid)
        let (stack, o, outcomes) = (h.stack, h.objects, h.outcomes)
        let editor = await stack.newEditorContext()
        await editor.perform { c in o.readAlbums(of: [o.a1, o.a3], artistsOf: [o.x], in: c) }
        try await h.takeAlbumXWhileAnotherGivesItToA3()
        let outcome = try #require(await StackConsistencyTests.nextOutcome(outcomes))
        #expect(outcome.error?.code == .conflict, "\(String(describing: outcome.error))")
        await waitUntil(editor, "the editor shows x with a3, and a3 listing x") { c in
            c.object(with: o.x, as: Album.self).artist?.objectID == o.a3 && c.object(with: o.a3, as: Artist.self).albums.map(\.objectID) == [o.x]
                && c.object(with: o.a1, as: Artist.self).albums.isEmpty
        }
        let shown = await editor.perform { c in
            (c.object(with: o.x, as: Album.self).artist?.objectID, c.object(with: o.a3, as: Artist.self).albums.map(\.objectID))
        }
        #expect(shown.0 == o.a3 && shown.1 == [o.x], "\(shown)")
        await h.close()
    }

    @Test("a key the view changed again after handing it to the writer keeps the newer value, which the next save writes",
          arguments: presets)
    func newerEditSurvivesAndIsSaved(_ preset: StackPreset) async throws {
        let h = try await Gated(preset)
        let (store, gate, stack, o, outcomes) = (h.store, h.gate, h.stack, h.objects, h.outcomes)
        let view = stack.viewContext
        await view.perform { c in c.object(with: o.a1, as: Artist.self).name = "mine" }
        try await stack.save(view)
        // Another context commits its own name while the writer's save is on its way, and
        // the user changes the name again.
        try await h.commitElsewhere { c in c.object(with: o.a1, as: Artist.self).name = "theirs" }
        await view.perform { c in c.object(with: o.a1, as: Artist.self).name = "mine, again" }
        gate.open()

        let first = try #require(await StackConsistencyTests.nextOutcome(outcomes))
        #expect(first.error?.code == .conflict, "\(String(describing: first.error))")
        #expect(store.currentGeneration.value(o.a1, "name") == .string("theirs"))
        let (name, pending) = await view.perform { c in (c.object(with: o.a1, as: Artist.self).name, c.hasChanges) }
        #expect(name == "mine, again", "\(preset): the newer edit stays")
        #expect(pending, "\(preset): still pending, for the next save")

        await #expect(throws: Never.self, "\(preset): the next save takes the newer edit") { try await stack.save(view) }
        let second = await StackConsistencyTests.nextOutcome(outcomes)
        #expect(second != nil && second?.error == nil, "\(preset): \(String(describing: second?.error))")
        #expect(store.currentGeneration.value(o.a1, "name") == .string("mine, again"), "\(preset): the newer edit is written")
        let (shown, left) = await view.perform { c in (c.object(with: o.a1, as: Artist.self).name, c.hasChanges) }
        #expect(shown == "mine, again" && !left)
        await h.close()
    }

    @Test("a key the view changed after handing the writer its object, which another commit changed too, is reported by the next save, not written over the other commit's value",
          arguments: presets)
    func otherKeyChangedMeanwhileConflicts(_ preset: StackPreset) async throws {
        let h = try await Gated(preset)
        let (store, gate, stack, o, outcomes) = (h.store, h.gate, h.stack, h.objects, h.outcomes)
        let view = stack.viewContext
        let seeded = store.currentGeneration.value(o.a1, "createdAt")
        let ours = Date(timeIntervalSince1970: 1_000), theirs = Date(timeIntervalSince1970: 2_000)
        await view.perform { c in c.object(with: o.a1, as: Artist.self).name = "mine" }
        try await stack.save(view)
        // While the writer's save is held, the user changes another key of the artist, as the
        // view shows it; another context commits both keys.
        await view.perform { c in c.object(with: o.a1, as: Artist.self).createdAt = ours }
        try await h.commitElsewhere { c in
            let artist = c.object(with: o.a1, as: Artist.self)
            artist.name = "theirs"
            artist.createdAt = theirs
        }
        gate.open()

        let first = try #require(await StackConsistencyTests.nextOutcome(outcomes))
        #expect(first.error?.code == .conflict && first.error?.conflicts.map(\.key) == ["name"], "\(String(describing: first.error))")
        #expect(store.currentGeneration.value(o.a1, "createdAt") == .date(theirs))
        let (name, date) = await view.perform { c in (c.object(with: o.a1, as: Artist.self).name, c.object(with: o.a1, as: Artist.self).createdAt) }
        #expect(name == "theirs", "\(preset): the writer kept the store's name")
        #expect(date == ours, "\(preset): the user's newer edit stays pending")

        // The edit was made on the value the view showed before the other commit: the next
        // save meets that commit's value in the writer, as a save of a context that had
        // merged it would.
        let error = await #expect(throws: StoreError.self, "\(preset)") { try await stack.save(view) }
        let conflict = error?.conflicts.first { $0.object == o.a1 && $0.key == "createdAt" }
        #expect(error?.code == .conflict && error?.conflicts.count == 1, "\(preset): \(String(describing: error))")
        #expect(conflict?.base == seeded && conflict?.ours == .date(ours) && conflict?.theirs == .date(theirs),
                "\(preset): \(String(describing: conflict))")
        #expect(store.currentGeneration.value(o.a1, "createdAt") == .date(theirs), "\(preset): the other commit's value stays")
        // The user decides: ours.
        await view.perform { c in c.mergePolicy = .contextWins }
        try await stack.save(view)
        let second = try #require(await StackConsistencyTests.nextOutcome(outcomes))
        #expect(second.error == nil, "\(preset): \(String(describing: second.error))")
        #expect(store.currentGeneration.value(o.a1, "createdAt") == .date(ours) && store.currentGeneration.value(o.a1, "name") == .string("theirs"))
        await h.close()
    }

    @Test("a key the view changed after handing the writer its object, which another commit changed too, is reported by the next save when the store refused the writer's save",
          arguments: presets)
    func otherKeyChangedMeanwhileConflictsAfterRefusal(_ preset: StackPreset) async throws {
        let h = try await Gated(preset)
        let (store, gate, stack, o, outcomes) = (h.store, h.gate, h.stack, h.objects, h.outcomes)
        let view = stack.viewContext
        let seeded = store.currentGeneration.value(o.a1, "createdAt")
        let seededID = store.currentGeneration.value(o.a1, "artistID")
        let ours = Date(timeIntervalSince1970: 1_000), theirs = Date(timeIntervalSince1970: 2_000)
        await view.perform { c in c.object(with: o.a1, as: Artist.self).artistID = 99 }
        try await stack.save(view)
        // While the writer's save is held, the user changes another key of the artist; another
        // context gives the unique ID to a2 and changes that key of a1 too.
        await view.perform { c in c.object(with: o.a1, as: Artist.self).createdAt = ours }
        try await h.commitElsewhere { c in
            c.object(with: o.a2, as: Artist.self).artistID = 99
            c.object(with: o.a1, as: Artist.self).createdAt = theirs
        }
        gate.open()

        let first = try #require(await StackConsistencyTests.nextOutcome(outcomes))
        #expect(first.error?.code == .uniqueViolation && first.droppedObjects.contains(o.a1), "\(String(describing: first.error))")
        let (id, date) = await view.perform { c in (c.object(with: o.a1, as: Artist.self).artistID, c.object(with: o.a1, as: Artist.self).createdAt) }
        #expect(.int(Int64(id)) == seededID, "\(preset): the dropped ID is gone")
        #expect(date == ours, "\(preset): the user's newer edit stays pending")

        // Reported by the view's save where the writer holds the other commit's value (under
        // `hybrid` it merged it), by the writer's save to the store where it does not.
        let error: StoreError?
        do {
            try await stack.save(view)
            error = await StackConsistencyTests.nextOutcome(outcomes)?.error
        } catch let thrown {
            error = thrown
        }
        let conflict = error?.conflicts.first { $0.object == o.a1 && $0.key == "createdAt" }
        #expect(error?.code == .conflict && error?.conflicts.count == 1, "\(preset): \(String(describing: error))")
        #expect(conflict?.base == seeded && conflict?.ours == .date(ours) && conflict?.theirs == .date(theirs),
                "\(preset): \(String(describing: conflict))")
        #expect(store.currentGeneration.value(o.a1, "createdAt") == .date(theirs), "\(preset): the other commit's value stays")
        await h.close()
    }

    @Test("a song the view deletes while the writer saves its insertion on an album another commit deletes comes back on no album when the view rolls back",
          arguments: presets, [false, true])
    func deletedSongRolledBackLetsGoOfDeletedAlbum(_ preset: StackPreset, started: Bool) async throws {
        // Not started: the other commit reaches the writer and the view after the writer's
        // save (by hand); started, whenever the stack merges it.
        let h = try await Gated(preset, started: started)
        let (store, stack, o, outcomes) = (h.store, h.stack, h.objects, h.outcomes)
        let view = stack.viewContext
        let song = await view.perform { c in
            let song = c.insert(Song.self)
            song.songID = StoreTesting.uuid(99)
            song.title = "new"
            song.milliseconds = 1000
            song.album = c.object(with: o.y, as: Album.self)
            return song.objectID
        }
        try await stack.save(view)
        // While the writer's save is held, another context deletes the album, and the user
        // deletes the song.
        let deletion = try await h.commitElsewhere { c in c.delete(c.object(with: o.y, as: Album.self)) }
        await view.perform { c in c.delete(c.object(with: song)) }
        h.gate.open()

        let outcome = try #require(await StackConsistencyTests.nextOutcome(outcomes))
        #expect(outcome.error?.code == .conflict && outcome.error?.conflicts.map(\.object) == [o.y], "\(String(describing: outcome.error))")
        #expect(store.currentGeneration.value(song, "album") == .null, "the writer saved the song on no album")
        if !started { await h.mergeByHand(deletion) }
        // The user changes their mind: the song comes back as the store has it.
        await view.perform { c in c.rollback() }
        let shown = await view.perform { c in c.object(with: song, as: Song.self).album?.objectID }
        #expect(shown == nil, "\(preset): the song shows the album the store deleted: \(String(describing: shown))")
        await h.expectWriterAndViewShow("the song on no album") { c in
            c.object(with: song, as: Song.self).album == nil && !c.object(with: song).isDeleted
        } describe: { c in "the song on \(String(describing: c.object(with: song, as: Song.self).album?.objectID))" }
        await h.close()
    }

    @Test("nested: a conflicting key the writer's save gave the store's value stays so when the view hands the writer more of the object while that save is written")
    func keptValueSurvivesAChangeDuringTheSave() async throws {
        let directory = TemporaryDirectory("strata-stack-writer-conflict")
        defer { directory.remove() }
        let hold = WriteHold()
        let store = try Store.create(at: directory.appending("store.strata"), schema: Fixtures.songbook,
                                     configuration: .init(durability: .relaxed, fileIO: HookedFileIO(wrapping: POSIXFileIO()) { hold.observe($0) }))
        let o = try await seedSongbook(store)
        let gate = SaveGate(context: "writer")
        let stack = Stack(.nested, store: store, modelClasses: [Artist.self, Album.self, Song.self], observer: gate.observer)
        await stack.start()
        let outcomes = stack.writerSaves()
        let view = stack.viewContext
        await view.perform { c in
            c.object(with: o.a1, as: Artist.self).name = "mine"
            c.object(with: o.a3, as: Artist.self).name = "also mine"
        }
        try await stack.save(view)
        #expect(await gate.waitUntilHeld(), "the writer's save started")
        let other = ObjectContext(coordinator: stack.coordinator, name: "other")
        await other.perform { c in c.object(with: o.a1, as: Artist.self).name = "theirs" }
        try await other.save()
        // The writer's save meets the conflict and saves again, keeping "theirs"; while that
        // is written, the view hands the writer another change of a1.
        hold.arm()
        gate.open()
        #expect(await hold.waitUntilHeld(), "the writer's second try is being written")
        await view.perform { c in c.object(with: o.a1, as: Artist.self).createdAt = Date(timeIntervalSince1970: 0) }
        try await stack.save(view)
        hold.open()

        let first = await StackConsistencyTests.nextOutcome(outcomes)
        let second = await StackConsistencyTests.nextOutcome(outcomes)
        #expect(first?.error?.code == .conflict, "\(String(describing: first?.error))")
        #expect(second != nil && second?.error == nil, "\(String(describing: second?.error))")
        let generation = store.currentGeneration
        #expect(generation.value(o.a1, "name") == .string("theirs"), "the value the conflict kept is not written over later")
        #expect(generation.value(o.a1, "createdAt") == .date(Date(timeIntervalSince1970: 0)))
        #expect(generation.value(o.a3, "name") == .string("also mine"))
        let name = await view.perform { c in c.object(with: o.a1, as: Artist.self).name }
        #expect(name == "theirs")
        let pending = await stack.writerContext!.hasChanges
        #expect(!pending, "nothing is left pending in the writer")
        await stack.close()
    }
}
