import Foundation
import Testing
@testable import Strata

@Suite struct SortedIndexTests {
    @Test("random inserts, removals and ranges agree with a sorted array; copies stay unchanged")
    func againstSortedArray() {
        var rng = SeededGenerator(seed: 31)
        var index = SortedIndex()
        var model: [SortedIndex.Entry] = []
        var snapshots: [(SortedIndex, [SortedIndex.Entry])] = []
        for step in 0..<6_000 {
            let value: Value = Int.random(in: 0..<10, using: &rng) == 0 ? .null : .int(Int64(Int.random(in: 0..<300, using: &rng)))
            if Bool.random(using: &rng) || model.isEmpty {
                let number = UInt64(step + 1)
                index.insert(value, number: number)
                model.append(.init(value: value, number: number))
            } else {
                let victim = model.remove(at: Int.random(in: 0..<model.count, using: &rng))
                let removed = index.remove(victim.value, number: victim.number)
                #expect(removed)
            }
            if step % 1_000 == 0 { snapshots.append((index, model)) }
        }
        model.sort(by: SortedIndex.precedes)
        #expect(index.count == model.count)
        var all: [UInt64] = []
        index.forEach { number, _ in
            all.append(number)
            return true
        }
        #expect(all == model.map(\.number))
        var reversed: [UInt64] = []
        index.forEach(descending: true) { number, _ in
            reversed.append(number)
            return true
        }
        #expect(reversed == model.map(\.number).reversed())
        for _ in 0..<300 {
            let a = Value.int(Int64(Int.random(in: -5..<305, using: &rng))), b = Value.int(Int64(Int.random(in: -5..<305, using: &rng)))
            let lower = SortedIndex.Bound(value: a, inclusive: Bool.random(using: &rng))
            let upper = SortedIndex.Bound(value: b, inclusive: Bool.random(using: &rng))
            let descending = Bool.random(using: &rng)
            var found: [UInt64] = []
            index.forEach(from: lower, to: upper, descending: descending) { number, _ in
                found.append(number)
                return true
            }
            var expected = model.filter { entry in
                let lo = SortedIndex.compare(entry.value, a), hi = SortedIndex.compare(entry.value, b)
                return (lo == .orderedDescending || (lo == .orderedSame && lower.inclusive))
                    && (hi == .orderedAscending || (hi == .orderedSame && upper.inclusive))
            }.map(\.number)
            if descending { expected.reverse() }
            #expect(found == expected)
        }
        for (copy, expected) in snapshots {
            var numbers: [UInt64] = []
            copy.forEach { number, _ in
                numbers.append(number)
                return true
            }
            #expect(numbers == expected.sorted(by: SortedIndex.precedes).map(\.number), "an earlier copy changed")
        }
    }
}
