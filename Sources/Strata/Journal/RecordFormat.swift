import Foundation

/// The constants of Strata's on-disk format.
///
/// Every file starts with an 8-byte magic (`STRATAJ\n` for journal segments, `STRATAC\n`
/// for checkpoints), followed by framed records. A frame is
/// `[payload length: UInt32 LE][CRC32C: UInt32 LE][type: UInt8][payload]`; the checksum
/// covers the length, the type and the payload, and for every record after the header it
/// is seeded with the store's UUID, so a record copied from another store never verifies.
enum RecordFormat {
    /// The format version this library writes and the newest it reads.
    static let version: UInt16 = 1
    static let segmentMagic: [UInt8] = Array("STRATAJ\n".utf8)
    static let checkpointMagic: [UInt8] = Array("STRATAC\n".utf8)
    static let magicSize = 8
    static let frameHeaderSize = 9
    /// The largest payload a record may have. A transaction larger than this is refused
    /// when appended; a length above it on disk is damage.
    static let maximumPayload = 1 << 28
    /// The highest transaction number a file may claim. No store gets near it (a million
    /// transactions a second for 146,000 years); a checkpoint claiming more is damage, so the
    /// numbers that follow one, and their conversion to `Int64`, never overflow.
    static let largestTransaction: UInt64 = 1 << 62
    /// The highest object number a record may hold: far above any a store reaches (an import
    /// gives numbers up to `Int64.max`, and the store numbers new objects after the highest),
    /// and 2^62 below the top of `UInt64`, so that a store numbering objects after the
    /// highest it has read never overflows.
    static let largestObjectNumber: UInt64 = .max - (1 << 62)

    /// Whether `number` is an object number a record may hold: 1 through
    /// ``largestObjectNumber`` (one comparison: 0 wraps around to the largest `UInt64`).
    @inline(__always)
    static func isObjectNumber(_ number: UInt64) -> Bool { number &- 1 < largestObjectNumber }

    enum RecordType: UInt8 {
        case header = 1
        case schema = 2
        case transaction = 3
        case checkpointRows = 4
        case checkpointEnd = 5
    }

    /// The checksum seed for a store's records: the CRC32C of its UUID.
    static func seed(for storeID: UUID) -> UInt32 {
        var bytes = ByteWriter(capacity: 16)
        bytes.writeUUID(storeID)
        return CRC32C.checksum(bytes.bytes)
    }

    /// The checksum of a frame: its length and type bytes, then its payload.
    static func checksum(length: UInt32, type: UInt8, payload: UnsafeRawBufferPointer, seed: UInt32) -> UInt32 {
        CRC32C.checksum(payload, continuing: headChecksum(length: length, type: type, seed: seed))
    }

    /// ``checksum(length:type:payload:seed:)`` from the payload's own checksum (started
    /// from 0) instead of its bytes: the length is the payload's.
    static func checksum(length: UInt32, type: UInt8, payloadChecksum: UInt32, seed: UInt32) -> UInt32 {
        CRC32C.combine(headChecksum(length: length, type: type, seed: seed), payloadChecksum, length: Int(length))
    }

    /// The checksum of a frame's length and type bytes, from the seed.
    private static func headChecksum(length: UInt32, type: UInt8, seed: UInt32) -> UInt32 {
        var head: (UInt32, UInt8) = (length.littleEndian, type)
        return withUnsafeBytes(of: &head) { raw in
            CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<5]), continuing: seed)
        }
    }
}

extension ByteWriter {
    /// Starts a frame; returns the offset to pass to ``finishFrame(at:seed:)`` after the
    /// payload has been written.
    mutating func beginFrame(_ type: RecordFormat.RecordType) -> Int {
        beginFrame(rawType: type.rawValue)
    }

    /// ``beginFrame(_:)`` with any type byte, known or not (fuzzing writes unknown ones).
    mutating func beginFrame(rawType: UInt8) -> Int {
        let start = count
        writeUInt32(0)
        writeUInt32(0)
        write(rawType)
        return start
    }

    /// Fills in the length and checksum of the frame begun at `start`.
    mutating func finishFrame(at start: Int, seed: UInt32) {
        let payloadStart = start + RecordFormat.frameHeaderSize
        let length = UInt32(count - payloadStart)
        let type = self[start + 8]
        let crc = withUnsafeBytes { raw in
            RecordFormat.checksum(length: length, type: type, payload: UnsafeRawBufferPointer(rebasing: raw[payloadStart...]), seed: seed)
        }
        patchUInt32(length, at: start)
        patchUInt32(crc, at: start + 4)
    }

    /// ``finishFrame(at:seed:)`` for a payload whose checksum (started from 0) is known.
    mutating func finishFrame(at start: Int, seed: UInt32, payloadChecksum: UInt32) {
        let length = UInt32(count - start - RecordFormat.frameHeaderSize)
        let crc = RecordFormat.checksum(length: length, type: self[start + 8], payloadChecksum: payloadChecksum, seed: seed)
        patchUInt32(length, at: start)
        patchUInt32(crc, at: start + 4)
    }
}

/// One frame found in a buffer.
struct Frame {
    var type: UInt8
    /// The payload's bytes (valid while the buffer is).
    var payload: UnsafeRawBufferPointer
    /// The offset just past the frame.
    var end: Int
}

/// Why no valid frame starts at an offset.
enum FrameProblem: Error, Equatable {
    /// Fewer bytes remain than the frame needs: an interrupted write, if it is the tail.
    case truncated(needed: Int, remaining: Int)
    /// The length field is larger than any record may be.
    case impossibleLength(UInt32)
    /// The checksum does not match.
    case checksumMismatch

    var explanation: String {
        switch self {
        case .truncated(let needed, let remaining): "a record needs \(needed) bytes but the file has \(remaining) left"
        case .impossibleLength(let length): "a record claims \(length) bytes, more than the \(RecordFormat.maximumPayload) a record may have"
        case .checksumMismatch: "checksum mismatch"
        }
    }
}

extension RecordFormat {
    /// Reads the frame at `offset` of `buffer`, checking its bounds and checksum.
    static func frame(in buffer: UnsafeRawBufferPointer, at offset: Int, seed: UInt32) -> Result<Frame, FrameProblem> {
        let remaining = buffer.count - offset
        guard remaining >= frameHeaderSize else { return .failure(.truncated(needed: frameHeaderSize, remaining: remaining)) }
        let length = UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        guard length <= UInt32(maximumPayload) else { return .failure(.impossibleLength(length)) }
        let end = offset + frameHeaderSize + Int(length)
        guard end <= buffer.count else { return .failure(.truncated(needed: frameHeaderSize + Int(length), remaining: remaining)) }
        let stored = UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
        let type = buffer[offset + 8]
        let payload = UnsafeRawBufferPointer(rebasing: buffer[(offset + frameHeaderSize)..<end])
        guard checksum(length: length, type: type, payload: payload, seed: seed) == stored else {
            return .failure(.checksumMismatch)
        }
        return .success(Frame(type: type, payload: payload, end: end))
    }

    /// Whether every byte of `buffer` from `offset` on is zero: space a journal writer
    /// filled ahead of its appends (``Journal/Configuration/preallocation``).
    static func isZero(_ buffer: UnsafeRawBufferPointer, from offset: Int) -> Bool {
        UnsafeRawBufferPointer(rebasing: buffer[offset...]).allSatisfy { $0 == 0 }
    }
}
