import Foundation
import Testing
@testable import Strata

/// A context holding a change to an artist's albums merges another transaction's album for
/// the same artist, then rolls back: the artist lists what the store lists.
@Suite struct RollbackAfterMergeTests {
    @Test("a list merged over a pending change shows the store's list after a rollback", arguments: [false, true])
    func rollbackAfterAListMerge(child: Bool) async throws {
        let f = try ContextFixture(child ? .child : .root, durability: .relaxed, label: "strata-rollback-after-merge")
        let (store, coordinator, context) = (f.store, f.coordinator, f.context)
        let writer = f.ancestors.first ?? context
        let o = try await seedSongbook(store)
        await context.perform { c in
            _ = c.object(with: o.a1, as: Artist.self).albums
            let album = c.insert(Album.self)
            album.albumID = 50
            album.title = "ours"
            album.artist = c.object(with: o.a1, as: Artist.self)
        }
        let other = ObjectContext(coordinator: coordinator, name: "other")
        let theirs = await other.perform { c in
            let album = c.insert(Album.self)
            album.albumID = 60
            album.title = "theirs"
            album.artist = c.object(with: o.a1, as: Artist.self)
            return album.objectID
        }
        let saves = other.didSave()
        try await other.save()
        let commit = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        if child { await writer.merge(commit) }
        await context.merge(commit)
        await context.rollback()
        let shown = await context.perform { c in c.object(with: o.a1, as: Artist.self).albums.map(\.objectID).sorted() }
        #expect(shown == [o.x, theirs].sorted(), "after the rollback: \(shown)")
        #expect(store.currentGeneration.value(o.a1, "albums") == .objects([o.x, theirs]))
        await f.close()
    }
}

/// A context holding a conflict kept for its next save (merge policy `error`) merges a
/// second transaction: the merged row it keeps for a rollback, and the values it shows of
/// the keys it did not change, still have what the first merge took.
extension RollbackAfterMergeTests {
    @Test("a second merge into an object holding a conflict keeps what the first merged",
          arguments: [false, true], [false, true])
    func secondMergeIntoAConflictKeepsTheFirst(child: Bool, ownAlbum: Bool) async throws {
        let f = try ContextFixture(child ? .child : .root, durability: .relaxed, label: "strata-rollback-after-merge")
        let (store, coordinator, context) = (f.store, f.coordinator, f.context)
        let writer = f.ancestors.first ?? context
        let o = try await seedSongbook(store)
        await context.perform { c in
            let artist = c.object(with: o.a1, as: Artist.self)
            artist.name = "ours"
            guard ownAlbum else { return }
            let album = c.insert(Album.self)
            album.albumID = 50
            album.title = "ours"
            album.artist = artist
        }
        // Another context renames the artist (a conflict, kept) and gives it an album; then
        // renames it again.
        let other = ObjectContext(coordinator: coordinator, name: "other")
        let saves = other.didSave()
        let theirs = await other.perform { c in
            c.object(with: o.a1, as: Artist.self).name = "theirs"
            let album = c.insert(Album.self)
            album.albumID = 60
            album.title = "theirs"
            album.artist = c.object(with: o.a1, as: Artist.self)
            return album.objectID
        }
        try await other.save()
        let first = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await other.perform { c in c.object(with: o.a1, as: Artist.self).name = "theirs again" }
        try await other.save()
        let second = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        for commit in [first, second] {
            if child { await writer.merge(commit) }
            await context.merge(commit)
        }
        let merged = await context.perform { c in Set(c.object(with: o.a1, as: Artist.self).albums.map(\.objectID)) }
        #expect(merged.contains(theirs), "after the second merge the artist lists \(merged.sorted())")
        await context.rollback()
        let (name, shown) = await context.perform { c in
            let artist = c.object(with: o.a1, as: Artist.self)
            return (artist.name, artist.albums.map(\.objectID).sorted())
        }
        #expect(name == "theirs again")
        #expect(shown == [o.x, theirs].sorted(), "after the rollback: \(shown)")
        #expect(store.currentGeneration.value(o.a1, "albums") == .objects([o.x, theirs]))
        await f.close()
    }
}

/// Merges handed to a context out of order: an object keeping a conflict for its next save
/// (merge policy `error`) does not go back to the older transaction's values, as an object
/// without changes does not.
extension RollbackAfterMergeTests {
    @Test func anOlderMergeAfterANewerOneLeavesAConflictAsTheNewerMadeIt() async throws {
        let f = try ContextFixture(.root, durability: .relaxed, label: "strata-rollback-after-merge")
        let (store, coordinator, context) = (f.store, f.coordinator, f.context)
        let o = try await seedSongbook(store)
        await context.perform { c in
            c.object(with: o.a1, as: Artist.self).name = "ours"
            _ = c.object(with: o.a2, as: Artist.self).name
        }
        let other = ObjectContext(coordinator: coordinator, name: "other")
        let saves = other.didSave()
        var commits: [DidSave] = []
        for name in ["first", "second"] {
            await other.perform { c in
                c.object(with: o.a1, as: Artist.self).name = name
                c.object(with: o.a2, as: Artist.self).name = name
            }
            try await other.save()
            commits.append(try #require(await firstElement(of: saves, timeout: .seconds(10))))
        }
        for commit in commits.reversed() { await context.merge(commit) }
        let unchanged = await context.perform { c in c.object(with: o.a2, as: Artist.self).name }
        #expect(unchanged == "second")
        await context.rollback()
        let name = await context.perform { c in c.object(with: o.a1, as: Artist.self).name }
        #expect(name == "second", "after the rollback the artist is named \(String(describing: name))")
        await f.close()
    }
}

/// An object keeping a conflict for its next save (merge policy `error`) is deleted, then
/// merges another transaction: a rollback brings it back with that transaction's values,
/// not those of the merge that kept the conflict.
extension RollbackAfterMergeTests {
    @Test("a merge into a deleted object holding a conflict is the row a rollback takes", arguments: [false, true])
    func mergeIntoADeletedConflictIsTheRowARollbackTakes(child: Bool) async throws {
        let f = try ContextFixture(child ? .child : .root, durability: .relaxed, label: "strata-rollback-after-merge")
        let (store, coordinator, context) = (f.store, f.coordinator, f.context)
        let writer = f.ancestors.first ?? context
        let o = try await seedSongbook(store)
        await context.perform { c in
            _ = c.object(with: o.y, as: Album.self).songs
            c.object(with: o.s, as: Song.self).album = nil
        }
        // Another context moves the song to the other album (a conflict, kept); the song is
        // deleted here; the other context moves it back.
        let other = ObjectContext(coordinator: coordinator, name: "other")
        let saves = other.didSave()
        var commits: [DidSave] = []
        for album in [o.y, o.x] {
            await other.perform { c in c.object(with: o.s, as: Song.self).album = c.object(with: album, as: Album.self) }
            try await other.save()
            commits.append(try #require(await firstElement(of: saves, timeout: .seconds(10))))
            if child { await writer.merge(commits.last!) }
            await context.merge(commits.last!)
            if album == o.y { await context.perform { c in c.delete(c.object(with: o.s)) } }
        }
        await context.rollback()
        let (album, x, y) = await context.perform { c in
            (c.object(with: o.s, as: Song.self).album?.objectID,
             c.object(with: o.x, as: Album.self).songs.map(\.objectID), c.object(with: o.y, as: Album.self).songs.map(\.objectID))
        }
        #expect(album == o.x, "after the rollback the song is on \(String(describing: album))")
        #expect(x == [o.s] && y.isEmpty, "after the rollback the albums list \(x) and \(y)")
        #expect(store.currentGeneration.value(o.s, "album") == .object(o.x))
        await f.close()
    }
}
