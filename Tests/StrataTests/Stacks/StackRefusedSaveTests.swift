import Foundation
import Testing
@testable import Strata

/// A writer save the store refuses under `hybrid`: the writer drops what it held and the view
/// shows the store's state again.
@Suite struct StackRefusedSaveTests {
    /// The writer, with an artist's deletion pending, merges an import that gives that artist
    /// an album; the artist's cascade takes the album, whose songs' `deny` rule then refuses
    /// the writer's save. Meanwhile the view changed the album, and its save of the change
    /// meets the album's deletion in the writer (a conflict its merge policy resolves). The
    /// view, following the writer, is told of the cascade: its song lets go of the album,
    /// as the writer's doing, not the view's (as a change of the view's, it kept "no album"
    /// once the writer dropped the deletion, and the view's next save sent it — `hybrid`
    /// seed 3021 of the soak). After the refusal nothing is pending anywhere and the view
    /// shows the store's state: the artist, its album and the album's song, in step.
    @Test("hybrid: a writer save refused by a cascade its merge started leaves the view showing the store's state",
          arguments: [MergePolicy.rollback, .storeWins, .contextWins, .overwrite])
    @MainActor func cascadeFromAMergeRefused(policy: MergePolicy) async throws {
        // Not started: the writer's merge is landed by hand, between the view's save into it
        // and its save to the store. (No save is held: the gate is never armed.)
        let h = try await StackConsistencyTests.GatedHybrid(gate: SaveGate(context: "writer", saves: 0), started: false)
        defer { h.directory.remove() }
        let (store, stack, o, outcomes, writer, view) = (h.store, h.stack, h.objects, h.outcomes, h.writer, h.view)
        view.performAndWait { c in
            c.automaticallyMergesChanges = true  // follows the writer, as in a started stack
            c.mergePolicy = policy
            _ = c.object(with: o.s, as: Song.self).album?.songs
            c.delete(c.object(with: o.a2))
        }
        try await view.save()  // into the writer, which does not save it yet
        view.performAndWait { c in c.object(with: o.x, as: Album.self).title = "the view's" }
        let importer = stack.newImportContext()
        let imported = importer.didSave()
        await importer.perform { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        try await stack.save(importer)
        let moved = try #require(await firstElement(of: imported, timeout: .seconds(10)))
        await writer.merge(moved)
        let cascaded = await writer.perform { c in c.deletedObjects.map(\.objectID).contains(o.x) }
        #expect(cascaded, "the writer's cascade took the album")

        try await stack.save(view)  // the album's change, then the writer's save to the store
        let outcome = await StackConsistencyTests.nextOutcome(outcomes)
        #expect(outcome?.error?.code == .deleteRule, "\(String(describing: outcome))")
        let stored = store.currentGeneration
        #expect(stored.value(o.x, "artist") == .object(o.a2) && stored.value(o.s, "album") == .object(o.x))
        #expect(stored.object(o.a2) != nil && stored.integrityProblems().isEmpty)
        let storedTitle = stored.value(o.x, "title")
        await waitUntil(view, "the view shows the store's state") { c in
            c.object(with: o.s)["album"] == .object(o.x) && c.object(with: o.x)["songs"] == .objects([o.s])
                && c.object(with: o.x)["artist"] == .object(o.a2) && c.object(with: o.x)["title"] == storedTitle
        }
        let (pending, problems) = view.performAndWait { c in (c.hasChanges, relationshipDisagreements(c)) }
        #expect(!pending && problems.isEmpty, "view: pending \(pending), problems \(problems)")
        let writerPending = await writer.hasChanges
        #expect(!writerPending)
        await stack.close()
    }
}

extension StackRefusedSaveTests {
    /// The view deletes an artist while an import gives it an album. The writer, its save of
    /// the deletion held, merges the import: the artist's cascade takes the album there. The
    /// save meets the import's commit as a conflict and is saved again keeping the store's
    /// artist, and the album's deletion is written (when the merge lands before the retry, as
    /// it nearly always does; otherwise the retry has nothing left to write). The view,
    /// following the writer, was never told of the cascade (a merge announced only what it
    /// changed of objects already holding changes) and skips the writer's own save: it showed
    /// the album on the artist, which listed none (`hybrid` seed 4142 of the soak).
    @Test("hybrid: an artist the view deletes while an import gives it an album: the view ends as the store")
    func deletionMeetsAnAlbumGivenMeanwhile() async throws {
        let g = try await StackWriterConflictTests.Gated(.hybrid)
        let (store, stack, o) = (g.store, g.stack, g.objects)
        let view = stack.viewContext
        await view.perform { c in
            _ = c.object(with: o.y, as: Album.self).artist
            _ = c.object(with: o.a2, as: Artist.self).albums
            c.delete(c.object(with: o.a2))
        }
        try await stack.save(view)
        try await g.commitElsewhere { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        g.gate.open()
        let outcome = await StackConsistencyTests.nextOutcome(g.outcomes)
        #expect(outcome?.error?.code == .conflict, "\(String(describing: outcome))")
        let stored = store.currentGeneration
        #expect(stored.integrityProblems().isEmpty)
        let (a2, y, yArtist) = (stored.object(o.a2) != nil, stored.object(o.y) != nil, stored.value(o.y, "artist"))
        await waitUntil(view, "the view shows what the store has") { c in
            let shownY = c.object(with: o.y)
            let shownA2 = c.object(with: o.a2)
            return shownY.isDeleted == !y && shownA2.isDeleted == !a2 && (!y || shownY["artist"] == yArtist)
                && relationshipDisagreements(c).isEmpty
        }
        let (problems, pending) = await view.perform { c in (relationshipDisagreements(c), c.hasChanges) }
        #expect(problems.isEmpty && !pending, "view: \(problems), pending \(pending)")
        await g.close()
    }
}

extension StackRefusedSaveTests {
    /// The view deletes an album and saves the deletion into the writer; before the writer
    /// saves it, an import moves a song onto the album. The view merges the import's commit
    /// first: the commit's song names the album, a tombstone here whose deletion the writer
    /// holds, so the song lets go of it as the writer's pending deletion would. The writer,
    /// merging the same commit, meets the album's `deny` rule, and the store refuses its save:
    /// the album comes back in the view, and the song refers to it again as the store has it
    /// (it showed no album while the album listed it — `hybrid` seed 21681 of the soak, with
    /// a first version of the letting go).
    @Test("hybrid: an album the view deleted comes back, with the song an import moved onto it, when the writer's save is refused",
          arguments: [false, true])
    @MainActor func refusedDeletionBringsBackTheMovedSong(viewFollowsWriter: Bool) async throws {
        let h = try await StackConsistencyTests.GatedHybrid(gate: SaveGate(context: "writer", saves: 0), started: false)
        defer { h.directory.remove() }
        let (store, stack, o, outcomes, writer, view) = (h.store, h.stack, h.objects, h.outcomes, h.writer, h.view)
        view.performAndWait { c in
            c.automaticallyMergesChanges = viewFollowsWriter
            _ = c.object(with: o.s, as: Song.self).album?.songs
            _ = c.object(with: o.y, as: Album.self).songs
            c.delete(c.object(with: o.y))
        }
        try await view.save()  // into the writer, which does not save it yet
        let importer = stack.newImportContext()
        let imported = importer.didSave()
        await importer.perform { c in c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self) }
        try await stack.save(importer)
        let moved = try #require(await firstElement(of: imported, timeout: .seconds(10)))
        _ = await view.merge(moved)
        let letGo = view.performAndWait { c in (c.object(with: o.s)["album"], relationshipDisagreements(c), referencesToTombstones(c)) }
        #expect(letGo.0 == .null && letGo.1.isEmpty && letGo.2.isEmpty, "view after the merge: \(letGo)")
        await writer.merge(moved)

        view.performAndWait { c in c.object(with: o.a1, as: Artist.self).name = "the view's" }
        try await stack.save(view)  // the artist's change, then the writer's save to the store
        let outcome = await StackConsistencyTests.nextOutcome(outcomes)
        #expect(outcome?.error?.code == .deleteRule, "\(String(describing: outcome))")
        let stored = store.currentGeneration
        #expect(stored.value(o.s, "album") == .object(o.y) && stored.value(o.y, "songs") == .objects([o.s]))
        await waitUntil(view, "the view shows the store's song and album") { c in
            c.object(with: o.s)["album"] == .object(o.y) && c.object(with: o.y)["songs"] == .objects([o.s])
                && c.object(with: o.x)["songs"] == .objects([])
        }
        let (pending, problems, tombstones) = view.performAndWait { c in (c.hasChanges, relationshipDisagreements(c), referencesToTombstones(c)) }
        #expect(!pending && problems.isEmpty && tombstones.isEmpty, "view: pending \(pending), problems \(problems), \(tombstones)")
        await stack.close()
    }
}
