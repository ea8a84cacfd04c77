import Foundation
import Testing
@testable import Strata

/// `commit(inOrder:)`: change sets committed one after the other, the next checked while
/// the one before is made durable — each its own transaction, in order, as awaited commits
/// would make them.
@Suite struct InOrderCommitTests {
    /// An update giving `artist` (as `generation` has it) one more album.
    static func adding(_ album: ObjectID, to artist: ObjectID, in generation: Generation) -> ObjectUpdate {
        let row = generation.object(artist)!
        guard case .objects(let albums) = row.values[row.values.count - 1] else { preconditionFailure("artist's albums") }
        return ObjectUpdate(id: artist, baseVersion: row.version, baseValues: row.values,
                            changes: [PropertyChange(index: row.values.count - 1, value: .objects(albums + [album]))])
    }

    @Test(arguments: [Durability.none, .relaxed, .full])
    func everySetIsCommittedInOrderAndSurvivesAReopen(durability: Durability) async throws {
        let directory = TemporaryDirectory("strata-in-order")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: durability)
        let stream = store.commits()
        // Plain inserts that refer to objects earlier sets inserted.
        let artists = store.allocateObjectIDs(for: "Artist", count: 6)
        let songs = store.allocateObjectIDs(for: "Song", count: 6)
        let albums = store.allocateObjectIDs(for: "Album", count: 6)
        var sets: [ChangeSet] = []
        for i in 0..<6 {
            var changes = ChangeSet(author: "set \(i)")
            changes.inserted = [Songbook.artist(artists[i], artistID: Int64(i), albums: [albums[i]]),
                                Songbook.album(albums[i], albumID: Int64(i), artist: artists[i], songs: [songs[i]]),
                                Songbook.song(songs[i], songID: StoreTesting.uuid(i), album: albums[i])]
            sets.append(changes)
        }
        let results = try await store.commit(inOrder: sets)
        #expect(results.map(\.transaction) == Array(1...6))
        #expect(results.map { $0.notification?.author } == (0..<6).map { "set \($0)" })
        for (i, result) in results.enumerated() {
            #expect(result.generation.transaction == UInt64(i + 1))
            #expect(result.generation.count(of: "Artist") == i + 1, "each result is its own transaction's generation")
        }
        #expect(store.currentGeneration.transaction == 6)
        var delivered: [UInt64] = []
        for await notification in stream {
            delivered.append(notification.transaction)
            if delivered.count == 6 { break }
        }
        #expect(delivered == Array(1...6))
        await store.close()
        let reopened = try StoreTesting.open(in: directory, durability: durability)
        #expect(reopened.currentGeneration.transaction == 6)
        #expect(reopened.currentGeneration.count(of: "Song") == 6)
        #expect(reopened.currentGeneration.object(of: "Artist", uniqueValue: .int(5))?.id == artists[5])
        #expect(reopened.currentGeneration.object(songs[3])?.values[4] == .object(albums[3]))
        await reopened.close()
    }

    /// A set that refers to an object the set before it inserts is checked against that
    /// set's generation, not the store's head when the call began.
    @Test func aSetMayReferToWhatTheSetBeforeInserted() async throws {
        let directory = TemporaryDirectory("strata-in-order-refer")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .full)
        let artist = store.allocateObjectIDs(for: "Artist")[0]
        let albums = store.allocateObjectIDs(for: "Album", count: 2)
        var first = ChangeSet(author: "artist")
        first.inserted = [Songbook.artist(artist, artistID: 1, albums: [albums[0]]), Songbook.album(albums[0], albumID: 1, artist: artist)]
        var staging = store.currentGeneration
        staging.applyValidated(TransactionRecord(number: 1, timestamp: Date(), author: "", inserted: first.inserted, updated: [], deleted: []))
        var second = ChangeSet(author: "album")
        second.inserted = [Songbook.album(albums[1], albumID: 2, artist: artist)]
        second.updated = [Self.adding(albums[1], to: artist, in: staging)]
        let results = try await store.commit(inOrder: [first, second])
        #expect(results.count == 2)
        #expect(store.currentGeneration.object(artist)?.values.last == .objects(albums))
        await store.close()
    }

    /// A set refused in the middle: the sets before it are committed and durable, it and
    /// the sets after it are not, and the error is its own, naming the transaction it
    /// would have been.
    @Test func aRefusedSetStopsTheRestAndKeepsTheOnesBefore() async throws {
        let directory = TemporaryDirectory("strata-in-order-refused")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .full)
        let artists = store.allocateObjectIDs(for: "Artist", count: 4)
        let sets = artists.enumerated().map { i, id in
            // The third set takes the first set's unique key.
            ChangeSet(inserted: [Songbook.artist(id, artistID: i == 2 ? 0 : Int64(i))])
        }
        let error = await #expect(throws: StoreError.self) { try await store.commit(inOrder: sets) }
        #expect(error?.code == .uniqueViolation && error?.object == artists[2])
        #expect(error?.transaction == 3)
        #expect(error?.message.contains("already used by \(artists[0])") == true)
        let generation = store.currentGeneration
        #expect(generation.transaction == 2 && generation.count(of: "Artist") == 2)
        #expect(generation.object(artists[3]) == nil)
        #expect(store.journal.lastDurableTransaction == 2, "the sets before the refused one are durable when it throws")
        await store.close()
        let reopened = try StoreTesting.open(in: directory)
        #expect(reopened.currentGeneration.transaction == 2)
        await reopened.close()
    }

    @Test func anEmptySequenceOrSetCommitsNothing() async throws {
        let directory = TemporaryDirectory("strata-in-order-empty")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .full)
        #expect(try await store.commit(inOrder: [ChangeSet]()).isEmpty)
        let artist = store.allocateObjectIDs(for: "Artist")[0]
        let results = try await store.commit(inOrder: [ChangeSet(), ChangeSet(inserted: [Songbook.artist(artist, artistID: 1)]), ChangeSet()])
        #expect(results.map(\.transaction) == [0, 1, 1])
        #expect(results.map { $0.notification == nil } == [true, false, true])
        #expect(store.currentGeneration.transaction == 1)
        await store.close()
    }
}
