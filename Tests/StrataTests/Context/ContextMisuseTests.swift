import Foundation
import Testing
@testable import Strata

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// API misuse: each a specific typed error, and a failed save leaves the journal byte-identical.
@Suite struct ContextMisuseTests {
    @Test("wrong types, unknown keys, dangling references and deleted objects are typed errors", arguments: Tier.allCases)
    func refusedChanges(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        await f.context.perform { c in
            let artist = c.object(with: o.a1, as: Artist.self)
            func code(_ body: () throws -> Void) -> StoreError.Code? {
                do {
                    try body()
                    return nil
                } catch {
                    return (error as? StoreError)?.code
                }
            }
            #expect(code { try artist.setValue(.string("x"), forKey: "artistID") } == .invalidValue)
            #expect(code { try artist.setValue(.int(1), forKey: "nickname") } == .invalidValue)
            #expect(code { try artist.setValue(.object(o.s), forKey: "albums") } == .invalidValue, "a to-many needs a list")
            #expect(code { try artist.setValue(.objects([o.s]), forKey: "albums") } == .invalidValue, "songs are not albums")
            #expect(code { try artist.setValue(.objects([o.x, o.x]), forKey: "albums") } == .invalidValue, "no duplicates")
            let ghost = ObjectID(entity: "Album", number: 999)
            #expect(code { try artist.setValue(.objects([ghost]), forKey: "albums") } == .objectNotFound, "no such object")
            #expect(artist.albums.map(\.objectID) == [o.x], "refused changes change nothing")
            let song = c.object(with: o.s, as: Song.self)
            c.delete(song)
            #expect(code { try song.setValue(.string("t"), forKey: "title") } == .objectDeleted)
            #expect(code { try c.object(with: o.y).setRelatedObjects([song], forKey: "songs") } == .objectDeleted)
        }
        await f.close()
    }

    @Test("an object of another context is refused")
    @MainActor func crossContext() async throws {
        let f = try ContextFixture(.mainRoot)
        let o = try await seedSongbook(f.store)
        let other = ObjectContext(coordinator: f.coordinator, executor: .main, name: "other")
        // The compiler keeps objects in their context; a box it is told not to check gets one out.
        let box = UncheckedBox()
        other.performAndWait { c in box.object = c.object(with: o.a2) }
        let code = f.context.performAndWait { c -> StoreError.Code? in
            do throws(StoreError) {
                try c.object(with: o.x).setRelatedObject(box.object, forKey: "artist")
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code == .wrongContext)
        box.object = nil
        await f.close()
    }

    @Test("saving after the store is closed throws closed and keeps the changes")
    func saveAfterClose() async throws {
        let f = try ContextFixture(.root)
        let o = try await seedSongbook(f.store)
        await f.context.perform { c in c.object(with: o.a1, as: Artist.self).name = "late" }
        await f.store.close()
        let error = await #expect(throws: StoreError.self) { try await f.context.save() }
        #expect(error?.code == .closed)
        #expect(await f.context.hasChanges)
        f.directory.remove()
    }

    @Test("a failed fsync fails the save and poisons later ones; the context keeps its changes")
    func poisonedStore() async throws {
        let faults = FaultInjectingFileIO(wrapping: InMemoryFileIO())
        let store = try Store.create(at: "/store", schema: Fixtures.songbook,
                                     configuration: Store.Configuration(durability: .full, fileIO: faults))
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        let context = ObjectContext(coordinator: coordinator, name: "writer")
        await context.perform { c in c.findOrCreate(Artist.self, uniqueKey: .int(1)).name = "first" }
        try await context.save()
        faults.inject(.init(callIndex: 0, kind: .error(EIO), persistence: .forever, operations: [.sync]))
        await context.perform { c in c.findOrCreate(Artist.self, uniqueKey: .int(1)).name = "second" }
        let first = await #expect(throws: StoreError.self) { try await context.save() }
        #expect(first?.code == .poisoned || first?.code == .io, "\(String(describing: first))")
        let (pending, name) = await context.perform { c in (c.hasChanges, c.findOrCreate(Artist.self, uniqueKey: .int(1)).name) }
        #expect(pending && name == "second", "the failed save left the context's changes in place")
        let second = await #expect(throws: StoreError.self) { try await context.save() }
        #expect(second?.code == .poisoned)
        #expect(store.currentGeneration.value(ObjectID(entity: "Artist", number: 1), "name") == .string("first"))
        await store.close()
    }

    @Test("a save refused by the store changes nothing in the context", arguments: [Tier.root, .child])
    func refusedSaveKeepsContext(tier: Tier) async throws {
        let f = try ContextFixture(tier, durability: .relaxed)
        let o = try await seedSongbook(f.store)
        // A commit the context cannot see coming: the unique value taken after it read.
        await f.context.perform { c in c.object(with: o.a2, as: Artist.self).artistID = 500 }
        let id = f.store.allocateObjectIDs(for: "Artist")[0]
        try await f.store.commit(ChangeSet(inserted: [Songbook.artist(id, artistID: 500)]))
        let before = StoreState(f.store)
        let error = await #expect(throws: StoreError.self) { try await f.saveThrough() }
        #expect(error?.code == .uniqueViolation)
        #expect(StoreState(f.store) == before)
        let pending = await f.context.perform { c in c.object(with: o.a2, as: Artist.self).artistID }
        #expect(pending == 500 || tier == .child, "the root keeps its unsaved change")
        await f.close()
    }
}

/// Smuggles an object out of its context, as only unchecked code can. Both contexts of the
/// test run on the main actor, which is what keeps the access serial.
final class UncheckedBox: @unchecked Sendable {
    var object: ManagedObject?

    /// A model class whose name is no entity of the schema (a class named apart from its
    /// entity, as `SongMO`) traps naming the class, the entity it models and the way to map
    /// it (it named only the entity, and not what to do).
    @Test("a model class of no entity traps, naming the class and entityName")
    func classOfNoEntityTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            final class Tune: ManagedObject {}
            let f = try! ContextFixture(.root, label: "strata-trap-no-entity")
            await f.context.perform { c in _ = c.insert(Tune.self) }
        }
        TemporaryDirectory.removeAll(labelled: "strata-trap-no-entity")
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("Tune models entity \"Tune\", which schema \"Songbook\" does not have"), "\(stderr.suffix(600))")
        #expect(stderr.contains("override `class var entityName` in Tune"), "\(stderr.suffix(600))")
    }
}
