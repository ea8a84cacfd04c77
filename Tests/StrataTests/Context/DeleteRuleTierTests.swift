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
}
