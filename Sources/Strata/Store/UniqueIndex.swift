/// A unique index: attribute value → object number, persistent like the rest of a
/// generation (copies share structure; a change copies one path).
///
/// Integer keys — most unique keys — live in a map of plain 64-bit words, whose nodes a
/// commit copies with one `memcpy` and frees without visiting their entries; every other
/// kind of value lives in a map of ``Value``s. A value's kind decides its map, for reads
/// and writes alike, so the two never disagree.
///
/// Integer keys are hashed so that runs of consecutive keys share trie nodes (see
/// ``IntegerKey``): an import that numbers its objects 1, 2, 3, … touches one node per 32
/// keys instead of one per key, and finds those nodes in cache.
struct UniqueIndex: Sendable {
    private var integers = PersistentMap<IntegerKey, UInt64>()
    private var others = PersistentMap<Value, UInt64>()

    init() {}

    /// Builds an index from entries in one pass (see ``PersistentMap/init(bulk:)``); for a
    /// value given more than once, the last entry wins.
    init(bulk entries: [(key: Value, value: UInt64)]) {
        var integerEntries: [(key: IntegerKey, value: UInt64)] = []
        var otherEntries: [(key: Value, value: UInt64)] = []
        integerEntries.reserveCapacity(entries.count)
        for entry in entries {
            if case .int(let i) = entry.key {
                integerEntries.append((IntegerKey(i), entry.value))
            } else {
                otherEntries.append(entry)
            }
        }
        integers = PersistentMap(bulk: integerEntries)
        others = PersistentMap(bulk: otherEntries)
    }

    /// The number of values indexed.
    var count: Int { integers.count + others.count }

    /// The object number holding `value`, or `nil`; setting `nil` removes the entry.
    subscript(value: Value) -> UInt64? {
        get {
            if case .int(let i) = value { return integers[IntegerKey(i)] }
            return others[value]
        }
        set {
            if case .int(let i) = value {
                integers[IntegerKey(i)] = newValue
            } else {
                others[value] = newValue
            }
        }
    }

    /// Sets the holders `entry(0)`, `entry(1)`, … `entry(count - 1)` give (skipping `nil`
    /// entries), in turn, until one names a value another number holds: returns that
    /// entry's position and the holder, leaving the index with the entries before it (and
    /// that one's number), or `nil` when every value was free. Runs of consecutive integer
    /// keys walk from the trie's root once per 32 keys (see ``PersistentMap/withInserter(_:)``).
    mutating func insertStoppingAtHeld(count: Int, _ entry: (Int) -> (value: Value, number: UInt64)?) -> (position: Int, holder: UInt64)? {
        integers.withInserter { integers in
            others.withInserter { others in
                for position in 0..<count {
                    guard let (value, number) = entry(position) else { continue }
                    let holder =
                        if case .int(let i) = value {
                            integers.updateValue(number, forKey: IntegerKey(i))
                        } else {
                            others.updateValue(number, forKey: value)
                        }
                    if let holder, holder != number { return (position, holder) }
                }
                return nil
            }
        }
    }

    /// Sets the object number holding `value`; returns the one it replaced, if any (one
    /// walk of the trie for both).
    mutating func updateValue(_ number: UInt64, forKey value: Value) -> UInt64? {
        if case .int(let i) = value { return integers.updateValue(number, forKey: IntegerKey(i)) }
        return others.updateValue(number, forKey: value)
    }
}

/// An integer unique key, hashed for locality: the trie reads a hash five bits per level
/// from the lowest, and this one gives the first three levels the low fifteen bits of
/// `key / 32` (its block of 32), the block's *slowest*-changing five bits first, then
/// `key % 32` to the fourth level, then a mix of the whole block number. So keys that
/// differ only in their last five bits sit side by side in one node — at a million keys
/// the fourth level is where entries mostly live — and consecutive blocks share their
/// first two levels: a commit adding 10,000 consecutive keys copies a handful of nodes
/// on their paths, not one path per block (each copied node retains its children, which
/// are cold, and is freed with the generation before). Keys without such runs (random
/// ones) spread as before: their blocks' low bits are as random as any hash's, and every
/// bit above them still depends on the whole key.
struct IntegerKey: PersistentHashable {
    var value: Int64

    init(_ value: Int64) { self.value = value }

    var persistentHash: UInt64 {
        let bits = UInt64(bitPattern: value)
        let block = bits >> 5
        // The block's three low five-bit digits, most significant first.
        let digits = ((block >> 10) & 31) | (((block >> 5) & 31) << 5) | ((block & 31) << 10)
        return digits | ((bits & 31) << 15) | ((mix64(block) >> 15) << 20)
    }
}
