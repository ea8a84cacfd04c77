import Foundation
import Testing
@testable import Strata

/// A child moves a song its parent inserted to one album while the parent puts it on
/// another, and saves. While the save is in flight the child merges a commit that changes
/// the parent's album (a song of it deleted): the child, whose song is on its way elsewhere,
/// takes the song off that album's list as a change of its own. The parent's merge policy
/// keeps its album for the song; the child's song takes it back, and the album's list must
/// list the song again. (It kept its change: the child showed the song on an album that did
/// not list it, its next save took the song off the parent's list, and the parent's save was
/// refused as an inverse violation — `hybrid` seed 6181 of the soak.)
@Suite struct MoveKeptByParentTests {
    @Test("a song the parent keeps on its album, whose list the child changed during the save: the list names it again",
          arguments: [MergePolicy.rollback, .storeWins, .contextWins, .overwrite, .error])
    func listChangedDuringTheSave(policy: MergePolicy) async throws {
        let inFlight = SaveInFlight(of: "editor")
        let f = try await ChildFixture(parent: "view", child: "editor", observer: inFlight.observer)
        let (o, view, editor) = (f.objects, f.parent, f.child)
        await editor.setMergePolicy(policy)
        let n = await view.perform { c in
            let n = c.insert(Song.self)
            n.songID = StoreTesting.uuid(77); n.title = "new"; n.milliseconds = 1
            return n.objectID
        }
        await editor.perform { c in
            _ = c.object(with: o.x, as: Album.self).songs.count
            c.object(with: n, as: Song.self).album = c.object(with: o.y, as: Album.self)
        }
        await view.perform { c in c.object(with: n, as: Song.self).album = c.object(with: o.x, as: Album.self) }
        // Another context deletes x's song; the view merges it (x lists the new song only).
        let commits = f.store.commits()
        try await f.other.perform { c in
            c.delete(c.object(with: o.s))
            try await c.save()
        }
        let commit = try #require(await firstElement(of: commits, timeout: .seconds(10)))
        await view.perform { c in _ = c.merge(commit) }
        let failure = await inFlight.save(editor, holding: view) {
            await editor.perform { c in _ = c.merge(DidSave(commit)) }
        }
        #expect(policy == .error ? failure?.code == .conflict : failure == nil, "\(String(describing: failure))")
        let problems = await editor.perform { c in relationshipDisagreements(c) }
        #expect(problems.isEmpty, "editor: \(problems)")
        if policy == .error {
            // The conflict is reported and the child keeps its changes: taking them back
            // leaves it showing the parent's state.
            await editor.rollback()
        } else {
            await #expect(throws: Never.self) { try await editor.save() }
        }
        let (album, viewProblems) = await view.perform { c in (c.object(with: n, as: Song.self).album?.objectID, relationshipDisagreements(c)) }
        #expect(album == (policy == .contextWins || policy == .overwrite ? o.y : o.x))
        #expect(viewProblems.isEmpty, "view: \(viewProblems)")
        await #expect(throws: Never.self) { try await view.save() }
        await f.close()
    }
}
