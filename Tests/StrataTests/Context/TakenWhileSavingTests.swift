import Foundation
import Testing
@testable import Strata

/// An object changed here while this context's save is in flight, which the parent's delete
/// rules take as it applies the save (an album that joined, in the store, the artist this
/// context deletes): it keeps its changes for the next save, which reports the deletion as a
/// conflict its merge policy resolves, and a rollback makes it a tombstone. It was left as
/// it was: under `error` the rollback showed it again, with nothing pending, while neither the
/// parent nor the store had it.
@Suite struct TakenWhileSavingTests {
    @Test("an album changed while the save deleting its artist is in flight, taken by the parent's cascade",
          arguments: [MergePolicy.error, .contextWins, .storeWins, .overwrite, .rollback])
    func changedWhileTheParentsCascadeTakesIt(policy: MergePolicy) async throws {
        let inFlight = SaveInFlight(of: "view")
        let f = try await ChildFixture(parent: "writer", child: "view", observer: inFlight.observer)
        let (o, parent, view) = (f.objects, f.parent, f.child)
        await view.setMergePolicy(policy)
        // The view reads y (no artist) and deletes a2; another context gives y to a2, which
        // the view does not merge.
        await view.perform { c in
            _ = c.object(with: o.y, as: Album.self).title
            c.delete(c.object(with: o.a2))
        }
        try await f.other.perform { c in
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
            try await c.save()
        }
        // The view renames y while its save is in flight.
        let failure = await inFlight.save(view, holding: parent) {
            await view.perform { c in c.object(with: o.y, as: Album.self).title = "edited" }
        }
        #expect(failure == nil, "\(String(describing: failure))")
        #expect(await view.perform { c in shows(c, o.y) && c.hasChanges }, "y is kept with its change for the next save")

        // The next save reports the deletion: refused under `error`, resolved (the deletion
        // wins) under every other policy.
        var refusal: StoreError?
        do { try await view.save() } catch { refusal = error }
        if policy == .error {
            #expect(refusal?.code == .conflict && refusal?.conflicts.first?.object == o.y, "\(String(describing: refusal))")
        } else {
            #expect(refusal == nil, "\(String(describing: refusal))")
            #expect(await view.perform { c in !shows(c, o.y) && !c.hasChanges })
        }
        await view.rollback()
        let rolledBack = await view.perform { c in (shows(c, o.y), relationshipDisagreements(c), c.hasChanges) }
        #expect(!rolledBack.0, "after a rollback, the view shows y, which its parent deleted")
        #expect(rolledBack.1.isEmpty && !rolledBack.2, "\(rolledBack.1), changes left \(rolledBack.2)")
        await #expect(throws: Never.self) { try await parent.save() }
        #expect(f.store.currentGeneration.object(o.a2) == nil && f.store.currentGeneration.object(o.y) == nil)
        await f.close()
    }

    @Test("an album changed while the save renaming it is in flight, deleted in the parent meanwhile: undoing the change (a rollback, or by hand) makes it a tombstone nothing here names",
          arguments: [MergePolicy.contextWins, .storeWins, .overwrite, .rollback], [false, true])
    func changedWhileTheParentHasDeletedIt(policy: MergePolicy, byHand: Bool) async throws {
        let inFlight = SaveInFlight(of: "view")
        let f = try await ChildFixture(parent: "writer", child: "view", observer: inFlight.observer)
        let (o, parent, view) = (f.objects, f.parent, f.child)
        await view.setMergePolicy(policy)
        // The view reads a1, its album x and x's song s, and renames x; the parent deletes s
        // and x.
        await view.perform { c in
            _ = c.object(with: o.a1, as: Artist.self).albums.count
            _ = c.object(with: o.s, as: Song.self).album?.title
            c.object(with: o.x, as: Album.self).title = "first"
        }
        await parent.perform { c in
            c.delete(c.object(with: o.s))
            c.delete(c.object(with: o.x))
        }
        // The view renames x again while its save is in flight: x is deleted in conflict.
        let failure = await inFlight.save(view, holding: parent) {
            await view.perform { c in c.object(with: o.x, as: Album.self).title = "second" }
        }
        #expect(failure == nil, "\(String(describing: failure))")
        #expect(await view.perform { c in shows(c, o.x) && c.hasChanges }, "x is kept with its change for the next save")
        if byHand {
            // Back to the value its save handed the parent: nothing of its own is left.
            await view.perform { c in c.object(with: o.x, as: Album.self).title = "first" }
        } else {
            await view.rollback()
        }
        let rolledBack = await view.perform { c in
            (shows(c, o.x), c.object(with: o.a1, as: Artist.self).albums.map(\.objectID), c.object(with: o.s, as: Song.self).album?.objectID,
             relationshipDisagreements(c), c.hasChanges)
        }
        #expect(!rolledBack.0, "undone, the view shows x, which its parent deleted")
        #expect(rolledBack.1 == [] && rolledBack.2 == nil, "a1 lists \(rolledBack.1), s names \(String(describing: rolledBack.2))")
        #expect(rolledBack.3.isEmpty && !rolledBack.4, "\(rolledBack.3), changes left \(rolledBack.4)")
        await view.perform { c in c.object(with: o.a1, as: Artist.self).name = "renamed" }
        try await view.save()
        try await parent.save()
        #expect(f.store.currentGeneration.object(o.x) == nil && f.store.currentGeneration.value(o.a1, "albums") == .objects([]))
        await f.close()
    }
}
