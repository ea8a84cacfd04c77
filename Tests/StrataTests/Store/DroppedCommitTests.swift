import Foundation
import Testing
@testable import Strata

/// A commit whose merge policy drops every change returns the generation its changes were
/// resolved against — which may hold another committer's transaction still on its way to
/// the disk. It returns once that transaction is durable and published, as a commit returns
/// its own: it once returned at once, handing out a transaction a crash could still lose,
/// newer than the store's current generation.
@Suite struct DroppedCommitTests {
    @Test("a commit whose every change the merge policy drops waits for the transactions it returns")
    func droppedCommitWaitsForTheHead() async throws {
        let gate = SyncGate()
        let io = HookedFileIO(wrapping: InMemoryFileIO(), hook: { gate.observe($0) })
        let store = try Store.create(at: "/store", schema: Fixtures.songbook,
                                     configuration: Store.Configuration(durability: .full, fileIO: io))
        let o = try await ConstraintTests.Objects.commit(into: store)
        let before = store.currentGeneration
        try await store.commit(ChangeSet(author: "them", updated: [before.update(o.a2, ["name": .string("Theirs")])]))

        // Another committer's insert, held in its fsync: in the head, not durable.
        gate.hold(sync: gate.syncs)
        let id = store.allocateObjectIDs(for: "Artist")[0]
        let slow = Task { try await store.commit(ChangeSet(author: "slow", inserted: [Songbook.artist(id, artistID: 99, name: "Slow")])) }
        try #require(await eventually(within: 30) { gate.isHolding }, "the insert's fsync is held")

        // Based on the generation before "them": the one change conflicts, and storeWins drops it.
        let dropped = Task {
            try await store.commit(ChangeSet(author: "dropped", updated: [before.update(o.a2, ["name": .string("Ours")])], mergePolicy: .storeWins))
        }
        let returnedEarly = await StackFailureTests.finishes(dropped, within: .seconds(1))
        #expect(!returnedEarly, "the commit returned while the transaction it returns was not durable")
        gate.releaseHeld()
        let result = try await dropped.value
        let inserted = try await slow.value
        #expect(result.notification == nil && result.resolvedConflicts.count == 1)
        #expect(result.transaction == inserted.transaction, "the head it was resolved against")
        #expect(store.journal.lastDurableTransaction >= result.transaction)
        #expect(store.currentGeneration.transaction >= result.transaction, "published")
        #expect(result.generation.object(o.a2)?.values[1] == .string("Theirs"))
        await store.close()
    }
}
