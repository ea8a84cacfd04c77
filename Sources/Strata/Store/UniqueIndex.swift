/// A unique index: attribute value → object number, persistent like the rest of a
/// generation (copies share structure; a change copies one path).
///
/// Integer keys — most unique keys — live in a map of plain 64-bit words, whose nodes a
/// commit copies with one `memcpy` and frees without visiting their entries; every other
/// kind of value lives in a map of ``Value``s. A value's kind decides its map, for reads
/// and writes alike, so the two never disagree.
struct UniqueIndex: Sendable {
    private var integers = PersistentMap<UInt64, UInt64>()
    private var others = PersistentMap<Value, UInt64>()

    init() {}

    /// Builds an index from entries in one pass (see ``PersistentMap/init(bulk:)``); for a
    /// value given more than once, the last entry wins.
    init(bulk entries: [(key: Value, value: UInt64)]) {
        var integerEntries: [(key: UInt64, value: UInt64)] = []
        var otherEntries: [(key: Value, value: UInt64)] = []
        integerEntries.reserveCapacity(entries.count)
        for entry in entries {
            if case .int(let i) = entry.key {
                integerEntries.append((UInt64(bitPattern: i), entry.value))
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
            if case .int(let i) = value { return integers[UInt64(bitPattern: i)] }
            return others[value]
        }
        set {
            if case .int(let i) = value {
                integers[UInt64(bitPattern: i)] = newValue
            } else {
                others[value] = newValue
            }
        }
    }
}
