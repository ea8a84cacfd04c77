import Foundation

/// Why bytes could not be decoded, and where (relative to the start of what was being read).
struct DecodeFailure: Error, Sendable, Hashable, CustomStringConvertible {
    var offset: Int
    var reason: String
    var description: String { "\(reason) (at byte \(offset) of the record)" }
}

/// Reads Strata's binary encodings from a buffer, checking every length against the bytes
/// that remain before anything is allocated: the decoder is a security boundary.
struct ByteReader: ~Copyable {
    private let base: UnsafeRawBufferPointer
    private(set) var offset: Int

    init(_ buffer: UnsafeRawBufferPointer) {
        base = buffer
        offset = 0
    }

    var remaining: Int { base.count - offset }
    var isAtEnd: Bool { offset == base.count }

    func failure(_ reason: String) -> DecodeFailure { DecodeFailure(offset: offset, reason: reason) }

    private mutating func need(_ count: Int, for what: String) throws(DecodeFailure) {
        guard count <= remaining else {
            throw failure("\(what) needs \(count) bytes but only \(remaining) remain")
        }
    }

    mutating func readByte() throws(DecodeFailure) -> UInt8 {
        try need(1, for: "a byte")
        defer { offset += 1 }
        return base[offset]
    }

    mutating func readUInt16() throws(DecodeFailure) -> UInt16 {
        try need(2, for: "a 16-bit integer")
        defer { offset += 2 }
        return UInt16(base[offset]) | UInt16(base[offset + 1]) << 8
    }

    mutating func readUInt32() throws(DecodeFailure) -> UInt32 {
        try need(4, for: "a 32-bit integer")
        defer { offset += 4 }
        return UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    mutating func readUInt64() throws(DecodeFailure) -> UInt64 {
        try need(8, for: "a 64-bit integer")
        defer { offset += 8 }
        return UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    mutating func readVarint() throws(DecodeFailure) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < base.count else { throw failure("a varint runs past the end") }
            let byte = base[offset]
            offset += 1
            if shift == 63 && byte > 1 { throw failure("a varint overflows 64 bits") }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
    }

    mutating func readSignedVarint() throws(DecodeFailure) -> Int64 {
        let raw = try readVarint()
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    /// Reads a varint used as a count or index, bounded by `limit` (and by `Int.max`).
    mutating func readCount(_ what: String, limit: Int) throws(DecodeFailure) -> Int {
        let start = offset
        let raw = try readVarint()
        guard raw <= UInt64(limit) else {
            throw DecodeFailure(offset: start, reason: "\(what) \(raw) exceeds the limit \(limit)")
        }
        return Int(raw)
    }

    mutating func readDouble() throws(DecodeFailure) -> Double { Double(bitPattern: try readUInt64()) }

    mutating func readRaw(_ count: Int, _ what: String) throws(DecodeFailure) -> UnsafeRawBufferPointer {
        try need(count, for: what)
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: base[offset..<offset + count])
    }

    mutating func readString() throws(DecodeFailure) -> String {
        let length = try readCount("a string length", limit: remaining)
        let start = offset
        let raw = try readRaw(length, "a string")
        guard let string = UTF8Text.string(raw) else {
            throw DecodeFailure(offset: start, reason: "a string is not valid UTF-8")
        }
        return string
    }

    mutating func readData() throws(DecodeFailure) -> Data {
        let length = try readCount("a data length", limit: remaining)
        return Data(try readRaw(length, "data"))
    }

    mutating func readUUID() throws(DecodeFailure) -> UUID {
        let raw = try readRaw(16, "a UUID")
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: raw) }
        return UUID(uuid: uuid)
    }
}
