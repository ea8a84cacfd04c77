/// CRC-32C (Castagnoli), the checksum of every journal and checkpoint record, computed
/// slicing-by-16 in software so that it runs the same on every platform (the x86 `crc32`
/// instruction is not reachable from Swift without C).
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

    /// The checksum of `bytes`, continuing from `crc` (the checksum of what came before).
    static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        let count = bytes.count
        guard count > 0, let base = bytes.baseAddress else { return crc }
        return tables.withUnsafeBufferPointer { table in
            let t = table.baseAddress!
            // Table k's entry for byte b: every index is below 16 × 256 (b ≤ 0xFF, k ≤ 15).
            @inline(__always) func at(_ k: Int, _ b: UInt32) -> UInt32 { t[k &* 256 &+ Int(b & 0xFF)] }
            var c = ~crc
            var i = 0
            while count &- i >= 16 {
                let a = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: i, as: UInt32.self)) ^ c
                let b = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: i &+ 4, as: UInt32.self))
                let d = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: i &+ 8, as: UInt32.self))
                let e = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: i &+ 12, as: UInt32.self))
                // Four independent partial sums, combined as a tree: only the first depends
                // on the previous block, which keeps the dependency chain short.
                let x0 = (at(15, a) ^ at(14, a >> 8)) ^ (at(13, a >> 16) ^ at(12, a >> 24))
                let x1 = (at(11, b) ^ at(10, b >> 8)) ^ (at(9, b >> 16) ^ at(8, b >> 24))
                let x2 = (at(7, d) ^ at(6, d >> 8)) ^ (at(5, d >> 16) ^ at(4, d >> 24))
                let x3 = (at(3, e) ^ at(2, e >> 8)) ^ (at(1, e >> 16) ^ at(0, e >> 24))
                c = (x0 ^ x1) ^ (x2 ^ x3)
                i &+= 16
            }
            while i < count {
                c = (c >> 8) ^ at(0, c ^ UInt32(base.load(fromByteOffset: i, as: UInt8.self)))
                i &+= 1
            }
            return ~c
        }
    }

    /// The checksum of a byte array, continuing from `crc`.
    static func checksum(_ bytes: [UInt8], continuing crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, continuing: crc) }
    }
}
