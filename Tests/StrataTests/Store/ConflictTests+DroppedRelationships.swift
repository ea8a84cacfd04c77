import Foundation
import Testing
@testable import Strata

/// A relationship change the merge policy drops — `storeWins` the conflicting key, `rollback`
/// the whole conflicting object — takes the other sides the same save changed along with it
/// to the store's value, so the rest of the save commits instead of being refused as an
/// inverse violation.
extension ConflictTests {
    /// A store of the constraint objects where another commit ("theirs") has given album X
    /// to A3 since `base` was read.
    static func albumGivenToA3(in directory: TemporaryDirectory) async throws -> (store: Store, o: Objects, base: Generation) {
        let store = try StoreTesting.create(in: directory)
        let o = try await Objects.commit(into: store)
        let base = store.currentGeneration
        try await store.commit(ChangeSet(author: "theirs", updated: [
            base.update(o.x, ["artist": .object(o.a3)]), base.update(o.a1, ["albums": .objects([])]),
            base.update(o.a3, ["albums": .objects([o.x])]),
        ]))
        return (store, o, base)
    }

    @Test("a to-one change the policy drops takes back the other side the save changed along with it (the new artist does not list the album)",
          arguments: [MergePolicy.storeWins, .rollback])
    func droppedToOneLetsTheNewSideGo(policy: MergePolicy) async throws {
        let directory = TemporaryDirectory("strata-conflict")
        defer { directory.remove() }
        let (store, o, base) = try await Self.albumGivenToA3(in: directory)
        let title = try #require(base.object(o.x)?.values[base.schema.entity(named: "Album")!.propertyIndex(named: "title")!])
        // Ours gives X to A2 (A1 lets go of it on both sides).
        let ours = ChangeSet(author: "ours", updated: [
            base.update(o.x, ["artist": .object(o.a2), "title": .string("Ours")]), base.update(o.a1, ["albums": .objects([])]),
            base.update(o.a2, ["albums": .objects([o.x])]),
        ], mergePolicy: policy)
        let result = try await store.commit(ours)
        #expect(Set(result.resolvedConflicts.map(\.object)) == [o.x, o.a1], "\(result.resolvedConflicts)")
        let g = store.currentGeneration
        #expect(g.value(o.x, "artist") == .object(o.a3))
        #expect(g.value(o.x, "title") == (policy == .storeWins ? .string("Ours") : title))
        #expect(g.value(o.a2, "albums") == .objects([]), "A2 lists the album whose artist stayed A3")
        #expect(g.value(o.a3, "albums") == .objects([o.x]))
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        await store.close()
    }

    @Test("a to-one change the policy drops takes back the other side the save changed along with it (an artist the save inserts does not list the album)",
          arguments: [MergePolicy.storeWins, .rollback])
    func droppedToOneLetsAnInsertedSideGo(policy: MergePolicy) async throws {
        let directory = TemporaryDirectory("strata-conflict")
        defer { directory.remove() }
        let (store, o, base) = try await Self.albumGivenToA3(in: directory)
        // Ours gives X to a new artist, N (A1 lets go of it on both sides). (It was refused:
        // N listed the album whose artist stayed A3.)
        let n = store.allocateObjectIDs(for: "Artist")[0]
        let ours = ChangeSet(author: "ours", inserted: [Songbook.artist(n, artistID: 9, name: "New", albums: [o.x])], updated: [
            base.update(o.x, ["artist": .object(n), "title": .string("Ours")]), base.update(o.a1, ["albums": .objects([])]),
        ], mergePolicy: policy)
        let result = try await store.commit(ours)
        #expect(Set(result.resolvedConflicts.map(\.object)) == [o.x, o.a1], "\(result.resolvedConflicts)")
        let g = store.currentGeneration
        #expect(g.value(o.x, "artist") == .object(o.a3))
        #expect(g.value(n, "albums") == .objects([]), "N lists the album whose artist stayed A3")
        #expect(g.value(o.a3, "albums") == .objects([o.x]))
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        await store.close()
    }

    @Test("a to-one change the policy drops takes back the other side the save changed along with it (the kept artist lists the album again)",
          arguments: [MergePolicy.storeWins, .rollback])
    func droppedToOneKeepsTheStoreSide(policy: MergePolicy) async throws {
        let directory = TemporaryDirectory("strata-conflict")
        defer { directory.remove() }
        let (store, o, base) = try await Self.albumGivenToA3(in: directory)
        let title = try #require(base.object(o.x)?.values[base.schema.entity(named: "Album")!.propertyIndex(named: "title")!])
        // Ours takes X from its artist: from A1 as read before theirs, and from A3 as read
        // after (a context that merged theirs into an object it held).
        let after = store.currentGeneration
        let ours = ChangeSet(author: "ours", updated: [
            base.update(o.x, ["artist": .null, "title": .string("Ours")]), base.update(o.a1, ["albums": .objects([])]),
            after.update(o.a3, ["albums": .objects([])]),
        ], mergePolicy: policy)
        let result = try await store.commit(ours)
        #expect(Set(result.resolvedConflicts.map(\.object)) == [o.x, o.a1], "\(result.resolvedConflicts)")
        let g = store.currentGeneration
        #expect(g.value(o.x, "artist") == .object(o.a3))
        #expect(g.value(o.x, "title") == (policy == .storeWins ? .string("Ours") : title))
        #expect(g.value(o.a3, "albums") == .objects([o.x]), "A3 lost the album whose artist it stayed")
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        await store.close()
    }
}

extension ConflictTests {
    /// A deletion the policy drops (the object was changed since) of an artist whose album
    /// the same save moved to another artist: the kept artist lets go of the album. It went
    /// on listing it, and the save was refused as an inverse violation (in `hybrid`, the
    /// writer's save of a view that moved a song off an album it deleted, after an import
    /// changed the album).
    @Test("a dropped deletion lets go of what the save moved to another object", arguments: [MergePolicy.storeWins, .rollback])
    func droppedDeletionLetsGoOfWhatTheSaveMoved(policy: MergePolicy) async throws {
        let directory = TemporaryDirectory("strata-conflict")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let o = try await Objects.commit(into: store)
        let base = store.currentGeneration
        try await store.commit(ChangeSet(author: "theirs", updated: [base.update(o.a1, ["name": .string("Theirs")])]))
        let ours = ChangeSet(author: "ours", updated: [
            base.update(o.x, ["artist": .object(o.a2)]), base.update(o.a2, ["albums": .objects([o.x])]),
        ], deleted: [base.deletion(o.a1)], mergePolicy: policy)
        let result = try await store.commit(ours)
        #expect(result.resolvedConflicts.map(\.object) == [o.a1], "\(result.resolvedConflicts)")
        let g = store.currentGeneration
        #expect(g.value(o.a1, "name") == .string("Theirs"), "the artist changed since is kept")
        #expect(g.value(o.a1, "albums") == .objects([]))
        #expect(g.value(o.x, "artist") == .object(o.a2))
        #expect(g.value(o.a2, "albums") == .objects([o.x]))
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        await store.close()
    }
}

extension ConflictTests {
    /// Ours moves song S from album X to album Y; theirs deleted Y since. Under every
    /// resolving policy the deletion wins and nothing of Y is left to change: S lets go of Y
    /// (it is in neither album) and the rest commits. (The save was refused as a dangling
    /// reference.) Under `error` it is a conflict naming Y, and the store is unchanged.
    @Test("a song moved to an album another transaction deleted lets go of it, and the rest commits",
          arguments: [MergePolicy.storeWins, .rollback, .contextWins, .overwrite, .error])
    func movedToADeletedAlbum(policy: MergePolicy) async throws {
        let directory = TemporaryDirectory("strata-conflict")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let o = try await ConstraintTests.Objects.commit(into: store)
        let base = store.currentGeneration
        try await store.commit(ChangeSet(author: "theirs", deleted: [ObjectDeletion(id: o.y, baseVersion: base.object(o.y)!.version)]))
        let before = store.currentGeneration
        let ours = ChangeSet(author: "ours", updated: [
            base.update(o.s, ["album": .object(o.y), "title": .string("moved")]), base.update(o.x, ["songs": .objects([])]),
            base.update(o.y, ["songs": .objects([o.s])]),
        ], mergePolicy: policy)
        guard policy != .error else {
            let error = await #expect(throws: StoreError.self) { try await store.commit(ours) }
            #expect(error?.code == .conflict && error?.conflicts.map(\.object) == [o.y], "\(String(describing: error))")
            #expect(store.currentGeneration.transaction == before.transaction)
            await store.close()
            return
        }
        let result = try await store.commit(ours)
        #expect(result.resolvedConflicts.map(\.object) == [o.y])
        let g = store.currentGeneration
        #expect(g.value(o.s, "album") == .null)
        #expect(g.value(o.s, "title") == .string("moved"))
        #expect(g.value(o.x, "songs") == .objects([]))
        #expect(g.integrityProblems().isEmpty)
        await store.close()
    }

    @Test("an object whose changes the policy drops still lets go of an object the save deletes",
          arguments: [MergePolicy.storeWins, .rollback])
    func droppedObjectLetsGoOfADeletedOne(policy: MergePolicy) async throws {
        let directory = TemporaryDirectory("strata-conflict")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let o = try await Objects.commit(into: store)
        let song = store.allocateObjectIDs(for: "Song")[0]
        let setup = store.currentGeneration
        try await store.commit(ChangeSet(author: "setup", inserted: [Songbook.song(song, songID: StoreTesting.uuid(1), album: o.x)],
                                         updated: [setup.update(o.x, ["songs": .objects([song])])]))
        let base = store.currentGeneration
        // Theirs gives X to A3.
        try await store.commit(ChangeSet(author: "theirs", updated: [
            base.update(o.x, ["artist": .object(o.a3)]), base.update(o.a1, ["albums": .objects([])]),
            base.update(o.a3, ["albums": .objects([o.x])]),
        ]))
        // Ours gives X to A2 and deletes its song S (X lets go of S as the deletion's
        // `nullify` rule makes it). Under `rollback` every change of X is dropped, its letting
        // go of S with it: S was deleted while X still listed it, and the save was refused as
        // an inverse violation.
        let ours = ChangeSet(author: "ours", updated: [
            base.update(o.x, ["artist": .object(o.a2), "songs": .objects([])]), base.update(o.a1, ["albums": .objects([])]),
            base.update(o.a2, ["albums": .objects([o.x])]),
        ], deleted: [base.deletion(song)], mergePolicy: policy)
        let result = try await store.commit(ours)
        #expect(result.resolvedConflicts.contains { $0.object == o.x && $0.key == "artist" }, "\(result.resolvedConflicts)")
        let g = store.currentGeneration
        #expect(g.object(song) == nil, "the deletion stands")
        #expect(g.value(o.x, "songs") == .objects([]), "X lets go of the deleted song")
        #expect(g.value(o.x, "artist") == .object(o.a3))
        #expect(g.value(o.a2, "albums") == .objects([]) && g.value(o.a3, "albums") == .objects([o.x]))
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        await store.close()
    }
}
