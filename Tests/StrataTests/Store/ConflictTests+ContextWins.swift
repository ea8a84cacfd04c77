import Foundation
import Testing
@testable import Strata

/// `contextWins` keeps both sides of every relationship pair in step at the store: a to-many
/// key both sides changed is merged element by element, and the object another transaction
/// gave a to-one key ours wins lets go of it.
extension ConflictTests {
    @Test("contextWins: the artist theirs gave the album lets go of it, beside the other changes the save makes to that artist")
    func contextWinsLetsTheirTargetGoBesideOurChange() async throws {
        let directory = TemporaryDirectory("strata-conflict")
        defer { directory.remove() }
        let (store, o, base) = try await Self.albumGivenToA3(in: directory)
        // Ours gives X to A2 and renames A3 (read before theirs gave it X).
        let ours = ChangeSet(author: "ours", updated: [
            base.update(o.x, ["artist": .object(o.a2)]), base.update(o.a1, ["albums": .objects([])]),
            base.update(o.a2, ["albums": .objects([o.x])]), base.update(o.a3, ["name": .string("Renamed")]),
        ], mergePolicy: .contextWins)
        let result = try await store.commit(ours)
        #expect(Set(result.resolvedConflicts.map(\.object)) == [o.x, o.a1], "\(result.resolvedConflicts)")
        let g = store.currentGeneration
        #expect(g.value(o.x, "artist") == .object(o.a2))
        #expect(g.value(o.a2, "albums") == .objects([o.x]))
        #expect(g.value(o.a3, "albums") == .objects([]), "A3 still lists the album ours gave A2")
        #expect(g.value(o.a3, "name") == .string("Renamed"))
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        #expect(result.notification?.updated.contains(o.a3) == true)
        await store.close()
    }

    @Test("contextWins: a to-one ours sets empty over theirs lets go on theirs' side too")
    func contextWinsEmptyingAToOneLetsTheirTargetGo() async throws {
        let directory = TemporaryDirectory("strata-conflict")
        defer { directory.remove() }
        let (store, o, base) = try await Self.albumGivenToA3(in: directory)
        let ours = ChangeSet(author: "ours", updated: [
            base.update(o.x, ["artist": .null]), base.update(o.a1, ["albums": .objects([])]),
        ], mergePolicy: .contextWins)
        try await store.commit(ours)
        let g = store.currentGeneration
        #expect(g.value(o.x, "artist") == .null)
        #expect(g.value(o.a3, "albums") == .objects([]))
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        await store.close()
    }

    @Test("a to-many key both sides changed merges each side's additions and removals")
    func mergedListKeepsEachSidesChanges() {
        let ids = (1...6).map { ObjectID(entity: "Album", number: UInt64($0)) }
        let base = Value.objects([ids[0], ids[1], ids[2]])
        // Ours takes out 0 and adds 4; theirs takes out 1 and adds 3 and 5.
        let ours = Value.objects([ids[1], ids[2], ids[4]])
        let theirs = Value.objects([ids[5], ids[0], ids[2], ids[3]])
        #expect(Value.mergedList(base: base, ours: ours, theirs: theirs) == .objects([ids[5], ids[2], ids[3], ids[4]]))
        // Both adding the same object lists it once.
        #expect(Value.mergedList(base: .objects([]), ours: .objects([ids[0]]), theirs: .objects([ids[0]])) == .objects([ids[0]]))
        // An empty to-many is stored as an empty list.
        #expect(Value.mergedList(base: .objects([ids[0]]), ours: .objects([]), theirs: .objects([ids[0]])) == .objects([]))
    }
}

extension ConflictTests {
    /// A song ours deletes, which another transaction moved to another album meanwhile:
    /// under `contextWins` and `overwrite` the deletion wins, and the album theirs gave the
    /// song lets go of it, as the deletion's `nullify` rule does in a context. (The save was
    /// refused as an inverse violation: the album listed the deleted song.)
    @Test("a deletion that wins over a move lets the new album go of the song", arguments: [MergePolicy.contextWins, .overwrite])
    func winningDeletionLetsTheirTargetGo(policy: MergePolicy) async throws {
        let directory = TemporaryDirectory("strata-conflict")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let albums = store.allocateObjectIDs(for: "Album", count: 2)
        let songs = store.allocateObjectIDs(for: "Song", count: 2)
        try await store.commit(ChangeSet(author: "setup", inserted: [
            Songbook.album(albums[0], albumID: 1, songs: songs),
            Songbook.album(albums[1], albumID: 2),
            Songbook.song(songs[0], songID: StoreTesting.uuid(1), album: albums[0]),
            Songbook.song(songs[1], songID: StoreTesting.uuid(2), album: albums[0]),
        ]))
        let base = store.currentGeneration
        // Theirs moves the second song to the second album.
        try await store.commit(ChangeSet(author: "theirs", updated: [
            base.update(songs[1], ["album": .object(albums[1])]), base.update(albums[0], ["songs": .objects([songs[0]])]),
            base.update(albums[1], ["songs": .objects([songs[1]])]),
        ]))
        // Ours deletes it, letting go of it where it was.
        let ours = ChangeSet(author: "ours", updated: [base.update(albums[0], ["songs": .objects([songs[0]])])],
                             deleted: [base.deletion(songs[1])], mergePolicy: policy)
        let result = try await store.commit(ours)
        #expect(result.resolvedConflicts.contains { $0.object == songs[1] && $0.key == nil }, "\(result.resolvedConflicts)")
        let g = store.currentGeneration
        #expect(g.object(songs[1]) == nil)
        #expect(g.value(albums[1], "songs") == .objects([]), "the album theirs gave the song still lists it")
        #expect(g.value(albums[0], "songs") == .objects([songs[0]]))
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        await store.close()
    }
}
