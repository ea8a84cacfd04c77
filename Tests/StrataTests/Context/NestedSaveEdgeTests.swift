import Foundation
import Testing
@testable import Strata

/// Waits for `semaphore` off the cooperative pool, for at most `seconds`; returns whether it
/// was signalled. The default limit is long for the reason ``eventually(within:_:)``'s is: the
/// task that signals may wait tens of seconds for one of the pool's two threads while the whole
/// suite runs (10 s once failed so, in a run where tests that start together all took 30 s).
/// A semaphore already signalled returns at once.
func signalled(_ semaphore: DispatchSemaphore, within seconds: Double = 60) async -> Bool {
    await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        DispatchQueue.global().async {
            continuation.resume(returning: semaphore.wait(timeout: .now() + seconds * Double(TestTiming.slowdown)) == .success)
        }
    }
}

/// A child's save into its parent, and what the two contexts see around it: a change made
/// while the save is in flight survives it, even one that sets a key back to its value from
/// before the save; the parent finds by unique key what the child inserted into it.
@Suite struct NestedSaveEdgeTests {
    @Test("a change made while a child's save is in flight, back to the value from before the save, is kept and pending")
    func revertDuringInFlightSave() async throws {
        let directory = TemporaryDirectory("strata-nested-save-edge")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let captured = DispatchSemaphore(value: 0)
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self], observer: { event in
            if event.context == "child" && event.operation == .save { captured.signal() }
        })
        let objects = try await seedSongbook(store)
        let root = ObjectContext(coordinator: coordinator, name: "root")
        let child = ObjectContext(parent: root, name: "child")
        await child.perform { $0.object(with: objects.a1, as: Artist.self).name = "Changed" }
        // Keep the parent busy so that the child's save waits, captured, while the child edits.
        let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let blocker = Task { await root.perform { _ in entered.signal(); _ = release.wait(timeout: .now() + .seconds(30 * TestTiming.slowdown)) } }
        #expect(await signalled(entered))
        let saving = Task { try await child.save() }
        #expect(await signalled(captured))
        await child.perform { $0.object(with: objects.a1, as: Artist.self).name = "One" }
        release.signal()
        _ = try await withTimeout(30, "the child's save") { try await saving.value }
        await blocker.value
        let (name, pending) = await child.perform { c in (c.object(with: objects.a1, as: Artist.self).name, c.hasChanges) }
        #expect(await root.perform { $0.object(with: objects.a1, as: Artist.self).name } == "Changed")
        #expect(name == "One", "the change made during the save was overwritten")
        #expect(pending, "the change made during the save is not pending")
        await store.close()
    }

    @Test("a parent finds by unique key an object its child saved into it, and finding or creating it adds no duplicate")
    func parentFindsChildInsert() async throws {
        let fixture = try ContextFixture(.child)
        let root = fixture.ancestors[0]
        await fixture.context.perform { c in
            let artist = c.insert(Artist.self)
            artist.artistID = 42
            artist.name = "child"
        }
        try await fixture.context.save()
        let found = await root.perform { $0.find(Artist.self, uniqueKey: .int(42))?.objectID }
        #expect(found != nil, "find(uniqueKey:) misses the child's insert")
        let same = await root.perform { $0.findOrCreate(Artist.self, uniqueKey: .int(42)).objectID }
        #expect(same == found)
        try await root.save()
        #expect(fixture.generation.objects(of: "Artist").filter { $0.values[0] == .int(42) }.count == 1)
        await fixture.close()
    }

    @Test("after a parent's rollback, a child's next save of a key it saved before is a conflict, not a silent overwrite")
    func childSaveAfterParentRollback() async throws {
        let f = try ContextFixture(.root)
        let objects = try await seedSongbook(f.store)
        let child = ObjectContext(parent: f.context, name: "child")
        await child.perform { $0.object(with: objects.a1, as: Artist.self).name = "Child" }
        try await child.save()
        await f.context.rollback()
        let parentName = await f.context.perform { $0.object(with: objects.a1, as: Artist.self).name }
        #expect(parentName == "One")
        await child.perform { $0.object(with: objects.a1, as: Artist.self).name = "Again" }
        let error = await #expect(throws: StoreError.self) { try await child.save() }
        #expect(error?.code == .conflict)
        let conflict = try #require(error?.conflicts.first)
        #expect(conflict.base == .string("Child") && conflict.theirs == .string("One"))
        // Refreshing the child shows the parent's state again; the save then goes through.
        await child.perform { c in
            c.refresh(c.object(with: objects.a1, as: Artist.self), mergeChanges: false)
            c.object(with: objects.a1, as: Artist.self).name = "Again"
        }
        try await child.save()
        let saved = await f.context.perform { $0.object(with: objects.a1, as: Artist.self).name }
        #expect(saved == "Again")
        await f.close()
    }
}
