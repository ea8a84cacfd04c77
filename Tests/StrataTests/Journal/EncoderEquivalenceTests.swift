import Foundation
import Testing
@testable import Strata

/// The journal's fast paths — the cursor-based record encoder and the slicing-by-16
/// CRC32C — against plain reference implementations on random inputs, byte for byte.
@Suite struct EncoderEquivalenceTests {
    static let schema = Fixtures.songbook

    // MARK: - References

    /// CRC-32C one bit at a time, straight from the polynomial.
    static func referenceCRC(_ bytes: [UInt8], continuing crc: UInt32 = 0) -> UInt32 {
        var c = ~crc
        for byte in bytes {
            c ^= UInt32(byte)
            for _ in 0..<8 { c = c & 1 != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
        }
        return ~c
    }

    /// A transaction frame written value by value with `ByteWriter`'s own methods (the
    /// encoding the format defines), checksummed with ``referenceCRC(_:continuing:)``.
    static func referenceFrame(_ record: TransactionRecord, seed: UInt32) -> [UInt8] {
        let indexes = schema.layout.entityIndexes
        var w = ByteWriter(capacity: 16)
        w.writeVarint(record.number)
        w.writeDouble(record.timestamp.timeIntervalSinceReferenceDate)
        w.writeString(record.author)
        w.writeVarint(record.inserted.count)
        for row in record.inserted {
            w.writeObjectID(row.id, entityIndexes: indexes)
            for value in row.values { w.writeValue(value, entityIndexes: indexes) }
        }
        w.writeVarint(record.updated.count)
        for update in record.updated {
            w.writeObjectID(update.id, entityIndexes: indexes)
            w.writeVarint(update.changes.count)
            for change in update.changes {
                w.writeVarint(change.index)
                w.writeValue(change.value, entityIndexes: indexes)
            }
        }
        w.writeVarint(record.deleted.count)
        for id in record.deleted { w.writeObjectID(id, entityIndexes: indexes) }
        let payload = w.bytes
        let length = UInt32(payload.count)
        let head = withUnsafeBytes(of: length.littleEndian, Array.init) + [RecordFormat.RecordType.transaction.rawValue]
        let crc = referenceCRC(payload, continuing: referenceCRC(head, continuing: seed))
        return withUnsafeBytes(of: length.littleEndian, Array.init) + withUnsafeBytes(of: crc.littleEndian, Array.init)
            + [RecordFormat.RecordType.transaction.rawValue] + payload
    }

    // MARK: - CRC32C

    @Test func crc32cMatchesTheBitwiseReference() {
        var rng = SeededGenerator(seed: 0xC4C3_2C01)
        var lengths = Array(0...80) + [127, 128, 129, 255, 256, 257, 4095, 4096, 4097, 65_537]
        for _ in 0..<40 { lengths.append(Int.random(in: 0...3_000, using: &rng)) }
        for length in lengths {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let seed = UInt32.random(in: 0...UInt32.max, using: &rng)
            #expect(CRC32C.checksum(bytes) == Self.referenceCRC(bytes), "length \(length)")
            #expect(CRC32C.checksum(bytes, continuing: seed) == Self.referenceCRC(bytes, continuing: seed), "length \(length), seed \(seed)")
        }
    }

    /// Unaligned starts and ends inside a larger buffer.
    @Test func crc32cOfSlicesMatchesTheReference() {
        var rng = SeededGenerator(seed: 0xC4C3_2C02)
        let bytes = (0..<1_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        bytes.withUnsafeBytes { all in
            for _ in 0..<300 {
                let start = Int.random(in: 0...bytes.count, using: &rng)
                let end = Int.random(in: start...bytes.count, using: &rng)
                let slice = UnsafeRawBufferPointer(rebasing: all[start..<end])
                #expect(CRC32C.checksum(slice) == Self.referenceCRC(Array(bytes[start..<end])), "\(start)..<\(end)")
            }
        }
    }

    /// Lengths around the interleaving threshold, where the buffer is split in thirds.
    @Test func interleavedCRC32CMatchesTheReference() {
        var rng = SeededGenerator(seed: 0xC4C3_2C03)
        let threshold = CRC32C.interleavedThreshold
        for length in [threshold - 1, threshold, threshold + 1, threshold + 7, threshold + 8, threshold + 23, 3 * threshold + 5, 100_003] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let seed = UInt32.random(in: 0...UInt32.max, using: &rng)
            #expect(CRC32C.checksum(bytes, continuing: seed) == Self.referenceCRC(bytes, continuing: seed), "length \(length)")
        }
    }

    @Test func combinedChecksumsEqualTheChecksumOfTheWhole() {
        var rng = SeededGenerator(seed: 0xC4C3_2C04)
        for _ in 0..<100 {
            let first = (0..<Int.random(in: 0...200, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let second = (0..<Int.random(in: 0...200, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let seed = UInt32.random(in: 0...UInt32.max, using: &rng)
            let combined = CRC32C.combine(Self.referenceCRC(first, continuing: seed), Self.referenceCRC(second), length: second.count)
            #expect(combined == Self.referenceCRC(first + second, continuing: seed), "\(first.count) + \(second.count) bytes")
        }
    }

    // MARK: - Records

    @Test(arguments: [0xE4C0_0001, 0xE4C0_0002] as [UInt64])
    func encodedFramesMatchTheReferenceEncoding(seed: UInt64) throws {
        var generator = CodecRecordGenerator(schema: Self.schema, seed: seed)
        let codec = RecordCodec(schema: Self.schema, storeID: generator.uuid())
        // A small writer, reused, so that the cursor grows the storage mid-row many times.
        var validating = ByteWriter(capacity: 16)
        var trusted = ByteWriter(capacity: 16)
        var coverage = ValueCoverage()
        for index in 0..<600 {
            let record = generator.record(index: index)
            coverage.note(record)
            let expected = Self.referenceFrame(record, seed: codec.seed)
            validating.removeAll()
            try codec.encodeValidating(record, into: &validating)
            #expect(validating.bytes == expected, "seed \(seed): transaction \(record.number), validating encoder")
            trusted.removeAll()
            codec.encodeFrame(record, into: &trusted)
            #expect(trusted.bytes == expected, "seed \(seed): transaction \(record.number), encoder of validated records")
        }
        #expect(coverage.missing.isEmpty, "seed \(seed): value kinds never generated: \(coverage.missing.sorted())")
    }

    /// Frames appended after other bytes (as in the journal's pending batch) come out the same.
    @Test func framesAppendedAfterOtherBytesMatch() throws {
        var generator = CodecRecordGenerator(schema: Self.schema, seed: 0xE4C0_0003)
        let codec = RecordCodec(schema: Self.schema, storeID: generator.uuid())
        var writer = ByteWriter(capacity: 16)
        var expected: [UInt8] = []
        for index in 0..<200 {
            let record = generator.record(index: index)
            try codec.encodeValidating(record, into: &writer)
            expected += Self.referenceFrame(record, seed: codec.seed)
        }
        #expect(writer.bytes == expected)
    }

    /// Transactions large enough to be encoded in two halves on two threads come out byte for
    /// byte as the reference encodes them, including after other bytes in the same writer.
    @Test(arguments: [RecordCodec.rowsEncodedInHalves, RecordCodec.rowsEncodedInHalves + 1, 3_001])
    func largeTransactionsEncodedInHalvesMatchTheReference(rows: Int) throws {
        var generator = CodecRecordGenerator(schema: Self.schema, seed: 0xE4C0_0005 &+ UInt64(rows))
        let codec = RecordCodec(schema: Self.schema, storeID: generator.uuid())
        var writer = ByteWriter(capacity: 16)
        var expected: [UInt8] = []
        for number in 1...3 as ClosedRange<UInt64> {
            let record = TransactionRecord(number: number, author: "bulk", inserted: (0..<rows).map { _ in generator.row() })
            if number == 2 { codec.encodeFrame(record, into: &writer) } else { try codec.encodeValidating(record, into: &writer) }
            expected += Self.referenceFrame(record, seed: codec.seed)
            #expect(writer.bytes == expected, "\(rows) rows, transaction \(number)")
        }
    }

    /// A value that does not fit, in either half of a large transaction, is refused with
    /// the validator's message for the first such row.
    @Test func largeTransactionsAreRefusedByTheirFirstBadRow() {
        var generator = CodecRecordGenerator(schema: Self.schema, seed: 0xE4C0_0006)
        let codec = RecordCodec(schema: Self.schema, storeID: generator.uuid())
        let count = RecordCodec.rowsEncodedInHalves * 2
        let rows = (0..<count).map { _ in generator.row() }
        for bad in [[count / 4], [count * 3 / 4], [count / 4, count * 3 / 4], [count - 1]] {
            var record = TransactionRecord(number: 1, inserted: rows)
            for index in bad { record.inserted[index].values[0] = .objects([ObjectID(entity: "Nope", number: 1)]) }
            var expectedError: StoreError?
            do throws(StoreError) { try codec.validate(record) } catch { expectedError = error }
            var writer = ByteWriter()
            var actualError: StoreError?
            do throws(StoreError) { try codec.encodeValidating(record, into: &writer) } catch { actualError = error }
            #expect(expectedError != nil, "bad rows \(bad)")
            #expect(actualError?.message == expectedError?.message, "bad rows \(bad)")
            #expect(actualError?.message.contains(record.inserted[bad[0]].id.description) == true, "bad rows \(bad): \(actualError?.message ?? "no error")")
        }
    }

    /// Each value that does not fit its property is refused with the message the validator
    /// gives, whichever property it is in.
    @Test func valuesThatDoNotFitAreRefusedLikeTheValidatorRefusesThem() {
        var generator = CodecRecordGenerator(schema: Self.schema, seed: 0xE4C0_0004)
        let codec = RecordCodec(schema: Self.schema, storeID: generator.uuid())
        let wrong: [Value] = [
            .string("x"), .int(1), .double(1), .bool(true), .date(Date(timeIntervalSinceReferenceDate: 0)), .data(Data([1])),
            .uuid(UUID()), .object(ObjectID(entity: "Nope", number: 1)), .objects([ObjectID(entity: "Nope", number: 1)]), .null,
        ]
        var refused = 0
        for entity in Self.schema.entities {
            for property in 0..<entity.propertyCount {
                for value in wrong {
                    var row = generator.row()
                    while row.id.entity != entity.name { row = generator.row() }
                    row.values[property] = value
                    let record = TransactionRecord(number: 1, inserted: [generator.row(), row])
                    var expectedError: StoreError?
                    do throws(StoreError) { try codec.validate(record) } catch { expectedError = error }
                    var writer = ByteWriter()
                    var actualError: StoreError?
                    do throws(StoreError) { try codec.encodeValidating(record, into: &writer) } catch { actualError = error }
                    #expect(actualError?.message == expectedError?.message, "\(entity.name).\(property) = \(value)")
                    #expect(actualError?.code == expectedError?.code)
                    if actualError != nil { refused += 1 }
                }
            }
        }
        #expect(refused > 0)
    }
}
