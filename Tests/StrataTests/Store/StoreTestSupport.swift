import Foundation
import Testing
@testable import Strata

// MARK: - Stores in temporary directories

enum StoreTesting {
    /// Creates a store in `directory` on the real file system.
    static func create(
        in directory: TemporaryDirectory, schema: Schema = Fixtures.songbook, durability: Durability = .none
    ) throws -> Store {
        try Store.create(at: directory.appending("store.strata"), schema: schema,
                         configuration: Store.Configuration(durability: durability, fileIO: POSIXFileIO()))
    }

    /// Opens the store `create(in:)` made in `directory`.
    static func open(in directory: TemporaryDirectory, schema: Schema = Fixtures.songbook, durability: Durability = .none) throws -> Store {
        try Store.open(at: directory.appending("store.strata"), schema: schema,
                       configuration: Store.Configuration(durability: durability, fileIO: POSIXFileIO()))
    }

    /// A deterministic UUID for test values.
    static func uuid(_ n: Int) -> UUID {
        UUID(uuidString: "00000000-0000-4000-8000-" + String(format: "%012d", n))!
    }
}

/// Everything a refused commit must leave as it was: the published generation, the
/// journal's last transaction and the bytes of every file in the store directory.
///
/// Take it only when nothing is being written (after commits at `.relaxed` or `.full`
/// durability have returned), so the files are settled.
struct StoreState: Equatable, CustomStringConvertible {
    var transaction: UInt64
    var objects: [StoredObject]
    var lastTransaction: UInt64
    var files: [String: Data]

    init(_ store: Store) {
        let generation = store.currentGeneration
        transaction = generation.transaction
        objects = generation.allObjects
        lastTransaction = store.journal.lastTransaction
        files = [:]
        let names = (try? FileManager.default.contentsOfDirectory(atPath: store.path)) ?? []
        for name in names {
            guard var bytes = FileManager.default.contents(atPath: store.path + "/" + name) else { continue }
            if StoreLayout.segmentTransaction(name) != nil {
                // Zeros past the records are space the writer fills ahead of its appends, at
                // any moment while the store is open: not the store's contents.
                bytes = bytes.prefix(FrameSpan.all(in: Array(bytes)).last?.end ?? bytes.count)
            }
            files[name] = bytes
        }
    }

    var description: String {
        "transaction \(transaction) (journal \(lastTransaction)), \(objects.count) objects, files "
            + files.keys.sorted().map { "\($0): \(files[$0]!.count) bytes" }.joined(separator: ", ")
    }
}

// MARK: - Reading and changing generations in tests

extension Generation {
    /// Every object of every entity, ordered by ID.
    var allObjects: [StoredObject] {
        schema.entities.flatMap { objects(of: $0.name) }.sorted { $0.id < $1.id }
    }

    /// Every object's values, by ID.
    var valuesByID: [ObjectID: [Value]] {
        Dictionary(uniqueKeysWithValues: allObjects.map { ($0.id, $0.values) })
    }

    /// The value of one key of an object, or `nil` if the object does not exist.
    func value(_ id: ObjectID, _ key: String) -> Value? {
        guard let object = object(id), let index = schema.entity(named: id.entity)?.propertyIndex(named: key) else { return nil }
        return object.values[index]
    }

    /// An update of `id` as read from this generation, setting the named keys.
    func update(_ id: ObjectID, _ changes: [String: Value]) -> ObjectUpdate {
        guard let object = object(id), let entity = schema.entity(named: id.entity) else {
            preconditionFailure("update(\(id)): the generation has no such object")
        }
        let list = changes.map { PropertyChange(index: entity.propertyIndex(named: $0.key)!, value: $0.value) }
            .sorted { $0.index < $1.index }
        return ObjectUpdate(id: id, baseVersion: object.version, baseValues: object.values, changes: list)
    }

    /// A deletion of `id` as read from this generation.
    func deletion(_ id: ObjectID) -> ObjectDeletion {
        ObjectDeletion(id: id, baseVersion: object(id)!.version)
    }

    /// The storage index of a key.
    func index(_ entity: String, _ key: String) -> Int {
        schema.entity(named: entity)!.propertyIndex(named: key)!
    }
}

/// Rows of the songbook schema (`Fixtures.songbook`), in storage order.
enum Songbook {
    static let epoch = Date(timeIntervalSince1970: 1_577_836_800)

    static func artist(_ id: ObjectID, artistID: Int64, name: String? = nil, createdAt: Date = epoch, albums: [ObjectID] = []) -> RowImage {
        RowImage(id: id, values: [.int(artistID), name.map(Value.string) ?? .null, .date(createdAt), .objects(albums)])
    }

    static func album(
        _ id: ObjectID, albumID: Int64, title: String? = "Album", rating: Double? = nil, explicit: Bool = false,
        artist: ObjectID? = nil, songs: [ObjectID] = []
    ) -> RowImage {
        RowImage(id: id, values: [.int(albumID), title.map(Value.string) ?? .null, rating.map(Value.double) ?? .null, .bool(explicit),
                                  artist.map(Value.object) ?? .null, .objects(songs)])
    }

    static func song(
        _ id: ObjectID, songID: UUID, title: String? = "Song", artwork: Data? = nil, milliseconds: Int64 = 1_000, album: ObjectID? = nil
    ) -> RowImage {
        RowImage(id: id, values: [.uuid(songID), title.map(Value.string) ?? .null, artwork.map(Value.data) ?? .null, .int(milliseconds),
                                  album.map(Value.object) ?? .null])
    }
}

/// A small schema with limits and a required relationship, which the songbook lacks.
enum Library {
    static let schema: Schema = try! Schema("Library", version: 1, entities: [
        Entity("Shelf",
               attributes: [Attribute("code", .string, unique: true, minLength: 2, maxLength: 4)],
               relationships: [Relationship("books", to: "Book", inverse: "shelf", toMany: true)]),
        Entity("Book",
               attributes: [Attribute("title", .string, minLength: 1, maxLength: 10),
                            Attribute("pages", .int, min: .int(1), max: .int(1_000)),
                            Attribute("price", .double, optional: true, min: .double(0), max: .double(100)),
                            Attribute("cover", .data, optional: true, maxLength: 4)],
               relationships: [Relationship("shelf", to: "Shelf", inverse: "books", optional: false)]),
    ])

    static func shelf(_ id: ObjectID, code: String, books: [ObjectID] = []) -> RowImage {
        RowImage(id: id, values: [.string(code), .objects(books)])
    }

    static func book(
        _ id: ObjectID, title: String = "Dune", pages: Int64 = 412, price: Double? = nil, cover: Data? = nil, shelf: ObjectID?
    ) -> RowImage {
        RowImage(id: id, values: [.string(title), .int(pages), price.map(Value.double) ?? .null, cover.map(Value.data) ?? .null,
                                  shelf.map(Value.object) ?? .null])
    }
}

// MARK: - Building valid change sets

/// Builds a change set against a generation that keeps both sides of every relationship in
/// step and follows the delete rules: deleting an object deletes what `cascade` and `deny`
/// relationships refer to (deny is satisfied by deleting the dependents in the same save)
/// and removes it from the other side of `nullify` relationships.
struct ChangeSetBuilder {
    let base: Generation
    /// Values of every object inserted or changed so far (not of deleted ones).
    private var current: [ObjectID: [Value]] = [:]
    private var insertedIDs: [ObjectID] = []
    private var deletedIDs: Set<ObjectID> = []

    init(base: Generation) { self.base = base }

    var schema: Schema { base.schema }

    /// The object's values with the changes so far, or `nil` if it does not exist (any more).
    func values(of id: ObjectID) -> [Value]? {
        if deletedIDs.contains(id) { return nil }
        return current[id] ?? base.object(id)?.values
    }

    /// Every object inserted, changed or deleted so far.
    var touched: Set<ObjectID> { Set(current.keys).union(deletedIDs) }

    /// The objects of an entity that exist with the changes so far, ordered by ID.
    func liveIDs(of entity: String) -> [ObjectID] {
        (base.objects(of: entity).map(\.id) + insertedIDs.filter { $0.entity == entity })
            .filter { !deletedIDs.contains($0) }.sorted()
    }

    mutating func insert(_ row: RowImage) {
        precondition(values(of: row.id) == nil, "\(row.id) exists")
        current[row.id] = row.values
        insertedIDs.append(row.id)
    }

    /// Sets a value as is (no inverse maintenance).
    mutating func set(_ id: ObjectID, _ key: String, _ value: Value) {
        guard var values = values(of: id) else { preconditionFailure("set: \(id) does not exist") }
        values[base.index(id.entity, key)] = value
        current[id] = values
    }

    func value(_ id: ObjectID, _ key: String) -> Value? {
        values(of: id).map { $0[base.index(id.entity, key)] }
    }

    private func relationship(_ entity: String, _ key: String) -> Relationship {
        schema.entity(named: entity)!.relationships.first { $0.name == key }!
    }

    /// Sets a to-one relationship, updating the inverses of the old and new destination.
    mutating func setToOne(_ id: ObjectID, _ key: String, to target: ObjectID?) {
        let relationship = relationship(id.entity, key)
        precondition(!relationship.isToMany)
        let old = CommitPlan.targets(value(id, key)!)
        for previous in old where previous != target { removeInverse(previous, relationship.inverse, id) }
        set(id, key, target.map(Value.object) ?? .null)
        if let target, !old.contains(target) { addInverse(target, relationship.inverse, id) }
    }

    private mutating func addInverse(_ target: ObjectID, _ key: String, _ id: ObjectID) {
        let relationship = relationship(target.entity, key)
        if relationship.isToMany {
            set(target, key, .objects(CommitPlan.targets(value(target, key)!) + [id]))
        } else {
            for previous in CommitPlan.targets(value(target, key)!) where previous != id {
                removeInverse(previous, relationship.inverse, target)
            }
            set(target, key, .object(id))
        }
    }

    private mutating func removeInverse(_ target: ObjectID, _ key: String, _ id: ObjectID) {
        guard let now = value(target, key) else { return }  // deleted in this change set
        if relationship(target.entity, key).isToMany {
            set(target, key, .objects(CommitPlan.targets(now).filter { $0 != id }))
        } else if now == .object(id) {
            set(target, key, .null)
        }
    }

    /// Deletes an object, following its delete rules.
    mutating func delete(_ id: ObjectID) {
        guard let values = values(of: id) else { return }
        deletedIDs.insert(id)
        let entity = schema.entity(named: id.entity)!
        for (offset, relationship) in entity.relationships.enumerated() {
            let targets = CommitPlan.targets(values[entity.attributes.count + offset])
            switch relationship.deleteRule {
            case .cascade, .deny:
                for target in targets { delete(target) }
            case .nullify:
                for target in targets { removeInverse(target, relationship.inverse, id) }
            }
        }
        current[id] = nil
    }

    /// The change set: inserts in order, then updates and deletions ordered by ID.
    func changeSet(author: String = "", mergePolicy: MergePolicy = .error) -> ChangeSet {
        var changes = ChangeSet(author: author, mergePolicy: mergePolicy)
        let inserted = Set(insertedIDs)
        for id in insertedIDs where !deletedIDs.contains(id) {
            changes.inserted.append(RowImage(id: id, values: current[id]!))
        }
        for id in current.keys.sorted() where !inserted.contains(id) {
            let object = base.object(id)!
            let now = current[id]!
            let list = now.indices.filter { now[$0] != object.values[$0] }.map { PropertyChange(index: $0, value: now[$0]) }
            if !list.isEmpty {
                changes.updated.append(ObjectUpdate(id: id, baseVersion: object.version, baseValues: object.values, changes: list))
            }
        }
        for id in deletedIDs.sorted() {
            if let object = base.object(id) { changes.deleted.append(ObjectDeletion(id: id, baseVersion: object.version)) }
        }
        return changes
    }
}

// MARK: - Waiting with a hard limit

struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var seconds: Double
    var description: String { "timed out after \(seconds) s waiting for \(what)" }
}

/// Runs `body` under a hard time limit: if it has not finished after `limit` (scaled to the
/// build), this throws ``TimedOut`` at once and cancels `body` without waiting for it.
///
/// Unlike ``withTimeout(_:_:_:)`` — a task group, which waits for every child before it
/// returns — this bounds a body that does not honour cancellation: one stuck on a
/// continuation nobody resumes (a lost wake-up, a deadlock) fails the test instead of hanging
/// the run. Such a body is left behind, still suspended.
func withHardTimeLimit<T: Sendable>(
    _ limit: Duration, _ what: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let scaled = limit * TestTiming.slowdown
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let waiting = Locked<CheckedContinuation<T, any Error>?>(continuation)
        @Sendable func finish(_ result: Result<T, any Error>) -> Bool {
            guard let waiter = waiting.withLock({ w in defer { w = nil }; return w }) else { return false }
            waiter.resume(with: result)
            return true
        }
        let timer = Task {
            try await Task.sleep(for: scaled)
            return finish(.failure(TimedOut(what: what, seconds: Double(scaled.components.seconds))))
        }
        let work = Task {
            do {
                _ = finish(.success(try await body()))
            } catch {
                _ = finish(.failure(error))
            }
            timer.cancel()
        }
        Task {
            if (try? await timer.value) == true { work.cancel() }
        }
    }
}

/// Runs `body`, failing with ``TimedOut`` if it has not finished after `seconds` (the body
/// is cancelled then; it must honour cancellation).
func withTimeout<T: Sendable>(
    _ seconds: Double = 30, _ what: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds) * TestTiming.slowdown)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let result = first else {
            throw TimedOut(what: what, seconds: seconds * Double(TestTiming.slowdown))
        }
        return result
    }
}
