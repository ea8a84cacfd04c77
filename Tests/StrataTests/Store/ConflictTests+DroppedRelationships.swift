import Foundation
import Testing
@testable import Strata

extension ConflictTests {
    @Test("a to-one change storeWins drops takes back the other side the save changed along with it (the new artist does not list the album)")
    func droppedToOneLetsTheNewSideGo() async throws {
        let directory = TemporaryDirectory("strata-conflict")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let o = try await Objects.commit(into: store)
        let base = store.currentGeneration
        // Theirs gives album X to A3; ours gives it to A2 (A1 lets go of it on both sides).
        try await store.commit(ChangeSet(author: "theirs", updated: [
            base.update(o.x, ["artist": .object(o.a3)]), base.update(o.a1, ["albums": .objects([])]),
            base.update(o.a3, ["albums": .objects([o.x])]),
        ]))
        let ours = ChangeSet(author: "ours", updated: [
            base.update(o.x, ["artist": .object(o.a2), "title": .string("Ours")]), base.update(o.a1, ["albums": .objects([])]),
            base.update(o.a2, ["albums": .objects([o.x])]),
        ], mergePolicy: .storeWins)
        let result = try await store.commit(ours)
        #expect(Set(result.resolvedConflicts.map(\.object)) == [o.x, o.a1], "\(result.resolvedConflicts)")
        let g = store.currentGeneration
        #expect(g.value(o.x, "artist") == .object(o.a3) && g.value(o.x, "title") == .string("Ours"))
        #expect(g.value(o.a2, "albums") == .objects([]), "A2 lists the album whose artist stayed A3")
        #expect(g.value(o.a3, "albums") == .objects([o.x]))
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        await store.close()
    }

    @Test("a to-one change storeWins drops takes back the other side the save changed along with it (the kept artist lists the album again)")
    func droppedToOneKeepsTheStoreSide() async throws {
        let directory = TemporaryDirectory("strata-conflict")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let o = try await Objects.commit(into: store)
        let base = store.currentGeneration
        // Theirs gives album X to A3. Ours takes X from its artist: from A1 as read before,
        // and from A3 as read after (a context that merged theirs into an object it held).
        try await store.commit(ChangeSet(author: "theirs", updated: [
            base.update(o.x, ["artist": .object(o.a3)]), base.update(o.a1, ["albums": .objects([])]),
            base.update(o.a3, ["albums": .objects([o.x])]),
        ]))
        let after = store.currentGeneration
        let ours = ChangeSet(author: "ours", updated: [
            base.update(o.x, ["artist": .null, "title": .string("Ours")]), base.update(o.a1, ["albums": .objects([])]),
            after.update(o.a3, ["albums": .objects([])]),
        ], mergePolicy: .storeWins)
        let result = try await store.commit(ours)
        #expect(Set(result.resolvedConflicts.map(\.object)) == [o.x, o.a1], "\(result.resolvedConflicts)")
        let g = store.currentGeneration
        #expect(g.value(o.x, "artist") == .object(o.a3) && g.value(o.x, "title") == .string("Ours"))
        #expect(g.value(o.a3, "albums") == .objects([o.x]), "A3 lost the album whose artist it stayed")
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        await store.close()
    }
}
