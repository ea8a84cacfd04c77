import Foundation
import Testing
@testable import Strata

/// A merged save that relates an object to one pending deletion here is followed by the
/// deleted object's delete rules, also when the deleted object's own values showed the
/// relation already — a child's merge of an earlier commit took the deleted artist's row as
/// its parent shows it, newer than that commit, listing an album a later commit moved there;
/// the later commit's merge then found nothing new on the artist's side. The album joined the
/// artist untouched by its cascade; the parent's cascade took it when the deletion was saved,
/// and the child went on showing it, naming the deleted artist (`hybrid` soak seed 4344).
@Suite struct JoinedToPendingDeletionTests {
    @Test("an album a later commit moves to an artist a child is deleting follows the artist's cascade, whichever side showed it first",
          arguments: [MergePolicy.error, .contextWins, .storeWins, .overwrite, .rollback])
    func joinedAfterTheDeletedSideShowedIt(policy: MergePolicy) async throws {
        let f = try await ChildFixture(parent: "writer", child: "view")
        let (o, view) = (f.objects, f.child)
        let (added, moved) = try await Self.prepare(f, policy: policy)
        // The view merges the new album — reading a2 as its parent shows it now, y listed —
        // and then the move.
        await view.perform { c in _ = c.merge(added) }
        await view.perform { c in _ = c.merge(moved) }
        let merged = await view.perform { c in (shows(c, o.y), relationshipDisagreements(c)) }
        #expect(!merged.0, "the view shows y, which a2's cascade takes")
        #expect(merged.1.isEmpty, "\(merged.1)")
        await #expect(throws: Never.self) { try await view.save() }
        await Self.expectGone(f)
    }

    @Test("the same, with the move merged while the child's save of the deletion is in flight",
          arguments: [MergePolicy.error, .contextWins, .storeWins, .overwrite, .rollback])
    func joinedWhileTheDeletionIsSaved(policy: MergePolicy) async throws {
        let inFlight = SaveInFlight(of: "view")
        let f = try await ChildFixture(parent: "writer", child: "view", observer: inFlight.observer)
        let view = f.child
        let (added, moved) = try await Self.prepare(f, policy: policy)
        await view.perform { c in _ = c.merge(added) }
        let failure = await inFlight.save(view, holding: f.parent) { await view.perform { c in _ = c.merge(moved) } }
        #expect(failure == nil, "\(String(describing: failure))")
        await Self.expectGone(f)
    }

    /// The view reads album y (no artist) and deletes artist a2 (no albums yet); another
    /// context gives a2 a new album z, then moves y to it. Returns those two saves.
    private static func prepare(_ f: ChildFixture, policy: MergePolicy) async throws -> (added: DidSave, moved: DidSave) {
        let o = f.objects
        await f.child.setMergePolicy(policy)
        await f.child.perform { c in
            _ = c.object(with: o.y, as: Album.self).title
            c.delete(c.object(with: o.a2))
        }
        let saves = f.other.didSave()
        try await f.other.perform { c in
            let z = c.insert(entity: "Album")
            z["albumID"] = .int(99)
            z["title"] = .string("z")
            z["artist"] = .object(o.a2)
            try await c.save()
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
            try await c.save()
        }
        var iterator = saves.makeAsyncIterator()
        return (try #require(await iterator.next()), try #require(await iterator.next()))
    }

    /// After the view's save: y is gone from the view, also after a rollback, and from the
    /// store once the parent saves.
    private static func expectGone(_ f: ChildFixture, sourceLocation: SourceLocation = #_sourceLocation) async {
        let (o, view) = (f.objects, f.child)
        let saved = await view.perform { c in (shows(c, o.y), relationshipDisagreements(c)) }
        #expect(!saved.0 && saved.1.isEmpty, "after the save: y shown \(saved.0), \(saved.1)", sourceLocation: sourceLocation)
        await view.rollback()
        let rolledBack = await view.perform { c in (shows(c, o.y), relationshipDisagreements(c)) }
        #expect(!rolledBack.0, "after a rollback, the view shows y, which its parent deleted", sourceLocation: sourceLocation)
        #expect(rolledBack.1.isEmpty, "\(rolledBack.1)", sourceLocation: sourceLocation)
        await #expect(throws: Never.self, sourceLocation: sourceLocation) { try await f.parent.save() }
        #expect(f.store.currentGeneration.object(o.a2) == nil && f.store.currentGeneration.object(o.y) == nil, sourceLocation: sourceLocation)
        await f.close(sourceLocation: sourceLocation)
    }
}
