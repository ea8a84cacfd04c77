import Foundation
import Testing
@testable import Strata

/// The view saves an album's move to a new artist into the writer; while the save is on its
/// way, the view merges a commit putting the album on another artist (the writer merged it
/// before it applied the save). A policy keeping the view's move has that artist let go of the
/// album — a change of the view's that the save in flight does not carry. The writer, which
/// applies the move over the commit, lets go too and says so; the view takes that as its
/// parent's value, not a change of its own. (Left a change, a rollback took the artist back
/// to the commit's list, naming the album, while the writer and then the store did not —
/// `hybrid` seed 1741 of the soak.)
@Suite struct StackMergeDuringSaveTests {
    @Test("hybrid: a commit merged while the view's save of a move is in flight: the view ends as the store, after a rollback too",
          arguments: [MergePolicy.overwrite, .contextWins, .storeWins, .rollback])
    @MainActor func commitMergedWhileSaving(policy: MergePolicy) async throws {
        // Not started: merges are landed by hand. The gate holds the writer once it has
        // applied the view's save, before the view hears back.
        let h = try await StackConsistencyTests.GatedHybrid(gate: SaveGate(context: "writer", operation: .applyChildSave), started: false)
        defer { h.directory.remove() }
        let (store, gate, stack, o, outcomes, writer, view) = (h.store, h.gate, h.stack, h.objects, h.outcomes, h.writer, h.view)
        let newArtist = view.performAndWait { c in
            c.mergePolicy = policy
            _ = c.object(with: o.a3, as: Artist.self).albums
            let artist = c.insert(Artist.self)
            artist.artistID = 40
            artist.name = "new"
            c.object(with: o.y, as: Album.self).artist = artist
            return artist.objectID
        }
        let importer = stack.newImportContext()
        let imported = importer.didSave()
        await importer.perform { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a3, as: Artist.self) }
        try await stack.save(importer)
        let moved = try #require(await firstElement(of: imported, timeout: .seconds(10)))
        await writer.merge(moved)
        let saving = Task { @MainActor in try await stack.save(view) }
        #expect(await gate.waitUntilHeld(), "the writer applied the view's save")
        view.performAndWait { c in _ = c.merge(moved) }  // while the save waits for the writer
        gate.open()
        try await saving.value
        let outcome = await StackConsistencyTests.nextOutcome(outcomes)
        #expect(outcome?.error == nil, "\(String(describing: outcome))")
        view.performAndWait { c in c.rollback() }
        let stored = store.currentGeneration
        #expect(stored.integrityProblems().isEmpty)
        let keptOurs = policy == .overwrite || policy == .contextWins
        #expect(stored.value(o.y, "artist") == .object(keptOurs ? newArtist : o.a3))
        let a3Stored = stored.value(o.a3, "albums")
        let (a3Shown, yArtist, problems, pending) = view.performAndWait { c in
            (c.object(with: o.a3)["albums"], c.object(with: o.y, as: Album.self).artist?.objectID, relationshipDisagreements(c), c.hasChanges)
        }
        #expect(a3Shown == a3Stored, "the view lists \(a3Shown) on a3, the store \(String(describing: a3Stored))")
        #expect(yArtist == (keptOurs ? newArtist : o.a3))
        #expect(problems.isEmpty && !pending, "\(problems), pending \(pending)")
        await stack.close()
    }
}
