import Dispatch
import Foundation
import Testing
@testable import Strata

/// A save to the store whose merge policy keeps the store's value of a relationship
/// (`storeWins`, as a stack's writer saves again after a conflict), with another commit
/// merged while the save waits to be made durable: the merge (its policy `error`, keeping
/// pending values) keeps the other side in step with the value the save sent, and once the
/// store's value is kept, the other side follows that instead — both sides in step,
/// nothing left pending.
@Suite struct StoreWinsInFlightTests {
    /// Holds the journal's next sync once armed, until released.
    final class SyncHold: Sendable {
        private let armed = Locked(false)
        let reached = DispatchSemaphore(value: 0)
        private let release = DispatchSemaphore(value: 0)

        func arm() { armed.withLock { $0 = true } }
        func open() { release.signal() }

        func hook(_ call: FileCall) {
            guard call == .sync, armed.withLock({ armed in defer { armed = false }; return armed }) else { return }
            reached.signal()
            _ = release.wait(timeout: .now() + .seconds(30 * TestTiming.slowdown))
        }
    }

    /// A store at `.full` in `directory` whose syncs `hold` can stop, and the hold.
    static func storeHoldingSyncs(in directory: TemporaryDirectory) throws -> (Store, SyncHold) {
        let hold = SyncHold()
        let io = HookedFileIO(wrapping: POSIXFileIO()) { hold.hook($0) }
        let store = try Store.create(at: directory.appending("store.strata"), schema: Fixtures.songbook,
                                     configuration: Store.Configuration(durability: .full, fileIO: io))
        return (store, hold)
    }

    @Test("a to-one the store kept, merged while the save was in flight, leaves the other side in step and nothing pending")
    @MainActor
    func mergedWhileInFlight() async throws {
        let directory = TemporaryDirectory("strata-store-wins-in-flight")
        defer { directory.remove() }
        let (store, hold) = try Self.storeHoldingSyncs(in: directory)
        let o = try await seedSongbook(store)
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        // On the main actor, so that its save waits for durability without holding the
        // context: the merge below runs while the save is in flight.
        let context = ObjectContext(coordinator: coordinator, executor: .main, name: "editor")
        let commits = store.commits()
        await context.perform { c in o.takeAlbumX(in: c) }
        // Meanwhile another context gives x to a3.
        let other = ObjectContext(coordinator: coordinator, name: "other")
        await other.perform { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a3, as: Artist.self) }
        try await other.save()
        let theirs = try #require(await firstElement(of: commits, timeout: .seconds(10)))

        hold.arm()
        let saving = Task { @MainActor in try await context.save(mergePolicy: .storeWins) }
        #expect(await signalled(hold.reached), "the save reached its sync")
        // Merged while the save is in flight: x's pending (sent) value stays, so a3 does not
        // list x here — in step with the value sent.
        await context.perform { c in _ = c.merge(theirs) }
        hold.open()
        _ = try await withTimeout(30, "the save") { try await saving.value }

        #expect(store.currentGeneration.value(o.x, "artist") == .object(o.a3))
        #expect(store.currentGeneration.value(o.a3, "albums") == .objects([o.x]))
        let shown = await context.perform { c in o.albumX(in: c) }
        #expect(shown.artist == o.a3, "x shows the artist the store kept")
        #expect(shown.title == "retitled")
        #expect(shown.a3 == [o.x], "a3 lists x, as x refers to it")
        #expect(shown.a1 == [], "a1 lists nothing")
        #expect(!shown.pending, "nothing is pending")
        await store.close()
    }

    /// The same seen from a child that follows the context (a stack's view under its
    /// writer), which made the change and saved it into the context: it followed the merge
    /// made while the save was in flight, where a3 did not list x, so once the store kept x
    /// on a3 it shows x on a3 and a3 listing x too. (It was told only of x: a3 went on
    /// without it, and the child's next save of a3 sent the stale list.)
    @Test("a child following the context sees both sides of a to-one the store kept")
    @MainActor
    func childFollowingSeesBothSides() async throws {
        let f = try await KeptDeletionInFlightTests.InFlight()
        defer { f.directory.remove() }
        let (store, o) = (f.store, f.o)
        let (child, _) = try await f.followingChild()
        await child.perform { c in o.takeAlbumX(in: c) }
        try await child.save()
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        await other.perform { c in c.object(with: o.x, as: Album.self).artist = c.object(with: o.a3, as: Artist.self) }
        try await other.save()
        let theirs = try #require(await firstElement(of: f.commits, timeout: .seconds(10)))

        _ = try await f.saveMerging(theirs) { _ in () }
        #expect(store.currentGeneration.value(o.x, "artist") == .object(o.a3))
        let inStep = await waitUntil(child, "the child to show x on a3 and a3 listing it", timeout: .seconds(5), reportingTimeout: false) { c in
            let shown = o.albumX(in: c)
            return shown.artist == o.a3 && shown.a3 == [o.x] && shown.a1 == []
        }
        let (shown, problems) = await child.perform { c in (o.albumX(in: c), relationshipDisagreements(c)) }
        #expect(inStep, "x on a3, listed by a3 (shown: \(shown))")
        #expect(shown.title == "retitled")
        #expect(!shown.pending, "nothing is pending")
        #expect(problems.isEmpty, "\(problems)")
        await store.close()
    }
}
