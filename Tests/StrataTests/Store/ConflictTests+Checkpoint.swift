import Foundation
import Testing
@testable import Strata

/// Rows loaded from a checkpoint conflict like any other: a checkpoint keeps no row's own
/// version, so they load with the checkpoint's transaction as theirs — never 0, which a
/// change set uses for "not read from the store" and which skipped the checks.
extension ConflictTests {
    /// A store with one artist, compacted into a checkpoint after transaction 2 and reopened.
    static func reopenedFromCheckpoint(_ directory: TemporaryDirectory) async throws -> (Store, ObjectID) {
        var store = try StoreTesting.create(in: directory)
        let artist = store.allocateObjectIDs(for: "Artist")[0]
        try await store.commit(ChangeSet(inserted: [Songbook.artist(artist, artistID: 1, name: "Base")]))
        try await store.commit(ChangeSet(updated: [store.currentGeneration.update(artist, ["name": .string("Checkpointed")])]))
        try await store.compact()
        await store.close()
        store = try StoreTesting.open(in: directory)
        #expect(store.journal.recovery.checkpoint == 2)
        return (store, artist)
    }

    @Test("a row loaded from a checkpoint has the checkpoint's transaction as its version")
    func checkpointRowsHaveTheCheckpointsVersion() async throws {
        let directory = TemporaryDirectory("conflict-checkpoint-version")
        defer { directory.remove() }
        let (store, artist) = try await Self.reopenedFromCheckpoint(directory)
        #expect(store.currentGeneration.object(artist)?.version == 2)
        await store.close()
    }

    @Test("deleting a checkpoint row that another save changed since it was read is a conflict")
    func deletionOfAChangedCheckpointRowConflicts() async throws {
        let directory = TemporaryDirectory("conflict-checkpoint-delete")
        defer { directory.remove() }
        let (store, artist) = try await Self.reopenedFromCheckpoint(directory)
        let read = store.currentGeneration
        try await store.commit(ChangeSet(updated: [read.update(artist, ["name": .string("Renamed")])]))
        let refused = await #expect(throws: StoreError.self) { try await store.commit(ChangeSet(deleted: [read.deletion(artist)])) }
        #expect(refused?.code == .conflict)
        #expect(store.currentGeneration.value(artist, "name") == .string("Renamed"))
        await store.close()
    }

    @Test("changing a checkpoint row that another save deleted since it was read is a conflict, resolved by the merge policy",
          arguments: [MergePolicy.error, .contextWins, .storeWins])
    func updateOfADeletedCheckpointRowConflicts(policy: MergePolicy) async throws {
        let directory = TemporaryDirectory("conflict-checkpoint-update")
        defer { directory.remove() }
        let (store, artist) = try await Self.reopenedFromCheckpoint(directory)
        let read = store.currentGeneration
        try await store.commit(ChangeSet(deleted: [read.deletion(artist)]))
        let outcome = await attempt(store, ChangeSet(updated: [read.update(artist, ["name": .string("Renamed")])], mergePolicy: policy))
        switch (policy, outcome) {
        case (.error, .failure(let error)):
            #expect(error.code == .conflict, "\(error)")
        case (.error, .success):
            Issue.record("the update of a deleted object was committed under .error")
        case (_, .success(let result)):
            #expect(result.resolvedConflicts.count == 1, "\(result.resolvedConflicts)")
            #expect(!store.currentGeneration.contains(artist))
        case (_, .failure(let error)):
            Issue.record("\(policy) should resolve the conflict, not fail with \(error.code): \(error.message)")
        }
        await store.close()
    }
}
