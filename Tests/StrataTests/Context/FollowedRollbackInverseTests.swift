import Foundation
import Testing
@testable import Strata

/// A child following its parent's changes holds a move of album X from A1 to A3, as its
/// parent does. Another save deletes A3: both let go of it, and the parent announces X with
/// no artist, which the child's X takes as read — its change is gone, while A1's list keeps
/// its change without X. The parent then rolls back, and announces X on A1 again, and A1
/// listing it: X takes A1 (nothing of its own to keep), A1 keeps its change (the parent's
/// list is the one it was read with). X must not refer to an artist whose pending list
/// leaves it out: it lets go of A1, as the pending change decides. (It referred to A1: the
/// next save sent A1 without X, and the parent's save was refused as an inverse violation —
/// `hybrid` seed 15673 of the soak.)
@Suite struct FollowedRollbackInverseTests {
    @Test("a to-one taken from the parent lets go of an object whose pending list leaves it out",
          arguments: [MergePolicy.overwrite, .contextWins, .storeWins, .rollback])
    func toOneYieldsToPendingList(policy: MergePolicy) async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (o, view, editor) = (f.objects, f.parent, f.child)
        await view.setMergePolicy(.rollback)
        await editor.perform { c in
            c.automaticallyMergesChanges = true
            c.mergePolicy = policy
        }
        for context in [editor, view] {
            await context.perform { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a3, as: Artist.self) }
        }
        let commits = f.store.commits()
        try await f.other.perform { c in
            c.delete(c.object(with: o.a3))
            try await c.save()
        }
        let commit = try #require(await firstElement(of: commits, timeout: .seconds(10)))
        await view.perform { c in _ = c.merge(commit) }
        #expect(await waitUntil(editor, "the editor follows the deletion") { c in c.object(with: o.a3).isDeleted })
        await view.rollback()
        // The rollback's announcement reaches the editor: X is read on A1 again.
        #expect(await waitUntil(editor, "the editor follows the rollback") { c in c.object(with: o.x).base?.contains(.object(o.a1)) == true })
        let (artist, albums, problems) = await editor.perform { c in
            (c.object(with: o.x, as: Album.self).artist?.objectID, c.object(with: o.a1, as: Artist.self).albums.map(\.objectID),
             relationshipDisagreements(c))
        }
        #expect(problems.isEmpty, "editor: \(problems)")
        #expect(artist == nil && albums.isEmpty, "X on \(String(describing: artist)), A1 lists \(albums)")
        await #expect(throws: Never.self) { try await editor.save() }
        await #expect(throws: Never.self) { try await view.save() }
        let g = f.store.currentGeneration
        #expect(g.value(o.x, "artist") == .null && g.value(o.a1, "albums") == .objects([]))
        await f.close()
    }
}
