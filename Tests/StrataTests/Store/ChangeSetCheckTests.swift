import Foundation
import Testing
@testable import Strata

/// The checks a commit makes within one change set: no object named twice, no unique value
/// given twice, and a value freed by the same change set free to reuse. Each failure leaves
/// the store unchanged.
@Suite struct ChangeSetCheckTests {
    static let created = Date(timeIntervalSince1970: 0)

    static func artist(_ id: ObjectID, key: Int64) -> RowImage {
        RowImage(id: id, values: [.int(key), .string("artist \(key)"), .date(created), .objects([])])
    }

    static func withStore(_ body: (Store) async throws -> Void) async throws {
        let directory = TemporaryDirectory("strata-change-set-checks")
        defer { directory.remove() }
        let store = try Store.create(at: directory.appending("store"), schema: Fixtures.songbook, configuration: .init(durability: .none))
        try await body(store)
        await store.close()
    }

    /// An object inserted twice, with its numbers in order before the repeat and out of
    /// order, or inserted and deleted in one change set.
    @Test(arguments: [[0, 1, 2, 1], [2, 0, 1, 2], [0, 0], [3, 2, 1, 0, 3]])
    func anObjectNamedTwiceIsRefused(order: [Int]) async throws {
        try await Self.withStore { store in
            let ids = store.allocateObjectIDs(for: "Artist", count: 4)
            let rows = order.enumerated().map { Self.artist(ids[$0.element], key: Int64($0.offset + 1)) }
            let repeated = ids[order.last!]
            let error = await #expect(throws: StoreError.self) { try await store.commit(ChangeSet(inserted: rows)) }
            #expect(error?.code == .invalidTransaction && error?.object == repeated)
            #expect(error?.message.contains("appears more than once") == true)
            #expect(store.currentGeneration.count(of: "Artist") == 0)
        }
    }

    @Test func insertedAndDeletedInOneChangeSetIsRefused() async throws {
        try await Self.withStore { store in
            let ids = store.allocateObjectIDs(for: "Artist", count: 2)
            try await store.commit(ChangeSet(inserted: [Self.artist(ids[0], key: 1)]))
            await #expect(throws: StoreError.self) {
                try await store.commit(ChangeSet(inserted: [Self.artist(ids[1], key: 2)], deleted: [ObjectDeletion(id: ids[1], baseVersion: 0)]))
            }
            #expect(store.currentGeneration.count(of: "Artist") == 1)
        }
    }

    @Test(arguments: [Int64(7), -3, 1 << 40])
    func aUniqueValueGivenTwiceIsRefused(key: Int64) async throws {
        try await Self.withStore { store in
            let ids = store.allocateObjectIDs(for: "Artist", count: 40)
            var rows = (0..<39).map { Self.artist(ids[$0], key: key + 1 + Int64($0)) }
            rows.insert(Self.artist(ids[39], key: key + 20), at: 5)  // the same key as row 19's
            let error = await #expect(throws: StoreError.self) { try await store.commit(ChangeSet(inserted: rows)) }
            #expect(error?.code == .uniqueViolation && error?.key == "artistID")
            #expect(error?.message.contains("is given to both \(ids[39]) and \(ids[19])") == true)
            #expect(store.currentGeneration.count(of: "Artist") == 0)
        }
    }

    /// A value its holder gives up in the same change set (deleted, or changed) may go to
    /// another object; one still held may not.
    @Test func aValueFreedInTheSameChangeSetMayBeReused() async throws {
        try await Self.withStore { store in
            let ids = store.allocateObjectIDs(for: "Artist", count: 5)
            try await store.commit(ChangeSet(inserted: [Self.artist(ids[0], key: 100), Self.artist(ids[1], key: 200)]))
            let held = store.currentGeneration.object(ids[1])!
            try await store.commit(ChangeSet(
                inserted: [Self.artist(ids[2], key: 100), Self.artist(ids[3], key: 200)],
                updated: [ObjectUpdate(id: ids[1], baseVersion: held.version, baseValues: held.values, changes: [PropertyChange(index: 0, value: .int(201))])],
                deleted: [ObjectDeletion(id: ids[0], baseVersion: store.currentGeneration.object(ids[0])!.version)]))
            let generation = store.currentGeneration
            #expect(generation.object(of: "Artist", uniqueValue: .int(100))?.id == ids[2])
            #expect(generation.object(of: "Artist", uniqueValue: .int(200))?.id == ids[3])
            #expect(generation.object(of: "Artist", uniqueValue: .int(201))?.id == ids[1])
            let error = await #expect(throws: StoreError.self) { try await store.commit(ChangeSet(inserted: [Self.artist(ids[4], key: 201)])) }
            #expect(error?.code == .uniqueViolation && error?.message.contains("already used by \(ids[1])") == true)
        }
    }

    /// A key taken by an insert and by an update: each message says what to do for its
    /// kind (an update was told to update the holder "instead of adding" itself).
    @Test func aTakenKeySaysWhatToDoForInsertsAndUpdates() async throws {
        try await Self.withStore { store in
            let ids = store.allocateObjectIDs(for: "Artist", count: 3)
            try await store.commit(ChangeSet(inserted: [Self.artist(ids[0], key: 1), Self.artist(ids[1], key: 2)]))
            let inserting = await #expect(throws: StoreError.self) { try await store.commit(ChangeSet(inserted: [Self.artist(ids[2], key: 1)])) }
            #expect(inserting?.message == "unique key \"artistID\" = 1 already used by \(ids[0]); change one of them, or update \(ids[0]) instead of adding \(ids[2])")
            let row = store.currentGeneration.object(ids[1])!
            let updating = await #expect(throws: StoreError.self) {
                try await store.commit(ChangeSet(updated: [ObjectUpdate(id: ids[1], baseVersion: row.version, baseValues: row.values,
                                                                        changes: [PropertyChange(index: 0, value: .int(1))])]))
            }
            #expect(updating?.code == .uniqueViolation && updating?.object == ids[1])
            #expect(updating?.message == "unique key \"artistID\" = 1 already used by \(ids[0]); give \(ids[1]) another value, or change \(ids[0])'s first")
        }
    }
}
