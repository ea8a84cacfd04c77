import Foundation
import Testing
@testable import Strata

/// An insert takes a number this store handed out and no commit has used: a deleted
/// object's ID is never inserted again (a stale reference to it would otherwise find a
/// different object), nor is one handed out by an earlier opening of the store, nor one
/// never handed out. A refused insert uses nothing.
extension ChangeSetCheckTests {
    @Test("a deleted object's ID cannot be inserted again")
    func aDeletedObjectsIDIsNotReused() async throws {
        try await Self.withStore { store in
            let ids = store.allocateObjectIDs(for: "Artist", count: 2)
            try await store.commit(ChangeSet(inserted: [Self.artist(ids[0], key: 1)]))
            try await store.commit(ChangeSet(deleted: [store.currentGeneration.deletion(ids[0])]))
            let error = await #expect(throws: StoreError.self) { try await store.commit(ChangeSet(inserted: [Self.artist(ids[0], key: 2)])) }
            #expect(error?.code == .invalidTransaction && error?.object == ids[0])
            #expect(error?.message.contains("never reused") == true, "\(error?.message ?? "")")
            #expect(!store.currentGeneration.contains(ids[0]))
            // The other number handed out with it is still free to use.
            try await store.commit(ChangeSet(inserted: [Self.artist(ids[1], key: 2)]))
        }
    }

    @Test("an insert that fails for another reason leaves its numbers free to use")
    func aRefusedInsertUsesNoNumber() async throws {
        try await Self.withStore { store in
            let ids = store.allocateObjectIDs(for: "Artist", count: 3)
            try await store.commit(ChangeSet(inserted: [Self.artist(ids[0], key: 1)]))
            // ids[1] and ids[2] in the middle and at the end of their range; the key of ids[2] is taken.
            await #expect(throws: StoreError.self) {
                try await store.commit(ChangeSet(inserted: [Self.artist(ids[1], key: 2), Self.artist(ids[2], key: 1)]))
            }
            try await store.commit(ChangeSet(inserted: [Self.artist(ids[2], key: 3), Self.artist(ids[1], key: 2)]))
            #expect(store.currentGeneration.count(of: "Artist") == 3)
        }
    }

    @Test("an ID handed out before the store was reopened, or never handed out, cannot be inserted")
    func onlyThisOpeningsNumbersAreInserted() async throws {
        let directory = TemporaryDirectory("strata-identity-reopen")
        defer { directory.remove() }
        var store = try StoreTesting.create(in: directory)
        let ids = store.allocateObjectIDs(for: "Artist", count: 2)
        try await store.commit(ChangeSet(inserted: [Self.artist(ids[0], key: 1)]))
        await store.close()
        store = try StoreTesting.open(in: directory)
        for id in [ids[1], ObjectID(entity: "Artist", number: ids[1].number + 5)] {
            let error = await #expect(throws: StoreError.self) { try await store.commit(ChangeSet(inserted: [Self.artist(id, key: 2)])) }
            #expect(error?.code == .invalidTransaction && error?.object == id)
        }
        // (A number handed out but never inserted before the reopen may be handed out again.)
        let fresh = store.allocateObjectIDs(for: "Artist")[0]
        #expect(fresh.number > ids[0].number)
        try await store.commit(ChangeSet(inserted: [Self.artist(fresh, key: 2)]))
        await store.close()
    }
}

@Suite struct UnusedNumbersTests {
    @Test("numbers are used from any place in their ranges, each once")
    func rangesSplitAndShrink() {
        var unused = UnusedNumbers()
        unused.add(1..<6)
        unused.add(6..<8)  // joins the first range
        unused.add(20..<21)
        for number: UInt64 in [1, 7, 4, 20] { #expect(unused.contains(number)); unused.use(number) }
        for number: UInt64 in [0, 1, 4, 7, 8, 19, 20, 21] { #expect(!unused.contains(number), "\(number)") }
        for number: UInt64 in [2, 3, 5, 6] { #expect(unused.contains(number), "\(number)") }
    }
}
