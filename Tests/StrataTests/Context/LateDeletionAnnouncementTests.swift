import Foundation
import Testing
@testable import Strata

/// A parent's deletion it never committed, announced to a following child after the parent
/// has told the child it dropped it. Under `hybrid` the writer announces what its merge's
/// delete rules took (an album an import gave to an artist whose deletion the writer holds:
/// the artist's cascade takes it) on its change stream; when its save is then refused, the
/// stack tells the view directly that the writer dropped everything, and that can reach the
/// view first. The late announcement made the album a tombstone for good: the writer's next
/// announcement (the rollback, bringing both back) relisted it on the artist while it stayed
/// deleted in the view — `hybrid` seed 1740 of the soak. The tombstone of a deletion the
/// parent only holds comes back on the parent's word that it shows the object again.
@Suite struct LateDeletionAnnouncementTests {
    @Test("a parent's pending deletion announced after the parent dropped it: the object comes back with the parent's next word")
    func deletionAnnouncedAfterTheParentDroppedIt() async throws {
        let directory = TemporaryDirectory("strata-late-deletion")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let o = try await seedSongbook(store)
        let coordinator = Coordinator(store: store, name: "main", modelClasses: [Artist.self, Album.self, Song.self])
        let seeder = ObjectContext(coordinator: coordinator, name: "seed")
        await seeder.perform { c in c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self) }
        try await seeder.save()
        let writer = ObjectContext(coordinator: coordinator, executor: .privateQueue("writer"), name: "writer")
        let view = ObjectContext(parent: writer, executor: .privateQueue("view"), name: "view")
        await view.perform { c in
            _ = c.object(with: o.a2, as: Artist.self).albums
            _ = c.object(with: o.y, as: Album.self).artist
        }
        let shown = store.currentGeneration
        let (a2Row, yRow) = (try #require(shown.object(o.a2)).values, try #require(shown.object(o.y)).values)

        // The writer's word that it dropped both (it shows the store's state), then the late
        // announcement of the album's deletion, then the rollback's: both back as they were.
        await view.perform { c in c.parentChanged { $0.parentDropped([o.a2, o.y]) } }
        await view.perform { c in _ = c.merge(DidSave(transaction: nil, author: "writer", deleted: [o.y])) }
        await view.perform { c in
            _ = c.merge(DidSave(transaction: nil, author: "writer", inserted: [o.a2, o.y], values: [o.a2: a2Row, o.y: yRow]))
        }
        let (yDeleted, yArtist, a2Albums, problems, pending) = await view.perform { c in
            (c.object(with: o.y).isDeleted, c.object(with: o.y, as: Album.self).artist?.objectID,
             c.object(with: o.a2, as: Artist.self).albums.map(\.objectID), relationshipDisagreements(c), c.hasChanges)
        }
        #expect(!yDeleted && yArtist == o.a2 && a2Albums == [o.y], "y deleted \(yDeleted), artist \(String(describing: yArtist)), a2 lists \(a2Albums)")
        #expect(problems.isEmpty && !pending, "\(problems), pending \(pending)")
        await store.close()
    }
}
