import Foundation
import Testing

@testable import Strata

/// Transaction payloads mutated at random — bits flipped, bytes set to varint edges, huge
/// varints inserted, ranges deleted or repeated, cut short — and checksummed again, so that
/// nothing but the decoder stands between them and the state. Each decodes to a record the
/// schema accepts (and that encodes and decodes to itself) or fails with a `DecodeFailure`
/// inside the payload: never a crash, never a record that does not fit the schema. The same
/// mutations written into a segment make opening give a typed error or a state, never a trap.
@Suite struct DecoderMutationTests {
    static let seed: UInt64 = 0xF022_0001

    static func mutate(_ payload: [UInt8], using rng: inout SeededGenerator) -> [UInt8] {
        var bytes = payload
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            let at = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &rng)
            switch Int.random(in: 0..<6, using: &rng) {
            case 0 where !bytes.isEmpty:
                bytes[at] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &rng)
            case 1 where !bytes.isEmpty:
                bytes[at] = [0x00, 0x7F, 0x80, 0xFF, 0x01][Int.random(in: 0..<5, using: &rng)]
            case 2:
                // A varint of up to ten bytes: a huge count, length, index or number.
                let length = Int.random(in: 1...10, using: &rng)
                bytes.insert(contentsOf: (0..<length).map { $0 == length - 1 ? UInt8.random(in: 0...0x7F, using: &rng) : 0xFF }, at: at)
            case 3 where !bytes.isEmpty:
                bytes.removeSubrange(at..<min(bytes.count, at + Int.random(in: 1...16, using: &rng)))
            case 4 where !bytes.isEmpty:
                let piece = bytes[at..<min(bytes.count, at + Int.random(in: 1...32, using: &rng))]
                bytes.insert(contentsOf: piece, at: Int.random(in: 0...bytes.count, using: &rng))
            default:
                bytes.removeLast(Int.random(in: 0...min(bytes.count, 8), using: &rng))
            }
        }
        return bytes
    }

    @Test func mutatedPayloadsDecodeToValidRecordsOrFail() throws {
        let history = History(seed: Self.seed, count: 40)
        let codec = RecordCodec(schema: Fixtures.songbook, storeID: UUID())
        let payloads = (1...UInt64(history.count)).map { number -> [UInt8] in
            var w = ByteWriter()
            codec.encodeFrame(history.record(number), into: &w)
            return Array(w.bytes.dropFirst(RecordFormat.frameHeaderSize))
        }
        var rng = SeededGenerator(seed: Self.seed)
        var decoded = 0, failed = 0
        var problems: [String] = []
        for trial in 0..<4_000 {
            let mutated = Self.mutate(payloads[trial % payloads.count], using: &rng)
            let context = "seed \(Self.seed), trial \(trial)"
            let outcome = mutated.withUnsafeBytes { raw in Result { () throws(DecodeFailure) in try codec.decodeTransaction(raw) } }
            switch outcome {
            case .failure(let failure):
                failed += 1
                if !(0...mutated.count).contains(failure.offset) { problems.append("\(context): failure offset \(failure.offset) outside \(mutated.count) bytes") }
            case .success(let record):
                decoded += 1
                do throws(StoreError) {
                    try codec.validate(record)
                } catch {
                    problems.append("\(context): decoded a record the schema refuses: \(error)")
                    continue
                }
                var w = ByteWriter()
                codec.encodeFrame(record, into: &w)
                let again = Array(w.bytes.dropFirst(RecordFormat.frameHeaderSize)).withUnsafeBytes { raw in
                    try? codec.decodeTransaction(raw)
                }
                if again.map({ identical($0, record) }) != true { problems.append("\(context): a decoded record does not round-trip") }
            }
        }
        print("DecoderMutationTests seed \(Self.seed): \(decoded) mutated payloads decoded, \(failed) refused")
        expectNoProblems(problems, "mutated payloads")
        #expect(decoded > 0 && failed > 0, "\(decoded) decoded, \(failed) failed")
    }

    @Test func mutatedRecordsInASegmentNeverTrapOpening() async throws {
        let memory = InMemoryFileIO()
        let history = History(seed: Self.seed, count: 12)
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: .init(fileIO: memory, preallocation: 0))
        for number in 1...UInt64(history.count) { try await journal.append(history.record(number)) }
        let segment = journal.segmentPaths[0]
        await journal.close()
        let original = try #require(memory.contents(of: segment))
        let spans = FrameSpan.transactions(in: original)
        try #require(spans.count == history.count)
        let seed = RecordFormat.seed(for: journal.storeID)
        let codes: Set<StoreError.Code> = [.corrupted]

        var rng = SeededGenerator(seed: Self.seed)
        var problems: [String] = []
        for trial in 0..<300 {
            let k = trial % spans.count
            let span = spans[k]
            let payload = Array(original[(span.offset + RecordFormat.frameHeaderSize)..<span.end])
            let record = framed(RecordFormat.RecordType.transaction.rawValue, Self.mutate(payload, using: &rng), seed: seed)
            try memory.setContents(Array(original[..<span.offset]) + record + Array(original[span.end...]), of: segment)
            var state = ReplayedState()
            do {
                let reader = try Journal.open(at: storePath, schema: Fixtures.songbook, configuration: .init(fileIO: memory, readOnly: true),
                                              replayingInto: &state)
                await reader.close()
                // A mutation the decoder and the replay accept is a different transaction
                // (its checksum is valid): all that is asked is a state reached by replay.
                if state.lastTransaction < UInt64(k) { problems.append("trial \(trial): opened at \(state.lastTransaction), before the mutated record \(k + 1)") }
            } catch {
                if !codes.contains(error.code) { problems.append("trial \(trial): \(error)") }
            }
        }
        expectNoProblems(problems, "seed \(Self.seed): mutated records")
    }
}
