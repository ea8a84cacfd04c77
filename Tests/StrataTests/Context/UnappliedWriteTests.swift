import Foundation
import Testing
@testable import Strata

/// A typed property (or the subscript) set on an object another context deleted, or to an
/// object another context deleted, cannot throw and must not trap — the deletion is no
/// programmer error, it raced the user's edit. The write changes nothing, the next save
/// throws its error and saves nothing, and the save after that saves the rest.
@Suite struct UnappliedWriteTests {
    @Test("writes another context's deletion made impossible are reported by the next save, which saves nothing; the next one saves the rest")
    func reportedByTheNextSave() async throws {
        let p = try ContextMergeTests.Pair()
        let o = try await seedSongbook(p.store)
        await p.a.perform { c in _ = c.object(with: o.a2, as: Artist.self).name }  // held, so a tombstone once deleted
        let saves = p.b.didSave()
        try await p.b.perform { c in
            c.delete(c.object(with: o.a2))
            c.delete(c.object(with: o.a3))
            try await c.save()
        }
        let deletion = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await p.a.merge(deletion)

        let error = await p.a.perform { c -> StoreError? in
            let album = c.object(with: o.y, as: Album.self)
            let gone = c.object(with: o.a2, as: Artist.self)
            album.title = "Renamed"
            album.artist = gone  // to an object deleted elsewhere
            gone.name = "Renamed too"  // an object deleted elsewhere
            c.object(with: o.x)["artist"] = .object(o.a3)  // to an object the view does not have
            #expect(album.artist == nil, "a write that could not be made changed the object")
            #expect(c.updatedObjects.map(\.objectID) == [o.y])
            do throws(StoreError) {
                try await c.save()
                return nil
            } catch {
                return error
            }
        }
        let refused = try #require(error, "the save reported nothing")
        #expect(refused.code == .danglingReference)
        #expect(refused.object == o.y && refused.key == "artist")
        #expect(refused.message.hasSuffix("the change was not made (nor 2 more like it), and nothing was saved: the context's other changes are still pending, and saving again saves them"),
                "\(refused.message)")
        let title = try #require(p.store.schema.entity(named: "Album")?.propertyIndex(named: "title"))
        #expect(p.store.currentGeneration.object(o.y)?.values[title] != .string("Renamed"), "the refused save saved something")

        _ = try await p.a.perform { c in try await c.save() }
        let stored = try #require(p.store.currentGeneration.object(o.y))
        #expect(stored.values[title] == .string("Renamed"))
        #expect(p.store.currentGeneration.integrityProblems().isEmpty)
        await p.close()
    }

    @Test("a rollback forgets the writes that could not be made")
    func rollbackForgetsThem() async throws {
        let p = try ContextMergeTests.Pair()
        let o = try await seedSongbook(p.store)
        let saves = p.b.didSave()
        try await p.b.perform { c in
            c.delete(c.object(with: o.a2))
            try await c.save()
        }
        await p.a.merge(try #require(await firstElement(of: saves, timeout: .seconds(10))))
        let transaction = try await p.a.perform { c -> UInt64? in
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
            c.rollback()
            return try await c.save()
        }
        #expect(transaction == nil)
        await p.close()
    }

    @Test("a child's write to an object its parent deleted is reported by the child's save")
    func childSaveReportsThem() async throws {
        let p = try ContextMergeTests.Pair()
        let o = try await seedSongbook(p.store)
        let child = ObjectContext(parent: p.a, name: "editor")
        await child.perform { c in _ = c.object(with: o.a2, as: Artist.self).name }
        try await p.a.perform { c in
            c.delete(c.object(with: o.a2))
            try await c.save()
        }
        await child.perform { c in c.refresh(c.object(with: o.a2), mergeChanges: false) }
        let error = await child.perform { c -> StoreError? in
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
            do throws(StoreError) {
                try await c.save()
                return nil
            } catch {
                return error
            }
        }
        #expect(error != nil, "the child's save reported nothing")
        #expect([.danglingReference, .objectNotFound].contains(error?.code), "\(String(describing: error))")
        await p.close()
    }
}
