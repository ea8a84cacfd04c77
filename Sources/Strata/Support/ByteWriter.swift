import Foundation

/// Appends the binary encodings Strata's files use: little-endian fixed-width integers,
/// LEB128 varints, zigzag-encoded signed varints, and length-prefixed bytes.
struct ByteWriter {
    private(set) var bytes: [UInt8]

    init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    var count: Int { bytes.count }

    mutating func write(_ byte: UInt8) { bytes.append(byte) }

    mutating func write(_ other: some Sequence<UInt8>) { bytes.append(contentsOf: other) }

    mutating func writeUInt16(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
    }

    mutating func writeUInt32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func writeUInt64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func writeVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func writeVarint(_ value: Int) { writeVarint(UInt64(value)) }

    mutating func writeSignedVarint(_ value: Int64) {
        writeVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    mutating func writeDouble(_ value: Double) { writeUInt64(value.bitPattern) }

    mutating func writeString(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            writeVarint(utf8.count)
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func writeBytes(_ value: some Collection<UInt8>) {
        writeVarint(value.count)
        bytes.append(contentsOf: value)
    }

    mutating func writeBytes(_ value: Data) {
        writeVarint(value.count)
        value.withUnsafeBytes { bytes.append(contentsOf: $0) }
    }

    mutating func writeUUID(_ value: UUID) {
        withUnsafeBytes(of: value.uuid) { bytes.append(contentsOf: $0) }
    }

    /// Overwrites four bytes at `offset` with a little-endian `UInt32` (for back-patching lengths).
    mutating func patchUInt32(_ value: UInt32, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for i in 0..<4 { bytes[offset + i] = raw[i] }
        }
    }

    /// Drops everything from `offset` on.
    mutating func truncate(to offset: Int) { bytes.removeSubrange(offset...) }

    mutating func removeAll(keepingCapacity: Bool = true) { bytes.removeAll(keepingCapacity: keepingCapacity) }
}
