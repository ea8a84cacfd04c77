import Foundation
import Testing
@testable import Strata

/// A save deleting an artist that another context gave a new album meanwhile: the store's
/// merge policy (`storeWins`) keeps the artist. A merge of the other commit while the save
/// is in flight took the album by the artist's pending `cascade` rule; once the store kept
/// the artist, the album is back too, as committed, with nothing pending. (It stayed a
/// pending deletion while the artist came back listing it: the context no longer showed an
/// album the store held, and its next save would have deleted it.)
@Suite struct KeptDeletionInFlightTests {
    /// Live results of a main-actor child. Unchecked: made and read only on the main actor
    /// (inside the child's `perform`); a class only so that those closures can share it.
    final class LiveAlbums: @unchecked Sendable {
        var results: FetchedResults<Album>?
        /// The albums shown, in order.
        var ids: [ObjectID] { results?.snapshot.sections.flatMap(\.ids) ?? [] }
    }

    /// A seeded store whose syncs can be held, and a main-actor context on it — so that its
    /// save waits for durability without holding the context, and a merge runs while the
    /// save is in flight.
    @MainActor
    struct InFlight {
        let directory = TemporaryDirectory("strata-kept-deletion-in-flight")
        let store: Store
        let hold: StoreWinsInFlightTests.SyncHold
        let o: ConstraintTests.Objects
        let coordinator: Coordinator
        let context: ObjectContext
        /// The store's commits, from before the seed's.
        let commits: AsyncStream<CommitNotification>

        init() async throws {
            (store, hold) = try StoreWinsInFlightTests.storeHoldingSyncs(in: directory)
            o = try await seedSongbook(store)
            coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
            context = ObjectContext(coordinator: coordinator, executor: .main, name: "editor")
            commits = store.commits()
        }

        /// Saves the context under `storeWins` with its sync held, merges `theirs` into it
        /// meanwhile and returns what `inFlight` found then; returns once the save has.
        func saveMerging<T: Sendable>(
            _ theirs: CommitNotification, inFlight: @escaping @Sendable (isolated ObjectContext) -> T
        ) async throws -> T {
            hold.arm()
            let context = self.context
            let saving = Task { @MainActor in try await context.save(mergePolicy: .storeWins) }
            #expect(await signalled(hold.reached), "the save reached its sync")
            let found = await context.perform { c in
                _ = c.merge(theirs)
                return inFlight(c)
            }
            hold.open()
            _ = try await withTimeout(30, "the save") { try await saving.value }
            return found
        }

        /// A child of the context following its changes, as a stack's view follows its
        /// writer, with live results of every album.
        func followingChild() async throws -> (ObjectContext, LiveAlbums) {
            let child = ObjectContext(parent: context, executor: .main, name: "view")
            let live = LiveAlbums()
            try await child.perform { c in
                c.automaticallyMergesChanges = true
                live.results = try c.fetchedResults(Album.self, request: FetchRequest(entity: "Album", sortBy: [SortKey("albumID")]))
            }
            return (child, live)
        }

        /// The `cascade` case: the context deletes A2 (and renames A1, so that the save has a
        /// transaction to write) while another context gives A2 a new album, Z, merged while
        /// the save is in flight — A2 is pending deletion here, so its cascade takes Z then.
        /// Returns Z and whether the cascade took it.
        func saveDeletingAnArtistGivenAnAlbum() async throws -> (album: ObjectID, takenByCascade: Bool) {
            let o = self.o
            await context.perform { c in
                c.delete(c.object(with: o.a2, as: Artist.self))
                c.object(with: o.a1, as: Artist.self).name = "renamed"
            }
            let other = ObjectContext(coordinator: coordinator, name: "other")
            let z = await other.perform { c in
                let z = c.insert(Album.self)
                z.albumID = 900
                z.title = "Z"
                z.artist = c.object(with: o.a2, as: Artist.self)
                return z.objectID
            }
            try await other.save()
            let theirs = try #require(await firstElement(of: commits, timeout: .seconds(10)))
            return (z, try await saveMerging(theirs) { c in c.object(with: z, as: Album.self).isDeleted })
        }

        /// The `nullify` case: the context deletes S (Y held, A1 renamed) while another
        /// context moves S to Y, merged while the save is in flight — S is pending deletion
        /// here, so Y lets go of it then. Returns whether Y did.
        func saveDeletingASongMovedElsewhere() async throws -> Bool {
            let o = self.o
            await context.perform { c in
                _ = c.object(with: o.y, as: Album.self).songs  // Y held here, so that the merge changes it
                c.delete(c.object(with: o.s, as: Song.self))
                c.object(with: o.a1, as: Artist.self).name = "renamed"
            }
            let other = ObjectContext(coordinator: coordinator, name: "other")
            await other.perform { c in c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self) }
            try await other.save()
            let theirs = try #require(await firstElement(of: commits, timeout: .seconds(10)))
            return try await saveMerging(theirs) { c in c.object(with: o.y, as: Album.self).songs.isEmpty }
        }
    }

    @Test("an object a kept deletion's cascade took while the save was in flight comes back with it")
    @MainActor
    func cascadeOfAKeptDeletionIsTakenBack() async throws {
        let f = try await InFlight()
        defer { f.directory.remove() }
        let (store, o, context) = (f.store, f.o, f.context)
        let (z, takenByCascade) = try await f.saveDeletingAnArtistGivenAnAlbum()
        #expect(takenByCascade)

        #expect(store.currentGeneration.value(o.a2, "albums") == .objects([z]), "the store kept A2")
        let (a2Albums, zAlive, zArtist, pending, problems) = await context.perform { c in
            let a2 = c.object(with: o.a2, as: Artist.self)
            let album = c.object(with: z, as: Album.self)
            return (a2.albums.map(\.objectID), !album.isDeleted, album.artist?.objectID, c.hasChanges, relationshipDisagreements(c))
        }
        #expect(a2Albums == [z])
        #expect(zAlive, "Z is back, as the store holds it")
        #expect(zArtist == o.a2)
        #expect(!pending, "nothing is pending")
        #expect(problems.isEmpty, "\(problems)")
        try await context.save()
        #expect(store.currentGeneration.object(z) != nil)
        #expect(store.currentGeneration.integrityProblems().isEmpty)
        await store.close()
    }

    /// A child following the context (a stack's view, under its writer) follows the same
    /// way: the album the cascade took while the save was in flight, which it saw deleted,
    /// comes back there too once the store kept the artist — in its fetches and in its live
    /// results. (Only the kept artist was announced to it: the child's fetches read the album
    /// through the context while its live results, never told, went on without it.)
    @Test("a child following the context sees an object a kept deletion's cascade took come back")
    @MainActor
    func childSeesCascadeOfAKeptDeletionTakenBack() async throws {
        let f = try await InFlight()
        defer { f.directory.remove() }
        let (store, o) = (f.store, f.o)
        let (child, live) = try await f.followingChild()
        let (z, takenByCascade) = try await f.saveDeletingAnArtistGivenAnAlbum()
        #expect(takenByCascade)
        #expect(store.currentGeneration.value(o.a2, "albums") == .objects([z]), "the store kept A2")

        #expect(await waitUntil(child, "the child's live results to show Z again", timeout: .seconds(5), reportingTimeout: false) { _ in
            live.ids.contains(z)
        }, "the child's live results show Z again")
        let (fetched, a2Albums, problems) = await child.perform { c in
            (try? c.fetchIDs(FetchRequest(entity: "Album")), c.object(with: o.a2, as: Artist.self).albums.map(\.objectID), relationshipDisagreements(c))
        }
        #expect(fetched?.contains(z) == true)
        #expect(a2Albums == [z])
        #expect(problems.isEmpty, "\(problems)")
        await store.close()
    }

    /// The same with the `nullify` rule: the album that let go of the song while the save
    /// was in flight lists it again in the child too.
    @Test("a child following the context sees an object a kept deletion's nullify rule changed refer to it again")
    @MainActor
    func childSeesNullifyOfAKeptDeletionTakenBack() async throws {
        let f = try await InFlight()
        defer { f.directory.remove() }
        let (store, o) = (f.store, f.o)
        let (child, _) = try await f.followingChild()
        await child.perform { c in _ = c.object(with: o.y, as: Album.self).songs }  // Y held in the child too
        #expect(try await f.saveDeletingASongMovedElsewhere())
        #expect(store.currentGeneration.value(o.s, "album") == .object(o.y), "the store kept S, on Y")

        #expect(await waitUntil(child, "the child's Y to list S again", timeout: .seconds(5), reportingTimeout: false) { c in
            c.object(with: o.y, as: Album.self).songs.map(\.objectID) == [o.s]
        }, "the child's Y lists S again")
        let (sAlbum, problems) = await child.perform { c in (c.object(with: o.s, as: Song.self).album?.objectID, relationshipDisagreements(c)) }
        #expect(sAlbum == o.y)
        #expect(problems.isEmpty, "\(problems)")
        await store.close()
    }

    /// The same with an album the context held, moved to the artist by the other context:
    /// the merge takes it from the artist it had here, and the cascade takes it (its song
    /// stays: `Album.songs` denies, which a save would report). Once the store kept the
    /// artist, the album is back on it, as committed, with nothing pending — not an update
    /// back to the row it was read with.
    @Test("an object a kept deletion's cascade took after a merge moved it comes back as merged")
    @MainActor
    func movedObjectTakenByCascadeComesBackAsMerged() async throws {
        let f = try await InFlight()
        defer { f.directory.remove() }
        let (store, o, context) = (f.store, f.o, f.context)
        await context.perform { c in
            _ = c.object(with: o.x, as: Album.self).songs.map(\.title)  // X and S held here
            c.delete(c.object(with: o.a2, as: Artist.self))
            c.object(with: o.a3, as: Artist.self).name = "renamed"
        }
        // Meanwhile another context moves X from A1 to A2.
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        await other.perform { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        try await other.save()
        let theirs = try #require(await firstElement(of: f.commits, timeout: .seconds(10)))

        let takenByCascade = try await f.saveMerging(theirs) { c in
            [c.object(with: o.x, as: Album.self).isDeleted, c.object(with: o.s, as: Song.self).isDeleted]
        }
        #expect(takenByCascade == [true, false])

        #expect(store.currentGeneration.value(o.a2, "albums") == .objects([o.x]), "the store kept A2, with X")
        let (a1Albums, a2Albums, xArtist, xSongs, pending, problems) = await context.perform { c in
            (c.object(with: o.a1, as: Artist.self).albums.map(\.objectID), c.object(with: o.a2, as: Artist.self).albums.map(\.objectID),
             c.object(with: o.x, as: Album.self).artist?.objectID, c.object(with: o.x, as: Album.self).songs.map(\.objectID),
             (c.insertedObjects + c.updatedObjects + c.deletedObjects).map(\.objectID), relationshipDisagreements(c))
        }
        #expect(a1Albums.isEmpty)
        #expect(a2Albums == [o.x])
        #expect(xArtist == o.a2)
        #expect(xSongs == [o.s])
        #expect(pending.isEmpty, "nothing is pending")
        #expect(problems.isEmpty, "\(problems)")
        try await context.save()
        #expect(store.currentGeneration.integrityProblems().isEmpty)
        await store.close()
    }

    /// The same with a `nullify` rule: another context moves a song this save deletes to
    /// another album; merged while the save is in flight, the album lets go of the song
    /// pending deletion. Once the store kept the song, the album lists it again, with nothing
    /// pending. (It stayed a pending change without the song, which named the album: the
    /// writer of a `hybrid` stack kept it, and the view never showed the song on the album.)
    @Test("an object a kept deletion's nullify rule changed while the save was in flight refers to it again")
    @MainActor
    func nullifyOfAKeptDeletionIsTakenBack() async throws {
        let f = try await InFlight()
        defer { f.directory.remove() }
        let (store, o, context) = (f.store, f.o, f.context)
        #expect(try await f.saveDeletingASongMovedElsewhere(), "merged while the save is in flight: S is pending deletion here, so Y lets go of it")

        #expect(store.currentGeneration.value(o.s, "album") == .object(o.y), "the store kept S, on Y")
        let (ySongs, sAlbum, pending, problems) = await context.perform { c in
            (c.object(with: o.y, as: Album.self).songs.map(\.objectID), c.object(with: o.s, as: Song.self).album?.objectID,
             c.hasChanges, relationshipDisagreements(c))
        }
        #expect(ySongs == [o.s], "Y lists S again")
        #expect(sAlbum == o.y)
        #expect(!pending, "nothing is pending")
        #expect(problems.isEmpty, "\(problems)")
        try await context.save()
        #expect(store.currentGeneration.integrityProblems().isEmpty)
        await store.close()
    }

    /// The `nullify` case in a save into the parent (a stack's view saving into its writer):
    /// the parent, which merged the other context's move of the song first, keeps the song
    /// (`storeWins`: it changed since the child read it); the child's merge of the same move
    /// while its save was in flight made the album let go of the song pending deletion. Once
    /// the parent kept the song, the album lists it again in the child, with nothing pending.
    /// (It kept the change without the song, and its next save sent it: the writer's save
    /// was refused as an inverse violation.)
    @Test("in a save into the parent, an object a kept deletion's nullify rule changed while the save was in flight refers to it again")
    func nullifyOfADeletionTheParentKeptIsTakenBack() async throws {
        let f = try await GatedWriter("strata-kept-deletion-in-flight-parent")
        defer { f.directory.remove() }
        let (store, o, writer, view) = (f.store, f.seeded, f.writer, f.view)
        await view.perform { c in
            c.mergePolicy = .storeWins
            _ = c.object(with: o.y, as: Album.self).songs  // Y held here, so that the merge changes it
            c.delete(c.object(with: o.s, as: Song.self))
        }
        // Meanwhile another context moves S to Y.
        let (_, theirs) = try await f.commitElsewhere { c in c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self) }
        let yLetGo = try await f.saveViewMerging(theirs) { c in c.object(with: o.y, as: Album.self).songs.isEmpty }
        #expect(yLetGo, "merged while the save is in flight: S is pending deletion here, so Y lets go of it")

        let inWriter = await writer.perform { c in c.object(with: o.s, as: Song.self).isDeleted }
        #expect(!inWriter, "the writer kept S")
        let (ySongs, sAlbum, pending, problems) = await view.perform { c in
            (c.object(with: o.y, as: Album.self).songs.map(\.objectID), c.object(with: o.s, as: Song.self).album?.objectID,
             (c.insertedObjects + c.updatedObjects + c.deletedObjects).map(\.objectID), relationshipDisagreements(c))
        }
        #expect(ySongs == [o.s], "Y lists S again")
        #expect(sAlbum == o.y)
        #expect(pending.isEmpty, "nothing is pending")
        #expect(problems.isEmpty, "\(problems)")
        await store.close()
    }
}
