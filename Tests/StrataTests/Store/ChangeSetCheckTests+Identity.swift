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

/// A change set that only inserts, in the order its numbers were handed out, has its
/// identities checked run by run: the same refusals as one checked object by object.
extension ChangeSetCheckTests {
    /// Five artists handed out at once; the third (inserted before, or retired) is used.
    @Test("a run of numbers across a used one is refused, naming that one", arguments: [false, true])
    func aRunAcrossAUsedNumberIsRefused(retired: Bool) async throws {
        try await Self.withStore { store in
            let ids = store.allocateObjectIDs(for: "Artist", count: 5)
            if retired {
                store.retire([ids[2]])
            } else {
                try await store.commit(ChangeSet(inserted: [Self.artist(ids[2], key: 100)]))
            }
            let before = store.currentGeneration
            let rows = [0, 1, 2, 3].map { Self.artist(ids[$0], key: Int64($0)) }
            let error = await #expect(throws: StoreError.self) { try await store.commit(ChangeSet(inserted: rows)) }
            #expect(error?.code == .invalidTransaction && error?.object == ids[2], "\(String(describing: error))")
            #expect(store.currentGeneration.transaction == before.transaction)
            // Nothing of the run was used: its other numbers go in as a run again.
            try await store.commit(ChangeSet(inserted: [0, 1, 3, 4].map { Self.artist(ids[$0], key: Int64($0)) }))
            #expect(store.currentGeneration.count(of: "Artist") == (retired ? 4 : 5))
        }
    }

    /// One ID twice, next to itself or after others; a run that goes back to a number
    /// before it; numbers beyond those handed out.
    @Test("a run given twice, going back, or running past the numbers handed out is refused",
          arguments: [[0, 1, 1, 2], [0, 1, 2, 0], [2, 3, 0, 1, 2], [3, 4, 5]])
    func runsThatAreNotPlainAreRefused(order: [Int]) async throws {
        try await Self.withStore { store in
            let ids = store.allocateObjectIDs(for: "Artist", count: 5)
            let beyond = ObjectID(entity: "Artist", number: ids[4].number + 1)
            func id(_ i: Int) -> ObjectID { i < 5 ? ids[i] : beyond }
            let rows = order.enumerated().map { Self.artist(id($0.element), key: Int64($0.offset)) }
            let error = await #expect(throws: StoreError.self) { try await store.commit(ChangeSet(inserted: rows)) }
            // The first object a check object by object refuses: the first repeated, or the one past the end.
            let culprit = order.indices.first { i in order[..<i].contains(order[i]) || order[i] >= 5 }.map { id(order[$0]) }
            #expect(error?.code == .invalidTransaction && error?.object == culprit, "\(String(describing: error))")
            #expect(store.currentGeneration.count(of: "Artist") == 0)
            try await store.commit(ChangeSet(inserted: (0..<5).map { Self.artist(ids[$0], key: Int64($0)) }))
        }
    }

    /// Artists and albums interleaved, each entity's numbers in order but in runs with gaps
    /// (numbers handed out and left for later): committed, and the gaps' numbers after.
    @Test func interleavedRunsWithGapsCommit() async throws {
        try await Self.withStore { store in
            let ids = store.allocateObjectIDs(for: "Artist", count: 10)
            let first = [0, 1, 2, 5, 6, 9], later = [3, 4, 7, 8]
            try await store.commit(ChangeSet(inserted: first.map { Self.artist(ids[$0], key: Int64($0)) }))
            try await store.commit(ChangeSet(inserted: later.map { Self.artist(ids[$0], key: Int64($0)) }))
            #expect(store.currentGeneration.count(of: "Artist") == 10)
            let again = await #expect(throws: StoreError.self) { try await store.commit(ChangeSet(inserted: [Self.artist(ids[4], key: 40)])) }
            #expect(again?.object == ids[4])
        }
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

    /// Runs used and looked up against a set of numbers, over random ranges and runs.
    @Test(arguments: [1, 2, 3, 4]) func runsMatchASet(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var unused = UnusedNumbers()
        var model = Set<UInt64>()
        var next: UInt64 = 1
        for _ in 0..<40 {
            next += rng.next() % 3  // sometimes a gap
            let count = 1 + rng.next() % 20
            unused.add(next..<next + count)
            model.formUnion(next..<next + count)
            next += count
        }
        for _ in 0..<400 {
            let start = 1 + rng.next() % next, length = rng.next() % 6
            let run = start..<start + length
            let held = run.allSatisfy(model.contains)
            // Ranges are never adjacent (a used number parts them): a run held is in one range.
            #expect(unused.contains(run) == held, "\(run)")
            if held {
                unused.use(run)
                model.subtract(run)
            }
            for number in start.saturatingSubtraction(2)..<start + length + 2 { #expect(unused.contains(number) == model.contains(number), "\(number)") }
        }
    }
}

private extension UInt64 {
    func saturatingSubtraction(_ other: UInt64) -> UInt64 { self >= other ? self - other : 0 }
}
