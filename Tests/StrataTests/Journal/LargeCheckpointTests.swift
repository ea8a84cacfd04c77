import Foundation
import Testing
@testable import Strata

/// Checkpoints large enough to be decoded on a thread of their own, a few records ahead of
/// the rows being loaded: the same state as any other open, damage reported with its file
/// and offset (files unchanged), and a refused row stopping the decoding thread.
@Suite struct LargeCheckpointTests {
    static let schema = try! Schema("Blobs", entities: [
        Entity("Blob", attributes: [Attribute("n", .int, unique: true), Attribute("payload", .data)]),
    ])
    static let count = 48
    static let blobSize = 150_000
    static let checkpoint = StoreLayout.checkpointName(through: UInt64(count))

    static func payload(_ n: Int) -> Data {
        var data = Data(repeating: UInt8(truncatingIfNeeded: n), count: blobSize)
        data[n] = 0xFF  // no two alike
        return data
    }

    /// A journal holding one checkpoint of every blob; returns the state it holds.
    static func build(at path: String) async throws -> ReplayedState {
        let journal = try Journal.create(at: path, schema: schema)
        var model = ReplayedState()
        for n in 1...count {
            let record = TransactionRecord(number: UInt64(n), author: "blobs", inserted: [
                RowImage(id: ObjectID(entity: "Blob", number: UInt64(n)), values: [.int(Int64(n)), .data(payload(n))]),
            ])
            try model.apply(record)
            try await journal.append(record)
        }
        try await journal.compact(from: model)
        await journal.close()
        return model
    }

    @Test func opensLikeAnyOtherCheckpoint() async throws {
        let directory = TemporaryDirectory("large-checkpoint")
        defer { directory.remove() }
        let model = try await Self.build(at: directory.path)
        let size = try fileSize(StoreLayout.join(directory.path, Self.checkpoint))
        try #require(size >= CheckpointDecoder.threadedMinimum, "the checkpoint (\(size) bytes) is too small to be decoded on a thread")
        for _ in 0..<3 {
            var state = ReplayedState()
            let journal = try Journal.open(at: directory.path, schema: Self.schema, configuration: .init(readOnly: true), replayingInto: &state)
            #expect(state == model)
            #expect(journal.recovery.checkpoint == UInt64(Self.count) && journal.recovery.checkpointRows == Self.count)
            await journal.close()
        }
    }

    /// A damaged row record early, midway and late in the file.
    @Test(arguments: [0, 3, 6])
    func damageNamesTheRecordAndChangesNothing(record: Int) async throws {
        let directory = TemporaryDirectory("large-checkpoint-damage")
        defer { directory.remove() }
        _ = try await Self.build(at: directory.path)
        var snapshot = try StoreSnapshot.read(directory.path)
        let rowRecords = FrameSpan.all(in: snapshot.files[Self.checkpoint]!).filter { $0.type == RecordFormat.RecordType.checkpointRows.rawValue }
        try #require(rowRecords.count > record)
        let damaged = rowRecords[record]
        flip(&snapshot.files[Self.checkpoint]!, at: damaged.offset + damaged.length / 2)
        let scratch = TemporaryDirectory("large-checkpoint-damaged")
        defer { scratch.remove() }
        try snapshot.write(to: scratch.path)
        var state = ReplayedState()
        let error = #expect(throws: StoreError.self) {
            _ = try Journal.open(at: scratch.path, schema: Self.schema, configuration: .init(readOnly: true), replayingInto: &state)
        }
        #expect(error?.code == .corrupted)
        #expect(error?.path?.hasSuffix(Self.checkpoint) == true)
        #expect(error?.offset == Int64(damaged.offset))
        #expect(try StoreSnapshot.read(scratch.path) == snapshot)
    }

    /// A target that refuses the `refuse`-th row: the open fails there, and the decoding
    /// thread (records ahead by then) is stopped before the file's bytes are released.
    struct RefusingTarget: JournalReplayTarget {
        var refuse: Int
        var loaded = 0
        mutating func loadCheckpointRow(_ row: RowImage) throws(ReplayError) {
            loaded += 1
            if loaded == refuse { throw ReplayError("row \(loaded) refused") }
        }
        mutating func finishCheckpoint(through transaction: UInt64, highestObjectNumbers: [String: UInt64]) throws(ReplayError) {}
        mutating func apply(_ transaction: TransactionRecord) throws(ReplayError) {}
    }

    @Test func aRefusedRowStopsTheDecoder() async throws {
        let directory = TemporaryDirectory("large-checkpoint-refused")
        defer { directory.remove() }
        _ = try await Self.build(at: directory.path)
        for refuse in [1, 2, 9, 30, Self.count] {
            var target = RefusingTarget(refuse: refuse)
            let error = #expect(throws: StoreError.self) {
                _ = try Journal.open(at: directory.path, schema: Self.schema, configuration: .init(readOnly: true), replayingInto: &target)
            }
            #expect(error?.code == .corrupted && error?.message.contains("row \(refuse) refused") == true)
            #expect(target.loaded == refuse)
        }
    }
}
