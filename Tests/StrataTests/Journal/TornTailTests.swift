import Foundation
import Testing
@testable import Strata

/// An interrupted write leaves a partial record at the end of the last segment: opening
/// cuts it off, reports it, and the store keeps working. Bytes after the last whole record
/// that are not a next transaction of this store are a tail too, and never applied.
@Suite struct TornTailTests {
    static let seed: UInt64 = 0x7042_7A11

    /// Ten random transactions, then two small hand-made ones (so that cutting at every byte
    /// of the last two records stays quick), all in one segment.
    static func history() throws -> ModelHistory {
        var history = try ModelHistory(seed: seed, count: 10, maxChanges: 4)
        try history.append(smallTransaction(after: history.final, variant: 0))
        try history.append(smallTransaction(after: history.final, variant: 1))
        return history
    }

    static func smallTransaction(after state: ReplayedState, variant: Int) -> TransactionRecord {
        let number = state.lastTransaction + 1
        let albums = state.rows.keys.filter { $0.entity == "Album" }.sorted()
        var record = TransactionRecord(number: number, timestamp: Date(timeIntervalSinceReferenceDate: Double(number)), author: "tail")
        if variant == 0 {
            let id = ObjectID(entity: "Artist", number: state.highestObjectNumbers["Artist", default: 0] + 1)
            record.inserted = [RowImage(id: id, values: [.int(.min), .string("Zoë 🎸"), .date(Date(timeIntervalSinceReferenceDate: 1234.5)),
                                                         .objects(Array(albums.prefix(2)))])]
            if let album = albums.first { record.updated = [RowUpdate(id: album, changes: [PropertyChange(index: 1, value: .string("Ω"))])] }
        } else {
            let id = ObjectID(entity: "Song", number: state.highestObjectNumbers["Song", default: 0] + 1)
            record.inserted = [RowImage(id: id, values: [.uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!), .string(""),
                                                         .data(Data([0, 1, 2, 3])), .int(0), albums.first.map { .object($0) } ?? .null])]
            if let song = state.rows.keys.filter({ $0.entity == "Song" }).min() { record.deleted = [song] }
        }
        return record
    }

    /// The transaction appended after recovery.
    static func followUp(after state: ReplayedState) -> TransactionRecord {
        let id = ObjectID(entity: "Artist", number: state.highestObjectNumbers["Artist", default: 0] + 1)
        return TransactionRecord(number: state.lastTransaction + 1, timestamp: Date(timeIntervalSinceReferenceDate: 99), author: "after",
                                 inserted: [RowImage(id: id, values: [.int(7), .string("after the cut"), .date(Date(timeIntervalSinceReferenceDate: 5)), .objects([])])])
    }

    @Test func truncationAtEveryOffsetOfTheLastTwoRecords() async throws {
        let directory = TemporaryDirectory.scratch("strata-torn")
        defer { directory.remove() }
        let history = try Self.history()
        let store = try await StoreBuilder.build(at: directory.appending("store"), history: history)
        let name = try #require(store.snapshot.segmentNames.last)
        let segment = try #require(store.snapshot[name])
        let spans = FrameSpan.transactions(in: segment)
        try #require(spans.count == 12, "seed \(Self.seed)")
        let boundaries = [spans[10].offset, spans[11].offset, spans[11].end]
        try #require(boundaries[2] == segment.count)
        var trials = 0
        for cut in boundaries[0]...boundaries[2] {
            // The whole records left, and where the last of them ends.
            let kept = boundaries.lastIndex { $0 <= cut }!
            let boundary = boundaries[kept]
            let expected = history.states[10 + kept]
            let context = "seed \(Self.seed), cut at \(cut) (records end at \(boundaries))"
            var files = store.snapshot
            files[name] = Array(segment[..<cut])
            let path = directory.appending("cut-\(cut)")
            try files.write(to: path)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let segmentPath = StoreLayout.join(path, name)

            // Read-only: the tail is skipped, nothing is changed.
            let (reader, readState) = try openStore(path, readOnly: true)
            #expect(readState == expected, "\(context)")
            #expect(reader.recovery.tornTail?.offset == (cut == boundary ? nil : Int64(boundary)), "\(context)")
            #expect(try fileSize(segmentPath) == cut, "\(context)")

            // Writable: the tail is cut at the last whole record and reported.
            let (journal, state) = try openStore(path)
            #expect(state == expected, "\(context)")
            if cut == boundary {
                #expect(journal.recovery.tornTail == nil, "\(context)")
            } else {
                let torn = try #require(journal.recovery.tornTail, "\(context)")
                #expect(torn.path == segmentPath && torn.offset == Int64(boundary) && torn.discardedBytes == Int64(cut - boundary), "\(context)")
            }
            #expect(try fileSize(segmentPath) == boundary, "\(context)")

            // A later append survives a reopen.
            let reopened = try await Self.appendFollowUpAndReopen(journal, after: state, at: path, context: context)
            #expect(reopened.recovery.tornTail == nil, "\(context)")
            trials += 1
        }
        #expect(trials == boundaries[2] - boundaries[0] + 1)
        #expect(trials > 2 * RecordFormat.frameHeaderSize)
    }

    enum Tail: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case oneZero, nineZeros, pageOfZeros
        case shortGarbage, garbage, longGarbage
        case staleOlderRecord, staleCopyOfLastRecord, staleRecordThenZeros
        case recordFromAnotherStore

        var testDescription: String { rawValue }

        /// The bytes to append after the last record.
        func bytes(segment: [UInt8], spans: [FrameSpan], history: ModelHistory, scratch: TemporaryDirectory) async throws -> [UInt8] {
            var rng = SeededGenerator(seed: TornTailTests.seed ^ UInt64(Tail.allCases.firstIndex(of: self)!))
            func garbage(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) } }
            switch self {
            case .oneZero: return [0]
            case .nineZeros: return [UInt8](repeating: 0, count: 9)
            case .pageOfZeros: return [UInt8](repeating: 0, count: 4096)
            case .shortGarbage: return garbage(5)
            case .garbage: return garbage(64)
            case .longGarbage: return garbage(5_000)
            case .staleOlderRecord: return Array(segment[spans[3].offset..<spans[3].end])
            case .staleCopyOfLastRecord: return Array(segment[spans[11].offset..<spans[11].end])
            case .staleRecordThenZeros: return Array(segment[spans[5].offset..<spans[5].end]) + [UInt8](repeating: 0, count: 100)
            case .recordFromAnotherStore:
                // Another store with the same transactions and the next one too: its record
                // of that next transaction is well formed, but checksummed for the other store.
                var extended = history
                try extended.append(TornTailTests.followUp(after: history.final))
                let other = try await StoreBuilder.build(at: scratch.appending("other"), history: extended)
                let otherSegment = try #require(other.snapshot[other.snapshot.segmentNames.last!])
                let last = try #require(FrameSpan.transactions(in: otherSegment).last)
                return Array(otherSegment[last.offset..<last.end])
            }
        }
    }

    @Test(arguments: Tail.allCases)
    func tailIsCutAndNeverApplied(_ tail: Tail) async throws {
        let directory = TemporaryDirectory("strata-tail")
        defer { directory.remove() }
        let history = try Self.history()
        let store = try await StoreBuilder.build(at: directory.appending("store"), history: history)
        let name = try #require(store.snapshot.segmentNames.last)
        let segment = try #require(store.snapshot[name])
        let spans = FrameSpan.transactions(in: segment)
        try #require(spans.count == 12)
        let extra = try await tail.bytes(segment: segment, spans: spans, history: history, scratch: directory)
        let context = "seed \(Self.seed), tail \(tail) of \(extra.count) bytes"
        var files = store.snapshot
        files[name] = segment + extra
        let path = directory.appending("damaged")
        try files.write(to: path)
        let segmentPath = StoreLayout.join(path, name)

        if extra.allSatisfy({ $0 == 0 }) {
            try await zeroTailIsTheCleanEnd(path: path, segmentPath: segmentPath, files: files, store: store, records: segment.count, context: context)
            return
        }
        let (reader, readState) = try openStore(path, readOnly: true)
        #expect(readState == store.full, "\(context)")
        #expect(reader.recovery.tornTail?.offset == Int64(segment.count), "\(context)")
        #expect(reader.recovery.tornTail?.discardedBytes == Int64(extra.count), "\(context)")
        #expect(try StoreSnapshot.read(path) == files, "\(context): a read-only open changed the files")

        let (journal, state) = try openStore(path)
        #expect(state == store.full, "\(context)")
        #expect(journal.lastTransaction == 12, "\(context)")
        let torn = try #require(journal.recovery.tornTail, "\(context)")
        #expect(torn.path == segmentPath && torn.offset == Int64(segment.count) && torn.discardedBytes == Int64(extra.count), "\(context)")
        #expect(try fileSize(segmentPath) == segment.count, "\(context)")

        let reopened = try await Self.appendFollowUpAndReopen(journal, after: state, at: path, context: context)
        #expect(reopened.recovery.tornTail == nil, "\(context)")
        #expect(reopened.recovery.lastTransaction == 13, "\(context)")
    }

    /// Zeros after the last record are what a writer leaves when it fills space ahead of its
    /// appends (``Journal/Configuration/preallocation``), or what a crash leaves of appends
    /// never acknowledged: the segment's clean end. Nothing is reported or cut; the next
    /// append overwrites them, and closing cuts what is left.
    private func zeroTailIsTheCleanEnd(
        path: String, segmentPath: String, files: StoreSnapshot, store: BuiltStore, records: Int, context: String
    ) async throws {
        let (reader, readState) = try openStore(path, readOnly: true)
        #expect(readState == store.full, "\(context)")
        #expect(reader.recovery.tornTail == nil, "\(context)")
        #expect(reader.recovery.replayedBytes == Int64(records), "\(context)")
        #expect(try StoreSnapshot.read(path) == files, "\(context): a read-only open changed the files")

        let (journal, state) = try openStore(path)
        #expect(state == store.full && journal.lastTransaction == 12 && journal.recovery.tornTail == nil, "\(context)")
        #expect(try StoreSnapshot.read(path) == files, "\(context): opening changed the files")
        let reopened = try await Self.appendFollowUpAndReopen(journal, after: state, at: path, context: context)
        #expect(reopened.recovery.tornTail == nil && reopened.recovery.lastTransaction == 13, "\(context)")
        let reopenedSegment = try #require(try StoreSnapshot.read(path)[StoreLayout.segmentName(firstTransaction: 1)])
        #expect(FrameSpan.transactions(in: reopenedSegment).count == 13, "\(context): the append did not go where the records ended")
        #expect(reopenedSegment.count == FrameSpan.all(in: reopenedSegment).last?.end, "\(context): closing left zeros after the records")
    }

    enum NewSegment: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// Started by a compaction: the checkpoint covers everything before it.
        case afterCompaction
        /// Started because the previous segment was full.
        case afterRoll
        var testDescription: String { rawValue }
    }

    /// A crash while a new segment's header was being written leaves a last segment with no
    /// transactions and an incomplete preamble: it is dropped, reported, and appends go on.
    @Test(arguments: NewSegment.allCases, [0, 5, 12, -1, -2])
    func interruptedSegmentCreation(_ layout: NewSegment, keep: Int) async throws {
        let directory = TemporaryDirectory("strata-newsegment")
        defer { directory.remove() }
        let history = try ModelHistory(seed: Self.seed ^ 0x5E6, count: 10, maxChanges: 3)
        let store = try await StoreBuilder.build(at: directory.appending("store"), history: history,
                                                 compactAfter: layout == .afterCompaction ? [10] : [],
                                                 rollAfter: layout == .afterRoll ? [10] : [])
        let name = StoreLayout.segmentName(firstTransaction: 11)
        let empty = try #require(store.snapshot[name])
        let preamble = FrameSpan.all(in: empty)
        try #require(preamble.count == 2 && preamble[1].end == empty.count)
        // Keep 0, 5 or 12 bytes; all of the header but none of the schema record (-1); all
        // but the last byte of the schema record (-2).
        let kept = switch keep {
        case -1: preamble[0].end
        case -2: empty.count - 1
        default: keep
        }
        var files = store.snapshot
        files[name] = Array(empty.prefix(kept))
        let path = directory.appending("crashed")
        try files.write(to: path)
        let context = "seed \(Self.seed ^ 0x5E6), \(layout), \(kept) of \(empty.count) bytes kept"

        let (reader, readState) = try openStore(path, readOnly: true)
        #expect(readState == history.final, "\(context)")
        #expect(reader.recovery.tornTail?.path == StoreLayout.join(path, name), "\(context)")
        #expect(try StoreSnapshot.read(path) == files, "\(context): a read-only open changed the files")

        let (journal, state) = try openStore(path)
        #expect(state == history.final, "\(context)")
        #expect(journal.recovery.tornTail != nil, "\(context)")
        #expect(journal.recovery.removedFiles.contains(name), "\(context)")
        _ = try await Self.appendFollowUpAndReopen(journal, after: state, at: path, context: context)
    }

    /// Appends the transaction that follows `state`, closes the journal and opens the store
    /// again read-only, expecting the state with that transaction applied; returns the
    /// reopened journal.
    static func appendFollowUpAndReopen(_ journal: Journal, after state: ReplayedState, at path: String, context: String) async throws -> Journal {
        var model = state
        let next = followUp(after: model)
        try model.apply(next)
        try await journal.append(next)
        await journal.close()
        let (reopened, reopenedState) = try openStore(path, readOnly: true)
        #expect(reopenedState == model, "\(context)")
        return reopened
    }
}
