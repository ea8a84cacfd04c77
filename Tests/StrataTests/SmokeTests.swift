import Foundation
import Testing
@testable import Strata

@Suite struct JournalSmokeTests {
    static let schema = try! Schema("Songbook", entities: [
        Entity("Artist", attributes: [Attribute("artistID", .int, unique: true), Attribute("name", .string, optional: true)],
               relationships: [Relationship("albums", to: "Album", inverse: "artist", toMany: true)]),
        Entity("Album", attributes: [Attribute("title", .string)],
               relationships: [Relationship("artist", to: "Artist", inverse: "albums")]),
    ])

    @Test func createAppendReopenCompact() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("strata-smoke-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let journal = try Journal.create(at: dir, schema: Self.schema)
        var model = ReplayedState()
        for n in 1...50 as ClosedRange<UInt64> {
            let record = TransactionRecord(number: n, author: "t", inserted: [
                RowImage(id: ObjectID(entity: "Artist", number: n), values: [.int(Int64(n)), .string("A\(n)"), .objects([])])
            ])
            try model.apply(record)
            try await journal.append(record)
            if n == 30 { try await journal.compact(from: model) }
        }
        await journal.close()
        var state = ReplayedState()
        let reopened = try Journal.open(at: dir, schema: Self.schema, replayingInto: &state)
        #expect(state == model)
        #expect(reopened.recovery.checkpoint == 30)
        #expect(reopened.recovery.replayedTransactions == 20)
        await reopened.close()
    }
}
