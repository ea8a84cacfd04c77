import Foundation
import Testing
@testable import Strata

/// Damage that is not a torn tail refuses to open, naming the file, offset and transaction,
/// and leaves every file byte-identical; salvage copies the readable prefix; the leftovers
/// of an interrupted compaction are cleaned up.
@Suite struct CorruptionTests {
    static let seed: UInt64 = 0xC022_0971

    /// A checkpoint through 8, then segments 9...14, 15...20 and 21...28.
    static func buildStore(at path: String) async throws -> BuiltStore {
        let history = try ModelHistory(seed: seed, count: 28, maxChanges: 3)
        let store = try await StoreBuilder.build(at: path, history: history, compactAfter: [8], rollAfter: [14, 20])
        try #require(store.snapshot.checkpointNames == [checkpoint])
        try #require(store.snapshot.segmentNames == segments)
        return store
    }

    static let checkpoint = StoreLayout.checkpointName(through: 8)
    static let segments = [9, 15, 21].map { StoreLayout.segmentName(firstTransaction: $0) }

    enum Damage: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case lastSegmentMiddleRecordPayload, lastSegmentMiddleRecordChecksum, lastSegmentMiddleRecordLength, lastSegmentMiddleRecordType
        case earlierSegmentLastRecord, earlierSegmentMiddleRecord, earlierSegmentHeader, firstSegmentSchemaRecord
        case checkpointRow, checkpointEnd, checkpointHeader
        case missingMiddleSegment
        case foreignMiddleSegment, foreignLastSegment, foreignCheckpoint
        case futureVersionCheckpoint, futureVersionSegment, futureVersionLastSegment
        case differentSchema

        var testDescription: String { rawValue }
    }

    struct Expected {
        var code: StoreError.Code
        var file: String?
        var offset: Int?
        var transaction: UInt64?
        /// Text the error's message must hold.
        var mentions: [String] = []
    }

    /// Applies `damage` to a copy of the store's files; returns the files and what opening must say.
    static func damage(_ damage: Damage, _ store: BuiltStore, scratch: TemporaryDirectory) async throws -> (StoreSnapshot, Expected) {
        var files = store.snapshot
        let last = segments[2], middle = segments[1], first = segments[0]
        func record(_ name: String, _ index: Int) -> FrameSpan { FrameSpan.transactions(in: files[name]!)[index] }
        func future(_ name: String, _ kind: FileHeader.Kind) throws -> [UInt8] {
            var bytes = files[name]!
            let (header, end) = try bytes.withUnsafeBytes { try FileHeader.decode($0, expecting: kind).get() }
            var newer = header
            newer.formatVersion = RecordFormat.version + 1
            var writer = ByteWriter()
            newer.encode(into: &writer)
            try #require(writer.count == end)
            bytes.replaceSubrange(0..<end, with: writer.bytes)
            return bytes
        }
        func foreign(_ name: String) async throws -> [UInt8] {
            // Another store with the same history and layout: its file of the same name is
            // intact, but it is not this store's.
            let other = try await CorruptionTests.buildStore(at: scratch.appending("other"))
            #expect(other.storeID != store.storeID)
            return other.snapshot[name]!
        }
        switch damage {
        case .lastSegmentMiddleRecordPayload, .lastSegmentMiddleRecordChecksum, .lastSegmentMiddleRecordLength, .lastSegmentMiddleRecordType:
            // Transaction 24 of 21...28: intact records follow it.
            let span = record(last, 3)
            let at = switch damage {
            case .lastSegmentMiddleRecordPayload: span.offset + RecordFormat.frameHeaderSize + span.length / 2
            case .lastSegmentMiddleRecordChecksum: span.offset + 5
            case .lastSegmentMiddleRecordLength: span.offset + 1
            default: span.offset + 8
            }
            flip(&files[last]!, at: at, mask: 0x04)
            return (files, Expected(code: .corrupted, file: last, offset: span.offset, transaction: 24))
        case .earlierSegmentLastRecord:
            let span = record(middle, 5)  // transaction 20, the last of its segment
            flip(&files[middle]!, at: span.end - 1)
            return (files, Expected(code: .corrupted, file: middle, offset: span.offset, transaction: 20))
        case .earlierSegmentMiddleRecord:
            let span = record(first, 2)  // transaction 11
            flip(&files[first]!, at: span.offset + RecordFormat.frameHeaderSize)
            return (files, Expected(code: .corrupted, file: first, offset: span.offset, transaction: 11))
        case .earlierSegmentHeader:
            flip(&files[middle]!, at: RecordFormat.magicSize + RecordFormat.frameHeaderSize + 3)
            return (files, Expected(code: .corrupted, file: middle, offset: RecordFormat.magicSize))
        case .firstSegmentSchemaRecord:
            let schemaRecord = FrameSpan.all(in: files[first]!)[1]
            flip(&files[first]!, at: schemaRecord.offset + 20)
            return (files, Expected(code: .corrupted, file: first, offset: schemaRecord.offset))
        case .checkpointRow, .checkpointEnd:
            let frames = FrameSpan.all(in: files[checkpoint]!)
            let type: RecordFormat.RecordType = damage == .checkpointRow ? .checkpointRows : .checkpointEnd
            let span = try #require(frames.first { $0.type == type.rawValue })
            flip(&files[checkpoint]!, at: span.end - 2)
            return (files, Expected(code: .corrupted, file: checkpoint, offset: span.offset))
        case .checkpointHeader:
            flip(&files[checkpoint]!, at: RecordFormat.magicSize + RecordFormat.frameHeaderSize + 1)
            return (files, Expected(code: .corrupted, file: checkpoint, offset: RecordFormat.magicSize))
        case .missingMiddleSegment:
            files[middle] = nil
            return (files, Expected(code: .corrupted, file: last, offset: 0, transaction: 15))
        case .foreignMiddleSegment:
            files[middle] = try await foreign(middle)
            return (files, Expected(code: .corrupted, file: middle, offset: RecordFormat.magicSize))
        case .foreignLastSegment:
            files[last] = try await foreign(last)
            return (files, Expected(code: .corrupted, file: last, offset: RecordFormat.magicSize))
        case .foreignCheckpoint:
            // The first file read is the stray one: the error is raised at the next, which is
            // the store's own, so it names both and calls neither the one to remove.
            files[checkpoint] = try await foreign(checkpoint)
            return (files, Expected(code: .corrupted, file: first, offset: RecordFormat.magicSize,
                                    mentions: [checkpoint, "the directory holds the files of two stores"]))
        case .futureVersionCheckpoint:
            files[checkpoint] = try future(checkpoint, .checkpoint)
            return (files, Expected(code: .unsupportedFormatVersion, file: checkpoint))
        case .futureVersionSegment:
            files[middle] = try future(middle, .segment)
            return (files, Expected(code: .unsupportedFormatVersion, file: middle))
        case .futureVersionLastSegment:
            files[last] = try future(last, .segment)
            return (files, Expected(code: .unsupportedFormatVersion, file: last))
        case .differentSchema:
            return (files, Expected(code: .schemaMismatch))
        }
    }

    @Test(arguments: Damage.allCases)
    func damageRefusesToOpenAndChangesNothing(_ damage: Damage) async throws {
        let directory = TemporaryDirectory("strata-corrupt")
        defer { directory.remove() }
        let store = try await Self.buildStore(at: directory.appending("store"))
        let (files, expected) = try await Self.damage(damage, store, scratch: directory)
        let path = directory.appending("damaged")
        try files.write(to: path)
        let schema = damage == .differentSchema ? alteredSongbook : Fixtures.songbook
        for readOnly in [false, true] {
            let context = "seed \(Self.seed), \(damage), \(readOnly ? "read-only" : "writable")"
            let error = #expect(throws: StoreError.self, "\(context)") { try openStore(path, readOnly: readOnly, schema: schema) }
            guard let error else { continue }
            #expect(error.code == expected.code, "\(context): \(error)")
            if let file = expected.file { #expect(error.path == StoreLayout.join(path, file), "\(context): \(error)") }
            if let offset = expected.offset { #expect(error.offset == Int64(offset), "\(context): \(error)") }
            #expect(error.transaction == expected.transaction, "\(context): \(error)")
            for text in expected.mentions { #expect(error.message.contains(text), "\(context): \(error)") }
            let after = try StoreSnapshot.read(path)
            #expect(after == files, "\(context): \(after.firstDifference(from: files) ?? "") changed")
        }
    }

    // MARK: - Salvage

    enum SalvageCase: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case damagedLastSegment, damagedEarlierSegment, missingSegment, intact
        var testDescription: String { rawValue }

        var damage: Damage? {
            switch self {
            case .damagedLastSegment: .lastSegmentMiddleRecordPayload
            case .damagedEarlierSegment: .earlierSegmentLastRecord
            case .missingSegment: .missingMiddleSegment
            case .intact: nil
            }
        }

        /// The last transaction before the damage.
        var prefix: Int {
            switch self {
            case .damagedLastSegment: 23
            case .damagedEarlierSegment: 19
            case .missingSegment: 14
            case .intact: 28
            }
        }
    }

    @Test(arguments: SalvageCase.allCases)
    func salvageCopiesThePrefixBeforeTheDamage(_ salvage: SalvageCase) async throws {
        let directory = TemporaryDirectory("strata-salvage")
        defer { directory.remove() }
        let store = try await Self.buildStore(at: directory.appending("store"))
        var files = store.snapshot
        if let damage = salvage.damage { (files, _) = try await Self.damage(damage, store, scratch: directory) }
        let source = directory.appending("damaged")
        try files.write(to: source)
        let destination = directory.appending("salvaged")
        let context = "seed \(Self.seed), \(salvage)"

        let report = try Journal.salvage(from: source, to: destination)
        let expected = store.history.states[salvage.prefix]
        #expect(report.lastTransaction == UInt64(salvage.prefix), "\(context): \(report)")
        #expect(report.objects == expected.rows.count, "\(context): \(report)")
        #expect(report.stoppedAt?.code == (salvage == .intact ? nil : .corrupted), "\(context): \(report)")
        #expect(try StoreSnapshot.read(source) == files, "\(context): salvage changed the source")

        let (copy, state) = try openStore(destination)
        #expect(state == expected, "\(context)")
        #expect(copy.recovery.checkpoint == UInt64(salvage.prefix), "\(context)")
        var model = state
        var generator = TransactionGenerator(seed: Self.seed ^ 0x5A1)
        let next = generator.next(after: model)
        try model.apply(next)
        try await copy.append(next)
        await copy.close()
        let (_, reopened) = try openStore(destination, readOnly: true)
        #expect(reopened == model, "\(context)")
        // The damaged store still refuses to open: salvage does not repair it in place.
        if salvage != .intact {
            #expect(throws: StoreError.self, "\(context)") { try openStore(source) }
        }
    }

    // MARK: - Leftovers of an interrupted compaction

    enum Leftover: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case temporaryCheckpoint, olderCheckpoint, coveredSegments, all
        var testDescription: String { rawValue }
    }

    @Test(arguments: Leftover.allCases)
    func leftoversOfAnInterruptedCompactionAreRemoved(_ leftover: Leftover) async throws {
        let directory = TemporaryDirectory("strata-leftover")
        defer { directory.remove() }
        let history = try ModelHistory(seed: Self.seed ^ 0x1EF7, count: 25, maxChanges: 3)
        // Checkpoints after 10 and 20; snapshots just before each compaction.
        let store = try await StoreBuilder.build(at: directory.appending("store"), history: history,
                                                 compactAfter: [10, 20], snapshotAfter: [10, 20])
        let clean = store.snapshot
        try #require(clean.checkpointNames == [StoreLayout.checkpointName(through: 20)])
        try #require(clean.segmentNames == [StoreLayout.segmentName(firstTransaction: 21)])
        let beforeFirst = try #require(store.snapshots[10]), beforeSecond = try #require(store.snapshots[20])

        var files = clean
        var added: [String] = []
        func add(_ name: String, _ bytes: [UInt8]) {
            files[name] = bytes
            added.append(name)
        }
        if leftover == .temporaryCheckpoint || leftover == .all {
            // A checkpoint being written when the process died: half of one.
            let partial = clean[clean.checkpointNames[0]]!
            add(StoreLayout.checkpointName(through: 25) + StoreLayout.temporarySuffix, Array(partial.prefix(partial.count / 2)))
        }
        if leftover == .olderCheckpoint || leftover == .all {
            let older = StoreLayout.checkpointName(through: 10)
            add(older, try #require(beforeSecond[older]))
        }
        if leftover == .coveredSegments || leftover == .all {
            for (snapshot, first) in [(beforeFirst, 1), (beforeSecond, 11)] as [(StoreSnapshot, Int)] {
                let name = StoreLayout.segmentName(firstTransaction: UInt64(first))
                add(name, try #require(snapshot[name], "\(name) in \(snapshot.names)"))
            }
        }
        let context = "seed \(Self.seed ^ 0x1EF7), \(leftover): \(added)"
        let path = directory.appending("crashed")
        try files.write(to: path)

        // Read-only: the right state, and nothing removed.
        let (reader, readState) = try openStore(path, readOnly: true)
        #expect(readState == history.final, "\(context)")
        #expect(reader.recovery.checkpoint == 20, "\(context)")
        #expect(reader.recovery.removedFiles.isEmpty, "\(context)")
        #expect(try StoreSnapshot.read(path) == files, "\(context): a read-only open changed the files")

        // Writable: the right state, and exactly the leftovers removed.
        let (journal, state) = try openStore(path)
        #expect(state == history.final, "\(context)")
        #expect(Set(journal.recovery.removedFiles) == Set(added), "\(context): removed \(journal.recovery.removedFiles)")
        await journal.close()
        let after = try StoreSnapshot.read(path)
        #expect(after.names == clean.names, "\(context)")
        for name in clean.dataFileNames { #expect(after[name] == clean[name], "\(context): \(name) changed") }
        let (_, reopened) = try openStore(path, readOnly: true)
        #expect(reopened == history.final, "\(context)")
    }
}
