import Foundation
import Testing
@testable import Strata

extension StoreWinsInFlightTests {
    /// An artist lists albums x and y. A context takes x from it; meanwhile another context
    /// moves y to another artist and commits first. The context's save meets the conflict on
    /// the artist's list (resolved element by element) and, while it is in flight, merges the
    /// other commit. Afterwards both sides of every relationship agree, nothing is pending,
    /// and the context's next saves are not refused.
    @Test("a list both sides changed, merged while the save is in flight, leaves both sides in step and nothing pending",
          arguments: [MergePolicy.storeWins, .contextWins, .overwrite, .rollback], [0, 1, 2])
    @MainActor
    func listMergedWhileInFlight(policy: MergePolicy, setupMerged: Int) async throws {
        let directory = TemporaryDirectory("strata-store-wins-in-flight")
        defer { directory.remove() }
        let (store, hold) = try Self.storeHoldingSyncs(in: directory)
        let o = try await seedSongbook(store)
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        // On the main actor, so that its save waits for durability without holding the
        // context: the merges below run while the save is in flight.
        let context = ObjectContext(coordinator: coordinator, executor: .main, name: "view")
        let commits = store.commits()
        await context.perform { c in
            c.mergePolicy = policy
            o.readAlbums(of: [o.a1, o.a2], artistsOf: [o.y], in: c)
        }
        // y joins a1 (merged before the change, during the save, or after it), then moves to a2.
        let setup = ObjectContext(coordinator: coordinator, name: "setup")
        await setup.perform { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a1, as: Artist.self) }
        try await setup.save()
        let joined = try #require(await firstElement(of: commits, timeout: .seconds(10)))
        if setupMerged == 0 { await context.perform { c in _ = c.merge(joined) } }
        await context.perform { c in c.object(with: o.x, as: Album.self).artist = nil }
        let other = ObjectContext(coordinator: coordinator, name: "other")
        await other.perform { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        try await other.save()
        let moved = try #require(await firstElement(of: commits, timeout: .seconds(10)))

        hold.arm()
        let saving = Task { @MainActor in try await context.save() }
        #expect(await signalled(hold.reached), "the save reached its sync")
        if setupMerged == 1 { await context.perform { c in _ = c.merge(joined) } }
        await context.perform { c in _ = c.merge(moved) }
        hold.open()
        _ = try await withTimeout(30, "the save") { try await saving.value }
        if setupMerged == 2 {
            await context.perform { c in _ = c.merge(joined) }
            await context.perform { c in _ = c.merge(moved) }
        }

        let stored = store.currentGeneration
        #expect(stored.value(o.a1, "albums") == .objects([]))
        #expect(stored.value(o.a2, "albums") == .objects([o.y]))
        let (problems, pending) = await context.perform { c in (relationshipDisagreements(c), c.updatedObjects.map { "\($0.objectID) \($0.changedValues)" }) }
        #expect(problems.isEmpty, "\(problems)")
        #expect(pending.isEmpty, "nothing is pending: \(pending)")
        // The next save, of other objects' relationships, is not refused.
        await context.perform { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a3, as: Artist.self) }
        try await context.save()
        #expect(store.currentGeneration.integrityProblems().isEmpty)
        await store.close()
    }
}
