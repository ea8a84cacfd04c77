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
        let directory = TemporaryDirectory("strata-joined-pending-deletion")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let o = try await seedSongbook(store)
        let coordinator = Coordinator(store: store, name: "main", modelClasses: [Artist.self, Album.self, Song.self])
        let parent = ObjectContext(coordinator: coordinator, executor: .privateQueue("writer"), name: "writer")
        let view = ObjectContext(parent: parent, executor: .privateQueue("view"), name: "view")
        let other = ObjectContext(coordinator: coordinator, executor: .privateQueue("import"), name: "import")
        await view.setMergePolicy(policy)
        // The view reads album y (no artist) and deletes artist a2 (no albums yet).
        await view.perform { c in
            _ = c.object(with: o.y, as: Album.self).title
            c.delete(c.object(with: o.a2))
        }
        // Another context gives a2 a new album z, then moves y to it.
        let saves = other.didSave()
        try await other.perform { c in
            let z = c.insert(entity: "Album")
            z["albumID"] = .int(99)
            z["title"] = .string("z")
            z["artist"] = .object(o.a2)
            try await c.save()
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
            try await c.save()
        }
        var iterator = saves.makeAsyncIterator()
        let added = try #require(await iterator.next()), moved = try #require(await iterator.next())
        // The view merges the new album — reading a2 as its parent shows it now, y listed —
        // and then the move.
        await view.perform { c in _ = c.merge(added) }
        await view.perform { c in _ = c.merge(moved) }
        let merged = await view.perform { c in (shows(c, o.y), relationshipDisagreements(c)) }
        #expect(!merged.0, "the view shows y, which a2's cascade takes")
        #expect(merged.1.isEmpty, "\(merged.1)")

        await #expect(throws: Never.self) { try await view.save() }
        let saved = await view.perform { c in (shows(c, o.y), relationshipDisagreements(c), c.hasChanges) }
        #expect(!saved.0 && saved.1.isEmpty && !saved.2, "after the save: y shown \(saved.0), \(saved.1), changes left \(saved.2)")
        await view.rollback()
        let rolledBack = await view.perform { c in (shows(c, o.y), relationshipDisagreements(c)) }
        #expect(!rolledBack.0, "after a rollback, the view shows y, which its parent deleted")
        #expect(rolledBack.1.isEmpty, "\(rolledBack.1)")
        await #expect(throws: Never.self) { try await parent.save() }
        let stored = store.currentGeneration
        #expect(stored.object(o.a2) == nil && stored.object(o.y) == nil)
        #expect(stored.integrityProblems().isEmpty, "\(stored.integrityProblems())")
        await store.close()
    }

    @Test("the same, with the move merged while the child's save of the deletion is in flight",
          arguments: [MergePolicy.error, .contextWins, .storeWins, .overwrite, .rollback])
    func joinedWhileTheDeletionIsSaved(policy: MergePolicy) async throws {
        let directory = TemporaryDirectory("strata-joined-pending-deletion")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let o = try await seedSongbook(store)
        let inFlight = SaveInFlight(of: "view")
        let coordinator = Coordinator(store: store, name: "main", modelClasses: [Artist.self, Album.self, Song.self], observer: inFlight.observer)
        let parent = ObjectContext(coordinator: coordinator, executor: .privateQueue("writer"), name: "writer")
        let view = ObjectContext(parent: parent, executor: .privateQueue("view"), name: "view")
        let other = ObjectContext(coordinator: coordinator, executor: .privateQueue("import"), name: "import")
        await view.setMergePolicy(policy)
        await view.perform { c in
            _ = c.object(with: o.y, as: Album.self).title
            c.delete(c.object(with: o.a2))
        }
        let saves = other.didSave()
        try await other.perform { c in
            let z = c.insert(entity: "Album")
            z["albumID"] = .int(99)
            z["title"] = .string("z")
            z["artist"] = .object(o.a2)
            try await c.save()
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
            try await c.save()
        }
        var iterator = saves.makeAsyncIterator()
        let added = try #require(await iterator.next()), moved = try #require(await iterator.next())
        await view.perform { c in _ = c.merge(added) }
        // The view merges the move while its save is in flight.
        let failure = await inFlight.save(view, holding: parent) { await view.perform { c in _ = c.merge(moved) } }
        #expect(failure == nil, "\(String(describing: failure))")
        let saved = await view.perform { c in (shows(c, o.y), relationshipDisagreements(c)) }
        #expect(!saved.0 && saved.1.isEmpty, "after the save: y shown \(saved.0), \(saved.1)")
        await view.rollback()
        let rolledBack = await view.perform { c in (shows(c, o.y), relationshipDisagreements(c)) }
        #expect(!rolledBack.0, "after a rollback, the view shows y, which its parent deleted")
        #expect(rolledBack.1.isEmpty, "\(rolledBack.1)")
        await #expect(throws: Never.self) { try await parent.save() }
        let stored = store.currentGeneration
        #expect(stored.object(o.a2) == nil && stored.object(o.y) == nil)
        #expect(stored.integrityProblems().isEmpty, "\(stored.integrityProblems())")
        await store.close()
    }
}
