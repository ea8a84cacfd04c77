import Foundation
import Testing
@testable import Strata

/// A to-many list a child saves into its parent while the parent holds another member
/// (added there since the child read the list), and that a merge changes in the child
/// while the save is in flight (one of the members the child added is deleted): the child
/// ends with the list as the parent holds it, nothing pending. It once kept its own list
/// from during the save as a pending change over the parent's — without the parent's
/// member, which still named the album: the child showed the two sides apart, and its next
/// save took the member off the list (a stack's writer then had its save refused as an
/// inverse violation).
@Suite struct ListMergedDuringSaveTests {
    @Test("a list merged into a child while its save into the parent is in flight keeps the parent's members")
    func listMergedWhileSaveInFlight() async throws {
        let f = try await GatedWriter("strata-list-merged-during-save") { _, coordinator in
            let seeder = ObjectContext(coordinator: coordinator, name: "seed")
            let seeded = await seeder.perform { c in
                let album = c.insert(Album.self)
                album.albumID = 1
                album.title = "Y"
                let songs = (1...3).map { n in
                    let song = c.insert(Song.self)
                    song.songID = StoreTesting.uuid(n)
                    song.title = "S\(n)"
                    song.milliseconds = 1
                    return song.objectID
                }
                return (album: album.objectID, songs: songs)
            }
            try await seeder.save()
            return seeded
        }
        defer { f.directory.remove() }
        let (store, (album, songs), writer, view) = (f.store, f.seeded, f.writer, f.view)
        await view.perform { c in c.mergePolicy = .overwrite }  // its change to the deleted S3 is not refused
        // The view holds the album with no songs; then the writer gives it S1, which the view
        // does not see (it holds the album), and the view gives it S2 and S3.
        await view.perform { c in _ = c.object(with: album, as: Album.self).songs }
        await writer.perform { c in c.object(with: songs[0], as: Song.self).album = c.object(with: album, as: Album.self) }
        await view.perform { c in
            for song in songs[1...2] { c.object(with: song, as: Song.self).album = c.object(with: album, as: Album.self) }
        }
        // Another context deletes S3.
        let (_, theirs) = try await f.commitElsewhere { c in c.delete(c.object(with: songs[2])) }
        try await f.saveViewMerging(theirs) { _ in () }

        let inWriter = await writer.perform { c in Set(c.object(with: album, as: Album.self).songs.map(\.objectID)) }
        #expect(inWriter == Set(songs[0...1]))
        let (inView, pending, problems) = await view.perform { c in
            (Set(c.object(with: album, as: Album.self).songs.map(\.objectID)), c.hasChanges, relationshipDisagreements(c))
        }
        #expect(inView == Set(songs[0...1]), "the view lists S1 (the writer's) and S2")
        #expect(!pending, "the view made no change of its own after its save")
        #expect(problems.isEmpty, "\(problems)")
        await store.close()
    }
}
