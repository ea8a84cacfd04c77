import Foundation
import Testing
@testable import Strata

/// Change sets large enough that the store checks them on two threads at once (unique keys
/// while the tables fill; constraints in halves): the same refusals, naming the same object
/// and key, as a single pass; the store unchanged after each.
@Suite struct LargeChangeSetTests {
    static let size = CommitPlan.rowsCheckedInParallel * 2

    static func withStore(_ body: (Store) async throws -> Void) async throws {
        let directory = TemporaryDirectory("strata-large-change-sets")
        defer { directory.remove() }
        let store = try Store.create(at: directory.appending("store"), schema: Fixtures.songbook, configuration: .init(durability: .none))
        try await body(store)
        await store.close()
    }

    @Test func aLargeInsertIndexesEveryUniqueKey() async throws {
        try await Self.withStore { store in
            let ids = store.allocateObjectIDs(for: "Artist", count: Self.size)
            try await store.commit(ChangeSet(inserted: ids.enumerated().map { Songbook.artist($0.element, artistID: Int64($0.offset) * 3 - 500) }))
            let generation = store.currentGeneration
            #expect(generation.count(of: "Artist") == Self.size)
            for (offset, id) in ids.enumerated() where offset % 97 == 0 || offset == ids.count - 1 {
                #expect(generation.object(of: "Artist", uniqueValue: .int(Int64(offset) * 3 - 500))?.id == id)
            }
            #expect(generation.object(of: "Artist", uniqueValue: .int(2)) == nil)  // not a multiple of 3 less 500
            // Keys indexed by the bulk path are enforced afterwards.
            let next = store.allocateObjectIDs(for: "Artist")[0]
            let error = await #expect(throws: StoreError.self) { try await store.commit(ChangeSet(inserted: [Songbook.artist(next, artistID: 4 * 3 - 500)])) }
            #expect(error?.code == .uniqueViolation && error?.message.contains("already used by \(ids[4])") == true)
        }
    }

    /// A key given twice within the change set, early or late in it.
    @Test(arguments: [(3, 10), (100, 3_999), (4_000, 4_090)])
    func aKeyGivenTwiceIsRefused(first: Int, repeated: Int) async throws {
        try await Self.withStore { store in
            let ids = store.allocateObjectIDs(for: "Artist", count: Self.size)
            var rows = ids.enumerated().map { Songbook.artist($0.element, artistID: Int64($0.offset)) }
            rows[repeated] = Songbook.artist(ids[repeated], artistID: Int64(first))
            let error = await #expect(throws: StoreError.self) { try await store.commit(ChangeSet(inserted: rows)) }
            #expect(error?.code == .uniqueViolation && error?.key == "artistID" && error?.object == ids[repeated])
            #expect(error?.message.contains("is given to both \(ids[first]) and \(ids[repeated])") == true)
            #expect(store.currentGeneration.count(of: "Artist") == 0)
            #expect(store.currentGeneration.object(of: "Artist", uniqueValue: .int(5)) == nil)
        }
    }

    @Test func aKeyAlreadyHeldIsRefusedAndTheIndexUnchanged() async throws {
        try await Self.withStore { store in
            let holder = store.allocateObjectIDs(for: "Artist")[0]
            try await store.commit(ChangeSet(inserted: [Songbook.artist(holder, artistID: 3_000)]))
            let ids = store.allocateObjectIDs(for: "Artist", count: Self.size)
            let rows = ids.enumerated().map { Songbook.artist($0.element, artistID: Int64($0.offset)) }
            let error = await #expect(throws: StoreError.self) { try await store.commit(ChangeSet(inserted: rows)) }
            #expect(error?.code == .uniqueViolation && error?.object == ids[3_000])
            #expect(error?.message.contains("already used by \(holder)") == true)
            let generation = store.currentGeneration
            #expect(generation.count(of: "Artist") == 1)
            #expect(generation.object(of: "Artist", uniqueValue: .int(3_000))?.id == holder)
            #expect(generation.object(of: "Artist", uniqueValue: .int(10)) == nil)
        }
    }

    /// Updates and deletions in a large change set take the other path: a key freed by one
    /// object goes to a new one.
    @Test func aLargeMixedChangeSetReusesFreedKeys() async throws {
        try await Self.withStore { store in
            let old = store.allocateObjectIDs(for: "Artist", count: 2)
            try await store.commit(ChangeSet(inserted: [Songbook.artist(old[0], artistID: -1), Songbook.artist(old[1], artistID: -2)]))
            let generation = store.currentGeneration
            let kept = generation.object(old[1])!
            let ids = store.allocateObjectIDs(for: "Artist", count: Self.size)
            var rows = ids.enumerated().map { Songbook.artist($0.element, artistID: Int64($0.offset)) }
            rows[7] = Songbook.artist(ids[7], artistID: -1)
            rows[8] = Songbook.artist(ids[8], artistID: -2)
            try await store.commit(ChangeSet(
                inserted: rows,
                updated: [ObjectUpdate(id: old[1], baseVersion: kept.version, baseValues: kept.values, changes: [PropertyChange(index: 0, value: .int(-3))])],
                deleted: [ObjectDeletion(id: old[0], baseVersion: generation.object(old[0])!.version)]))
            let after = store.currentGeneration
            #expect(after.object(of: "Artist", uniqueValue: .int(-1))?.id == ids[7])
            #expect(after.object(of: "Artist", uniqueValue: .int(-2))?.id == ids[8])
            #expect(after.object(of: "Artist", uniqueValue: .int(-3))?.id == old[1])
            #expect(after.object(of: "Artist", uniqueValue: .int(4_000))?.id == ids[4_000])
        }
    }

    /// A large change set with an update taking a key another object still holds: refused
    /// while the tables fill on the other thread, and nothing of it kept.
    @Test func aLargeMixedChangeSetTakingAHeldKeyIsRefused() async throws {
        try await Self.withStore { store in
            let old = store.allocateObjectIDs(for: "Artist", count: 2)
            try await store.commit(ChangeSet(inserted: [Songbook.artist(old[0], artistID: -1), Songbook.artist(old[1], artistID: -2)]))
            let before = store.currentGeneration
            let row = before.object(old[1])!
            let ids = store.allocateObjectIDs(for: "Artist", count: Self.size)
            let error = await #expect(throws: StoreError.self) {
                try await store.commit(ChangeSet(
                    inserted: ids.enumerated().map { Songbook.artist($0.element, artistID: Int64($0.offset)) },
                    updated: [ObjectUpdate(id: old[1], baseVersion: row.version, baseValues: row.values, changes: [PropertyChange(index: 0, value: .int(-1))])]))
            }
            #expect(error?.code == .uniqueViolation && error?.object == old[1])
            #expect(error?.message.contains("already used by \(old[0])") == true)
            let after = store.currentGeneration
            #expect(after.transaction == before.transaction && after.count(of: "Artist") == 2)
            #expect(after.object(of: "Artist", uniqueValue: .int(-2))?.id == old[1])
            #expect(after.object(of: "Artist", uniqueValue: .int(100)) == nil)
        }
    }

    /// Artists and their albums, alternating; the artists given (by position) do not list
    /// their album: the album named is the first broken one in the change set's order, in
    /// either half.
    @Test(arguments: [[5], [1_500], [100, 1_500], [300, 1_100, 1_900], [Self.size / 2 - 1]])
    func aBrokenInverseIsFoundInEitherHalf(broken: [Int]) async throws {
        try await Self.withStore { store in
            let artists = store.allocateObjectIDs(for: "Artist", count: Self.size / 2)
            let albums = store.allocateObjectIDs(for: "Album", count: Self.size / 2)
            var rows: [RowImage] = []
            for i in artists.indices {
                rows.append(Songbook.artist(artists[i], artistID: Int64(i), albums: broken.contains(i) ? [] : [albums[i]]))
                rows.append(Songbook.album(albums[i], albumID: Int64(i), artist: artists[i]))
            }
            let error = await #expect(throws: StoreError.self) { try await store.commit(ChangeSet(inserted: rows)) }
            #expect(error?.code == .inverseViolation && error?.object == albums[broken.min()!] && error?.key == "artist")
            #expect(store.currentGeneration.count(of: "Album") == 0 && store.currentGeneration.count(of: "Artist") == 0)
        }
    }

    /// Artists and their albums, alternating (`rows`), broken twice: the fourth artist does
    /// not list its album, and the last repeats the first one's key.
    static func artistsAndAlbumsBrokenTwice(in store: Store) -> (artists: [ObjectID], albums: [ObjectID], rows: [RowImage]) {
        let artists = store.allocateObjectIDs(for: "Artist", count: size / 2)
        let albums = store.allocateObjectIDs(for: "Album", count: size / 2)
        var rows: [RowImage] = []
        for i in artists.indices {
            rows.append(Songbook.artist(artists[i], artistID: i == artists.count - 1 ? 0 : Int64(i), albums: i == 3 ? [] : [albums[i]]))
            rows.append(Songbook.album(albums[i], albumID: Int64(i), artist: artists[i]))
        }
        return (artists, albums, rows)
    }

    /// A value that does not fit its property, or a row with too few values, in either half
    /// of a change set whose rows the checking threads encode as they check it: refused with
    /// the encoder's message for the first such row — before the key given twice and the
    /// broken inverse the change set also holds, as when it was encoded before the checks —
    /// with nothing kept, and the next commit and a reopen as if it had never come.
    @Test(arguments: [[7], [Self.size - 3], [1_000, Self.size - 3], [Self.size / 2 + 1]])
    func aRowThatDoesNotFitIsRefusedByTheEncoderFirst(bad: [Int]) async throws {
        let directory = TemporaryDirectory("strata-large-change-sets")
        defer { directory.remove() }
        let path = directory.appending("store")
        let store = try Store.create(at: path, schema: Fixtures.songbook, configuration: .init(durability: .full))
        let (artists, albums, broken) = Self.artistsAndAlbumsBrokenTwice(in: store)
        var rows = broken
        #expect(CommitPlan.checksInParallel(TransactionRecord(number: 1, inserted: rows)) && RecordCodec.encodesInHalves(TransactionRecord(number: 1, inserted: rows)))
        for index in bad {
            // Rows at even positions are artists: a number for the name; an album loses its last value.
            if index % 2 == 0 { rows[index].values[1] = .int(5) } else { rows[index].values.removeLast() }
        }
        let first = rows[bad.min()!]
        let error = await #expect(throws: StoreError.self) { try await store.commit(ChangeSet(inserted: rows)) }
        #expect(error?.code == .invalidTransaction, "\(error?.message ?? "no error")")
        #expect(error?.message.hasPrefix("\(first.id)") == true, "\(error?.message ?? "no error")")
        #expect(error?.message.contains(first.id.entity == "Artist" ? "key \"name\"" : "values given") == true, "\(error?.message ?? "no error")")
        #expect(store.currentGeneration.transaction == 0 && store.currentGeneration.count(of: "Artist") == 0)
        // The same rows made to fit (and their key and inverse mended) commit, and read back.
        for index in bad {
            rows[index] = index % 2 == 0
                ? Songbook.artist(artists[index / 2], artistID: Int64(index / 2), albums: index / 2 == 3 ? [] : [albums[index / 2]])
                : Songbook.album(albums[index / 2], albumID: Int64(index / 2), artist: artists[index / 2])
        }
        rows[6] = Songbook.artist(artists[3], artistID: 3, albums: [albums[3]])
        rows[rows.count - 2] = Songbook.artist(artists.last!, artistID: Int64(artists.count - 1), albums: [albums.last!])
        try await store.commit(ChangeSet(inserted: rows))
        await store.close()
        let reopened = try Store.open(at: path)
        #expect(reopened.currentGeneration.transaction == 1 && reopened.currentGeneration.count(of: "Album") == Self.size / 2)
        #expect(reopened.currentGeneration.object(of: "Artist", uniqueValue: .int(Int64(artists.count - 1)))?.id == artists.last)
        await reopened.close()
    }

    /// A change set with a broken inverse early and a key given twice late: the key's
    /// refusal is reported, as a single pass (unique keys first) would.
    @Test func aKeyGivenTwiceIsReportedBeforeABrokenInverse() async throws {
        try await Self.withStore { store in
            let (artists, _, rows) = Self.artistsAndAlbumsBrokenTwice(in: store)
            let error = await #expect(throws: StoreError.self) { try await store.commit(ChangeSet(inserted: rows)) }
            #expect(error?.code == .uniqueViolation && error?.object == artists.last)
            #expect(store.currentGeneration.count(of: "Album") == 0 && store.currentGeneration.count(of: "Artist") == 0)
        }
    }
}
