import Foundation
import Testing
@testable import Strata

/// Records crafted to attack the decoder — with valid checksums, so that only the decoder's
/// own checks stand between them and the state: each gives a typed error at once (nothing is
/// allocated to a claimed size), and the files are left as they were.
@Suite struct HostileRecordTests {
    static let seed: UInt64 = 0x4057_11E5
    static let schema = Fixtures.songbook

    // MARK: - Transaction records

    enum Hostile: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case hugeInsertedCount, hugeUpdatedCount, hugeDeletedCount, hugeChangeCount, hugeToManyCount
        case hugeStringLength, hugeDataLength, hugeEntityIndex
        case invalidUTF8Author, overlongUTF8, surrogateInUTF8, truncatedUTF8
        case unknownEntityIndex, unknownEntityInObjectValue
        case propertyIndexOutOfRange, propertyIndexesOutOfOrder
        case wrongValueType, toOneHoldingList, relationshipToWrongEntity, unknownValueTag, objectNumberZero, objectNumberPastTheLargest
        case trailingBytes, varintOverflow, truncatedPayload
        // Frames that cannot be read as a record of this position at all.
        case lengthUInt32Max, lengthPastEndOfFile, lengthOverMaximum, unknownRecordType

        var testDescription: String { rawValue }

        /// Whether the problem is in the frame itself (length, type) rather than in a payload
        /// that passes its checksum: at the very end such bytes are a torn tail.
        var isFrameLevel: Bool {
            switch self {
            case .lengthUInt32Max, .lengthPastEndOfFile, .lengthOverMaximum, .unknownRecordType: true
            default: false
            }
        }

        /// The bytes of the hostile record for transaction `number`.
        func bytes(number: UInt64, seed: UInt32) -> [UInt8] {
            let huge: UInt64 = 1 << 62
            var w = ByteWriter()
            func start(author: [UInt8] = Array("hostile".utf8)) {
                w.writeVarint(number)
                w.writeDouble(0)
                w.writeVarint(author.count)
                w.write(author)
            }
            func tag(_ t: ValueTag) { w.write(t.rawValue) }
            func string(_ utf8: [UInt8]) {
                tag(.string)
                w.writeVarint(utf8.count)
                w.write(utf8)
            }
            func int(_ i: Int64) {
                tag(.int)
                w.writeSignedVarint(i)
            }
            func date() {
                tag(.date)
                w.writeDouble(1)
            }
            /// One inserted Artist (artistID, name, createdAt, albums) with the given name bytes.
            func artist(name: [UInt8]) {
                w.writeVarint(1)  // inserted
                w.writeVarint(0)  // Artist
                w.writeVarint(100)
                int(1)
                string(name)
                date()
                tag(.objects)
                w.writeVarint(0)
            }
            /// One inserted Album (albumID, title, rating, explicit, artist, songs) whose
            /// to-one `artist` is written by `artistValue`.
            func album(artistValue: () -> Void) {
                w.writeVarint(1)
                w.writeVarint(1)  // Album
                w.writeVarint(100)
                int(1)
                string(Array("t".utf8))
                tag(.null)
                tag(.boolTrue)
                artistValue()
                tag(.objects)
                w.writeVarint(0)
            }
            /// No updates, no deletes.
            func rest() {
                w.writeVarint(0)
                w.writeVarint(0)
            }
            switch self {
            case .hugeInsertedCount:
                start()
                w.writeVarint(huge)
            case .hugeUpdatedCount:
                start()
                w.writeVarint(0)
                w.writeVarint(huge)
            case .hugeDeletedCount:
                start()
                w.writeVarint(0)
                w.writeVarint(0)
                w.writeVarint(huge)
            case .hugeChangeCount:
                start()
                w.writeVarint(0)
                w.writeVarint(1)
                w.writeVarint(0)  // Artist/1
                w.writeVarint(1)
                w.writeVarint(huge)
            case .hugeToManyCount:
                start()
                w.writeVarint(1)
                w.writeVarint(0)
                w.writeVarint(100)
                int(1)
                tag(.null)
                date()
                tag(.objects)
                w.writeVarint(huge)
                w.write([1, 1, 1, 2])
            case .hugeStringLength:
                w.writeVarint(number)
                w.writeDouble(0)
                w.writeVarint(huge)
                w.write(Array("short".utf8))
            case .hugeDataLength:
                start()
                w.writeVarint(1)
                w.writeVarint(2)  // Song: songID, title, artwork, milliseconds, album
                w.writeVarint(100)
                tag(.uuid)
                w.write([UInt8](repeating: 7, count: 16))
                string(Array("t".utf8))
                tag(.data)
                w.writeVarint(UInt64(1) << 40)
                w.write([1, 2, 3])
            case .hugeEntityIndex:
                start()
                w.writeVarint(1)
                w.writeVarint(UInt64(1) << 40)
                w.writeVarint(1)
            case .invalidUTF8Author:
                start(author: [0x61, 0xC3, 0x28])
                w.writeVarint(0)
                rest()
            case .overlongUTF8:
                start()
                artist(name: [0xC0, 0xAF])
                rest()
            case .surrogateInUTF8:
                start()
                artist(name: [0x61, 0xED, 0xA0, 0x80])
                rest()
            case .truncatedUTF8:
                start()
                artist(name: [0x61, 0xE2, 0x82])
                rest()
            case .unknownEntityIndex:
                start()
                w.writeVarint(1)
                w.writeVarint(3)
                w.writeVarint(1)
                rest()
            case .unknownEntityInObjectValue:
                start()
                album {
                    tag(.object)
                    w.writeVarint(9)
                    w.writeVarint(1)
                }
                rest()
            case .propertyIndexOutOfRange:
                start()
                w.writeVarint(0)
                w.writeVarint(1)
                w.writeVarint(0)  // Artist/1
                w.writeVarint(1)
                w.writeVarint(1)
                w.writeVarint(4)  // Artist has 4 properties
                int(1)
                w.writeVarint(0)
            case .propertyIndexesOutOfOrder:
                start()
                w.writeVarint(0)
                w.writeVarint(1)
                w.writeVarint(0)
                w.writeVarint(1)
                w.writeVarint(2)
                w.writeVarint(2)
                date()
                w.writeVarint(1)
                string(Array("x".utf8))
                w.writeVarint(0)
            case .wrongValueType:
                start()
                w.writeVarint(1)
                w.writeVarint(0)
                w.writeVarint(100)
                string(Array("not an int".utf8))  // artistID is an int
                tag(.null)
                date()
                tag(.objects)
                w.writeVarint(0)
                rest()
            case .toOneHoldingList:
                start()
                album {
                    tag(.objects)
                    w.writeVarint(1)
                    w.writeVarint(0)
                    w.writeVarint(1)
                }
                rest()
            case .relationshipToWrongEntity:
                start()
                album {
                    tag(.object)
                    w.writeVarint(2)  // a Song where an Artist belongs
                    w.writeVarint(1)
                }
                rest()
            case .unknownValueTag:
                start()
                w.writeVarint(1)
                w.writeVarint(0)
                w.writeVarint(100)
                w.write(0x7F)
                w.write([1, 2, 3, 4, 5, 6, 7, 8])
                rest()
            case .objectNumberZero:
                start()
                w.writeVarint(0)  // inserted
                w.writeVarint(0)  // updated
                w.writeVarint(1)  // deleted: Artist/0
                w.writeVarint(0)
                w.writeVarint(0)
            case .objectNumberPastTheLargest:
                start()
                w.writeVarint(1)  // inserted
                w.writeVarint(0)  // Artist/UInt64.max: every number after it overflows
                w.writeVarint(UInt64.max)
                int(1)
                tag(.null)
                date()
                tag(.objects)
                w.writeVarint(0)
                rest()
            case .trailingBytes:
                start()
                w.writeVarint(0)
                rest()
                w.write(0)
            case .varintOverflow:
                w.write([UInt8](repeating: 0xFF, count: 9) + [0x7F])
                w.writeDouble(0)
                w.writeVarint(0)
                w.writeVarint(0)
                rest()
            case .truncatedPayload:
                w.writeVarint(number)
                w.write([0, 0, 0])
            case .lengthUInt32Max:
                return [0xFF, 0xFF, 0xFF, 0xFF, 0x12, 0x34, 0x56, 0x78, 3] + [UInt8](repeating: 0xAB, count: 32)
            case .lengthPastEndOfFile:
                var header = ByteWriter()
                header.writeUInt32(100_000)
                header.writeUInt32(0x1234_5678)
                header.write(3)
                return header.bytes + [UInt8](repeating: 0xAB, count: 40)
            case .lengthOverMaximum:
                var header = ByteWriter()
                header.writeUInt32(UInt32(RecordFormat.maximumPayload + 1))
                header.writeUInt32(0)
                header.write(3)
                return header.bytes + [UInt8](repeating: 0, count: 16)
            case .unknownRecordType:
                start()
                w.writeVarint(0)
                rest()
                return framed(9, w.bytes, seed: seed)
            }
            return framed(RecordFormat.RecordType.transaction.rawValue, w.bytes, seed: seed)
        }
    }

    enum Placement: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// After the last record: the hostile record claims the next transaction.
        case afterLastRecord
        /// Between transactions 3 and 4, claiming to be transaction 4.
        case midFile
        var testDescription: String { rawValue }
    }

    /// Six transactions in one segment.
    static func buildStore(at path: String) async throws -> BuiltStore {
        try await StoreBuilder.build(at: path, history: try ModelHistory(seed: seed, count: 6, maxChanges: 3))
    }

    @Test(arguments: Hostile.allCases, Placement.allCases)
    func hostileTransactionRecord(_ hostile: Hostile, _ placement: Placement) async throws {
        let directory = TemporaryDirectory("strata-hostile")
        defer { directory.remove() }
        let store = try await Self.buildStore(at: directory.appending("store"))
        let name = try #require(store.snapshot.segmentNames.last)
        let segment = try #require(store.snapshot[name])
        let spans = FrameSpan.transactions(in: segment)
        try #require(spans.count == 6)
        let number: UInt64 = placement == .afterLastRecord ? 7 : 4
        let at = placement == .afterLastRecord ? segment.count : spans[3].offset
        let record = hostile.bytes(number: number, seed: RecordFormat.seed(for: store.storeID))
        var files = store.snapshot
        files[name] = Array(segment[..<at]) + record + Array(segment[at...])
        let path = directory.appending("hostile")
        try files.write(to: path)
        let segmentPath = StoreLayout.join(path, name)
        let context = "\(hostile) \(placement), seed \(Self.seed)"

        for readOnly in [true, false] {
            let mode = readOnly ? "read-only" : "writable"
            let clock = ContinuousClock()
            let started = clock.now
            let result = Result { () throws(StoreError) -> (Journal, ReplayedState) in try openStore(path, readOnly: readOnly) }
            let elapsed = clock.now - started
            #expect(elapsed < .seconds(5), "\(context), \(mode): open took \(elapsed)")
            switch result {
            case .failure(let error):
                #expect(!(hostile.isFrameLevel && placement == .afterLastRecord), "\(context), \(mode): \(error)")
                #expect(error.code == .corrupted, "\(context), \(mode): \(error)")
                #expect(error.path == segmentPath, "\(context), \(mode): \(error)")
                #expect(error.transaction == number, "\(context), \(mode): \(error)")
                let offset = Int(error.offset ?? -1)
                #expect((at...(at + record.count)).contains(offset), "\(context), \(mode): offset \(offset) is outside the record at \(at)..<\(at + record.count): \(error)")
                #expect(try StoreSnapshot.read(path) == files, "\(context), \(mode): the files changed")
            case .success(let (journal, state)):
                // Only bytes that cannot be a record at all, at the very end, may open: as a
                // torn tail, cut off and never applied.
                #expect(hostile.isFrameLevel && placement == .afterLastRecord, "\(context), \(mode): opened")
                #expect(state == store.full, "\(context), \(mode)")
                #expect(journal.recovery.tornTail?.offset == Int64(at), "\(context), \(mode)")
                #expect(journal.recovery.tornTail?.discardedBytes == Int64(record.count), "\(context), \(mode)")
                await journal.close()
                if readOnly {
                    #expect(try StoreSnapshot.read(path) == files, "\(context), \(mode): the files changed")
                } else {
                    #expect(try fileSize(segmentPath) == segment.count, "\(context), \(mode)")
                }
            }
        }
    }

    // MARK: - Checkpoints and schema records

    enum HostileCheckpoint: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case rowUnknownEntity, rowHugeToManyCount, rowHugeStringLength, rowWrongValueType, rowObjectNumberZero, duplicateRow
        case rowObjectNumberPastTheLargest
        case endHugeEntityCount, endUnknownEntityIndex, endCountMismatch, endWrongTransaction, endTrailingBytes
        case endObjectNumberPastTheLargest
        case recordAfterEnd, unknownRecordType, missingEnd, lengthUInt32Max
        case schemaDeeplyNested, schemaInvalidUTF8, schemaHugeString, schemaOfAnotherShape
        var testDescription: String { rawValue }
    }

    /// A checkpoint file through transaction 6 built from parts; `nil` parts are the valid ones.
    static func checkpointFile(storeID: UUID, schemaPayload: [UInt8]? = nil, records: [[UInt8]]? = nil) -> [UInt8] {
        let seed = RecordFormat.seed(for: storeID)
        var w = ByteWriter()
        FileHeader(kind: .checkpoint, formatVersion: RecordFormat.version, storeID: storeID, fingerprint: schema.fingerprint,
                   transaction: 6).encode(into: &w)
        w.write(framed(RecordFormat.RecordType.schema.rawValue, schemaPayload ?? Array(schema.modelFileJSON.text.utf8), seed: seed))
        for record in records ?? [endRecord(rows: 0)] { w.write(framed(record[0], Array(record.dropFirst()), seed: seed)) }
        return w.bytes
    }

    /// A checkpoint-end record (type byte first): row count, no entity numbers, transaction.
    static func endRecord(rows: Int, through: UInt64 = 6) -> [UInt8] {
        var w = ByteWriter()
        w.write(RecordFormat.RecordType.checkpointEnd.rawValue)
        w.writeVarint(rows)
        w.writeVarint(0)
        w.writeUInt64(through)
        return w.bytes
    }

    /// A checkpoint-rows record (type byte first) holding `body`.
    static func rowsRecord(_ body: (inout ByteWriter) -> Void) -> [UInt8] {
        var w = ByteWriter()
        w.write(RecordFormat.RecordType.checkpointRows.rawValue)
        body(&w)
        return w.bytes
    }

    static func validArtist(_ w: inout ByteWriter, number: UInt64 = 1) {
        w.writeVarint(0)
        w.writeVarint(number)
        w.writeValue(.int(1))
        w.writeValue(.null)
        w.writeValue(.date(Date(timeIntervalSinceReferenceDate: 0)))
        w.write(ValueTag.objects.rawValue)
        w.writeVarint(0)
    }

    static func hostileCheckpoint(_ hostile: HostileCheckpoint, storeID: UUID) -> [UInt8] {
        let huge: UInt64 = 1 << 62
        switch hostile {
        case .rowUnknownEntity:
            return checkpointFile(storeID: storeID, records: [rowsRecord { w in w.writeVarint(7); w.writeVarint(1) }, endRecord(rows: 1)])
        case .rowHugeToManyCount:
            return checkpointFile(storeID: storeID, records: [rowsRecord { w in
                w.writeVarint(0); w.writeVarint(1); w.writeValue(.int(1)); w.writeValue(.null)
                w.writeValue(.date(Date(timeIntervalSinceReferenceDate: 0)))
                w.write(ValueTag.objects.rawValue); w.writeVarint(huge); w.write([1, 1])
            }, endRecord(rows: 1)])
        case .rowHugeStringLength:
            return checkpointFile(storeID: storeID, records: [rowsRecord { w in
                w.writeVarint(0); w.writeVarint(1); w.writeValue(.int(1))
                w.write(ValueTag.string.rawValue); w.writeVarint(huge); w.write(Array("abc".utf8))
            }, endRecord(rows: 1)])
        case .rowWrongValueType:
            return checkpointFile(storeID: storeID, records: [rowsRecord { w in
                w.writeVarint(0); w.writeVarint(1); w.writeValue(.bool(true)); w.writeValue(.null)
                w.writeValue(.date(Date(timeIntervalSinceReferenceDate: 0))); w.write(ValueTag.objects.rawValue); w.writeVarint(0)
            }, endRecord(rows: 1)])
        case .rowObjectNumberZero:
            return checkpointFile(storeID: storeID, records: [rowsRecord { validArtist(&$0, number: 0) }, endRecord(rows: 1)])
        case .rowObjectNumberPastTheLargest:
            return checkpointFile(storeID: storeID, records: [rowsRecord { validArtist(&$0, number: .max) }, endRecord(rows: 1)])
        case .endObjectNumberPastTheLargest:
            var end = ByteWriter()
            end.write(RecordFormat.RecordType.checkpointEnd.rawValue); end.writeVarint(0); end.writeVarint(1)
            end.writeVarint(0); end.writeVarint(UInt64.max); end.writeUInt64(6)
            return checkpointFile(storeID: storeID, records: [end.bytes])
        case .duplicateRow:
            return checkpointFile(storeID: storeID, records: [rowsRecord { validArtist(&$0); validArtist(&$0) }, endRecord(rows: 2)])
        case .endHugeEntityCount:
            var end = ByteWriter()
            end.write(RecordFormat.RecordType.checkpointEnd.rawValue); end.writeVarint(0); end.writeVarint(huge); end.writeUInt64(6)
            return checkpointFile(storeID: storeID, records: [end.bytes])
        case .endUnknownEntityIndex:
            var end = ByteWriter()
            end.write(RecordFormat.RecordType.checkpointEnd.rawValue); end.writeVarint(0); end.writeVarint(1)
            end.writeVarint(5); end.writeVarint(3); end.writeUInt64(6)
            return checkpointFile(storeID: storeID, records: [end.bytes])
        case .endCountMismatch:
            return checkpointFile(storeID: storeID, records: [rowsRecord { validArtist(&$0) }, endRecord(rows: 5)])
        case .endWrongTransaction:
            return checkpointFile(storeID: storeID, records: [endRecord(rows: 0, through: 7)])
        case .endTrailingBytes:
            return checkpointFile(storeID: storeID, records: [endRecord(rows: 0) + [0]])
        case .recordAfterEnd:
            return checkpointFile(storeID: storeID, records: [endRecord(rows: 0), rowsRecord { validArtist(&$0) }])
        case .unknownRecordType:
            return checkpointFile(storeID: storeID, records: [[9, 1, 2, 3], endRecord(rows: 0)])
        case .missingEnd:
            return checkpointFile(storeID: storeID, records: [rowsRecord { validArtist(&$0) }])
        case .lengthUInt32Max:
            return checkpointFile(storeID: storeID, records: []) + [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 5, 1, 2, 3]
        case .schemaDeeplyNested:
            return checkpointFile(storeID: storeID, schemaPayload: [UInt8](repeating: UInt8(ascii: "["), count: 200_000))
        case .schemaInvalidUTF8:
            return checkpointFile(storeID: storeID, schemaPayload: Array("{\"name\": \"".utf8) + [0xFF, 0xFE] + Array("\"}".utf8))
        case .schemaHugeString:
            return checkpointFile(storeID: storeID, schemaPayload: Array("{\"name\": \"".utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: 1 << 20) + Array("\"}".utf8))
        case .schemaOfAnotherShape:
            return checkpointFile(storeID: storeID, schemaPayload: Array(alteredSongbook.modelFileJSON.text.utf8))
        }
    }

    /// Six transactions folded into a checkpoint, followed by an empty segment.
    static func buildCheckpointedStore(at path: String) async throws -> (BuiltStore, String) {
        let store = try await StoreBuilder.build(at: path, history: try ModelHistory(seed: seed, count: 6, maxChanges: 3), compactAfter: [6])
        let name = StoreLayout.checkpointName(through: 6)
        try #require(store.snapshot.checkpointNames == [name])
        return (store, name)
    }

    /// The hand-built checkpoint is right when nothing in it is hostile (so the hostile
    /// variants fail for their hostility, not for a mistake in building them).
    @Test func handBuiltCheckpointOpens() async throws {
        let directory = TemporaryDirectory("strata-hostile")
        defer { directory.remove() }
        let (store, name) = try await Self.buildCheckpointedStore(at: directory.appending("store"))
        var files = store.snapshot
        files[name] = Self.checkpointFile(storeID: store.storeID, records: [Self.rowsRecord { Self.validArtist(&$0) }, Self.endRecord(rows: 1)])
        let path = directory.appending("built")
        try files.write(to: path)
        let (_, state) = try openStore(path, readOnly: true)
        #expect(state.lastTransaction == 6)
        #expect(state.rows == [ObjectID(entity: "Artist", number: 1): [.int(1), .null, .date(Date(timeIntervalSinceReferenceDate: 0)), .objects([])]])
    }

    @Test(arguments: HostileCheckpoint.allCases)
    func hostileCheckpoint(_ hostile: HostileCheckpoint) async throws {
        let directory = TemporaryDirectory("strata-hostile")
        defer { directory.remove() }
        let (store, name) = try await Self.buildCheckpointedStore(at: directory.appending("store"))
        var files = store.snapshot
        files[name] = Self.hostileCheckpoint(hostile, storeID: store.storeID)
        let path = directory.appending("hostile")
        try files.write(to: path)
        for readOnly in [true, false] {
            let context = "\(hostile), \(readOnly ? "read-only" : "writable"), seed \(Self.seed)"
            let clock = ContinuousClock()
            let started = clock.now
            let error = #expect(throws: StoreError.self, "\(context)") { try openStore(path, readOnly: readOnly) }
            let elapsed = clock.now - started
            #expect(elapsed < .seconds(5), "\(context): open took \(elapsed)")
            #expect(error?.code == .corrupted, "\(context): \(String(describing: error))")
            #expect(error?.path == StoreLayout.join(path, name), "\(context): \(String(describing: error))")
            #expect(try StoreSnapshot.read(path) == files, "\(context): the files changed")
        }
    }
}
