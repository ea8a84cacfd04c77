import Foundation
import Testing
@testable import Strata

/// A key whose hash the test controls, to force collisions at every depth.
struct CollidingKey: PersistentHashable, CustomStringConvertible {
    var id: Int
    var hashBits: Int
    func hash(into hasher: inout Hasher) { hasher.combine(hashBits) }
    static func == (a: CollidingKey, b: CollidingKey) -> Bool { a.id == b.id }
    var description: String { "k\(id)" }
}

@Suite struct PersistentMapTests {
    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func randomOperationsMatchDictionary(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        var map = PersistentMap<Int, Int>()
        var reference: [Int: Int] = [:]
        var snapshots: [(PersistentMap<Int, Int>, [Int: Int])] = []
        let keySpace = [16, 1_000, 100_000][Int(seed % 3)]
        for step in 0..<20_000 {
            let key = Int.random(in: 0..<keySpace, using: &rng)
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<6:
                let value = Int.random(in: 0..<1_000_000, using: &rng)
                #expect(map.updateValue(value, forKey: key) == reference.updateValue(value, forKey: key), "seed \(seed) step \(step)")
            case 6..<9:
                #expect(map.removeValue(forKey: key) == reference.removeValue(forKey: key), "seed \(seed) step \(step)")
            default:
                #expect(map[key] == reference[key], "seed \(seed) step \(step)")
            }
            if step % 2_000 == 0 { snapshots.append((map, reference)) }
        }
        #expect(map.count == reference.count)
        #expect(Dictionary(uniqueKeysWithValues: map.map { ($0.key, $0.value) }) == reference)
        // Every snapshot still holds exactly what it held when taken.
        for (snapshot, expected) in snapshots {
            #expect(snapshot.count == expected.count, "seed \(seed)")
            #expect(Dictionary(uniqueKeysWithValues: snapshot.map { ($0.key, $0.value) }) == expected, "seed \(seed)")
        }
    }

    @Test func fullHashCollisionsAndSharedPrefixes() {
        var map = PersistentMap<CollidingKey, Int>()
        var reference: [CollidingKey: Int] = [:]
        var rng = SeededGenerator(seed: 99)
        // Few distinct hashes → deep paths and collision nodes.
        let keys = (0..<400).map { CollidingKey(id: $0, hashBits: Int.random(in: 0..<6, using: &rng)) }
        for round in 0..<5 {
            for key in keys.shuffled(using: &rng) {
                if Bool.random(using: &rng) {
                    map[key] = round
                    reference[key] = round
                } else {
                    #expect(map.removeValue(forKey: key) == reference.removeValue(forKey: key))
                }
            }
            #expect(map.count == reference.count)
            for key in keys { #expect(map[key] == reference[key]) }
        }
        for key in keys { map[key] = nil }
        #expect(map.isEmpty)
        #expect(Array(map).isEmpty)
    }

    @Test func valueHashesAgreeWithEquality() {
        let pairs: [(Value, Value)] = [(.double(0.0), .double(-0.0)), (.int(7), .int(7)), (.string("é"), .string("\u{E9}")),
                                       (.double(.nan), .double(-.nan)), (.double(.nan), .double(.signalingNaN)),
                                       (.date(Date(timeIntervalSinceReferenceDate: 0)), .date(Date(timeIntervalSinceReferenceDate: -0.0)))]
        for (a, b) in pairs {
            #expect(a == b)
            #expect(a.persistentHash == b.persistentHash, "\(a) and \(b) are equal but hash differently")
        }
        // Strings are their bytes: two spellings of "é" are two values (as predicates and
        // indexes compare them).
        #expect(Value.string("\u{E9}") != .string("e\u{301}"))
        #expect(Value.string("ab") != .string("a"))
    }

    /// Batches through an inserter — runs of consecutive integer keys (which share all but
    /// the last slot of their paths), jumps, keys given again, and colliding keys —
    /// against a `Dictionary`; copies taken between batches keep what they had.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func insertersMatchDictionary(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        var map = PersistentMap<IntegerKey, Int>()
        var reference: [Int64: Int] = [:]
        var snapshots: [(PersistentMap<IntegerKey, Int>, [Int64: Int])] = []
        var next = Int64.random(in: -1_000_000...1_000_000, using: &rng)
        for batch in 0..<150 {
            var entries: [(key: Int64, value: Int)] = []
            for _ in 0..<Int.random(in: 0..<200, using: &rng) {
                switch Int.random(in: 0..<12, using: &rng) {
                case 0: next = Int64.random(in: -1_000_000...1_000_000, using: &rng)
                case 1: if let key = entries.randomElement(using: &rng)?.key { next = key }
                case 2: next = reference.keys.randomElement(using: &rng) ?? next
                default: next += 1
                }
                entries.append((next, Int.random(in: 0..<1_000_000, using: &rng)))
            }
            let replaced = map.withInserter { inserter in entries.map { inserter.updateValue($0.value, forKey: IntegerKey($0.key)) } }
            let expected = entries.map { reference.updateValue($0.value, forKey: $0.key) }
            #expect(replaced == expected, "seed \(seed) batch \(batch)")
            #expect(map.count == reference.count)
            if batch % 15 == 0 { snapshots.append((map, reference)) }
        }
        #expect(Dictionary(uniqueKeysWithValues: map.map { ($0.key.value, $0.value) }) == reference)
        for (snapshot, expected) in snapshots {
            #expect(snapshot.count == expected.count)
            #expect(Dictionary(uniqueKeysWithValues: snapshot.map { ($0.key.value, $0.value) }) == expected)
        }
        // Keys whose whole hashes collide go to a collision node, which an inserter does not
        // start from; they still land where lookups find them.
        var colliding = PersistentMap<CollidingKey, Int>()
        let keys = (0..<300).map { CollidingKey(id: $0 % 120, hashBits: ($0 % 120) % 4) }
        colliding.withInserter { inserter in
            for (offset, key) in keys.enumerated() { _ = inserter.updateValue(offset, forKey: key) }
        }
        #expect(colliding.count == 120)
        for id in 0..<120 { #expect(colliding[CollidingKey(id: id, hashBits: id % 4)] == (id < 60 ? 240 : 120) + id, "the last offset given") }
    }

    @Test func copiesShareUntilChanged() {
        var a = PersistentMap<Int, String>()
        for i in 0..<1_000 { a[i] = "a\(i)" }
        var b = a
        #expect(a.isIdentical(to: b))
        b[5] = "b5"
        b[2_000] = "new"
        b[7] = nil
        #expect(!a.isIdentical(to: b))
        #expect(a[5] == "a5" && a[7] == "a7" && a[2_000] == nil && a.count == 1_000)
        #expect(b[5] == "b5" && b[7] == nil && b[2_000] == "new" && b.count == 1_000)
    }
}

@Suite struct PersistentMapBulkTests {
    @Test(arguments: [0, 1, 2, 31, 1_000, 50_000])
    func bulkBuildEqualsInsertion(count: Int) {
        var rng = SeededGenerator(seed: UInt64(count))
        let entries = (0..<count).map { _ in (key: Int.random(in: 0..<(count * 2 + 1), using: &rng), value: Int.random(in: 0..<100, using: &rng)) }
        var inserted = PersistentMap<Int, Int>()
        for entry in entries { inserted[entry.key] = entry.value }
        var bulk = PersistentMap<Int, Int>(bulk: entries)
        #expect(bulk.count == inserted.count)
        #expect(Dictionary(uniqueKeysWithValues: bulk.map { ($0.key, $0.value) }) == Dictionary(uniqueKeysWithValues: inserted.map { ($0.key, $0.value) }))
        // A bulk-built map keeps working as an ordinary one.
        for entry in entries.prefix(100) {
            bulk[entry.key] = nil
            inserted[entry.key] = nil
        }
        bulk[-1] = 7
        inserted[-1] = 7
        #expect(Dictionary(uniqueKeysWithValues: bulk.map { ($0.key, $0.value) }) == Dictionary(uniqueKeysWithValues: inserted.map { ($0.key, $0.value) }))
    }

    @Test func bulkBuildWithFullHashCollisions() {
        let keys = (0..<300).map { CollidingKey(id: $0 % 200, hashBits: ($0 % 200) % 3) }
        let map = PersistentMap<CollidingKey, Int>(bulk: keys.enumerated().map { ($0.element, $0.offset) })
        #expect(map.count == 200)
        for id in 0..<200 {
            let last = keys.lastIndex { $0.id == id }!
            #expect(map[CollidingKey(id: id, hashBits: id % 3)] == last)
        }
    }
}
