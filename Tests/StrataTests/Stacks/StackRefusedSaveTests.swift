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
