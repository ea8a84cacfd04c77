import Foundation
import Testing
@testable import Strata

extension ConstraintTests {
    /// What `verify` reads: a to-many list holding an object twice (only a change set that
    /// skips the final constraint pass could commit one) is an integrity problem.
    @Test("the integrity check reports a to-many list that holds an object twice")
    func integrityReportsDuplicateMembers() async throws {
        let directory = TemporaryDirectory("constraint-duplicate-member")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let artist = store.allocateObjectIDs(for: "Artist")[0]
        let album = store.allocateObjectIDs(for: "Album")[0]
        var changes = ChangeSet(inserted: [
            Songbook.artist(artist, artistID: 1, name: "A", albums: [album, album]),
            Songbook.album(album, albumID: 1, artist: artist),
        ])
        changes.constraintsChecked = true
        try await store.commit(changes)
        let problems = store.currentGeneration.integrityProblems()
        #expect(problems.contains { $0.object == artist && $0.key == "albums" && $0.message.contains("twice") }, "\(problems)")
        await store.close()
    }
}
