import Foundation
import Testing
@testable import Strata

/// An object another context deleted while this one held changes to it, kept under the
/// merge policy `error` for the next save to report: once those changes are gone — undone
/// one by one, or rolled back — nothing keeps it, and it is deleted here too, as a merge
/// deletes an object without changes. (With its last change undone by hand it stayed alive
/// through a rollback: the context showed an album the store had deleted, naming an artist
/// that no longer listed it, and its saves never mentioned it.)
@Suite struct DeletedInConflictTests {
    enum Undoing: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// The change that related a new song to the album goes with the song.
        case byHand
        /// Then a rollback.
        case byHandThenRollback
        /// A rollback alone.
        case rollback
        var testDescription: String { rawValue }
    }

    @Test("an object deleted elsewhere goes once the changes that kept it are gone", arguments: Tier.allCases, Undoing.allCases)
    func goesWithItsLastChange(tier: Tier, undoing: Undoing) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        // Y (of A2 here, once saved) gets a new song here; elsewhere it is deleted.
        await f.context.perform { c in
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
        }
        try await f.saveThrough()
        let song = await f.context.perform { c in
            let song = c.insert(Song.self)
            song.songID = UUID()
            song.title = "new"
            song.milliseconds = 1
            song.album = c.object(with: o.y, as: Album.self)
            return song.objectID
        }
        let (_, save) = try await f.saveElsewhere { c in c.delete(c.object(with: o.y, as: Album.self)) }
        let conflicts = await f.context.merge(save)
        #expect(conflicts.map(\.object) == [o.y], "the deletion of an album changed here is a conflict")
        let (alive, problems) = await f.context.perform { c in
            switch undoing {
            case .byHand, .byHandThenRollback:
                c.delete(c.object(with: song))
                if undoing == .byHandThenRollback { c.rollback() }
            case .rollback:
                c.rollback()
            }
            return ((try? c.existingObject(with: o.y)) != nil, relationshipDisagreements(c))
        }
        #expect(!alive, "Y is deleted here too")
        #expect(problems.isEmpty, "\(problems)")
        let hasChanges = await f.context.perform { c in c.hasChanges }
        #expect(!hasChanges)
        try await f.saveThrough()
        #expect(f.generation.integrityProblems().isEmpty)
        await f.close()
    }
}
