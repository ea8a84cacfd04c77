import Foundation
import Strata

/// The workload the writer process runs and the process tests replay.
///
/// Transaction `n` of a seed is a pure function of `(seed, n)` and is valid after
/// transactions `1..<n` of the same seed, so a test can rebuild exactly what a killed
/// writer may have committed, whichever process wrote which transaction.
///
/// Transaction `n` inserts artist, album and song number `n` (the song sometimes with a
/// 20 KB artwork blob, so some records span several pages), renames artist `n - 1`,
/// re-rates album `n - 1`, deletes song `n - 2` when `n` is a multiple of 3, and deletes
/// artist and album `n - 4` when `n` is a multiple of 5. Each object is updated and deleted
/// at most once, always after its insertion, so every transaction fits the state before it.
///
/// This file is compiled into the writer executable and, through a symbolic link in
/// `Tests/StrataTests/Process`, into the test target: one definition for both sides.
enum ProcessWorkload {
    /// The schema of the stores the workload writes: the songbook schema of the tests'
    /// fixtures, defined once in the library.
    static let schema: Schema = FuzzTargets.schema

    /// Transaction `n` (1-based) of `seed`.
    static func transaction(_ n: UInt64, seed: UInt64) -> TransactionRecord {
        var random = SplitMix64(seed: seed ^ (n &* 0xD6E8_FEB8_6659_FD93))
        let names = ["Motörhead", "日本語のアーティスト", "emoji 🎸", "", "quote \" and \\", "line\nbreak", "AC/DC"]
        func artist(_ k: UInt64) -> ObjectID { ObjectID(entity: "Artist", number: k) }
        func album(_ k: UInt64) -> ObjectID { ObjectID(entity: "Album", number: k) }
        func song(_ k: UInt64) -> ObjectID { ObjectID(entity: "Song", number: k) }

        let artwork: Value
        switch random.next() % 8 {
        case 0: artwork = .null
        case 1: artwork = .data(Data())
        case 2: artwork = .data(random.bytes(20_000))
        default: artwork = .data(random.bytes(Int(random.next() % 3_000)))
        }
        let songID = UUID(uuid: (random.byte(), random.byte(), random.byte(), random.byte(), random.byte(), random.byte(),
                                 random.byte(), random.byte(), random.byte(), random.byte(), random.byte(), random.byte(),
                                 random.byte(), random.byte(), random.byte(), random.byte()))
        var record = TransactionRecord(
            number: n, timestamp: Date(timeIntervalSinceReferenceDate: Double(n) * 1.25), author: "writer-\(seed % 100)",
            inserted: [
                RowImage(id: artist(n), values: [
                    .int(Int64(n)),
                    n % 7 == 0 ? .null : .string(names[Int(random.next() % UInt64(names.count))] + " \(n)"),
                    .date(Date(timeIntervalSinceReferenceDate: Double(random.next() % 1_000_000_000))),
                    .objects([]),
                ]),
                RowImage(id: album(n), values: [
                    .int(Int64(n) * 10), .string("Album \(n)"), n % 4 == 0 ? .null : .double(Double(random.next() % 1_000) / 8),
                    .bool(random.next() % 2 == 0), .object(artist(n)), .objects([]),
                ]),
                RowImage(id: song(n), values: [
                    .uuid(songID), .string("Song \(n) of \(seed)"), artwork, .int(Int64(random.next() % 600_000)),
                    .object(album(n)),
                ]),
            ])
        if n >= 2 {
            record.updated.append(RowUpdate(id: artist(n - 1), changes: [PropertyChange(index: 1, value: .string("renamed \(n - 1)"))]))
            record.updated.append(RowUpdate(id: album(n - 1), changes: [
                PropertyChange(index: 2, value: .double(Double(random.next() % 100))), PropertyChange(index: 3, value: .bool(true)),
            ]))
        }
        if n >= 3 && n % 3 == 0 { record.deleted.append(song(n - 2)) }
        if n >= 5 && n % 5 == 0 { record.deleted += [artist(n - 4), album(n - 4)] }
        return record
    }

}

extension SplitMix64 {
    /// The next random byte.
    mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: next()) }

    /// `count` random bytes.
    mutating func bytes(_ count: Int) -> Data {
        var data = Data(capacity: count)
        while data.count < count {
            var word = next()
            withUnsafeBytes(of: &word) { data.append(contentsOf: $0.prefix(count - data.count)) }
        }
        return data
    }
}
