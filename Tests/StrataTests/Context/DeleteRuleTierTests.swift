import Foundation
import Testing
@testable import Strata

/// Delete rules where a child's deletion meets its parent's pending changes.
@Suite struct DeleteRuleTierTests {
    @Test("a child's deletion of an artist cascades to an album its parent inserted for that artist meanwhile")
    func childDeletionCascadesIntoParentInsert() async throws {
        let f = try ContextFixture(.child)
        let root = f.ancestors[0]
        let o = try await seedSongbook(f.store)
        // The child reads artist A2 (no albums yet).
        let albumsSeen = await f.context.perform { c in c.object(with: o.a2, as: Artist.self).albums.count }
        #expect(albumsSeen == 0)
        // The parent then gives A2 a new, unsaved album.
        let z = await root.perform { c in
            let album = c.insert(Album.self)
            album.albumID = 99
            album.title = "Pending"
            album.artist = c.object(with: o.a2, as: Artist.self)
            return album.objectID
        }
        // The child deletes A2 (albums: cascade) and saves into the parent.
        await f.context.perform { c in c.delete(c.object(with: o.a2)) }
        do {
            try await f.context.save()
        } catch {
            return  // refusing the child's save is a correct outcome too
        }
        // Accepted: the parent must hold no album that refers to the deleted artist.
        let (artistDeleted, albumDeleted, albumArtist) = await root.perform { c in
            let album = c.object(with: z, as: Album.self)
            return (c.object(with: o.a2).isDeleted, album.isDeleted, album.artist?.objectID)
        }
        #expect(artistDeleted)
        #expect(albumDeleted || albumArtist == nil,
                "the parent kept \(z) pointing at deleted \(o.a2): the cascade was not applied")
        await #expect(throws: Never.self, "the parent can no longer save") { try await root.save() }
        await f.close()
    }

    @Test("refreshing a deleted object keeps the graph saveable", arguments: [true, false])
    func refreshDeletedObject(mergeChanges: Bool) async throws {
        let f = try ContextFixture(.root)
        let o = try await seedSongbook(f.store)
        let (deletedAfterRefresh, albumSongs, songAlbum) = await f.context.perform { c in
            let song = c.object(with: o.s, as: Song.self)
            c.delete(song)  // Song.album is nullify: album X's songs lose S
            c.refresh(song, mergeChanges: mergeChanges)
            let album = c.object(with: o.x, as: Album.self)
            return (song.isDeleted, album.songs.map(\.objectID), song.album?.objectID)
        }
        #expect(deletedAfterRefresh, "a refresh (mergeChanges: \(mergeChanges)) dropped the pending deletion")
        if !deletedAfterRefresh {
            #expect(albumSongs.contains(o.s) == (songAlbum == o.x),
                    "S.album is \(String(describing: songAlbum)) but X.songs is \(albumSongs)")
        }
        await #expect(throws: Never.self) { try await f.context.save() }
        await f.close()
    }

    /// The tiers a parent context can sit in.
    static let parentTiers: [Tier] = [.root, .mainRoot, .child]

    @Test("a child's deletion of an album that its parent gave a song since (songs: deny) is refused, and changes nothing",
          arguments: parentTiers)
    func childDeletionDeniedByParentInsert(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let parent = f.context
        let child = ObjectContext(parent: parent, name: "editor")
        #expect(await child.perform { c in c.object(with: o.y, as: Album.self).songs.isEmpty })
        let song = await parent.perform { c in
            let song = c.insert(Song.self)
            song.songID = StoreTesting.uuid(77)
            song.title = "parent's"
            song.milliseconds = 1_000
            song.album = c.object(with: o.y, as: Album.self)
            return song.objectID
        }
        await child.perform { c in c.delete(c.object(with: o.y)) }
        let error = await #expect(throws: StoreError.self) { try await child.save() }
        #expect(error?.code == .deleteRule && error?.object == o.y && error?.key == "songs", "\(String(describing: error))")
        #expect(error?.message.contains(song.description) == true, "\(String(describing: error))")
        let (albumDeleted, songAlbum) = await parent.perform { c in
            (c.object(with: o.y).isDeleted, c.object(with: song, as: Song.self).album?.objectID)
        }
        #expect(!albumDeleted && songAlbum == o.y, "a refused save changed the parent")
        #expect(await child.perform { c in c.object(with: o.y).isDeleted && c.hasChanges }, "the child keeps its deletion")
        for context in [parent] + f.ancestors { try await context.save() }
        #expect(f.generation.value(song, "album") == .object(o.y))
        await f.close()
    }

    @Test("a child's deletion whose nullify rule would empty a required relationship of an object its parent inserted is refused",
          arguments: parentTiers)
    func childDeletionNullifiesParentsRequiredRelationship(tier: Tier) async throws {
        let directory = TemporaryDirectory("strata-delete-rule-tier")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, schema: Library.schema)
        let shelf = store.allocateObjectIDs(for: "Shelf")[0]
        try await store.commit(ChangeSet(inserted: [Library.shelf(shelf, code: "AB")]))
        let coordinator = Coordinator(store: store)
        let root = ObjectContext(coordinator: coordinator, executor: tier == .mainRoot ? .main : .privateQueue("root"), name: "root")
        let parent = tier == .child ? ObjectContext(parent: root, name: "child") : root
        let child = ObjectContext(parent: parent, name: "editor")
        #expect(await child.perform { c in c.object(with: shelf)["code"] } == .string("AB"))
        // The parent shelves a new book there (Book.shelf is required; Shelf.books nullify).
        let book = try await parent.perform { c in
            let book = c.insert(entity: "Book")
            book["title"] = .string("Dune")
            book["pages"] = .int(412)
            try book.setRelatedObject(c.object(with: shelf), forKey: "shelf")
            return book.objectID
        }
        await child.perform { c in c.delete(c.object(with: shelf)) }
        let error = await #expect(throws: StoreError.self) { try await child.save() }
        #expect(error?.code == .missingValue && error?.object == book && error?.key == "shelf", "\(String(describing: error))")
        let (shelfDeleted, bookShelf) = await parent.perform { c in (c.object(with: shelf).isDeleted, c.object(with: book)["shelf"]) }
        #expect(!shelfDeleted && bookShelf == .object(shelf), "a refused save changed the parent")
        try await parent.save()
        if parent !== root { try await root.save() }
        #expect(store.currentGeneration.integrityProblems().isEmpty)
        await store.close()
    }

    @Test("deleting an album that a song with changes of its own still names is refused by the album's deny rule",
          arguments: Tier.allCases, [false, true])
    func denyNamesTheAlbumWhateverTheSongsChanges(tier: Tier, newSong: Bool) async throws {
        let f = try ContextFixture(tier, durability: .relaxed)
        let o = try await seedSongbook(f.store)
        let before = StoreState(f.store)
        await f.context.perform { c in
            let album = c.object(with: o.y, as: Album.self)
            if newSong {
                let song = c.insert(Song.self)
                song.songID = StoreTesting.uuid(78)
                song.title = "new"
                song.milliseconds = 1_000
                song.album = album
            } else {
                c.object(with: o.s, as: Song.self).album = album  // an existing song moved onto it
            }
            c.delete(album)
        }
        let error = await #expect(throws: StoreError.self) { try await f.context.save() }
        #expect(error?.code == .deleteRule && error?.object == o.y && error?.key == "songs", "\(String(describing: error))")
        #expect(StoreState(f.store) == before)
        for ancestor in f.ancestors { #expect(await ancestor.perform { !$0.hasChanges }) }
        await f.close()
    }
}
