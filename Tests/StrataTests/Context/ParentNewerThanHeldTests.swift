import Foundation
import Testing
@testable import Strata

/// A child saves an album it read before two commits moved it, into a parent that merged
/// the first move only and whose reads are as of the second (its own save since had taken
/// it past that commit): the parent holds the album on the artist of the first move, which
/// shows no longer listing it. The child takes the parent's values; the artist, which the
/// child never changed, shows the parent's list as it is, with no change of the child's.
/// (The child gave the artist the album back as a change of its own, so that the list
/// "named the saved object as the parent's value of it did"; its next save sent the list
/// to the writer, and the writer's save was refused as an inverse violation, losing the
/// edit saved with it — `StackStressTests`, `hybrid`.)
@Suite struct ParentNewerThanHeldTests {
    @Test("an artist the child did not change shows the parent's list after the save, with no change of its own")
    func unchangedListStaysTheParents() async throws {
        let f = try await ChildFixture(parent: "writer", child: "view")
        let (o, writer, view) = (f.objects, f.parent, f.child)
        // Both read x on a1, and a2's (empty) list.
        await view.perform { c in o.readAlbums(of: [o.a1, o.a2, o.a3], artistsOf: [o.x], in: c) }
        await writer.perform { c in o.readAlbums(of: [o.a1, o.a2, o.a3], artistsOf: [o.x], in: c) }
        // x moves to a2, which the writer merges; then to a3, which it has not merged yet.
        let commits = f.store.commits()
        try await f.other.perform { c in
            c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
            try await c.save()
        }
        let toA2 = try #require(await firstElement(of: commits, timeout: .seconds(10)))
        await writer.merge(toA2)
        try await f.other.perform { c in
            c.object(with: o.x, as: Album.self).artist = c.object(with: o.a3, as: Artist.self)
            try await c.save()
        }
        let toA3 = try #require(await firstElement(of: commits, timeout: .seconds(10)))
        // The writer's own save reads as of the newest commit from then on.
        try await writer.perform { c in
            c.object(with: o.y, as: Album.self).title = "Y, by the writer"
            try await c.save()
        }
        // The view, which merged neither move, retitles x and saves it into the writer.
        try await view.perform { c in
            c.object(with: o.x, as: Album.self).title = "retitled"
            try await c.save()
        }
        let afterSave = await view.perform { c in (pending: c.hasChanges, albums: o.albums(of: [o.a1, o.a2, o.a3], in: c)) }
        #expect(!afterSave.pending, "the view changed nothing but x's title, which it saved")
        #expect(afterSave.albums[1].isEmpty, "a2 shows the writer's list, without x")

        // The writer, then the view (following it), merge the second move; everything reaches the store.
        await writer.merge(toA3)
        await view.merge(toA3)
        let (shown, problems, pending) = await view.perform { c in
            (o.artists(of: [o.x], in: c), relationshipDisagreements(c), c.hasChanges)
        }
        #expect(shown == [o.a3])
        #expect(problems.isEmpty, "view: \(problems)")
        #expect(!pending)
        await #expect(throws: Never.self) { try await writer.save() }
        let generation = f.store.currentGeneration
        #expect(generation.value(o.x, "title") == .string("retitled"))
        #expect(generation.value(o.x, "artist") == .object(o.a3))
        #expect(generation.value(o.a2, "albums")?.referencedObjects ?? [] == [])
        #expect(generation.value(o.a3, "albums")?.referencedObjects ?? [] == [o.x])
        await f.close()
    }
}
