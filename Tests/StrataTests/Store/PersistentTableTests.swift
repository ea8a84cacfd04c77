import Testing
@testable import Strata

@Suite struct PersistentTableTests {
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func randomOperationsMatchDictionary(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        var table = PersistentTable<Int>()
        var reference: [UInt64: Int] = [:]
        var snapshots: [(PersistentTable<Int>, [UInt64: Int])] = []
        var lastInserted: UInt64?
        // Dense small keys, dense large keys, and sparse keys up to 2^40 (deep trees).
        let keySpace: UInt64 = [64, 100_000, 1 << 20, 1 << 40][Int(seed % 4)]
        for step in 0..<10_000 {
            let key = UInt64.random(in: 0..<keySpace, using: &rng)
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<6:
                let value = Int.random(in: 0..<1_000_000, using: &rng)
                lastInserted = key
                #expect(table.updateValue(value, forKey: key) == reference.updateValue(value, forKey: key), "seed \(seed) step \(step)")
            case 6..<9:
                // Mostly keys that exist (drawn cheaply near recent inserts), sometimes absent ones.
                let existing = Bool.random(using: &rng) ? (lastInserted ?? key) : key
                #expect(table.removeValue(forKey: existing) == reference.removeValue(forKey: existing), "seed \(seed) step \(step)")
            default:
                #expect(table[key] == reference[key], "seed \(seed) step \(step)")
            }
            if step % 1_000 == 0 { snapshots.append((table, reference)) }
        }
        #expect(table.count == reference.count)
        #expect(table.map(\.key) == reference.keys.sorted(), "iteration is in key order")
        #expect(Dictionary(uniqueKeysWithValues: table.map { ($0.key, $0.element) }) == reference)
        for (snapshot, expected) in snapshots {
            #expect(snapshot.count == expected.count)
            #expect(Dictionary(uniqueKeysWithValues: snapshot.map { ($0.key, $0.element) }) == expected)
            var visited: [UInt64] = []
            snapshot.forEach { key, _ in visited.append(key) }
            #expect(visited == expected.keys.sorted())
        }
    }

    /// Batches of keys — runs of consecutive ones, as a bulk insert gives, and scattered
    /// ones, some already present — set as one `updateValues` call each, against a
    /// `Dictionary`; copies taken between batches keep what they had.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func batchesMatchDictionary(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        var table = PersistentTable<Int>()
        var reference: [UInt64: Int] = [:]
        var snapshots: [(PersistentTable<Int>, [UInt64: Int])] = []
        let keySpace: UInt64 = [64, 100_000, 1 << 20, 1 << 40][Int(seed % 4)]
        var next = UInt64.random(in: 0..<keySpace, using: &rng)
        for batch in 0..<200 {
            var entries: [(key: UInt64, element: Int)] = []
            for _ in 0..<Int.random(in: 0..<120, using: &rng) {
                // Mostly the next key of a run (which may cross into the next leaf, or start
                // the table's next level), sometimes a jump anywhere, or a key given before.
                switch Int.random(in: 0..<10, using: &rng) {
                case 0: next = UInt64.random(in: 0..<keySpace, using: &rng)
                case 1: if let key = entries.randomElement(using: &rng)?.key { next = key }
                default: next = (next + 1) % keySpace
                }
                entries.append((next, Int.random(in: 0..<1_000_000, using: &rng)))
            }
            table.updateValues(count: entries.count) { entries[$0] }
            for entry in entries { reference[entry.key] = entry.element }
            #expect(table.count == reference.count, "seed \(seed) batch \(batch)")
            if batch % 20 == 0 { snapshots.append((table, reference)) }
        }
        #expect(table.map(\.key) == reference.keys.sorted(), "iteration is in key order")
        #expect(Dictionary(uniqueKeysWithValues: table.map { ($0.key, $0.element) }) == reference)
        for (snapshot, expected) in snapshots {
            #expect(snapshot.count == expected.count)
            #expect(Dictionary(uniqueKeysWithValues: snapshot.map { ($0.key, $0.element) }) == expected)
            for key in expected.keys.prefix(50) { #expect(snapshot[key] == expected[key]) }
        }
    }

    @Test func copiesShareUntilChanged() {
        var a = PersistentTable<String>()
        for i in 1...1_000 as ClosedRange<UInt64> { a[i] = "a\(i)" }
        var b = a
        b[5] = "b5"
        b[1 << 30] = "far"
        b[7] = nil
        #expect(a[5] == "a5" && a[7] == "a7" && a[1 << 30] == nil && a.count == 1_000)
        #expect(b[5] == "b5" && b[7] == nil && b[1 << 30] == "far" && b.count == 1_000)
        for i in 1...1_000 as ClosedRange<UInt64> { b[i] = nil }
        #expect(b.count == 1 && Array(b).map(\.key) == [1 << 30])
        #expect(a.count == 1_000)
    }

    /// Nodes own their elements: each is released once no table holds it — after copies,
    /// replacements, removals and growth alike — and not before.
    @Test func elementsLiveAsLongAsATableHoldsThem() {
        final class Tracked: Sendable {
            let released: Locked<Int>
            init(_ released: Locked<Int>) { self.released = released }
            deinit { released.withLock { $0 += 1 } }
        }
        let released = Locked(0)
        var made = 0
        func tracked() -> Tracked {
            made += 1
            return Tracked(released)
        }
        do {
            var a = PersistentTable<Tracked>()
            for key in 0..<2_000 as Range<UInt64> { a[key] = tracked() }
            a[1 << 40] = tracked()
            var b = a
            for key in stride(from: 0, to: 2_000, by: 3) as StrideTo<UInt64> { b[key] = tracked() }
            for key in stride(from: 1, to: 2_000, by: 3) as StrideTo<UInt64> { b[key] = nil }
            b.updateValues(count: 100) { (UInt64(5_000 + $0), tracked()) }
            #expect(released.withLock { $0 } == 0, "a holds every element b replaced or removed")
            a = PersistentTable()
            // What only `a` held is gone: the 667 elements `b` replaced and the 667 it removed.
            #expect(released.withLock { $0 } == 1_334)
            #expect(b.count == 2_000 - 667 + 1 + 100)
            b[1 << 40] = nil
            #expect(released.withLock { $0 } == 1_335)
        }
        #expect(released.withLock { $0 } == made, "every element is released with the last table")
    }
}
