import Foundation
import Testing
@testable import Strata

/// Wrong use of the journal gets a specific typed error that names the culprit, and leaves
/// the journal byte-identical and usable.
@Suite struct JournalMisuseTests {
    static let seed: UInt64 = 0x3150_5E00

    enum Misuse: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case numberSkipsAhead, numberRepeated, numberZero
        case unknownEntity, unknownEntityInDelete, unknownEntityInUpdate
        case tooFewValues, tooManyValues
        case wrongAttributeType, wrongAttributeTypeInUpdate
        case toOneHoldingList, toManyHoldingOneObject, toOneToWrongEntity, toManyWithWrongEntity
        case objectNumberZero, objectNumberZeroInDelete
        case updateIndexOutOfRange, updateIndexesOutOfOrder
        var testDescription: String { rawValue }

        /// The bad transaction after `state`, and what its message must name.
        func record(after state: ReplayedState) -> (TransactionRecord, [String]) {
            let next = state.lastTransaction + 1
            let artist = ObjectID(entity: "Artist", number: state.highestObjectNumbers["Artist", default: 0] + 1)
            let album = ObjectID(entity: "Album", number: state.highestObjectNumbers["Album", default: 0] + 1)
            let existingArtist = state.rows.keys.filter { $0.entity == "Artist" }.min() ?? ObjectID(entity: "Artist", number: 1)
            let song = ObjectID(entity: "Song", number: 1)
            let artistValues: [Value] = [.int(1), .string("n"), .date(Date(timeIntervalSinceReferenceDate: 0)), .objects([])]
            let albumValues: [Value] = [.int(1), .string("t"), .null, .bool(false), .null, .objects([])]
            func insert(_ id: ObjectID, _ values: [Value]) -> TransactionRecord {
                TransactionRecord(number: next, inserted: [RowImage(id: id, values: values)])
            }
            func replacing(_ values: [Value], _ index: Int, with value: Value) -> [Value] {
                var values = values
                values[index] = value
                return values
            }
            switch self {
            case .numberSkipsAhead:
                return (TransactionRecord(number: next + 1, inserted: [RowImage(id: artist, values: artistValues)]), ["expected \(next)"])
            case .numberRepeated:
                return (TransactionRecord(number: next - 1), ["expected \(next)"])
            case .numberZero:
                return (TransactionRecord(number: 0), ["expected \(next)"])
            case .unknownEntity:
                return (insert(ObjectID(entity: "Label", number: 1), [.string("x")]), ["Label/1", "Label"])
            case .unknownEntityInDelete:
                return (TransactionRecord(number: next, deleted: [ObjectID(entity: "Label", number: 2)]), ["Label/2"])
            case .unknownEntityInUpdate:
                return (TransactionRecord(number: next, updated: [RowUpdate(id: ObjectID(entity: "Label", number: 3), changes: [])]), ["Label/3"])
            case .tooFewValues:
                return (insert(artist, Array(artistValues.prefix(2))), ["\(artist)", "2 values", "albums"])
            case .tooManyValues:
                return (insert(artist, artistValues + [.null]), ["\(artist)", "5 values"])
            case .wrongAttributeType:
                return (insert(artist, replacing(artistValues, 0, with: .string("1"))), ["\(artist)", "artistID"])
            case .wrongAttributeTypeInUpdate:
                return (TransactionRecord(number: next, updated: [RowUpdate(id: existingArtist, changes: [PropertyChange(index: 2, value: .int(5))])]),
                        ["\(existingArtist)", "createdAt"])
            case .toOneHoldingList:
                return (insert(album, replacing(albumValues, 4, with: .objects([existingArtist]))), ["\(album)", "artist"])
            case .toManyHoldingOneObject:
                return (insert(artist, replacing(artistValues, 3, with: .object(album))), ["\(artist)", "albums"])
            case .toOneToWrongEntity:
                return (insert(album, replacing(albumValues, 4, with: .object(song))), ["\(album)", "artist", "Song/1"])
            case .toManyWithWrongEntity:
                return (insert(artist, replacing(artistValues, 3, with: .objects([album, song]))), ["\(artist)", "albums", "Song/1"])
            case .objectNumberZero:
                return (insert(ObjectID(entity: "Artist", number: 0), artistValues), ["Artist/0"])
            case .objectNumberZeroInDelete:
                return (TransactionRecord(number: next, deleted: [ObjectID(entity: "Song", number: 0)]), ["Song/0"])
            case .updateIndexOutOfRange:
                return (TransactionRecord(number: next, updated: [RowUpdate(id: existingArtist, changes: [PropertyChange(index: 4, value: .null)])]),
                        ["\(existingArtist)", "index 4"])
            case .updateIndexesOutOfOrder:
                return (TransactionRecord(number: next, updated: [RowUpdate(id: existingArtist, changes: [
                    PropertyChange(index: 1, value: .null), PropertyChange(index: 0, value: .int(3)),
                ])]), ["\(existingArtist)", "index 0"])
            }
        }
    }

    @Test(arguments: Misuse.allCases)
    func invalidTransactionIsRefusedAndChangesNothing(_ misuse: Misuse) async throws {
        let directory = TemporaryDirectory("strata-misuse")
        defer { directory.remove() }
        let path = directory.appending("store")
        let journal = try Journal.create(at: path, schema: Fixtures.songbook)
        var model = ReplayedState()
        var generator = TransactionGenerator(seed: Self.seed)
        for _ in 0..<5 {
            let record = generator.next(after: model)
            try model.apply(record)
            try await journal.append(record)
        }
        await journal.flush()  // the zeros the writer writes ahead of appends are in place
        let before = try StoreSnapshot.read(path)
        let (bad, names) = misuse.record(after: model)
        let context = "\(misuse), seed \(Self.seed)"

        let error = #expect(throws: StoreError.self, "\(context)") { try journal.enqueue(bad) }
        #expect(error?.code == .invalidTransaction, "\(context): \(String(describing: error))")
        for name in names {
            #expect(error?.message.contains(name) == true, "\(context): the message does not name \"\(name)\": \(String(describing: error))")
        }
        // The async form refuses it the same way.
        await #expect(throws: StoreError.self, "\(context)") { try await journal.append(bad) }
        #expect(journal.lastTransaction == 5, "\(context)")
        #expect(journal.failure == nil, "\(context)")
        #expect(try StoreSnapshot.read(path) == before, "\(context): the journal files changed")

        // Valid appends still work, and only they are in the store.
        for _ in 0..<2 {
            let record = generator.next(after: model)
            try model.apply(record)
            try await journal.append(record)
        }
        await journal.close()
        let (_, state) = try openStore(path, readOnly: true)
        #expect(state == model, "\(context)")
    }

    @Test func readOnlyJournalRefusesWrites() async throws {
        let directory = TemporaryDirectory("strata-misuse")
        defer { directory.remove() }
        let path = directory.appending("store")
        let history = try ModelHistory(seed: Self.seed, count: 3)
        _ = try await StoreBuilder.build(at: path, history: history)
        let before = try StoreSnapshot.read(path)
        let (journal, state) = try openStore(path, readOnly: true)
        #expect(state == history.final, "seed \(Self.seed)")
        var generator = TransactionGenerator(seed: Self.seed ^ 1)
        let record = generator.next(after: state)
        let enqueued = #expect(throws: StoreError.self) { try journal.enqueue(record) }
        #expect(enqueued?.code == .readOnly)
        let appended = await #expect(throws: StoreError.self) { try await journal.append(record) }
        #expect(appended?.code == .readOnly)
        let compacted = await #expect(throws: StoreError.self) { try await journal.compact(from: state) }
        #expect(compacted?.code == .readOnly)
        let created = #expect(throws: StoreError.self) {
            try Journal.create(at: directory.appending("new"), schema: Fixtures.songbook, configuration: .init(readOnly: true))
        }
        #expect(created?.code == .readOnly)
        await journal.close()
        #expect(try StoreSnapshot.read(path) == before)
    }

    @Test func closedJournalRefusesEverything() async throws {
        let directory = TemporaryDirectory("strata-misuse")
        defer { directory.remove() }
        let path = directory.appending("store")
        let journal = try Journal.create(at: path, schema: Fixtures.songbook)
        var model = ReplayedState()
        var generator = TransactionGenerator(seed: Self.seed ^ 2)
        let first = generator.next(after: model)
        try model.apply(first)
        try await journal.append(first)
        await journal.close()
        await journal.close()  // closing twice is harmless
        let before = try StoreSnapshot.read(path)
        let record = generator.next(after: model)
        let enqueued = #expect(throws: StoreError.self) { try journal.enqueue(record) }
        #expect(enqueued?.code == .closed)
        let appended = await #expect(throws: StoreError.self) { try await journal.append(record) }
        #expect(appended?.code == .closed)
        let compacted = await #expect(throws: StoreError.self) { try await journal.compact(from: model) }
        #expect(compacted?.code == .closed)
        #expect(try StoreSnapshot.read(path) == before)
        // The lock was released: the store opens for writing again.
        let (reopened, state) = try openStore(path)
        #expect(state == model, "seed \(Self.seed ^ 2)")
        await reopened.close()
    }

    enum BadPath: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case missing, plainFile, emptyDirectory, directoryOfOtherFiles
        var testDescription: String { rawValue }
    }

    @Test(arguments: BadPath.allCases, [false, true])
    func openingWhatIsNotAStore(_ bad: BadPath, readOnly: Bool) throws {
        let directory = TemporaryDirectory("strata-misuse")
        defer { directory.remove() }
        let path = directory.appending("target")
        switch bad {
        case .missing: break
        case .plainFile: try Data("not a store".utf8).write(to: URL(fileURLWithPath: path))
        case .emptyDirectory: try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        case .directoryOfOtherFiles:
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            try Data("notes".utf8).write(to: URL(fileURLWithPath: path + "/notes.txt"))
            try Data().write(to: URL(fileURLWithPath: path + "/" + StoreLayout.lockFile))
        }
        let before = bad == .missing ? nil : try? StoreSnapshot.read(path)
        let error = #expect(throws: StoreError.self, "\(bad)") { try openStore(path, readOnly: readOnly) }
        #expect(error?.code == (bad == .missing ? .notFound : .notAStore), "\(bad): \(String(describing: error))")
        #expect(error?.path?.hasPrefix(path) == true, "\(bad): \(String(describing: error))")
        if bad == .missing {
            #expect(!FileManager.default.fileExists(atPath: path), "opening created \(path)")
        } else if bad != .plainFile {
            #expect(try StoreSnapshot.read(path) == before, "\(bad): opening changed the directory")
        }
    }

    @Test func creatingOverSomethingThatExists() throws {
        let directory = TemporaryDirectory("strata-misuse")
        defer { directory.remove() }
        let nonEmpty = directory.appending("full")
        try FileManager.default.createDirectory(atPath: nonEmpty, withIntermediateDirectories: false)
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: nonEmpty + "/notes.txt"))
        let before = try StoreSnapshot.read(nonEmpty)
        let error = #expect(throws: StoreError.self) { try Journal.create(at: nonEmpty, schema: Fixtures.songbook) }
        #expect(error?.code == .alreadyExists)
        #expect(error?.path == nonEmpty)
        #expect(try StoreSnapshot.read(nonEmpty) == before)

        let file = directory.appending("file")
        try Data("a file".utf8).write(to: URL(fileURLWithPath: file))
        let overFile = #expect(throws: StoreError.self) { try Journal.create(at: file, schema: Fixtures.songbook) }
        #expect(overFile?.code == .alreadyExists)
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == Data("a file".utf8))
    }

    @Test func creatingOverAnExistingStore() async throws {
        let directory = TemporaryDirectory("strata-misuse")
        defer { directory.remove() }
        let path = directory.appending("store")
        let history = try ModelHistory(seed: Self.seed ^ 3, count: 4)
        _ = try await StoreBuilder.build(at: path, history: history)
        let before = try StoreSnapshot.read(path)
        let error = #expect(throws: StoreError.self) { try Journal.create(at: path, schema: Fixtures.songbook) }
        #expect(error?.code == .alreadyExists)
        #expect(try StoreSnapshot.read(path) == before)
        let (_, state) = try openStore(path, readOnly: true)
        #expect(state == history.final, "seed \(Self.seed ^ 3)")
    }

    /// Compaction runs while another task keeps appending: every append is acknowledged,
    /// and the store reopens to the model.
    @Test func compactionWhileAppendsContinue() async throws {
        let seed = Self.seed ^ 4
        let directory = TemporaryDirectory("strata-misuse")
        defer { directory.remove() }
        let path = directory.appending("store")
        let journal = try Journal.create(at: path, schema: Fixtures.songbook, configuration: .init(segmentSize: 8 << 10))
        let total = 300, every = 50
        let rounds = total / every - 1
        /// What the two tasks share: the appender's latest enqueued state, and how many
        /// compactions have started.
        final class Shared: Sendable {
            let state = Locked<(model: ReplayedState?, compactionsStarted: Int)>((nil, 0))
        }
        let shared = Shared()
        let appender = Task { () async throws -> (acknowledged: Int, model: ReplayedState) in
            var model = ReplayedState()
            var generator = TransactionGenerator(seed: seed)
            var acknowledged = 0
            for n in 1...total {
                let record = generator.next(after: model, maxChanges: 3)
                try model.apply(record)
                try journal.enqueue(record)
                shared.state.withLock { $0.model = model }
                try await journal.waitUntilDurable(record.number)
                acknowledged += 1
                // Every `every` transactions, wait until a compaction has started, then go on
                // appending while it runs.
                if n % every == 0 && n < total {
                    while shared.state.withLock({ $0.compactionsStarted }) < n / every { try await Task.sleep(for: .milliseconds(1)) }
                }
            }
            return (acknowledged, model)
        }
        var checkpoints: [UInt64] = []
        for round in 1...rounds {
            var source: ReplayedState?
            while source == nil {
                if let model = shared.state.withLock({ $0.model }), model.lastTransaction >= UInt64(round * every) {
                    source = model
                } else {
                    try await Task.sleep(for: .milliseconds(1))
                }
            }
            shared.state.withLock { $0.compactionsStarted = round }
            let report = try await journal.compact(from: source!)
            #expect(report.checkpoint == source!.lastTransaction, "seed \(seed)")
            checkpoints.append(report.checkpoint)
        }
        let (acknowledged, model) = try await appender.value
        #expect(acknowledged == total, "seed \(seed)")
        #expect(checkpoints.count == rounds, "seed \(seed)")
        #expect(journal.lastDurableTransaction == UInt64(total), "seed \(seed)")
        #expect(journal.failure == nil, "seed \(seed)")
        #expect(journal.statistics.checkpoints == rounds, "seed \(seed)")
        await journal.close()
        let (reopened, state) = try openStore(path, readOnly: true)
        #expect(state == model, "seed \(seed)")
        #expect(reopened.recovery.checkpoint == checkpoints.last, "seed \(seed): checkpoints \(checkpoints)")
        #expect(reopened.recovery.tornTail == nil, "seed \(seed)")
    }
}
