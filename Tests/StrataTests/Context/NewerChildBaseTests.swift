import Foundation
import Testing
@testable import Strata

/// A child's save based on a newer state of an object than its parent holds (the child
/// read it through the parent after a commit the parent has not merged yet), taking an
/// album from an artist's list that the parent holds without it: that is no change in the
/// parent, and when the parent merges the commit, the commit's list names the album again.
/// The album's move, pending in the parent, decides: the artist lets go of it.
@Suite struct NewerChildBaseTests {
    @Test("a list a child took a member from, against a newer base than its parent's, stays without it when the parent merges that state")
    func parentMergesTheStateTheChildSawAfterItsSave() async throws {
        let directory = TemporaryDirectory("strata-newer-child-base")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let coordinator = Coordinator(store: store, name: "main", modelClasses: [Artist.self, Album.self, Song.self])
        let seeder = ObjectContext(coordinator: coordinator, name: "seed")
        let (first, second) = await seeder.perform { c in
            let first = c.insert(Artist.self)
            first.artistID = 1
            let second = c.insert(Artist.self)
            second.artistID = 2
            return (first.objectID, second.objectID)
        }
        try await seeder.save()
        let writer = ObjectContext(coordinator: coordinator, executor: .privateQueue("writer"), name: "writer")
        let view = ObjectContext(parent: writer, executor: .privateQueue("view"), name: "view")
        await view.perform { c in _ = c.object(with: first, as: Artist.self).albums }  // held with no albums

        // Another context gives the first artist an album; nobody here has merged it yet.
        let other = ObjectContext(coordinator: coordinator, name: "other")
        let album = await other.perform { c in
            let album = c.insert(Album.self)
            album.albumID = 1
            album.title = "X"
            album.artist = c.object(with: first, as: Artist.self)
            return album.objectID
        }
        let saves = other.didSave()
        try await other.save()
        let theirs = try #require(await firstElement(of: saves, timeout: .seconds(10)))

        // An editor under the view reads the album and the artist as committed (neither is
        // changed in the view, so it reads them through it) and moves the album.
        let editor = ObjectContext(parent: view, executor: .privateQueue("editor"), name: "editor")
        await editor.perform { c in
            #expect(c.object(with: first, as: Artist.self).albums.map(\.objectID) == [album])
            c.object(with: album, as: Album.self).artist = c.object(with: second, as: Artist.self)
        }
        try await editor.save()
        await writer.merge(theirs)
        await view.merge(theirs)

        let (firstAlbums, albumArtist, problems) = await view.perform { c in
            (c.object(with: first, as: Artist.self).albums.map(\.objectID), c.object(with: album, as: Album.self).artist?.objectID,
             relationshipDisagreements(c))
        }
        #expect(albumArtist == second)
        #expect(firstAlbums.isEmpty, "the first artist does not list the album the view moved to the second")
        #expect(problems.isEmpty, "\(problems)")
        try await view.save()
        try await writer.save()
        let g = store.currentGeneration
        #expect(g.value(album, "artist") == .object(second))
        #expect(g.value(first, "albums") == .objects([]))
        #expect(g.integrityProblems().isEmpty)
        let converged = await view.perform { c in
            (c.object(with: first, as: Artist.self).albums.map(\.objectID), c.hasChanges)
        }
        #expect(converged.0.isEmpty && !converged.1, "the view shows the store, nothing pending: \(converged)")
        await store.close()
    }
}
