import Foundation
import Testing

@testable import Strata

/// Transaction numbers near the end of `UInt64`: no store reaches them, so a file claiming
/// them is damage (a typed error naming the file, files unchanged), and a caller asking
/// for them gets an answer or a typed error — never an arithmetic overflow that kills the
/// process.
@Suite struct TransactionNumberRangeTests {
    static let schema = Fixtures.songbook

    /// A checkpoint through `through` with no rows, checksummed for the store `storeID`.
    static func checkpoint(through: UInt64, storeID: UUID) -> [UInt8] {
        let seed = RecordFormat.seed(for: storeID)
        var w = ByteWriter()
        FileHeader(kind: .checkpoint, formatVersion: RecordFormat.version, storeID: storeID, fingerprint: schema.fingerprint,
                   transaction: through).encode(into: &w)
        w.write(framed(RecordFormat.RecordType.schema.rawValue, Array(schema.modelFileJSON.text.utf8), seed: seed))
        var end = ByteWriter()
        end.writeVarint(0)
        end.writeVarint(0)
        end.writeUInt64(through)
        w.write(framed(RecordFormat.RecordType.checkpointEnd.rawValue, end.bytes, seed: seed))
        return w.bytes
    }

    @Test(arguments: [UInt64.max, UInt64.max - 1, UInt64(1) << 63])
    func checkpointClaimingAnUnreachableTransaction(through: UInt64) async throws {
        let memory = InMemoryFileIO()
        let journal = try Journal.create(at: storePath, schema: Self.schema, configuration: .init(fileIO: memory))
        await journal.close()
        let name = StoreLayout.checkpointName(through: through)
        try memory.setContents(Self.checkpoint(through: through, storeID: journal.storeID), of: StoreLayout.join(storePath, name))
        let before = memory.allFiles()
        for readOnly in [true, false] {
            var state = ReplayedState()
            let error = #expect(throws: StoreError.self, "\(through), read-only \(readOnly)") {
                _ = try Journal.open(at: storePath, schema: Self.schema, configuration: .init(fileIO: memory, readOnly: readOnly),
                                     replayingInto: &state)
            }
            #expect(error?.code == .corrupted, "\(String(describing: error))")
            #expect(error?.path == StoreLayout.join(storePath, name), "\(String(describing: error))")
            #expect(memory.allFiles() == before)
        }
    }

    @Test func historyAfterTheLastPossibleTransactionIsEmpty() async throws {
        let memory = InMemoryFileIO()
        let history = History(seed: 3, count: 4)
        // Rolls after every transaction: several segments.
        let journal = try Journal.create(at: storePath, schema: Self.schema,
                                         configuration: .init(segmentSize: segmentPreambleSize + 1, fileIO: memory))
        for number in UInt64(1)...4 { try await journal.append(history.record(number)) }
        #expect(journal.segmentPaths.count > 2)
        #expect(try journal.transactions(after: .max).isEmpty)
        #expect(try journal.transactions(after: .max - 1).isEmpty)
        #expect(try journal.transactions(after: 2).map(\.number) == [3, 4])
        await journal.close()
    }

    @Test func copyClaimingAnUnreachableTransactionIsRefused() throws {
        let memory = InMemoryFileIO()
        var contents = ReplayedState()
        contents.lastTransaction = .max
        let error = #expect(throws: StoreError.self) {
            _ = try Journal.create(at: storePath, schema: Self.schema, configuration: .init(fileIO: memory), initialContents: contents)
        }
        #expect(error?.code == .invalidTransaction, "\(String(describing: error))")
        #expect(memory.kind(of: storePath) == nil, "nothing was created")
    }

    @Test func objectNumbersPastTheLargestAreRefusedOnAppend() async throws {
        let memory = InMemoryFileIO()
        let journal = try Journal.create(at: storePath, schema: Self.schema, configuration: .init(fileIO: memory))
        let id = ObjectID(entity: "Artist", number: .max)
        let row = RowImage(id: id, values: [.int(1), .null, .date(Date(timeIntervalSinceReferenceDate: 0)), .objects([])])
        let records = [
            TransactionRecord(number: 1, inserted: [row]),
            TransactionRecord(number: 1, updated: [RowUpdate(id: id, changes: [PropertyChange(index: 0, value: .int(2))])]),
            TransactionRecord(number: 1, deleted: [id]),
        ]
        for record in records {
            let error = await #expect(throws: StoreError.self) { try await journal.append(record) }
            #expect(error?.code == .invalidTransaction && error?.message.contains("13835058055282163711") == true,
                    "\(String(describing: error))")
        }
        await journal.close()
    }
}

