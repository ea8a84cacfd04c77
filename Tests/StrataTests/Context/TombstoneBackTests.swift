import Foundation
import Testing
@testable import Strata

/// An object this context changed, then took as deleted from its parent's announcement,
/// comes back on the parent's word that it shows it again (the parent rolled the deletion
/// back) — as the parent holds it, with the other sides of its relationships in step. The
/// editor of a `hybrid` stack had moved an album to another artist; its parent's pending
/// cascade took the album, and the tombstone kept the move's values while both artists kept
/// the move's other sides. Back, the album named its old artist again, but the new artist
/// still listed it and the old one did not: the editor's next save sent one side only, and
/// the writer's save was refused as an inverse violation (`hybrid` seed 3596 of the soak).
@Suite struct TombstoneBackTests {
    @Test("a moved album taken by its parent's pending deletion and brought back: both artists as the parent shows them",
          arguments: [MergePolicy.overwrite, .contextWins, .storeWins, .rollback])
    func movedThenDeletedThenBack(policy: MergePolicy) async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (store, o, view, editor) = (f.store, f.objects, f.parent, f.child)
        await editor.setMergePolicy(policy)
        // The editor moves album x from a1 to a2.
        await editor.perform { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        let shown = store.currentGeneration
        let (a1Row, xRow) = (try #require(shown.object(o.a1)).values, try #require(shown.object(o.x)).values)

        // x goes as the view's pending cascade took it, its last values (naming a2) kept, and
        // a2 still listing it — the state the soak reached (the way there is not reduced: a
        // merged deletion of x would have had a2 let go) — then the view's rollback's word
        // that it shows both a1 and x again, as they were.
        await editor.perform { c in
            let x = c.object(with: o.x)
            c.graph.makeTombstone(x)
            c.graph.makeTombstone(c.object(with: o.a1))
            c.processPendingChanges()
        }
        await editor.perform { c in
            _ = c.merge(DidSave(transaction: nil, author: "view", inserted: [o.a1, o.x], values: [o.a1: a1Row, o.x: xRow]))
        }
        let (xDeleted, xArtist, a1Albums, a2Albums, problems) = await editor.perform { c in
            (c.object(with: o.x).isDeleted, c.object(with: o.x, as: Album.self).artist?.objectID,
             c.object(with: o.a1, as: Artist.self).albums.map(\.objectID), c.object(with: o.a2, as: Artist.self).albums.map(\.objectID),
             relationshipDisagreements(c))
        }
        #expect(!xDeleted && xArtist == o.a1, "x deleted \(xDeleted), artist \(String(describing: xArtist))")
        #expect(a1Albums == [o.x] && a2Albums.isEmpty, "a1 lists \(a1Albums), a2 \(a2Albums)")
        #expect(problems.isEmpty, "\(problems)")
        // What the editor saves keeps both sides in step, through the view to the store.
        await #expect(throws: Never.self) { try await editor.save() }
        await #expect(throws: Never.self) { try await view.save() }
        await f.close()
    }
}
