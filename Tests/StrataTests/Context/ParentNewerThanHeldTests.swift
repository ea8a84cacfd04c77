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
/// edit saved with it — `StackStressTests`, `hybrid`.) And a list the child changed while
/// its save ran names the saved object as the parent shows it once the save ends, not as the
/// parent held it when it applied the save: it may have merged another move in between.
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

    @Test("a list the child changed during the save names the saved object as the parent shows it after the save, not as it held it")
    func listChangedDuringTheSaveFollowsTheParentsNewerMove() async throws {
        let g = try await GatedWriter("strata-parent-newer")
        let (o, writer, view) = (g.seeded, g.writer, g.view)
        await view.perform { c in o.readAlbums(of: [o.a1, o.a2, o.a3], artistsOf: [o.x, o.y], in: c) }
        await writer.perform { c in o.readAlbums(of: [o.a1, o.a2, o.a3], artistsOf: [o.x, o.y], in: c) }
        let other = ObjectContext(coordinator: g.coordinator, name: "other")
        let commits = g.store.commits()
        // x moves to a2, which the writer merges and the view does not.
        try await other.perform { c in
            c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
            try await c.save()
        }
        let toA2 = try #require(await firstElement(of: commits, timeout: .seconds(10)))
        await writer.merge(toA2)
        // The view retitles x and saves it; the writer applies it, holding x on a2.
        await view.perform { c in c.object(with: o.x, as: Album.self).title = "retitled" }
        let saving = Task { try await view.save() }
        #expect(await g.gate.waitUntilHeld(), "the writer applied the view's save")
        // Meanwhile x moves on to a3, and the writer merges that before the view's save ends:
        // the view's queue is held until it has.
        try await other.perform { c in
            c.object(with: o.x, as: Album.self).artist = c.object(with: o.a3, as: Artist.self)
            try await c.save()
        }
        let toA3 = try #require(await firstElement(of: commits, timeout: .seconds(10)))
        let merging = Task { await writer.merge(toA3) }
        // The view changes a2's list while its save runs: y joins a2.
        await view.perform { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        let holding = await QueueHold(view, "the view")
        g.gate.open()
        _ = await merging.value
        await holding.release()
        _ = try await withTimeout(30, "the view's save") { try await saving.value }

        let a2 = await view.perform { c in o.albums(of: [o.a2], in: c)[0] }
        #expect(a2 == [o.y], "a2 lists y, which joined it here, and not x, which the writer shows on a3 now")
        await view.merge(toA3)
        let (shown, problems) = await view.perform { c in (o.artists(of: [o.x, o.y], in: c), relationshipDisagreements(c)) }
        #expect(shown == [o.a3, o.a2])
        #expect(problems.isEmpty, "view: \(problems)")
        try await view.save()
        await #expect(throws: Never.self) { try await writer.save() }
        let generation = g.store.currentGeneration
        #expect(generation.integrityProblems().isEmpty)
        #expect(generation.value(o.x, "title") == .string("retitled"))
        #expect(generation.value(o.x, "artist") == .object(o.a3))
        #expect(generation.value(o.y, "artist") == .object(o.a2))
        #expect(generation.value(o.a2, "albums")?.referencedObjects ?? [] == [o.y])
        await g.store.close()
        g.directory.remove()
    }
}
