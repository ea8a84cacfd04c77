import Dispatch
import Foundation
import Testing
@testable import Strata

// MARK: - Model classes of the songbook schema

final class Artist: ManagedObject {
    @Managed("artistID") var artistID: Int
    @Managed("name") var name: String?
    @Managed("createdAt") var createdAt: Date
    @ToMany("albums") var albums: [Album]
}

final class Album: ManagedObject {
    @Managed("albumID") var albumID: Int
    @Managed("title") var title: String
    @Managed("rating") var rating: Double?
    @Managed("explicit") var explicit: Bool
    @ToOne("artist") var artist: Artist?
    @ToMany("songs") var songs: [Song]
}

final class Song: ManagedObject {
    @Managed("songID") var songID: UUID
    @Managed("title") var title: String
    @Managed("artwork") var artwork: Data?
    @Managed("milliseconds") var milliseconds: Int

    @ToOne("album") var album: Album?

    override func validateForSave() throws(StoreError) {
        if title == "forbidden" { throw validationError("this title is not allowed", key: "title") }
    }
}

// MARK: - Where a context under test sits

/// The tiers a context can sit in; behavioural tests run in each. (The stack presets are
/// compositions of these.)
enum Tier: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// A private-queue context on the coordinator.
    case root
    /// A main-actor context on the coordinator.
    case mainRoot
    /// A child of a root context.
    case child
    /// A child of a child of a root context.
    case grandchild

    var testDescription: String { rawValue }

    /// A context of this tier on `coordinator`, and its ancestors, nearest first.
    func contexts(on coordinator: Coordinator) -> (context: ObjectContext, ancestors: [ObjectContext]) {
        switch self {
        case .root:
            return (ObjectContext(coordinator: coordinator, name: "root"), [])
        case .mainRoot:
            return (ObjectContext(coordinator: coordinator, executor: .main, name: "main"), [])
        case .child:
            let root = ObjectContext(coordinator: coordinator, name: "root")
            return (ObjectContext(parent: root, name: "child"), [root])
        case .grandchild:
            let root = ObjectContext(coordinator: coordinator, name: "root")
            let child = ObjectContext(parent: root, name: "child")
            return (ObjectContext(parent: child, name: "grandchild"), [child, root])
        }
    }
}

/// A store, a coordinator and a context in a given tier, with the contexts above it.
struct ContextFixture {
    let directory: TemporaryDirectory
    let store: Store
    let coordinator: Coordinator
    /// The context under test.
    let context: ObjectContext
    /// Its ancestors, nearest first (empty for a root context).
    let ancestors: [ObjectContext]

    init(_ tier: Tier, durability: Durability = .none, validationRules: [ValidationRule] = [], label: String = "strata-context") throws {
        directory = TemporaryDirectory(label)
        store = try StoreTesting.create(in: directory, durability: durability)
        coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self], validationRules: validationRules)
        (context, ancestors) = tier.contexts(on: coordinator)
    }

    /// Saves the context and every ancestor, so that its changes reach the store.
    func saveThrough() async throws {
        try await context.save()
        for ancestor in ancestors { try await ancestor.save() }
    }

    /// The store's generation after everything settled.
    var generation: Generation { store.currentGeneration }

    func close() async {
        await store.close()
        directory.remove()
    }
}

/// A seeded songbook store with a root context and a child of it, both on private queues, and
/// another root context for what happens elsewhere.
struct ChildFixture {
    let directory: TemporaryDirectory
    let store: Store
    let objects: ConstraintTests.Objects
    let parent: ObjectContext
    let child: ObjectContext
    /// A root context named "import".
    let other: ObjectContext

    init(parent parentName: String, child childName: String, observer: ContextObserver? = nil, label: String = "strata-child") async throws {
        directory = TemporaryDirectory(label)
        store = try StoreTesting.create(in: directory, durability: .relaxed)
        objects = try await seedSongbook(store)
        let coordinator = Coordinator(store: store, name: "main", modelClasses: [Artist.self, Album.self, Song.self], observer: observer)
        parent = ObjectContext(coordinator: coordinator, executor: .privateQueue(parentName), name: parentName)
        child = ObjectContext(parent: parent, executor: .privateQueue(childName), name: childName)
        other = ObjectContext(coordinator: coordinator, executor: .privateQueue("import"), name: "import")
    }

    /// Expects the store's integrity, then closes the store and removes its directory.
    func close(sourceLocation: SourceLocation = #_sourceLocation) async {
        let problems = store.currentGeneration.integrityProblems()
        #expect(problems.isEmpty, "\(problems)", sourceLocation: sourceLocation)
        await store.close()
        directory.remove()
    }
}

/// Commits the standard songbook objects straight to the store.
@discardableResult
func seedSongbook(_ store: Store) async throws -> ConstraintTests.Objects {
    try await ConstraintTests.Objects.commit(into: store)
}

/// What `body` returns, or `false` if it has not returned within `timeout` (a hard timeout,
/// scaled to the build; `body` is cancelled then).
func returns(within timeout: Duration, _ body: @escaping @Sendable () async -> Bool) async -> Bool {
    await withTaskGroup(of: Bool.self) { group in
        group.addTask { await body() }
        group.addTask {
            try? await Task.sleep(for: timeout * TestTiming.slowdown)
            return false
        }
        let first = await group.next()!
        group.cancelAll()
        return first
    }
}

/// Waits until `condition` holds in `context`, re-checking after each of its
/// objects-did-change notifications, up to a hard timeout (recorded as an issue, unless
/// `reportingTimeout` is false).
@discardableResult
func waitUntil(
    _ context: ObjectContext, _ what: String, timeout: Duration = .seconds(10), reportingTimeout: Bool = true,
    _ condition: @escaping @Sendable (isolated ObjectContext) -> Bool, sourceLocation: SourceLocation = #_sourceLocation
) async -> Bool {
    let changes = context.objectsDidChange()
    if await context.perform({ condition($0) }) { return true }
    let held = await returns(within: timeout) {
        for await _ in changes {
            if await context.perform({ condition($0) }) { return true }
        }
        return false
    }
    if !held && reportingTimeout { Issue.record("timed out after \(timeout) waiting for \(what)", sourceLocation: sourceLocation) }
    return held
}

/// The first element of a stream, or `nil` if none arrives within `timeout`.
func firstElement<Element: Sendable>(of stream: AsyncStream<Element>, timeout: Duration) async -> Element? {
    await withTaskGroup(of: Element?.self) { group in
        group.addTask {
            var iterator = stream.makeAsyncIterator()
            return await iterator.next()
        }
        group.addTask {
            try? await Task.sleep(for: timeout * TestTiming.slowdown)
            return nil
        }
        let first = await group.next()!
        group.cancelAll()
        return first
    }
}

// MARK: - Both sides of every relationship

/// Every relationship of the objects `c` holds (alive ones, loaded if they were faults) whose
/// other side does not refer back, or that refers to a deleted object: empty when both sides
/// of every relationship agree in the context.
func relationshipDisagreements(_ c: isolated ObjectContext) -> [String] {
    var problems: [String] = []
    for object in c.registeredObjects where !object.isDeleted {
        for relationship in object.entity.relationships {
            for target in object[relationship.name].referencedObjects {
                let other = c.object(with: target)
                if other.isDeleted {
                    problems.append("\(object.objectID).\(relationship.name) refers to deleted \(target)")
                } else if !other[relationship.inverse].refers(to: object.objectID) {
                    problems.append("\(object.objectID).\(relationship.name) refers to \(target), whose \(relationship.inverse) is \(other[relationship.inverse])")
                }
            }
        }
    }
    return problems.sorted()
}

/// The alive objects of `c` that refer to an object `c` holds as deleted elsewhere which
/// names them back — a pair in step in this context whose one side learned of a deletion
/// while the other did not let go: empty in any context, however stale its reads. (An
/// object read at another moment than the deleted one, which that one does not name back,
/// is a stale read a context that does not follow its source keeps, as Core Data's does;
/// so is one its own deletion's rules did not reach for the same reason. A tombstone found
/// missing when a stale reference was followed is not counted either.)
func referencesToTombstones(_ c: isolated ObjectContext) -> [String] {
    var problems: [String] = []
    for object in c.registeredObjects where !object.isDeleted && object.isLoaded {
        for relationship in object.entity.relationships {
            for target in object[relationship.name].referencedObjects {
                guard let other = c.registeredObject(for: target), other.isDeletedElsewhere, !other.missingWhenLoaded, other.isLoaded,
                      other[relationship.inverse].refers(to: object.objectID) else { continue }
                let how = other.deletionSavedToParent ? "deleted by its own save into its parent" : "deleted elsewhere"
                problems.append("\(object.objectID).\(relationship.name) refers to \(target), \(how), which names it back")
            }
        }
    }
    return problems.sorted()
}

/// Whether `c` shows the object: it exists where the context reads it and is not deleted here.
func shows(_ c: isolated ObjectContext, _ id: ObjectID) -> Bool {
    guard let object = try? c.existingObject(with: id) else { return false }
    return !object.isDeleted
}

// MARK: - A save in flight

/// A child's save held in flight: its parent's queue is blocked while the child captures its
/// changes and something else happens meanwhile. Give ``observer`` to the coordinator.
struct SaveInFlight {
    let observer: ContextObserver
    private let captured: AsyncStream<Void>

    /// Watches the saves of the context named `child`.
    init(of child: String) {
        let (captured, continuation) = AsyncStream.makeStream(of: Void.self)
        self.captured = captured
        observer = { event in
            if event.context == child, event.operation == .save, event.objectCount > 0 { continuation.yield() }
        }
    }

    /// Holds `parent`'s queue, starts `child`'s save, runs `meanwhile` once the save has
    /// captured its changes, then lets the parent apply it; returns the save's error, if any.
    func save(_ child: ObjectContext, holding parent: ObjectContext, meanwhile: () async -> Void,
              sourceLocation: SourceLocation = #_sourceLocation) async -> StoreError? {
        let holding = await QueueHold(parent, "the parent", sourceLocation: sourceLocation)
        let saving = Task { () -> StoreError? in
            do throws(StoreError) {
                _ = try await child.save()
                return nil
            } catch {
                return error
            }
        }
        #expect(await firstElement(of: captured, timeout: .seconds(10)) != nil, "the save captured its changes", sourceLocation: sourceLocation)
        await meanwhile()
        await holding.release()
        return await saving.value
    }
}

/// A context's queue held by a job that waits until ``release()`` (for 30 s at most): work
/// for the context queues up behind it meanwhile.
struct QueueHold {
    private let released = DispatchSemaphore(value: 0)
    private let job: Task<Void, Never>

    /// Holds `context`'s queue; returns once the holding job runs. `before`: run in the job
    /// once released, before the queued work.
    init(_ context: ObjectContext, _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
         before: @escaping @Sendable (isolated ObjectContext) -> Void = { _ in }) async {
        let (held, heldContinuation) = AsyncStream.makeStream(of: Void.self)
        job = Task { [released] in
            await context.perform { c in
                heldContinuation.yield()
                _ = released.wait(timeout: .now() + .seconds(30 * TestTiming.slowdown))
                before(c)
            }
        }
        #expect(await firstElement(of: held, timeout: .seconds(10)) != nil, "\(what)'s queue is held", sourceLocation: sourceLocation)
    }

    /// Lets the queue go on; returns once the holding job has ended.
    func release() async {
        released.signal()
        await job.value
    }
}

/// The integrity problems of the store `directory` holds, opened again (after `store` closed).
func integrityProblemsAfterReopening(_ store: Store, in directory: TemporaryDirectory, schema: Schema = Fixtures.songbook) async throws
    -> [Generation.IntegrityProblem]
{
    await store.close()
    let reopened = try StoreTesting.open(in: directory, schema: schema)
    let problems = reopened.currentGeneration.integrityProblems()
    await reopened.close()
    return problems
}

extension ConstraintTests.Objects {
    /// Album x as a context shows it, with the albums of a1 and a3 (the to-one conflict
    /// tests move x between them), and whether the context has pending changes.
    struct AlbumXShown: Sendable {
        var artist: ObjectID?
        var title: String
        var a1: [ObjectID]
        var a3: [ObjectID]
        var pending: Bool
    }

    func albumX(in c: isolated ObjectContext) -> AlbumXShown {
        let x = c.object(with: self.x, as: Album.self)
        return AlbumXShown(artist: x.artist?.objectID, title: x.title, a1: c.object(with: a1, as: Artist.self).albums.map(\.objectID),
                           a3: c.object(with: a3, as: Artist.self).albums.map(\.objectID), pending: c.hasChanges)
    }

    /// Reads the albums of `artists` and the artist of `albums` in `c` (loading them as the
    /// store, or the parent, has them now).
    func readAlbums(of artists: [ObjectID], artistsOf albums: [ObjectID], in c: isolated ObjectContext) {
        for id in artists { _ = c.object(with: id, as: Artist.self).albums }
        for id in albums { _ = c.object(with: id, as: Album.self).artist }
    }

    /// The albums `c` shows of each of `artists`.
    func albums(of artists: [ObjectID], in c: isolated ObjectContext) -> [[ObjectID]] {
        artists.map { c.object(with: $0, as: Artist.self).albums.map(\.objectID) }
    }

    /// The artist `c` shows of each of `albums` (`nil` for none).
    func artists(of albums: [ObjectID], in c: isolated ObjectContext) -> [ObjectID?] {
        albums.map { c.object(with: $0, as: Album.self).artist?.objectID }
    }

    /// The user's side of the to-one conflict: album x taken from a1 (its albums read, and
    /// a3's) and retitled.
    func takeAlbumX(in c: isolated ObjectContext) {
        readAlbums(of: [a1, a3], artistsOf: [], in: c)
        let x = c.object(with: self.x, as: Album.self)
        x.artist = nil
        x.title = "retitled"
    }
}

extension ContextFixture {
    /// Makes `change` in another context saving where the fixture's context saves (a root
    /// context on the same coordinator, or a sibling child: `PendingDeletionMergeTests.sibling(of:)`)
    /// and saves it; returns what `change` returned and the save's did-save, for merging.
    func saveElsewhere<T: Sendable>(
        _ change: @escaping @Sendable (isolated ObjectContext) -> T, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (T, DidSave) {
        let other = PendingDeletionMergeTests.sibling(of: self)
        let saves = other.didSave()
        let made = await other.perform { c in change(c) }
        try await other.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)), sourceLocation: sourceLocation)
        return (made, save)
    }
}

/// A writer on a store (seeded with `seed`), whose application of a child's save can be
/// held (`gate`), and a view under it: a save of the view into the writer, with a merge
/// landing in the view while that save is in flight.
struct GatedWriter<Seeded: Sendable> {
    let directory: TemporaryDirectory
    let gate = SaveGate(context: "writer", operation: .applyChildSave)
    let store: Store
    let seeded: Seeded
    let coordinator: Coordinator
    let writer: ObjectContext
    let view: ObjectContext

    init(_ name: String, seed: (Store, Coordinator) async throws -> Seeded) async throws {
        directory = TemporaryDirectory(name)
        store = try StoreTesting.create(in: directory, durability: .relaxed)
        coordinator = Coordinator(store: store, name: "main", modelClasses: [Artist.self, Album.self, Song.self], observer: gate.observer)
        seeded = try await seed(store, coordinator)
        writer = ObjectContext(coordinator: coordinator, executor: .privateQueue("writer"), name: "writer")
        view = ObjectContext(parent: writer, executor: .privateQueue("view"), name: "view")
    }

    /// Makes `change` in another context and saves it; the writer, following the store,
    /// merges it first. Returns what `change` returned and the did-save, for the view.
    func commitElsewhere<T: Sendable>(_ change: @escaping @Sendable (isolated ObjectContext) -> T) async throws -> (T, DidSave) {
        let other = ObjectContext(coordinator: coordinator, name: "other")
        let made = await other.perform { c in change(c) }
        let saves = other.didSave()
        try await other.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await writer.merge(save)
        return (made, save)
    }

    /// Saves the view into the writer, merging `save` into the view (its automatic merge,
    /// landing mid-save) while the writer holds the save it applied; returns what `inFlight`
    /// found then, once the save has returned.
    func saveViewMerging<T: Sendable>(
        _ save: DidSave, inFlight: @escaping @Sendable (isolated ObjectContext) -> T
    ) async throws -> T {
        let view = self.view
        let saving = Task { try await view.save() }
        #expect(await gate.waitUntilHeld(), "the writer applied the view's save")
        let found = await view.perform { c in
            _ = c.merge(save)
            return inFlight(c)
        }
        gate.open()
        _ = try await withTimeout(30, "the save") { try await saving.value }
        return found
    }
}

extension GatedWriter where Seeded == ConstraintTests.Objects {
    /// The songbook's objects (``seedSongbook(_:)``).
    init(_ name: String) async throws {
        try await self.init(name) { store, _ in try await seedSongbook(store) }
    }
}
