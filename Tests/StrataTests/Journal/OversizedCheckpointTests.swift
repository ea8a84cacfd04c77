import Foundation
import Testing

@testable import Strata

/// Checkpoints of rows near the largest record: a row record never claims more bytes than a
/// record may hold (a reader refuses such a length as damage), and a row that cannot fit any
/// record fails the compaction before anything changes — the covered segments stay.
///
/// A row can outgrow a transaction's limit: each update of one of its values is a
/// transaction of its own, but the checkpoint writes the whole row.
@Suite struct OversizedCheckpointTests {
    static let schema = try! Schema("Blobs", entities: [
        Entity("Blob", attributes: [Attribute("first", .data, optional: true), Attribute("second", .data, optional: true)]),
    ])

    static func blob(_ number: UInt64, _ first: Int, _ second: Int = 0) -> RowImage {
        RowImage(id: ObjectID(entity: "Blob", number: number),
                 values: [.data(Data(count: first)), second > 0 ? .data(Data(count: second)) : .null])
    }

    /// The rows of a store, in a fixed order (a row record holds rows in the order given).
    struct Rows: CheckpointSource {
        var rows: [RowImage]
        var lastTransaction: UInt64 { 1 }
        var highestObjectNumbers: [String: UInt64] { ["Blob": UInt64(rows.count)] }
        func forEachRow(_ body: (RowImage) throws -> Void) rethrows { for row in rows { try body(row) } }
    }

    /// A closed store whose one transaction inserts `rows` small rows, and a checkpoint writer
    /// for it whose records hold at most `limit` bytes (the format's limit is 256 MiB: the
    /// same writing, at a size a test can afford).
    static func store(_ memory: InMemoryFileIO, rows: Int, limit: Int) async throws -> CheckpointWriter {
        let journal = try Journal.create(at: storePath, schema: schema, configuration: .init(fileIO: memory))
        try await journal.append(TransactionRecord(number: 1, author: "blobs", inserted: (1...UInt64(rows)).map { blob($0, 1) }))
        await journal.close()
        return CheckpointWriter(directory: storePath, storeID: journal.storeID, schema: schema, codec: journal.codec, io: memory,
                                maximumPayload: limit)
    }

    static let limit = 64 << 10

    @Test("a large row after small ones starts a row record of its own")
    func largeRowAfterSmallOnes() async throws {
        let memory = InMemoryFileIO()
        let writer = try await Self.store(memory, rows: 3, limit: Self.limit)
        // Row 2 is small enough for a record, too large to share one with row 1; row 3 then
        // no longer fits in row 2's.
        let rows = Rows(rows: [Self.blob(1, 10_000), Self.blob(2, Self.limit - 64), Self.blob(3, 100)])
        _ = try writer.write(rows)

        let checkpoint = try #require(memory.contents(of: StoreLayout.join(storePath, StoreLayout.checkpointName(through: 1))))
        let rowRecords = FrameSpan.all(in: checkpoint).filter { $0.type == RecordFormat.RecordType.checkpointRows.rawValue }
        #expect(rowRecords.map { $0.length - RecordFormat.frameHeaderSize }.allSatisfy { $0 <= Self.limit },
                "record lengths \(rowRecords.map(\.length))")
        #expect(rowRecords.count == 3)
        var state = ReplayedState()
        let reopened = try Journal.open(at: storePath, schema: Self.schema, configuration: .init(fileIO: memory, readOnly: true),
                                        replayingInto: &state)
        await reopened.close()
        #expect(reopened.recovery.checkpointRows == 3)
        #expect(state.rows == Dictionary(uniqueKeysWithValues: rows.rows.map { ($0.id, $0.values) }))
    }

    @Test("a row larger than any record fails the checkpoint, leaving no file behind")
    func rowLargerThanAnyRecord() async throws {
        let memory = InMemoryFileIO()
        let writer = try await Self.store(memory, rows: 2, limit: Self.limit)
        let before = try memory.contentsOfDirectory(storePath)
        let half = Self.limit / 2 + 100
        let error = #expect(throws: StoreError.self) {
            try writer.write(Rows(rows: [Self.blob(1, 10), Self.blob(2, half, half)]))
        }
        #expect(error?.code == .invalidValue)
        #expect(error?.object == ObjectID(entity: "Blob", number: 2), "\(String(describing: error))")
        #expect(try memory.contentsOfDirectory(storePath) == before, "no checkpoint, no temporary file")
        var state = ReplayedState()
        let reopened = try Journal.open(at: storePath, schema: Self.schema, configuration: .init(fileIO: memory), replayingInto: &state)
        await reopened.close()
        #expect(reopened.recovery.checkpoint == nil && state.rows.count == 2)
    }
}
