import Foundation
import Testing
@testable import Strata

/// A context holding a change to an artist's albums merges another transaction's album for
/// the same artist, then rolls back: the artist lists what the store lists.
@Suite struct RollbackAfterMergeTests {
    @Test("a list merged over a pending change shows the store's list after a rollback", arguments: [false, true])
    func rollbackAfterAListMerge(child: Bool) async throws {
        let directory = TemporaryDirectory("strata-rollback-after-merge")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let o = try await seedSongbook(store)
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        let writer = ObjectContext(coordinator: coordinator, executor: .privateQueue("writer"), name: "writer")
        let context = child ? ObjectContext(parent: writer, executor: .privateQueue("view"), name: "view") : writer
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
        await store.close()
    }
}
