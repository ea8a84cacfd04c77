import Foundation
import Testing

@testable import Strata

/// Deciding whether damage at the end of the last segment is a torn tail means looking
/// for an intact transaction at every later offset. That look takes time in proportion to
/// the bytes after the damage, not to their square: a crash in the middle of writing a large
/// transaction of incompressible data, or a hostile file whose every offset claims a long
/// record, opens in moments.
@Suite struct TailScanTests {
    enum Tail: CaseIterable, CustomStringConvertible {
        /// 16 MiB of random bytes: the value of a large transaction whose write was torn.
        case randomBytes
        /// 4 MiB in which every other offset holds a transaction's type and a 192 KiB length.
        case everyOffsetARecord

        var description: String { self == .randomBytes ? "random bytes" : "every offset a record" }

        var bytes: [UInt8] {
            switch self {
            case .randomBytes:
                var random = SeededGenerator(seed: 0x7A11)
                var bytes = [UInt8](repeating: 0, count: 8 << 20)
                bytes.withUnsafeMutableBytes { raw in
                    for i in 0..<(raw.count / 8) { raw.storeBytes(of: random.next(), toByteOffset: i * 8, as: UInt64.self) }
                }
                return bytes
            case .everyOffsetARecord:
                return Array([[UInt8]](repeating: [RecordFormat.RecordType.transaction.rawValue, 0], count: 1 << 20).joined())
            }
        }
    }

    @Test(arguments: Tail.allCases)
    func aLargeTornTailOpensInMoments(_ tail: Tail) async throws {
        let memory = InMemoryFileIO()
        let history = History(seed: 5, count: 1)
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook,
                                         configuration: .init(fileIO: memory, preallocation: 0))
        try await journal.append(history.record(1))
        let path = journal.segmentPaths[0]
        await journal.close()

        // The start of a record longer than what the crash left of it, then the rest.
        var bytes = try #require(memory.contents(of: path))
        let end = bytes.count
        let rest = tail.bytes
        var head = ByteWriter()
        head.writeUInt32(UInt32(rest.count + 1_000))
        head.writeUInt32(0x1234_5678)
        head.write(RecordFormat.RecordType.transaction.rawValue)
        bytes += head.bytes + rest
        try memory.setContents(bytes, of: path)

        let open = BlockingCall { () throws -> (RecoveryReport, ReplayedState) in
            var state = ReplayedState()
            let reader = try Journal.open(at: storePath, schema: Fixtures.songbook,
                                          configuration: .init(fileIO: memory, readOnly: true), replayingInto: &state)
            return (reader.recovery, state)
        }
        let (recovery, state) = try await open.result(within: 20)
        #expect(state == history.model(1))
        #expect(recovery.tornTail?.offset == Int64(end))
        #expect(recovery.tornTail?.discardedBytes == Int64(bytes.count - end))
    }

    @Test func prefixChecksumsEqualChecksummingTheRange() {
        var random = SeededGenerator(seed: 99)
        let bytes = (0..<70_000).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        bytes.withUnsafeBytes { buffer in
            let checksums = PrefixChecksums(buffer)
            var mismatches: [String] = []
            for trial in 0..<2_000 {
                let lower = Int(random.next() % UInt64(buffer.count + 1))
                // Short ranges, ranges within a few strides, and long ones.
                let span = [17, 300, buffer.count][trial % 3]
                let upper = min(buffer.count, lower + Int(random.next() % UInt64(span)))
                let seed = trial % 2 == 0 ? 0 : UInt32(truncatingIfNeeded: random.next())
                let expected = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[lower..<upper]), continuing: seed)
                let got = checksums.checksum(lower..<upper, continuing: seed)
                if got != expected { mismatches.append("\(lower)..<\(upper) from \(seed): \(got), not \(expected)") }
            }
            #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
        }
    }
}
