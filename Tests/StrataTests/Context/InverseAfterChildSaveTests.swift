import Foundation
import Testing
@testable import Strata

/// Both sides of a relationship after a child's save or a merge reach a context that holds
/// more than the saving side saw: a member added to a list since the child read it, an object
/// back from a rolled-back deletion, a song a merge relates again to an album after it was
/// deleted here, a child's list rebased on its parent's row when a merged deletion reaches it.
/// Each once left a list naming an object that did not refer back, and the next save was
/// refused as an inverse violation (through a stack's writer, after the view's save had
/// returned).
@Suite struct InverseAfterChildSaveTests {
    @Test("a child moves the parent's new song off an album whose list the child had changed before the song was added")
    func childMovesSongOffStaleList() async throws {
        let f = try ContextFixture(.child)
        let o = try await seedSongbook(f.store)  // x.songs = [s], y.songs = []
        let (parent, child) = (f.ancestors[0], f.context)
        // 1. The child deletes song s: x.songs becomes [] in the child (a pending change).
        await child.perform { c in c.delete(c.object(with: o.s)) }
        // 2. The parent adds a new song n to album x.
        let n = await parent.perform { c in
            let song = c.insert(Song.self)
            song.songID = StoreTesting.uuid(2)
            song.title = "n"
            song.milliseconds = 1
            song.album = c.object(with: o.x, as: Album.self)
            return song.objectID
        }
        // 3. The child moves n (read through the parent: album x) to album y, and saves.
        await child.perform { c in c.object(with: n, as: Song.self).album = c.object(with: o.y, as: Album.self) }
        try await child.save()
        let (xSongs, nAlbum) = await parent.perform { c in
            (c.object(with: o.x, as: Album.self).songs.map(\.objectID), c.object(with: n, as: Song.self).album?.objectID)
        }
        #expect(nAlbum == o.y)
        #expect(!xSongs.contains(n), "x.songs \(xSongs) still lists \(n), whose album is \(String(describing: nAlbum))")
        await #expect(throws: Never.self) { try await parent.save() }
        await f.close()
    }

    @Test("a merged save gives a song deleted here the album this context had given it before deleting it", arguments: [false, true])
    func mergeRelatesPendingDeletionToSameTarget(separateCoordinators: Bool) async throws {
        let f = try ContextFixture(.root)
        let (store, view) = (f.store, f.context)
        let o = try await seedSongbook(store)  // s.album = x, y.songs = []
        let models: [ManagedObject.Type] = [Artist.self, Album.self, Song.self]
        // (Under `.error` the deletion of a song changed since is a conflict at save.)
        await view.perform { c in c.mergePolicy = .overwrite }
        let importer = ObjectContext(coordinator: separateCoordinators ? Coordinator(store: store, modelClasses: models) : f.coordinator, name: "import")
        // 1. The view moves song s to album y, then deletes it (nullify: y.songs is [] again).
        await view.perform { c in
            let s = c.object(with: o.s, as: Song.self)
            s.album = c.object(with: o.y, as: Album.self)
            c.delete(s)
        }
        // 2. An import moves s to y too, and saves; the view merges it.
        let saves = importer.didSave()
        await importer.perform { c in c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self) }
        try await importer.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(5)))
        await view.perform { c in _ = c.merge(save) }
        let ySongs = await view.perform { c in c.object(with: o.y, as: Album.self).songs.map(\.objectID) }
        #expect(!ySongs.contains(o.s), "y.songs \(ySongs) lists \(o.s), which is pending deletion here")
        // 3. The view saves its deletion.
        await #expect(throws: Never.self) { try await view.save() }
        await f.close()
    }

    @Test("a child moves a song off an album its parent had deleted, the parent rolls the deletion back, and the child saves")
    func childMovesSongOffAlbumParentRestored() async throws {
        let f = try ContextFixture(.child)
        let o = try await seedSongbook(f.store)  // x.songs = [s], y.songs = []
        let (parent, child) = (f.ancestors[0], f.context)
        // 1. The parent deletes album x (songs: deny, checked at save: s still names x).
        await parent.perform { c in c.delete(c.object(with: o.x)) }
        // 2. The child moves s (album x, read through the parent) to album y. (x is missing in the
        //    child's view: the child cannot take s out of x's list.)
        await child.perform { c in c.object(with: o.s, as: Song.self).album = c.object(with: o.y, as: Album.self) }
        // 3. The parent rolls its deletion back: x is back, listing s.
        await parent.perform { c in c.rollback() }
        // 4. The child saves into the parent.
        try await child.save()
        let (xSongs, sAlbum) = await parent.perform { c in
            (c.object(with: o.x, as: Album.self).songs.map(\.objectID), c.object(with: o.s, as: Song.self).album?.objectID)
        }
        #expect(sAlbum == o.y)
        #expect(!xSongs.contains(o.s), "x.songs \(xSongs) still lists \(o.s), whose album is \(String(describing: sAlbum))")
        await #expect(throws: Never.self) { try await parent.save() }
        await f.close()
    }

    /// (In `hybrid`: the editor, a child following the view's merges, is `child`; the view is
    /// `parent`; the background context deleting an album is `other`.)
    @Test("a child merging a deletion takes its parent's list for one it did not change, with no change of its own")
    func mergedDeletionRebasesStaleList() async throws {
        let f = try ContextFixture(.child)
        let o = try await seedSongbook(f.store)  // a2.albums = [], y: no artist, no songs
        let (parent, child) = (f.ancestors[0], f.context)
        await parent.perform { c in c.mergePolicy = .overwrite }  // (under `.error` the deletion is a kept conflict)
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        // 1. The parent gives album y to artist a2 (pending: a2.albums = [y]).
        await parent.perform { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        // 2. The child reads a2 through the parent: albums [y].
        _ = await child.perform { c in c.object(with: o.a2, as: Artist.self).albums.count }
        // 3. The parent inserts album n for a2 (pending: a2.albums = [y, n]).
        let n = await parent.perform { c in
            let album = c.insert(Album.self)
            album.albumID = 99
            album.title = "n"
            album.artist = c.object(with: o.a2, as: Artist.self)
            return album.objectID
        }
        // 4. Another context deletes y; the parent merges it, then the child.
        let saves = other.didSave()
        await other.perform { c in c.delete(c.object(with: o.y)) }
        try await other.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(5)))
        await parent.perform { c in _ = c.merge(save) }
        await child.perform { c in _ = c.merge(save) }
        // The child changed nothing of a2's.
        let (pending, albums) = await child.perform { c in
            let a2 = c.object(with: o.a2, as: Artist.self)
            return (a2.hasChanges, a2.albums.map(\.objectID))
        }
        #expect(!pending, "the child holds a change of a2 it never made: albums \(albums)")
        #expect(albums == [n])
        // 5. The child saves into the parent, and the parent saves.
        try await child.save()
        let parentAlbums = await parent.perform { c in c.object(with: o.a2, as: Artist.self).albums.map(\.objectID) }
        #expect(parentAlbums == [n], "the parent's a2.albums \(parentAlbums), while \(n).artist is a2")
        await #expect(throws: Never.self) { try await parent.save() }
        await f.close()
    }
}
