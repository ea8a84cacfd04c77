import Foundation

/// Appends the binary encodings Strata's files use: little-endian fixed-width integers,
/// LEB128 varints, zigzag-encoded signed varints, and length-prefixed bytes.
///
/// The bytes live in manually managed storage: encoding is the journal's hot path, and
/// appending to an `Array` byte by byte costs a uniqueness and capacity check per byte.
/// A writer is used by one thread at a time; copies share storage, so a copy must not be
/// written while the original is still in use (the journal's buffer pool moves writers).
struct ByteWriter: Sendable {
    /// The bytes (shared by copies; see above). ``ByteCursor`` writes into it directly.
    let storage: ByteStorage

    init(capacity: Int = 256) {
        storage = ByteStorage(capacity: max(capacity, 16))
    }

    /// The number of bytes written.
    var count: Int { storage.count }

    /// The number of bytes the storage holds before it grows.
    var capacity: Int { storage.capacity }

    /// A copy of the bytes written.
    var bytes: [UInt8] {
        [UInt8](UnsafeRawBufferPointer(start: storage.base, count: storage.count))
    }

    /// Calls `body` with the bytes written (valid only during the call).
    func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: storage.base, count: storage.count))
    }

    /// The byte at `offset`.
    subscript(offset: Int) -> UInt8 {
        precondition(offset >= 0 && offset < storage.count, "ByteWriter: offset \(offset) outside 0..<\(storage.count)")
        return storage.base.load(fromByteOffset: offset, as: UInt8.self)
    }

    @inline(__always)
    private func reserve(_ extra: Int) -> UnsafeMutableRawPointer {
        if storage.count + extra > storage.capacity { storage.grow(toHold: storage.count + extra) }
        return storage.base + storage.count
    }

    mutating func write(_ byte: UInt8) {
        reserve(1).storeBytes(of: byte, as: UInt8.self)
        storage.count += 1
    }

    mutating func write(_ other: some Sequence<UInt8>) {
        for byte in other { write(byte) }
    }

    mutating func write(_ raw: UnsafeRawBufferPointer) {
        guard let source = raw.baseAddress, raw.count > 0 else { return }
        reserve(raw.count).copyMemory(from: source, byteCount: raw.count)
        storage.count += raw.count
    }

    mutating func write(_ array: [UInt8]) {
        array.withUnsafeBytes { write($0) }
    }

    mutating func writeUInt16(_ value: UInt16) {
        reserve(2).storeBytes(of: value.littleEndian, as: UInt16.self)
        storage.count += 2
    }

    mutating func writeUInt32(_ value: UInt32) {
        reserve(4).storeBytes(of: value.littleEndian, as: UInt32.self)
        storage.count += 4
    }

    mutating func writeUInt64(_ value: UInt64) {
        reserve(8).storeBytes(of: value.littleEndian, as: UInt64.self)
        storage.count += 8
    }

    mutating func writeVarint(_ value: UInt64) {
        let out = reserve(10)
        var v = value
        var n = 0
        while v >= 0x80 {
            out.storeBytes(of: UInt8(truncatingIfNeeded: v) | 0x80, toByteOffset: n, as: UInt8.self)
            v >>= 7
            n += 1
        }
        out.storeBytes(of: UInt8(v), toByteOffset: n, as: UInt8.self)
        storage.count += n + 1
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
            write(UnsafeRawBufferPointer(utf8))
        }
    }

    mutating func writeBytes(_ value: some Collection<UInt8>) {
        writeVarint(value.count)
        write(value)
    }

    mutating func writeBytes(_ value: Data) {
        writeVarint(value.count)
        value.withUnsafeBytes { write($0) }
    }

    mutating func writeUUID(_ value: UUID) {
        Swift.withUnsafeBytes(of: value.uuid) { write($0) }
    }

    /// Overwrites four bytes at `offset` with a little-endian `UInt32` (for back-patching lengths).
    mutating func patchUInt32(_ value: UInt32, at offset: Int) {
        precondition(offset >= 0 && offset + 4 <= storage.count, "ByteWriter: patch at \(offset) outside 0..<\(storage.count)")
        (storage.base + offset).storeBytes(of: value.littleEndian, as: UInt32.self)
    }

    /// Drops everything from `offset` on.
    mutating func truncate(to offset: Int) {
        precondition(offset >= 0 && offset <= storage.count, "ByteWriter: truncate to \(offset) outside 0...\(storage.count)")
        storage.count = offset
    }

    /// Forgets every byte, keeping the storage for reuse.
    mutating func removeAll() { storage.count = 0 }
}

// Unchecked sendability: the storage belongs to one ByteWriter, used by one thread at a
// time; the journal's buffer pool hands writers from thread to thread under its lock.
final class ByteStorage: @unchecked Sendable {
    // One user at a time (above), so the runtime's dynamic exclusivity checks are skipped.
    @exclusivity(unchecked) var base: UnsafeMutableRawPointer
    @exclusivity(unchecked) var capacity: Int
    @exclusivity(unchecked) var count = 0

    init(capacity: Int) {
        self.capacity = capacity
        base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    }

    func grow(toHold needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        grown.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = grown
        capacity = newCapacity
    }

    deinit { base.deallocate() }
}
