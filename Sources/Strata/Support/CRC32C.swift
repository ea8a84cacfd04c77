/// CRC-32C (Castagnoli), the checksum of every journal and checkpoint record, computed
/// slicing-by-8 in software so that it runs the same on every platform.
enum CRC32C {
    private static let tables: [[UInt32]] = {
        var tables = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
        for i in 0..<256 {
            var crc = UInt32(i)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[0][i] = crc
        }
        for i in 0..<256 {
            for t in 1..<8 {
                let previous = tables[t - 1][i]
                tables[t][i] = (previous >> 8) ^ tables[0][Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    /// The checksum of `bytes`, continuing from `crc` (the checksum of what came before).
    static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        var c = ~crc
        var i = 0
        let count = bytes.count
        tables.withUnsafeBufferPointer { t in
            t[0].withUnsafeBufferPointer { t0 in
            t[1].withUnsafeBufferPointer { t1 in
            t[2].withUnsafeBufferPointer { t2 in
            t[3].withUnsafeBufferPointer { t3 in
            t[4].withUnsafeBufferPointer { t4 in
            t[5].withUnsafeBufferPointer { t5 in
            t[6].withUnsafeBufferPointer { t6 in
            t[7].withUnsafeBufferPointer { t7 in
                while count - i >= 8 {
                    let lo = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt32.self)) ^ c
                    let hi = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: i + 4, as: UInt32.self))
                    c = t7[Int(lo & 0xFF)] ^ t6[Int((lo >> 8) & 0xFF)] ^ t5[Int((lo >> 16) & 0xFF)] ^ t4[Int(lo >> 24)]
                        ^ t3[Int(hi & 0xFF)] ^ t2[Int((hi >> 8) & 0xFF)] ^ t1[Int((hi >> 16) & 0xFF)] ^ t0[Int(hi >> 24)]
                    i += 8
                }
                while i < count {
                    c = (c >> 8) ^ t0[Int((c ^ UInt32(bytes[i])) & 0xFF)]
                    i += 1
                }
            }}}}}}}}
        }
        return ~c
    }

    /// The checksum of a byte array, continuing from `crc`.
    static func checksum(_ bytes: [UInt8], continuing crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, continuing: crc) }
    }
}
