import Foundation
import Testing
@testable import Strata

/// Random valid songbook change sets: inserts linked on both sides, attribute edits, moves,
/// reorders, swaps and reuse of unique values, and deletes that follow the delete rules.
struct SongbookWorkload {
    var rng: SeededGenerator
    var nextKey: Int64 = 1
    var nextSong = 1

    init(seed: UInt64) { rng = SeededGenerator(seed: seed) }

    /// One change set of one to four operations against the store's current generation.
    mutating func next(_ store: Store) -> ChangeSetBuilder {
        var builder = ChangeSetBuilder(base: store.currentGeneration)
        for _ in 0..<Int.random(in: 1...4, using: &rng) { step(&builder, store) }
        return builder
    }

    private mutating func key() -> Int64 {
        defer { nextKey += 1 }
        return nextKey
    }

    private mutating func pick(_ ids: [ObjectID]) -> ObjectID? { ids.randomElement(using: &rng) }

    private mutating func uniqueValue(for entity: String) -> Value {
        if entity == "Song" {
            defer { nextSong += 1 }
            return .uuid(StoreTesting.uuid(nextSong))
        }
        return .int(key())
    }

    private mutating func step(_ b: inout ChangeSetBuilder, _ store: Store) {
        let artists = b.liveIDs(of: "Artist")
        let albums = b.liveIDs(of: "Album")
        let songs = b.liveIDs(of: "Song")
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<14:
            let id = store.allocateObjectIDs(for: "Artist")[0]
            b.insert(Songbook.artist(id, artistID: key(), name: Bool.random(using: &rng) ? "Artist \(nextKey)" : nil))
        case 14..<30:
            let id = store.allocateObjectIDs(for: "Album")[0]
            b.insert(Songbook.album(id, albumID: key(), title: "Album \(nextKey)", rating: Bool.random(using: &rng) ? 4.5 : nil))
            if Int.random(in: 0..<4, using: &rng) > 0, let artist = pick(artists) { b.setToOne(id, "artist", to: artist) }
        case 30..<48:
            let id = store.allocateObjectIDs(for: "Song")[0]
            guard case .uuid(let songID) = uniqueValue(for: "Song") else { return }
            b.insert(Songbook.song(id, songID: songID, milliseconds: Int64.random(in: 0...600_000, using: &rng)))
            if Int.random(in: 0..<4, using: &rng) > 0, let album = pick(albums) { b.setToOne(id, "album", to: album) }
        case 48..<62:
            guard let id = pick(artists + albums + songs) else { return }
            let entity = b.schema.entity(named: id.entity)!
            let attribute = entity.attributes.randomElement(using: &rng)!
            let value: Value =
                if attribute.isUnique { uniqueValue(for: id.entity) }
                else if attribute.type == .int { .int(Int64.random(in: 0...10_000_000, using: &rng)) }
                else { Fixtures.randomValue(attribute.type, optional: attribute.isOptional, using: &rng) }
            b.set(id, attribute.name, value)
        case 62..<72:
            if Bool.random(using: &rng), let album = pick(albums) {
                b.setToOne(album, "artist", to: Bool.random(using: &rng) ? pick(artists) : nil)
            } else if let song = pick(songs) {
                b.setToOne(song, "album", to: Int.random(in: 0..<5, using: &rng) > 0 ? pick(albums) : nil)
            }
        case 72..<76:
            guard let artist = pick(artists), case .objects(let list)? = b.value(artist, "albums"), list.count > 1 else { return }
            b.set(artist, "albums", .objects(list.shuffled(using: &rng)))
        case 76..<80:
            let entity = ["Artist", "Album", "Song"].randomElement(using: &rng)!
            let ids = b.liveIDs(of: entity)
            guard ids.count > 1 else { return }
            let pair = Array(ids.shuffled(using: &rng).prefix(2))
            let key = b.schema.entity(named: entity)!.uniqueAttribute!.name
            let first = b.value(pair[0], key)!
            b.set(pair[0], key, b.value(pair[1], key)!)
            b.set(pair[1], key, first)
        case 80..<84:
            // Delete an artist (and what cascades) and give its key to a new one.
            guard let artist = pick(artists), case .int(let artistID)? = b.value(artist, "artistID") else { return }
            b.delete(artist)
            b.insert(Songbook.artist(store.allocateObjectIDs(for: "Artist")[0], artistID: artistID, name: "Reborn"))
        default:
            if let id = pick(artists + albums + songs + songs) { b.delete(id) }
        }
    }
}

@Suite struct ReplayTests {
    /// Checks that a reopened store holds what the live one held. Rows loaded from a
    /// checkpoint have the checkpoint's transaction as their version; every row written
    /// after it has its transaction's number.
    static func expectSameContents(_ live: Generation, _ replayed: Generation, checkpoint: UInt64, _ context: Comment) {
        #expect(replayed.transaction == live.transaction, context)
        #expect(replayed.totalCount == live.totalCount, context)
        let values = replayed.valuesByID
        for object in live.allObjects {
            #expect(values[object.id] == object.values, "\(context): \(object.id)")
            let version: UInt64 = checkpoint > 0 && object.version <= checkpoint ? checkpoint : object.version
            #expect(replayed.object(object.id)?.version == version, "\(context): version of \(object.id)")
            let entity = live.schema.entity(named: object.id.entity)!
            if let unique = entity.attributes.firstIndex(where: \.isUnique) {
                #expect(replayed.object(of: entity.name, uniqueValue: object.values[unique])?.id == object.id, "\(context): unique key of \(object.id)")
            }
        }
        for entity in live.schema.entities {
            #expect(replayed.highestObjectNumber(of: entity.name) == live.highestObjectNumber(of: entity.name), "\(context): \(entity.name)")
        }
        #expect(replayed.integrityProblems().isEmpty, context)
    }

    /// Checks that history records are the change sets committed as those transactions.
    static func expectHistory(_ records: [TransactionRecord], matches log: [UInt64: ChangeSet], _ context: Comment) {
        for record in records {
            guard let changes = log[record.number] else {
                Issue.record("\(context): transaction \(record.number) was never committed")
                continue
            }
            #expect(record.author == changes.author, context)
            #expect(record.inserted == changes.inserted, "\(context): transaction \(record.number)")
            #expect(record.updated == changes.updated.map { RowUpdate(id: $0.id, changes: $0.changes) }, "\(context): transaction \(record.number)")
            #expect(record.deleted == changes.deleted.map(\.id), "\(context): transaction \(record.number)")
        }
    }

    /// Commits `count` random change sets, checking each against what was built.
    static func run(
        _ workload: inout SongbookWorkload, _ count: Int, on store: Store, log: inout [UInt64: ChangeSet], _ context: Comment
    ) async throws {
        for _ in 0..<count {
            let builder = workload.next(store)
            let changes = builder.changeSet(author: "workload")
            guard !changes.isEmpty else { continue }
            let result = try await store.commit(changes)
            #expect(result.transaction == store.journal.lastTransaction)
            log[result.transaction] = changes
            for id in builder.touched {
                #expect(result.generation.object(id)?.values == builder.values(of: id), "\(context): \(id) after transaction \(result.transaction)")
            }
            let problems = result.generation.integrityProblems()
            #expect(problems.isEmpty, "\(context): transaction \(result.transaction): \(problems)")
        }
    }

    @Test(arguments: [1, 2, 3] as [UInt64], [false, true])
    func randomWorkloadReopensToTheSameState(seed: UInt64, compactMidway: Bool) async throws {
        try await replay(seed: seed, compactMidway: compactMidway, durability: .none)
    }

    @Test func randomWorkloadAtFullDurability() async throws {
        try await replay(seed: 4, compactMidway: true, durability: .full)
    }

    func replay(seed: UInt64, compactMidway: Bool, durability: Durability) async throws {
        let context: Comment = "seed \(seed), compaction \(compactMidway), \(durability)"
        let directory = TemporaryDirectory("strata-replay")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: durability)
        var workload = SongbookWorkload(seed: seed)
        var log: [UInt64: ChangeSet] = [:]
        var checkpoint: UInt64 = 0

        try await Self.run(&workload, 60, on: store, log: &log, context)
        if compactMidway {
            let report = try await store.compact()
            checkpoint = report.checkpoint
            #expect(checkpoint == store.currentGeneration.transaction)
            #expect(report.rows == store.currentGeneration.totalCount)
        }
        try await Self.run(&workload, 60, on: store, log: &log, context)
        let live = store.currentGeneration
        let last = live.transaction
        #expect(live.totalCount > 20, "\(context): the workload should build up a graph")
        #expect(last > checkpoint + 30)

        // History lists exactly the transactions since the checkpoint (under .none, once
        // they are written).
        await store.journal.flush()
        let history = try store.journal.transactions()
        #expect(history.map(\.number) == Array((checkpoint + 1)...last), context)
        Self.expectHistory(history, matches: log, context)
        #expect(try store.journal.transactions(after: last - 5).map(\.number) == Array((last - 4)...last), context)
        #expect(try store.journal.transactions(after: last).isEmpty, context)
        if checkpoint > 2 {
            // Older transactions were folded into the checkpoint.
            #expect(try store.journal.transactions(after: 2).map(\.number) == history.map(\.number), context)
        }
        await store.close()

        let reopened = try StoreTesting.open(in: directory, durability: durability)
        Self.expectSameContents(live, reopened.currentGeneration, checkpoint: checkpoint, context)
        #expect(reopened.recovery.checkpoint == (checkpoint > 0 ? checkpoint : nil), context)
        #expect(try reopened.journal.transactions().map(\.number) == history.map(\.number), context)
        for entity in live.schema.entities {
            // New IDs continue after every committed one, deleted ones included.
            #expect(reopened.allocateObjectIDs(for: entity.name)[0].number > live.highestObjectNumber(of: entity.name), context)
        }

        // Keep going on the reopened store, then reopen once more.
        try await Self.run(&workload, 30, on: reopened, log: &log, context)
        let second = reopened.currentGeneration
        Self.expectHistory(try reopened.journal.transactions(after: last), matches: log, context)
        await reopened.close()
        let again = try StoreTesting.open(in: directory, durability: durability)
        Self.expectSameContents(second, again.currentGeneration, checkpoint: checkpoint, context)
        await again.close()
    }

    @Test func compactionWhileCommitting() async throws {
        let directory = TemporaryDirectory("strata-replay")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        var workload = SongbookWorkload(seed: 11)
        var log: [UInt64: ChangeSet] = [:]
        try await Self.run(&workload, 40, on: store, log: &log, "before compaction")

        let compaction = Task { try await store.compact() }
        try await Self.run(&workload, 40, on: store, log: &log, "during compaction")
        let report = try await withTimeout(30, "compaction") { try await compaction.value }
        // Commits after the checkpoint for certain (those above may all have come before it).
        try await Self.run(&workload, 5, on: store, log: &log, "after compaction")
        let live = store.currentGeneration
        let last = live.transaction

        // History is exactly what the checkpoint did not fold in, even where a segment also
        // holds transactions the checkpoint covers.
        let history = try store.journal.transactions()
        #expect(history.last?.number == last)
        #expect(history.map(\.number) == Array((report.checkpoint + 1)...last))
        #expect(try store.journal.transactions(after: report.checkpoint).map(\.number) == Array((report.checkpoint + 1)...last))
        Self.expectHistory(history, matches: log, "compaction while committing")
        await store.close()

        let reopened = try StoreTesting.open(in: directory)
        Self.expectSameContents(live, reopened.currentGeneration, checkpoint: report.checkpoint, "compaction while committing")
        await reopened.close()
    }

    /// Ways to damage a generation through internal API, and the object and key at fault.
    enum Damage: String, CaseIterable, Sendable {
        case brokenInverse, danglingReference, missingRequiredValue, belowMinimum, wrongType, duplicateUniqueValue

        func apply(to g: inout Generation, _ o: ConstraintTests.Objects) -> (ObjectID, String) {
            let artist = g.schema.entityIndex(named: "Artist")!
            let album = g.schema.entityIndex(named: "Album")!
            let song = g.schema.entityIndex(named: "Song")!
            switch self {
            case .brokenInverse:
                g.updateRow(o.x, entity: album, changes: [PropertyChange(index: g.index("Album", "artist"), value: .null)], version: 99)
                return (o.a1, "albums")
            case .danglingReference:
                g.deleteRow(o.s, entity: song)
                return (o.x, "songs")
            case .missingRequiredValue:
                g.updateRow(o.x, entity: album, changes: [PropertyChange(index: g.index("Album", "title"), value: .null)], version: 99)
                return (o.x, "title")
            case .belowMinimum:
                g.updateRow(o.s, entity: song, changes: [PropertyChange(index: g.index("Song", "milliseconds"), value: .int(-5))], version: 99)
                return (o.s, "milliseconds")
            case .wrongType:
                g.updateRow(o.a2, entity: artist, changes: [PropertyChange(index: g.index("Artist", "name"), value: .int(3))], version: 99)
                return (o.a2, "name")
            case .duplicateUniqueValue:
                let twin = ObjectID(entity: "Artist", number: 50)
                g.insertRow(twin, entity: artist, values: Songbook.artist(twin, artistID: 1).values, version: 99)
                return (twin, "artistID")
            }
        }
    }

    @Test(arguments: Damage.allCases)
    func integrityProblemsNameTheDamage(_ damage: Damage) async throws {
        let directory = TemporaryDirectory("strata-replay")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let o = try await ConstraintTests.Objects.commit(into: store)
        #expect(store.currentGeneration.integrityProblems().isEmpty)
        var damaged = store.currentGeneration
        let (object, key) = damage.apply(to: &damaged, o)
        let problems = damaged.integrityProblems()
        #expect(problems.contains { $0.object == object && $0.key == key }, "\(damage): \(problems)")
        #expect(problems.contains { $0.description.hasPrefix("\(object).\(key): ") }, "\(damage): \(problems)")
        #expect(damaged.integrityProblems(limit: 1).count == 1)
        // Damaging a copy leaves the store's generation as it was.
        #expect(store.currentGeneration.integrityProblems().isEmpty)
        await store.close()
    }

    @Test func integrityProblemsNameAnEmptyRequiredRelationship() async throws {
        let directory = TemporaryDirectory("strata-replay")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, schema: Library.schema)
        let shelf = store.allocateObjectIDs(for: "Shelf")[0]
        let book = store.allocateObjectIDs(for: "Book")[0]
        try await store.commit(ChangeSet(inserted: [Library.shelf(shelf, code: "AB", books: [book]), Library.book(book, shelf: shelf)]))
        var damaged = store.currentGeneration
        damaged.updateRow(book, entity: damaged.schema.entityIndex(named: "Book")!,
                          changes: [PropertyChange(index: damaged.index("Book", "shelf"), value: .null)], version: 9)
        let problems = damaged.integrityProblems()
        #expect(problems.contains { $0.object == book && $0.key == "shelf" }, "\(problems)")
        #expect(problems.contains { $0.object == shelf && $0.key == "books" }, "\(problems)")
        #expect(store.currentGeneration.integrityProblems().isEmpty)
        await store.close()
    }
}
