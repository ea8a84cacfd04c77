/// CRC-32C (Castagnoli), the checksum of every journal and checkpoint record, computed
/// with lookup tables in software so that it runs the same on every platform (the x86
/// `crc32` instruction is not reachable from Swift without C): slicing-by-16 for short
/// buffers, three interleaved slicing-by-8 streams for long ones.
enum CRC32C {
    /// Sixteen 256-entry tables, one after another: table `k` gives the CRC contribution of
    /// a byte followed by `k` zero bytes.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 16 * 256)
        for i in 0..<256 {
            var crc = UInt32(i)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[i] = crc
        }
        for t in 1..<16 {
            for i in 0..<256 {
                let previous = tables[(t - 1) * 256 + i]
                tables[t * 256 + i] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    /// Below this many bytes one stream is fastest; above it, three interleaved streams
    /// combined at the end (see ``checksum(_:continuing:)``).
    static let interleavedThreshold = 3 * 1024

    /// The checksum of `bytes`, continuing from `crc` (the checksum of what came before).
    ///
    /// A large buffer is checksummed as three thirds at once, whose table lookups do not
    /// wait on one another, and the thirds' checksums are combined by the polynomial
    /// arithmetic of ``combine(_:_:length:)``.
    static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        let count = bytes.count
        guard count > 0, let base = bytes.baseAddress else { return crc }
        return tables.withUnsafeBufferPointer { table in
            let t = table.baseAddress!
            guard count >= interleavedThreshold else { return single(base, count, ~crc, t) ^ 0xFFFF_FFFF }
            // Thirds of a whole number of 8-byte blocks; the last takes what is left.
            let third = (count / 3) & ~7
            var a = ~crc, b = ~UInt32(0), c = ~UInt32(0)
            let pa = base, pb = base + third, pc = base + 2 * third
            var i = 0
            while i < third {
                a = step8(pa, i, a, t)
                b = step8(pb, i, b, t)
                c = step8(pc, i, c, t)
                i &+= 8
            }
            let rest = count - 3 * third
            c = single(pc + third, rest, c, t)
            let crcA = ~a, crcB = ~b, crcC = ~c
            return combine(combine(crcA, crcB, length: third), crcC, length: third + rest)
        }
    }

    /// Table k's entry for byte b: every index is below 16 × 256 (b ≤ 0xFF, k ≤ 15).
    @inline(__always)
    private static func at(_ t: UnsafePointer<UInt32>, _ k: Int, _ b: UInt32) -> UInt32 { t[k &* 256 &+ Int(b & 0xFF)] }

    /// Eight bytes at `p + i` into the register `c` (slicing-by-8).
    @inline(__always)
    private static func step8(_ p: UnsafeRawPointer, _ i: Int, _ c: UInt32, _ t: UnsafePointer<UInt32>) -> UInt32 {
        let lo = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: i, as: UInt32.self)) ^ c
        let hi = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: i &+ 4, as: UInt32.self))
        return ((at(t, 7, lo) ^ at(t, 6, lo >> 8)) ^ (at(t, 5, lo >> 16) ^ at(t, 4, lo >> 24)))
            ^ ((at(t, 3, hi) ^ at(t, 2, hi >> 8)) ^ (at(t, 1, hi >> 16) ^ at(t, 0, hi >> 24)))
    }

    /// `count` bytes at `base` into the register `register` (inverted checksum), one stream,
    /// slicing-by-16.
    @inline(__always)
    private static func single(_ base: UnsafeRawPointer, _ count: Int, _ register: UInt32, _ t: UnsafePointer<UInt32>) -> UInt32 {
        var c = register
        var i = 0
        while count &- i >= 16 {
            let a = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: i, as: UInt32.self)) ^ c
            let b = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: i &+ 4, as: UInt32.self))
            let d = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: i &+ 8, as: UInt32.self))
            let e = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: i &+ 12, as: UInt32.self))
            // Four independent partial sums, combined as a tree: only the first depends on
            // the previous block, which keeps the dependency chain short.
            let x0 = (at(t, 15, a) ^ at(t, 14, a >> 8)) ^ (at(t, 13, a >> 16) ^ at(t, 12, a >> 24))
            let x1 = (at(t, 11, b) ^ at(t, 10, b >> 8)) ^ (at(t, 9, b >> 16) ^ at(t, 8, b >> 24))
            let x2 = (at(t, 7, d) ^ at(t, 6, d >> 8)) ^ (at(t, 5, d >> 16) ^ at(t, 4, d >> 24))
            let x3 = (at(t, 3, e) ^ at(t, 2, e >> 8)) ^ (at(t, 1, e >> 16) ^ at(t, 0, e >> 24))
            c = (x0 ^ x1) ^ (x2 ^ x3)
            i &+= 16
        }
        while i < count {
            c = (c >> 8) ^ at(t, 0, c ^ UInt32(base.load(fromByteOffset: i, as: UInt8.self)))
            i &+= 1
        }
        return c
    }

    // MARK: - Combining

    /// The checksum of `A` followed by `B`, from the checksum of `A`, that of `B` (started
    /// from 0) and `B`'s length: CRCs are linear, so `A`'s contribution is its checksum
    /// times x^(8 × length) modulo the polynomial.
    static func combine(_ first: UInt32, _ second: UInt32, length: Int) -> UInt32 {
        multiply(powerOfX(8 * length), first) ^ second
    }

    /// The checksum `crc` would become after `length` more zero bytes, without the inversions
    /// (so that `shift(a ^ b) == shift(a) ^ shift(b)`): `crc` times x^(8 × length). Four
    /// multiplications whatever the length, by the powers for each byte of it.
    static func shift(_ crc: UInt32, by length: Int) -> UInt32 {
        precondition(length >= 0 && length <= Int(UInt32.max), "CRC32C.shift: length \(length) outside 0...\(UInt32.max)")
        return powersOfByteLengths.withUnsafeBufferPointer { powers in
            var power = powers[Int(length & 0xFF)]
            power = multiply(powers[256 + Int((length >> 8) & 0xFF)], power)
            power = multiply(powers[512 + Int((length >> 16) & 0xFF)], power)
            power = multiply(powers[768 + Int((length >> 24) & 0xFF)], power)
            return multiply(power, crc)
        }
    }

    /// x^(8 × b × 256^j) modulo the polynomial at index `256 × j + b`, for j = 0..<4.
    private static let powersOfByteLengths: [UInt32] = (0..<4).flatMap { j in
        (0..<256).map { b in powerOfX(8 * (b << (8 * j))) }
    }

    /// x^(2^k) modulo the polynomial, for k = 0..<64 (bit-reflected, as the tables are).
    private static let powersOfX: [UInt32] = {
        var powers = [UInt32](repeating: 0, count: 64)
        powers[0] = 1 << 30  // x^1
        for k in 1..<64 { powers[k] = multiply(powers[k - 1], powers[k - 1]) }
        return powers
    }()

    /// x^n modulo the polynomial.
    private static func powerOfX(_ n: Int) -> UInt32 {
        var p: UInt32 = 1 << 31  // x^0
        var n = UInt64(n)
        var k = 0
        while n != 0 {
            if n & 1 != 0 { p = multiply(powersOfX[k], p) }
            n >>= 1
            k += 1
        }
        return p
    }

    /// `a` times `b` modulo the polynomial (bit-reflected).
    private static func multiply(_ a: UInt32, _ b: UInt32) -> UInt32 {
        var m: UInt32 = 1 << 31
        var b = b
        var p: UInt32 = 0
        while m != 0 {
            if a & m != 0 { p ^= b }
            m >>= 1
            b = b & 1 != 0 ? (b >> 1) ^ 0x82F6_3B78 : b >> 1
        }
        return p
    }

    /// The checksum of a byte array, continuing from `crc`.
    static func checksum(_ bytes: [UInt8], continuing crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, continuing: crc) }
    }
}
