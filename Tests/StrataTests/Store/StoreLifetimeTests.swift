import Foundation
import Testing
@testable import Strata

/// A store closed and dropped lets go of its journal, its generations and its files; a
/// generation nobody holds any more is freed while the store stays open.
@Suite struct StoreLifetimeTests {
    /// The box of a generation's ordered index of `Artist.name`: replaced by each commit that
    /// changes an artist, so it lives exactly as long as the generations that share it.
    static func nameIndex(of generation: Generation) -> WeakReference<Locked<SortedIndex?>> {
        let entity = generation.schema.entityIndex(named: "Artist")!
        let attribute = generation.schema.entities[entity].propertyIndex(named: "name")!
        #expect(generation.orderedIndex(entity: entity, attribute: attribute) != nil)
        return WeakReference(generation.sortedIndexes[entity][attribute])
    }

    /// A commit renaming an artist.
    static func rename(_ id: ObjectID, to name: String, in store: Store) async throws {
        let row = try #require(store.currentGeneration.object(id))
        let index = try #require(store.schema.entity(named: "Artist")?.propertyIndex(named: "name"))
        try await store.commit(ChangeSet(author: "test", updated: [
            ObjectUpdate(id: id, baseVersion: row.version, baseValues: row.values, changes: [PropertyChange(index: index, value: .string(name))]),
        ]))
    }

    @Test("a generation nobody holds is freed, and one held or pinned lives until let go")
    func oldGenerationsAreFreed() async throws {
        let directory = TemporaryDirectory("strata-store-lifetime")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let o = try await seedSongbook(store)
        let coordinator = Coordinator(store: store)
        let context = ObjectContext(coordinator: coordinator, name: "pinned")

        var held: Generation? = store.currentGeneration
        let first = Self.nameIndex(of: held!)
        await context.perform { c in _ = c.pinQueryGeneration() }
        let pinned = Self.nameIndex(of: store.currentGeneration)  // the generation the context pinned
        try await Self.rename(o.a1, to: "second", in: store)
        let second = Self.nameIndex(of: store.currentGeneration)
        try await Self.rename(o.a1, to: "third", in: store)

        #expect(!first.isGone, "a generation someone holds was freed")
        #expect(!pinned.isGone, "a pinned generation was freed")
        #expect(second.isGone, "a generation nobody holds lives on")
        held = nil
        await context.perform { c in c.unpinQueryGeneration() }
        #expect(first.isGone && pinned.isGone, "a generation let go lives on")
        _ = held
        await store.close()
    }

    @Test("a store closed and dropped lets go of its journal and generations and closes its files")
    func closedStoreIsFreed() async throws {
        let directory = TemporaryDirectory("strata-store-lifetime")
        defer { directory.remove() }
        var store: Store? = try StoreTesting.create(in: directory, durability: .full)
        let o = try await seedSongbook(store!)
        try await Self.rename(o.a1, to: "renamed", in: store!)
        _ = try await store!.compact()
        let reference = WeakReference(store), journal = WeakReference(store!.journal)
        let generation = Self.nameIndex(of: store!.currentGeneration)
        #expect(!openDescriptors(under: directory.path).isEmpty, "precondition: the open store has files open")
        await store!.close()
        #expect(openDescriptors(under: directory.path).isEmpty, "the closed store still has \(openDescriptors(under: directory.path)) open")
        store = nil
        #expect(reference.isGone, "something else holds the closed store")
        #expect(generation.isGone, "the closed store's generation outlived it")
        // The block on the journal's queue that closed it holds it until the block returns,
        // which may be after `close()` resumed: freed asynchronously, by design; polled for,
        // up to a hard deadline.
        #expect(await eventually { journal.isGone }, "the closed store's journal outlived it")
    }

    @Test("a store dropped without closing closes its files")
    func droppedStoreClosesFiles() async throws {
        let directory = TemporaryDirectory("strata-store-lifetime")
        defer { directory.remove() }
        var store: Store? = try StoreTesting.create(in: directory, durability: .full)
        let o = try await seedSongbook(store!)
        try await Self.rename(o.a1, to: "renamed", in: store!)
        let reference = WeakReference(store), journal = WeakReference(store!.journal)
        #expect(!openDescriptors(under: directory.path).isEmpty, "precondition: the open store has files open")
        store = nil
        #expect(reference.isGone, "something else holds the dropped store")
        // The journal's writer holds the journal while it runs (it may poll briefly for the
        // next append after a batch): freed asynchronously, by design; polled for, up to a
        // hard deadline. Its deinit closes its files.
        #expect(await eventually { journal.isGone }, "the dropped store's journal outlived it")
        #expect(openDescriptors(under: directory.path).isEmpty, "the dropped store left \(openDescriptors(under: directory.path)) open")
        // Its lock went with it: the store opens again.
        let reopened = try StoreTesting.open(in: directory)
        #expect(reopened.currentGeneration.object(o.a1)?.values[1] == .string("renamed"))
        await reopened.close()
    }

    /// Nothing can commit to a store that is gone: its did-commit streams end, as a
    /// coordinator's did-save stream ends when the coordinator goes away.
    @Test("the did-commit streams of a store dropped without closing end")
    func droppedStoreEndsCommits() async throws {
        let directory = TemporaryDirectory("strata-store-lifetime")
        defer { directory.remove() }
        var store: Store? = try StoreTesting.create(in: directory)
        let commits = store!.commits()
        try await seedSongbook(store!)
        let reference = WeakReference(store)
        store = nil
        #expect(reference.isGone, "something else holds the dropped store")
        let ended = await returns(within: .seconds(30)) {
            var count = 0
            for await _ in commits { count += 1 }
            return count == 1
        }
        #expect(ended, "the did-commit stream of a dropped store never ends (or missed its commit)")
    }
}
