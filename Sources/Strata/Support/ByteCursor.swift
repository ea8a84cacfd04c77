import Foundation

/// A write position in a ``ByteWriter``'s storage, for runs of small writes that check
/// capacity once per run instead of once per write: ``reserve(_:)`` makes room for at most
/// `n` bytes, then `put…` calls may write up to `n` bytes in all before the next `reserve`.
/// The encoder's hot path (one value is a tag, a varint or a fixed-width number) uses it.
///
/// Obtain one with ``ByteWriter/withCursor(_:)``; it is valid only inside that call. A
/// copy may stand in for it for a while (in a local variable, which the optimizer keeps in
/// registers), as long as it is assigned back before the original is used again.
struct ByteCursor {
    /// Not retained: a cursor lives only inside ``ByteWriter/withCursor(_:)``, whose writer
    /// keeps the storage alive, and copying a strong reference with every row the encoder
    /// writes cost a retain and a release each (about a tenth of encoding).
    private unowned(unsafe) let storage: ByteStorage
    /// Where the next byte goes.
    private var next: UnsafeMutableRawPointer
    /// Just past the storage's capacity.
    private var end: UnsafeMutableRawPointer

    /// The most bytes one ``putVarint(_:)`` writes.
    static let maxVarint = 10

    init(_ storage: ByteStorage) {
        self.storage = storage
        next = storage.base + storage.count
        end = storage.base + storage.capacity
    }

    /// The number of bytes in the storage, counting those written through this cursor.
    var count: Int { next - storage.base }

    /// Records the bytes written through this cursor as the storage's count.
    func finish() {
        storage.count = next - storage.base
    }

    /// Makes room for at least `n` more bytes.
    @inline(__always)
    mutating func reserve(_ n: Int) {
        if end - next < n { grow(n) }
    }

    private mutating func grow(_ n: Int) {
        let used = next - storage.base
        storage.count = used
        storage.grow(toHold: used + n)
        next = storage.base + used
        end = storage.base + storage.capacity
    }

    @inline(__always)
    private func check(_ n: Int) {
        assert(end - next >= n, "ByteCursor: \(n) bytes written past the reserved room")
    }

    /// Writes one byte (reserved).
    @inline(__always)
    mutating func putByte(_ byte: UInt8) {
        check(1)
        next.storeBytes(of: byte, as: UInt8.self)
        next += 1
    }

    /// Writes a LEB128 varint: at most ``maxVarint`` bytes (reserved).
    @inline(__always)
    mutating func putVarint(_ value: UInt64) {
        if value < 0x80 {
            putByte(UInt8(truncatingIfNeeded: value))
            return
        }
        putLongVarint(value)
    }

    @inline(__always)
    private mutating func putLongVarint(_ value: UInt64) {
        check(Self.maxVarint)
        var v = value
        while v >= 0x80 {
            next.storeBytes(of: UInt8(truncatingIfNeeded: v) | 0x80, as: UInt8.self)
            next += 1
            v >>= 7
        }
        next.storeBytes(of: UInt8(truncatingIfNeeded: v), as: UInt8.self)
        next += 1
    }

    /// Writes a zigzag-encoded signed varint: at most ``maxVarint`` bytes (reserved).
    @inline(__always)
    mutating func putSignedVarint(_ value: Int64) {
        putVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    /// Writes a little-endian `UInt64`: 8 bytes (reserved).
    @inline(__always)
    mutating func putUInt64(_ value: UInt64) {
        check(8)
        next.storeBytes(of: value.littleEndian, as: UInt64.self)
        next += 8
    }

    /// Writes a UUID's 16 bytes (reserved).
    @inline(__always)
    mutating func putUUID(_ value: UUID) {
        check(16)
        next.storeBytes(of: value.uuid, as: uuid_t.self)
        next += 16
    }

    /// Writes a length (varint) and the bytes: at most ``maxVarint`` + `bytes.count` (reserved).
    @inline(__always)
    mutating func putCounted(_ bytes: UnsafeRawBufferPointer) {
        let n = bytes.count
        putVarint(UInt64(n))
        if let source = bytes.baseAddress, n > 0 {
            check(n)
            next.copyMemory(from: source, byteCount: n)
            next += n
        }
    }

    /// Writes a string as a length (varint) and its UTF-8 bytes: at most ``maxVarint`` +
    /// `value.utf8.count` (reserved).
    @inline(__always)
    mutating func putString(_ value: String) {
        if !putContiguousString(value) { putNonContiguousString(value) }
    }

    /// Writes a string as ``putString(_:)`` does if its UTF-8 is stored contiguously (as
    /// native strings' is); returns `false`, writing nothing, if it is not.
    ///
    /// The encoder calls the fallback only after it is done with the value it read the
    /// string from: a call the optimizer cannot see into, made while the string is
    /// borrowed from an array, makes it copy (retain) every value it reads.
    @inline(__always)
    mutating func putContiguousString(_ value: String) -> Bool {
        let done: Void? = value.utf8.withContiguousStorageIfAvailable { utf8 in
            putCounted(UnsafeRawBufferPointer(utf8))
        }
        return done != nil
    }

    /// A string whose UTF-8 is not stored contiguously (a bridged one): copied first.
    @inline(never)
    mutating func putNonContiguousString(_ value: String) {
        var copy = value
        copy.withUTF8 { putCounted(UnsafeRawBufferPointer($0)) }
    }

    /// Writes data as a length (varint) and its bytes: at most ``maxVarint`` + `value.count`
    /// (reserved).
    @inline(__always)
    mutating func putData(_ value: Data) {
        value.withUnsafeBytes { putCounted($0) }
    }
}

extension ByteWriter {
    /// Calls `body` with a cursor at the end of the bytes written; what it writes is
    /// counted when it returns (or throws).
    @inline(__always)
    mutating func withCursor<R, E: Error>(_ body: (inout ByteCursor) throws(E) -> R) throws(E) -> R {
        var cursor = ByteCursor(storage)
        defer { cursor.finish() }
        return try body(&cursor)
    }
}
