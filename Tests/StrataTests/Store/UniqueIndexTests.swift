import Foundation
import Testing

@testable import Strata

@Suite struct UniqueIndexTests {
    /// Keys of every kind, integers among them, some given twice.
    private static func entries(_ count: Int, seed: UInt64) -> [(key: Value, value: UInt64)] {
        var rng = SeededGenerator(seed: seed)
        return (0..<count).map { n in
            let pick = Int.random(in: 0..<(count + 1), using: &rng)
            let key: Value = switch n % 4 {
            case 0, 1: .int(Int64(pick) - Int64(count / 2))
            case 2: .string("key \(pick)")
            default: .date(Date(timeIntervalSinceReferenceDate: Double(pick)))
            }
            return (key, UInt64(n + 1))
        }
    }

    /// Integer keys' hashes keep consecutive keys together where the trie reads them: the
    /// 32 keys of a block share the first three levels' bits (fifteen), and 32 consecutive
    /// blocks the first two levels' (ten) — so a commit of consecutive keys copies few nodes.
    /// Random keys still reach every slot of those levels.
    @Test func consecutiveIntegerKeysShareTheirPaths() {
        func levels(_ key: Int64, _ count: Int) -> UInt64 { IntegerKey(key).persistentHash & ((1 << (5 * UInt64(count))) - 1) }
        for start: Int64 in [0, 1_000_000 * 32, -64 * 32, Int64.max / 32 * 32 - 32 * 32] {
            for block in stride(from: start, to: start + 32 * 32, by: 32) {
                #expect(Set((block..<block + 32).map { levels($0, 3) }).count == 1, "block at \(block)")
            }
            let runStart = start / 1024 * 1024
            #expect(Set(stride(from: runStart, to: runStart + 1024, by: 1).map { levels($0, 2) }).count == 1, "run at \(runStart)")
            // Each of those 32 blocks in a slot of its own at the third level.
            #expect(Set(stride(from: runStart, to: runStart + 1024, by: 32).map { levels($0, 3) }).count == 32, "run at \(runStart)")
        }
        var rng = SeededGenerator(seed: 11)
        let random = (0..<4_000).map { _ in Int64.random(in: .min ... .max, using: &rng) }
        for level in 0..<4 {
            let slots = Set(random.map { (IntegerKey($0).persistentHash >> (5 * UInt64(level))) & 31 })
            #expect(slots.count == 32, "level \(level + 1)")
        }
        // Keys that share their low twenty bits still part above them.
        let strided = (0..<1_000).map { Int64($0) << 20 }
        #expect(Set(strided.map { IntegerKey($0).persistentHash >> 20 }).count == 1_000)
    }

    @Test(arguments: [0, 1, 100, 20_000])
    func bulkBuildEqualsInsertionAndDictionary(count: Int) {
        let entries = Self.entries(count, seed: UInt64(count) + 5)
        var expected: [Value: UInt64] = [:]
        var inserted = UniqueIndex()
        for entry in entries {
            expected[entry.key] = entry.value
            inserted[entry.key] = entry.value
        }
        let bulk = UniqueIndex(bulk: entries)
        #expect(bulk.count == expected.count && inserted.count == expected.count)
        for (key, number) in expected {
            #expect(bulk[key] == number && inserted[key] == number)
        }
        // Absent keys of each kind, and an integer that equals no other kind's value.
        for absent: Value in [.int(Int64(count) * 10 + 7), .string("absent"), .double(1), .bool(true), .null] {
            #expect(bulk[absent] == nil && inserted[absent] == nil)
        }
    }

    @Test func copiesAreIndependentAndRemovalWorks() {
        var first = UniqueIndex(bulk: Self.entries(5_000, seed: 11))
        let snapshot = first
        let before = (0..<200).map { first[.int(Int64($0))] }
        for n in 0..<200 {
            first[.int(Int64(n))] = nil
            first[.string("key \(n)")] = 999
        }
        #expect((0..<200).map { snapshot[.int(Int64($0))] } == before)
        #expect((0..<200).allSatisfy { first[.int(Int64($0))] == nil && first[.string("key \($0)")] == 999 })
    }

    /// Integers and other kinds are kept apart, yet a value of each kind is found by
    /// its own kind only: `.int(1)` and `.double(1)` are different keys.
    @Test func kindsDoNotMix() {
        var index = UniqueIndex()
        index[.int(1)] = 10
        index[.double(1)] = 20
        index[.string("1")] = 30
        #expect(index[.int(1)] == 10 && index[.double(1)] == 20 && index[.string("1")] == 30)
        #expect(index.count == 3)
        index[.int(1)] = nil
        #expect(index[.int(1)] == nil && index[.double(1)] == 20 && index.count == 2)
    }
}

@Suite struct CheckpointIndexingTests {
    static let schema: Schema = try! Schema("Keys", entities: [
        Entity("Person", attributes: [Attribute("code", .int, unique: true), Attribute("name", .string)]),
        Entity("Note", attributes: [Attribute("text", .string)]),
        Entity("Tag", attributes: [Attribute("label", .string, optional: true, unique: true)]),
    ])

    /// Large entities are indexed on threads of their own while later rows load; rows of an
    /// entity that come back afterwards (which a checkpoint Strata writes never has, but a
    /// target must accept) override in checkpoint order, as if indexed one by one.
    @Test func threadedBuildsEqualIndexingInOrder() {
        let people = CheckpointIndexing.threadedBuildMinimum + 5_000
        var rows: [(entity: Int, number: UInt64, unique: Value?)] = []
        for n in 1...people { rows.append((0, UInt64(n), .int(Int64(n) * 3))) }
        for n in 1...500 { rows.append((1, UInt64(n), nil)) }
        for n in 1...CheckpointIndexing.threadedBuildMinimum { rows.append((2, UInt64(n), n % 10 == 0 ? nil : .string("tag \(n)"))) }
        // Person again: new values, and values that now belong to other objects.
        for n in 1...300 { rows.append((0, UInt64(people + n), .int(Int64(n) * 3))) }
        rows.append((1, 501, nil))

        let indexing = CheckpointIndexing(entities: 3)
        var expected: [[Value: UInt64]] = [[:], [:], [:]]
        for row in rows {
            indexing.loaded(entity: row.entity, number: row.number, uniqueValue: row.unique)
            if let value = row.unique { expected[row.entity][value] = row.number }
        }
        let indexes = indexing.finish()
        #expect(indexes[1] == nil)
        for entity in [0, 2] {
            guard let index = indexes[entity] else {
                Issue.record("no index for entity \(entity)")
                continue
            }
            #expect(index.count == expected[entity].count)
            let wrong = expected[entity].filter { index[$0.key] != $0.value }.map(\.key)
            let example = wrong.first.map { "\($0)" } ?? "none"
            #expect(wrong.count == 0, "entity \(entity): values indexing the wrong object, e.g. \(example)")
        }
    }

    /// Through a generation: a checkpoint's rows loaded one by one, then looked up by value.
    @Test func generationLoadsLargeCheckpointIndexes() throws {
        var generation = Generation(schema: Self.schema)
        let count = CheckpointIndexing.threadedBuildMinimum * 2
        for n in 1...count {
            try generation.loadCheckpointRow(RowImage(id: ObjectID(entity: "Person", number: UInt64(n)), values: [.int(Int64(count - n)), .string("p\(n)")]))
        }
        for n in 1...10 { try generation.loadCheckpointRow(RowImage(id: ObjectID(entity: "Note", number: UInt64(n)), values: [.string("n")])) }
        try generation.finishCheckpoint(through: 7, highestObjectNumbers: [:])
        for n in stride(from: 1, through: count, by: 997) {
            #expect(generation.object(of: "Person", uniqueValue: .int(Int64(count - n)))?.id.number == UInt64(n))
        }
        #expect(generation.object(of: "Person", uniqueValue: .int(-1)) == nil)
        #expect(generation.transaction == 7)
    }
}
