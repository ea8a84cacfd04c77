/// The CRC-32C of any range of a buffer at the cost of a few dozen bytes, whatever the
/// range's length: from the checksums of the buffer's prefixes, kept every ``stride`` bytes.
///
/// CRCs are linear: the checksum of bytes `a..<b` continuing from `c` is
/// `shift(c ^ P(a), b - a) ^ P(b)`, where `P(i)` is the checksum of the first `i` bytes and
/// `shift` appends zeros (``CRC32C/shift(_:by:)``). Looking for an intact record at every
/// offset of a damaged file's tail checks a record's length of bytes at each offset; with
/// this it checks a constant amount, so the look takes time in proportion to the tail.
struct PrefixChecksums {
    private let buffer: UnsafeRawBufferPointer
    /// `marks[k]` is the checksum of the first `k × stride` bytes.
    private let marks: [UInt32]
    static let stride = 16

    init(_ buffer: UnsafeRawBufferPointer) {
        self.buffer = buffer
        var marks: [UInt32] = [0]
        marks.reserveCapacity(buffer.count / Self.stride + 1)
        var crc: UInt32 = 0
        var offset = 0
        while offset + Self.stride <= buffer.count {
            crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + Self.stride)]), continuing: crc)
            marks.append(crc)
            offset += Self.stride
        }
        self.marks = marks
    }

    /// The checksum of the first `end` bytes.
    private func prefix(_ end: Int) -> UInt32 {
        let mark = end / Self.stride
        return CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[(mark * Self.stride)..<end]), continuing: marks[mark])
    }

    /// The checksum of `buffer[range]`, continuing from `crc` (the checksum of what comes
    /// before it): the same as `CRC32C.checksum(buffer[range], continuing: crc)`.
    func checksum(_ range: Range<Int>, continuing crc: UInt32) -> UInt32 {
        precondition(range.lowerBound >= 0 && range.upperBound <= buffer.count, "PrefixChecksums: \(range) outside 0..<\(buffer.count)")
        return CRC32C.shift(crc ^ prefix(range.lowerBound), by: range.count) ^ prefix(range.upperBound)
    }
}
