import Foundation
import Testing
@testable import Strata

@Suite struct StoreSmokeTests {
    @Test func commitConflictUniqueInverseAndReopen() async throws {
        let directory = TemporaryDirectory("strata-store")
        defer { directory.remove() }
        let path = directory.appending("songs.strata")
        let store = try Store.create(at: path, schema: Fixtures.songbook)
        let artist = store.allocateObjectIDs(for: "Artist")[0]
        let album = store.allocateObjectIDs(for: "Album")[0]
        let created = Date(timeIntervalSince1970: 0)
        let stream = store.commits()
        let first = try await store.commit(ChangeSet(author: "test", inserted: [
            RowImage(id: artist, values: [.int(1), .string("AC/DC"), .date(created), .objects([album])]),
            RowImage(id: album, values: [.int(10), .string("Highway"), .null, .bool(false), .object(artist), .objects([])]),
        ]))
        #expect(first.transaction == 1)
        #expect(store.currentGeneration.count(of: "Artist") == 1)

        // Inverse violation: an album pointing at the artist without the artist listing it.
        let lonely = store.allocateObjectIDs(for: "Album")[0]
        await #expect(throws: StoreError.self) {
            try await store.commit(ChangeSet(inserted: [
                RowImage(id: lonely, values: [.int(11), .string("x"), .null, .bool(false), .object(artist), .objects([])]),
            ]))
        }
        // Unique violation.
        let twin = store.allocateObjectIDs(for: "Artist")[0]
        do {
            try await store.commit(ChangeSet(inserted: [RowImage(id: twin, values: [.int(1), .null, .date(created), .objects([])])]))
            Issue.record("unique violation accepted")
        } catch {
            #expect(error.code == .uniqueViolation)
            #expect(error.message.contains("unique key \"artistID\" = 1 already used by Artist/1"))
        }
        // Conflict: two updates based on version 1 change the same key.
        let base = store.currentGeneration.object(artist)!
        try await store.commit(ChangeSet(updated: [ObjectUpdate(id: artist, baseVersion: base.version, baseValues: base.values,
                                                                changes: [PropertyChange(index: 1, value: .string("AC-DC"))])]))
        do {
            try await store.commit(ChangeSet(updated: [ObjectUpdate(id: artist, baseVersion: base.version, baseValues: base.values,
                                                                    changes: [PropertyChange(index: 1, value: .string("ACDC"))])]))
            Issue.record("conflict accepted")
        } catch {
            #expect(error.code == .conflict)
            #expect(error.conflicts.count == 1 && error.conflicts[0].key == "name")
        }
        let merged = try await store.commit(ChangeSet(
            updated: [ObjectUpdate(id: artist, baseVersion: base.version, baseValues: base.values,
                                   changes: [PropertyChange(index: 1, value: .string("ACDC"))])],
            mergePolicy: .storeWins))
        #expect(merged.resolvedConflicts.count == 1)
        #expect(store.currentGeneration.object(artist)!.values[1] == .string("AC-DC"))

        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next()?.transaction == 1)
        #expect(await iterator.next()?.transaction == 2)

        let live = store.currentGeneration
        #expect(live.integrityProblems().isEmpty)
        await store.close()
        let reopened = try Store.open(at: path, schema: Fixtures.songbook)
        let replayed = reopened.currentGeneration
        #expect(replayed.transaction == live.transaction)
        #expect(replayed.objects(of: "Artist").map(\.values) == live.objects(of: "Artist").map(\.values))
        #expect(try reopened.journal.transactions().map(\.number) == [1, 2])
        await reopened.close()
    }
}
