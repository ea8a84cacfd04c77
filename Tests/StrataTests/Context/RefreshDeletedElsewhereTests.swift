import Foundation
import Testing
@testable import Strata

/// An object refreshed after what the context reads from deleted it (its parent, pending; or
/// the store, not merged yet) becomes a tombstone, and what its values name here lets go of
/// it, as merging the deletion has them do — the objects its own changes joined included.
/// An editor had moved an album to another artist; its parent deleted the album's old
/// artist, whose cascade took the album; refreshed, the album was gone but the new artist
/// still listed it, and every save of the editor was refused as referring to a deleted object.
@Suite struct RefreshDeletedElsewhereTests {
    @Test("a moved album refreshed after its parent deleted it: the artist it joined lets go, and the saves go through",
          arguments: [MergePolicy.overwrite, .contextWins, .storeWins, .rollback], [true, false])
    func refreshedInAChild(policy: MergePolicy, mergeChanges: Bool) async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (o, view, editor) = (f.objects, f.parent, f.child)
        await editor.setMergePolicy(policy)
        await editor.perform { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        // The view deletes a1, whose cascade takes x (and x's song, so that its save can go).
        await view.perform { c in
            c.delete(c.object(with: o.s))
            c.delete(c.object(with: o.a1))
            c.processPendingChanges()
        }
        try await expectLetGo(editor, o, mergeChanges: mergeChanges)
        await #expect(throws: Never.self) { try await editor.save() }
        await #expect(throws: Never.self) { try await view.save() }
        let stored = f.store.currentGeneration
        #expect(stored.object(o.x) == nil && stored.object(o.a1) == nil)
        #expect(stored.object(o.a2)?.values[3] == .objects([]))
        await f.close()
    }

    @Test("a moved album refreshed after another context deleted it in the store: the artist it joined lets go",
          arguments: [MergePolicy.overwrite, .contextWins, .storeWins, .rollback], [true, false])
    func refreshedInARootContext(policy: MergePolicy, mergeChanges: Bool) async throws {
        let f = try await ChildFixture(parent: "editor", child: "unused")
        let (o, editor) = (f.objects, f.parent)
        await editor.setMergePolicy(policy)
        await editor.perform { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        try await f.other.perform { c in
            c.delete(c.object(with: o.s))
            c.delete(c.object(with: o.a1))
            try await c.save()
        }
        try await expectLetGo(editor, o, mergeChanges: mergeChanges)
        await #expect(throws: Never.self) { try await editor.save() }
        #expect(f.store.currentGeneration.object(o.x) == nil && f.store.currentGeneration.object(o.a2)?.values[3] == .objects([]))
        await f.close()
    }

    @Test("an album refreshed away while its parent deletes it, then back when the parent rolls the deletion back: its artist lists it again",
          arguments: [MergePolicy.overwrite, .contextWins, .storeWins, .rollback, .error])
    func refreshedAwayThenBack(policy: MergePolicy) async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (o, view, editor) = (f.objects, f.parent, f.child)
        await editor.setMergePolicy(policy)
        await editor.perform { c in _ = (c.object(with: o.a1, as: Artist.self).albums.count, c.object(with: o.x, as: Album.self).title) }
        let xRow = try #require(f.store.currentGeneration.object(o.x)).values
        await view.perform { c in
            c.delete(c.object(with: o.x))
            c.processPendingChanges()
        }
        // The editor refreshes x (gone: a1 lets go of it), then takes the view's word that it
        // shows x again, as the view's rollback announces it.
        await editor.perform { c in c.refresh(c.object(with: o.x), mergeChanges: true) }
        await view.rollback()
        await editor.perform { c in _ = c.merge(DidSave(transaction: nil, author: "view", inserted: [o.x], values: [o.x: xRow])) }
        let (back, a1Albums, problems, changes) = await editor.perform { c in
            (shows(c, o.x), c.object(with: o.a1, as: Artist.self).albums.map(\.objectID), relationshipDisagreements(c), c.hasChanges)
        }
        #expect(back, "x is not back")
        #expect(a1Albums == [o.x] && problems.isEmpty, "a1 lists \(a1Albums); \(problems)")
        #expect(!changes, "the editor holds changes nobody made")
        await #expect(throws: Never.self) { try await editor.save() }
        await #expect(throws: Never.self) { try await view.save() }
        await f.close()
    }

    /// The view deletes an album and its song; the editor refreshes the album (gone there),
    /// so the song lets go of it — as the view's doing, not a change of the editor's. The view
    /// rolls both deletions back: the editor shows the album listing the song, and the song
    /// naming the album, with nothing pending. (Let go as a change of the editor's, the song
    /// took the view's row back when the rollback announced it, while the album, back from
    /// its tombstone, had been put in step with the song's change: it no longer listed the
    /// song, and the next save through the view was refused as an inverse violation.)
    @Test("an album refreshed away with its song while the parent deletes both, then back: album and song agree",
          arguments: [MergePolicy.overwrite, .contextWins, .storeWins, .rollback, .error], [false, true])
    func refreshedAwayWithItsSongThenBack(policy: MergePolicy, mergeChanges: Bool) async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (o, view, editor) = (f.objects, f.parent, f.child)
        await editor.setMergePolicy(policy)
        await editor.perform { c in _ = (c.object(with: o.x, as: Album.self).songs.count, c.object(with: o.s, as: Song.self).album) }
        let stored = f.store.currentGeneration
        let xRow = try #require(stored.object(o.x)).values, sRow = try #require(stored.object(o.s)).values
        await view.perform { c in
            c.delete(c.object(with: o.x))
            c.delete(c.object(with: o.s))
            c.processPendingChanges()
        }
        let (sLetGo, pendingAfterRefresh) = await editor.perform { c in
            c.refresh(c.object(with: o.x), mergeChanges: mergeChanges)
            return (c.object(with: o.s, as: Song.self).album == nil, c.hasChanges)
        }
        #expect(sLetGo, "the song still names the album refreshed away")
        #expect(!pendingAfterRefresh, "the refresh left changes nobody made")
        await view.rollback()
        await editor.perform { c in
            _ = c.merge(DidSave(transaction: nil, author: "view", inserted: [o.x, o.s], values: [o.x: xRow, o.s: sRow]))
        }
        let (back, songs, album, problems, changes) = await editor.perform { c in
            (shows(c, o.x), c.object(with: o.x, as: Album.self).songs.map(\.objectID), c.object(with: o.s, as: Song.self).album?.objectID,
             relationshipDisagreements(c), c.hasChanges)
        }
        #expect(back, "x is not back")
        #expect(songs == [o.s] && album == o.x && problems.isEmpty, "x lists \(songs), s names \(String(describing: album)); \(problems)")
        #expect(!changes, "the editor holds changes nobody made")
        await #expect(throws: Never.self) { try await editor.save() }
        await #expect(throws: Never.self) { try await view.save() }
        await f.close()
    }

    /// Refreshes x in `editor`: x is gone, a2 lists nothing, no relationship disagrees.
    private func expectLetGo(_ editor: ObjectContext, _ o: ConstraintTests.Objects, mergeChanges: Bool) async throws {
        let (gone, a2Albums, problems) = await editor.perform { c in
            c.refresh(c.object(with: o.x), mergeChanges: mergeChanges)
            return ((try? c.existingObject(with: o.x)) == nil, c.object(with: o.a2, as: Artist.self).albums.map(\.objectID),
                    relationshipDisagreements(c))
        }
        #expect(gone, "x is still shown")
        #expect(a2Albums.isEmpty, "a2 lists \(a2Albums)")
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test("a list whose base lets go of an object refreshed away takes the parent's other changes under its own, and says so",
          arguments: [true, false])
    func listMergedWhenBaseLetsGo(mergeChanges: Bool) async throws {
        let f = try await ChildFixture(parent: "view", child: "editor")
        let (o, view, editor) = (f.objects, f.parent, f.child)
        // a1 lists x and y.
        await view.perform { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a1, as: Artist.self) }
        try await view.save()
        // The editor reads x and moves y to a2: a1 lists x, a change of its own.
        await editor.perform { c in
            _ = c.object(with: o.x, as: Album.self).title
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
        }
        // The view deletes x (and its song) and gives a1 a new album w: a1 lists y and w there.
        let w = await view.perform { c -> ObjectID in
            c.delete(c.object(with: o.s))
            c.delete(c.object(with: o.x))
            let w = c.insert(Album.self)
            w.albumID = 77
            w.title = "New"
            w.artist = c.object(with: o.a1, as: Artist.self)
            return w.objectID
        }
        let changes = editor.objectsDidChange()
        await editor.perform { c in c.refresh(c.object(with: o.x), mergeChanges: mergeChanges) }
        let posted = try await postedChanges(changes, of: editor)
        // a1 lets go of x, as the view does, and takes w under its own change: it lists w.
        let (albums, problems) = await editor.perform { c in
            (c.object(with: o.a1, as: Artist.self).albums.map(\.objectID), relationshipDisagreements(c))
        }
        #expect(albums == [w], "a1 lists \(albums)")
        #expect(problems.isEmpty, "\(problems)")
        #expect(posted.contains { reported($0).contains(o.a1) }, "a1's change is reported: \(posted)")
        await #expect(throws: Never.self) { try await editor.save() }
        await #expect(throws: Never.self) { try await view.save() }
        #expect(f.store.currentGeneration.value(o.a1, "albums") == .objects([w]))
        await f.close()
    }
}
