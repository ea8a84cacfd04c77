import Foundation

/// An ordered index of one attribute: (value, object number) pairs kept sorted by value
/// (nulls first), then number — what equality and range predicates and sorted fetches
/// read.
///
/// A two-level B-tree with structural sharing: a list of leaves of at most
/// ``leafCapacity`` entries, each leaf an immutable-once-shared class. Copying an index is
/// O(1); a change copies one leaf and the list of leaf references while shared, and
/// happens in place while not (a bulk commit or a replay fills it like an array).
struct SortedIndex: Sendable {
    struct Entry: Sendable, Equatable {
        var value: Value
        var number: UInt64
    }

    /// A leaf; shared between generations until one of them changes it.
    final class Leaf: @unchecked Sendable {
        // @unchecked: a leaf is only mutated while uniquely referenced (checked with
        // isKnownUniquelyReferenced by its index), so no two threads ever see it change.
        var entries: [Entry]
        init(_ entries: [Entry]) { self.entries = entries }
    }

    static let leafCapacity = 256

    private var leaves: [Leaf] = []
    /// The number of entries.
    private(set) var count = 0

    init() {}

    /// Builds an index from unsorted entries at once.
    init(bulk entries: [Entry]) {
        let sorted = entries.sorted(by: Self.precedes)
        var start = 0
        let half = Self.leafCapacity / 2
        while start < sorted.count {
            let end = min(start + half, sorted.count)
            leaves.append(Leaf(Array(sorted[start..<end])))
            start = end
        }
        count = sorted.count
    }

    /// The index's order: by value (nulls first), then by object number.
    static func precedes(_ a: Entry, _ b: Entry) -> Bool {
        switch compare(a.value, b.value) {
        case .orderedAscending: true
        case .orderedDescending: false
        case .orderedSame: a.number < b.number
        }
    }

    /// Values in index order, a total order: null first, then `Value.compare`, with NaN
    /// after every number (and equal to itself) and objects by entity, then number.
    static func compare(_ a: Value, _ b: Value) -> ComparisonResult {
        switch (a.isNull, b.isNull) {
        case (true, true): return .orderedSame
        case (true, false): return .orderedAscending
        case (false, true): return .orderedDescending
        default: break
        }
        let (x, y) = (a.isNaN, b.isNaN)
        if x || y { return x == y ? .orderedSame : (x ? .orderedDescending : .orderedAscending) }
        if let order = Value.compare(a, b) { return order }
        switch (a, b) {
        case (.object(let p), .object(let q)):
            if p.entity != q.entity { return p.entity < q.entity ? .orderedAscending : .orderedDescending }
            return p.number == q.number ? .orderedSame : (p.number < q.number ? .orderedAscending : .orderedDescending)
        default:
            // Different kinds cannot meet in one attribute's index; order them stably anyway.
            if a == b { return .orderedSame }
            return String(describing: a) < String(describing: b) ? .orderedAscending : .orderedDescending
        }
    }

    /// The index of the first leaf whose last entry is not before `entry` (where `entry` belongs).
    private func leafIndex(for entry: Entry) -> Int {
        var low = 0
        var high = leaves.count
        while low < high {
            let mid = (low + high) / 2
            if Self.precedes(leaves[mid].entries[leaves[mid].entries.count - 1], entry) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private mutating func uniqueLeaf(_ index: Int) -> Leaf {
        if !isKnownUniquelyReferenced(&leaves[index]) { leaves[index] = Leaf(leaves[index].entries) }
        return leaves[index]
    }

    /// Adds an entry (the pair must not be present).
    mutating func insert(_ value: Value, number: UInt64) {
        let entry = Entry(value: value, number: number)
        count += 1
        guard !leaves.isEmpty else {
            leaves = [Leaf([entry])]
            return
        }
        let index = min(leafIndex(for: entry), leaves.count - 1)
        let leaf = uniqueLeaf(index)
        let position = Self.position(of: entry, in: leaf.entries)
        leaf.entries.insert(entry, at: position)
        if leaf.entries.count > Self.leafCapacity {
            let half = leaf.entries.count / 2
            let upper = Leaf(Array(leaf.entries[half...]))
            leaf.entries.removeSubrange(half...)
            leaves.insert(upper, at: index + 1)
        }
    }

    /// Removes an entry; returns whether it was there.
    @discardableResult
    mutating func remove(_ value: Value, number: UInt64) -> Bool {
        let entry = Entry(value: value, number: number)
        let index = leafIndex(for: entry)
        guard index < leaves.count else { return false }
        let position = Self.position(of: entry, in: leaves[index].entries)
        guard position < leaves[index].entries.count, leaves[index].entries[position] == entry else { return false }
        let leaf = uniqueLeaf(index)
        leaf.entries.remove(at: position)
        count -= 1
        if leaf.entries.isEmpty { leaves.remove(at: index) }
        return true
    }

    /// The first position in `entries` not before `entry`.
    private static func position(of entry: Entry, in entries: [Entry]) -> Int {
        var low = 0
        var high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if precedes(entries[mid], entry) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// A bound of a range: a value, included or not.
    struct Bound {
        var value: Value
        var inclusive: Bool
    }

    /// Calls `body` with the object numbers whose value lies in the range, in index order
    /// (reversed when `descending`); `body` returns `false` to stop.
    func forEach(from lower: Bound? = nil, to upper: Bound? = nil, descending: Bool = false, _ body: (UInt64, Value) -> Bool) {
        func belowUpper(_ v: Value) -> Bool {
            guard let upper else { return true }
            let order = Self.compare(v, upper.value)
            return order == .orderedAscending || (order == .orderedSame && upper.inclusive)
        }
        func aboveLower(_ v: Value) -> Bool {
            guard let lower else { return true }
            let order = Self.compare(v, lower.value)
            return order == .orderedDescending || (order == .orderedSame && lower.inclusive)
        }
        if !descending {
            var leaf = 0
            var position = 0
            if let lower {
                // The first entry with this value (number 0 sorts before every real number).
                let start = Entry(value: lower.value, number: 0)
                leaf = leafIndex(for: start)
                if leaf < leaves.count { position = Self.position(of: start, in: leaves[leaf].entries) }
            }
            while leaf < leaves.count {
                let entries = leaves[leaf].entries
                while position < entries.count {
                    let entry = entries[position]
                    if !belowUpper(entry.value) { return }
                    if aboveLower(entry.value), !body(entry.number, entry.value) { return }
                    position += 1
                }
                leaf += 1
                position = 0
            }
        } else {
            var leaf = leaves.count - 1
            var position = leaf >= 0 ? leaves[leaf].entries.count - 1 : -1
            if let upper {
                let end = Entry(value: upper.value, number: .max)
                let found = leafIndex(for: end)
                if found < leaves.count {
                    leaf = found
                    position = Self.position(of: end, in: leaves[leaf].entries) - 1
                }
            }
            while leaf >= 0 {
                let entries = leaves[leaf].entries
                while position >= 0 {
                    let entry = entries[position]
                    if !aboveLower(entry.value) { return }
                    if belowUpper(entry.value), !body(entry.number, entry.value) { return }
                    position -= 1
                }
                leaf -= 1
                if leaf >= 0 { position = leaves[leaf].entries.count - 1 }
            }
        }
    }
}
