import Foundation
import Testing
@testable import Strata

/// Changes to an object another context deleted are a conflict, never dropped without a
/// word: in a merge, and in a child's save into a parent that deleted the object — as the
/// store reports an update of an object deleted since it was read.
@Suite struct DeletionConflictTests {
    typealias Pair = ContextMergeTests.Pair

    @Test("a merged deletion of an object with changes here is a conflict resolved by the merge policy",
          arguments: [MergePolicy.error, .storeWins, .contextWins])
    func mergedDeletionOfChangedObject(policy: MergePolicy) async throws {
        let p = try Pair()
        let o = try await seedSongbook(p.store)
        await p.a.setMergePolicy(policy)
        await p.a.perform { c in c.object(with: o.a2, as: Artist.self).name = "ours" }
        let saves = p.b.didSave()
        await p.b.perform { c in c.delete(c.object(with: o.a2, as: Artist.self)) }
        try await p.b.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        let conflicts = await p.a.merge(save)
        #expect(conflicts.map(\.object) == [o.a2] && conflicts.first?.key == nil, "\(conflicts)")
        let (deleted, pending) = await p.a.perform { c in (c.object(with: o.a2).isDeleted, c.hasChanges) }
        if policy == .error {
            #expect(!deleted && pending, "under error the change stays for the next save to report")
            let refused = await #expect(throws: StoreError.self) { try await p.a.save() }
            #expect(refused?.code == .conflict)
            let (afterRollback, stillPending) = await p.a.perform { c in
                c.rollback()
                return (c.object(with: o.a2).isDeleted, c.hasChanges)
            }
            #expect(afterRollback && !stillPending, "a rollback lets the deletion win")
        } else {
            #expect(deleted && !pending, "the deletion wins; the conflict was reported")
        }
        #expect(p.store.currentGeneration.object(o.a2) == nil)
        await p.close()
    }

    @Test("a child's save changing an object its parent deleted since is a conflict", arguments: [MergePolicy.error, .storeWins])
    func childSaveOfObjectDeletedInParent(policy: MergePolicy) async throws {
        let f = try ContextFixture(.root)
        let o = try await seedSongbook(f.store)
        let child = ObjectContext(parent: f.context, name: "child")
        await child.setMergePolicy(policy)
        await child.perform { c in c.object(with: o.a2, as: Artist.self).name = "child's" }
        await f.context.perform { c in c.delete(c.object(with: o.a2, as: Artist.self)) }
        if policy == .error {
            let refused = await #expect(throws: StoreError.self) { try await child.save() }
            #expect(refused?.code == .conflict, "\(String(describing: refused))")
            #expect(refused?.conflicts.first?.object == o.a2 && refused?.conflicts.first?.key == nil)
        } else {
            try await child.save()
            let (deleted, pending) = await child.perform { c in (c.object(with: o.a2).isDeleted, c.hasChanges) }
            #expect(deleted && !pending, "the child's object follows the parent's deletion")
        }
        let parentDeleted = await f.context.perform { c in c.deletedObjects.map(\.objectID) == [o.a2] }
        #expect(parentDeleted, "the parent's deletion stands")
        await f.close()
    }
}
