/// The objects holding each unique value of one entity during a migration step: an
/// open-addressed hash table (linear probing) in an area of ``PagedSlots``, so it costs the
/// step no memory per object.
///
/// A slot holds a key and a tagged object number. An `int` value is its own key, compared
/// exactly; any other value is represented by its hash, and a slot whose hash matches is
/// confirmed by the caller, who reads the holder's row. The table is a multimap: a value held
/// by several objects (which validation reports) has a slot per holder. Removed entries leave
/// tombstones; the table doubles, dropping them, when live entries and tombstones pass 70 %.
///
/// The table is a grid of buckets of 64 slots, and a key probes one column of it: its start
/// bucket, then the same column of the following buckets. An `int` value's bucket comes from
/// its value divided by 64, and its column from its low six bits (permuted per bucket), so 64
/// consecutive values share one bucket — keys that mostly come in order (identifiers counting
/// up) are inserted and looked up a page at a time, not at random — while values that
/// collide only lengthen one column's probe, not 64 of them.
struct UniqueValueIndex {
    private let slots: PagedSlots
    private var area: Int
    /// A power of two.
    private var capacity: UInt64
    /// Live entries and tombstones.
    private var used: UInt64 = 0

    private static let exact: UInt64 = 1 << 62
    private static let hashed: UInt64 = 2 << 62
    private static let tombstone: UInt64 = 3 << 62
    private static let tagMask: UInt64 = 3 << 62

    /// An index with room for about `expected` values before it first grows.
    init(slots: PagedSlots, expected: Int) {
        self.slots = slots
        area = slots.makeArea()
        var capacity: UInt64 = 1_024
        while Double(capacity) * 0.7 < Double(expected) { capacity *= 2 }
        self.capacity = capacity
    }

    /// The key and tag of a (non-null) value.
    private static func key(_ value: Value) -> (key: UInt64, tag: UInt64) {
        if case .int(let v) = value { return (UInt64(bitPattern: v), exact) }
        return (UInt64(bitPattern: Int64(value.hashValue)), hashed)
    }

    /// Where a key's probe starts: its bucket and column.
    private func start(_ key: UInt64, _ tag: UInt64) -> UInt64 {
        let hash = Self.mix(tag == Self.exact ? key >> 6 : key)
        let column = (tag == Self.exact ? key ^ hash >> 58 : hash >> 58) & 63
        return (hash & (capacity / 64 - 1)) << 6 | column
    }

    /// The next slot of a probe: the same column of the next bucket.
    @inline(__always)
    private func step(_ i: UInt64) -> UInt64 { (i + 64) & (capacity - 1) }

    /// SplitMix64's finalizer.
    private static func mix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Records that object `number` holds `value`.
    mutating func insert(_ value: Value, _ number: UInt64) {
        precondition(number < 1 << 62, "object number \(number) is too large for a migration's unique-value index")
        if (used + 1) * 10 > capacity * 7 { grow() }
        let (key, tag) = Self.key(value)
        while !place(key, tag | number) { grow() }
        used += 1
    }

    /// Puts an entry in the first empty slot of its probe; `false` when its column is full.
    private func place(_ key: UInt64, _ tagged: UInt64) -> Bool {
        var i = start(key, tagged & Self.tagMask)
        for _ in 0..<capacity / 64 {
            if slots.slot(area, i).isEmpty {
                slots.setSlot(area, i, PagedSlots.Slot(first: key, second: tagged))
                return true
            }
            i = step(i)
        }
        return false
    }

    /// Records that object `number` no longer holds `value`.
    mutating func remove(_ value: Value, _ number: UInt64) {
        let (key, tag) = Self.key(value)
        var i = start(key, tag)
        for _ in 0..<capacity / 64 {
            let slot = slots.slot(area, i)
            if slot.isEmpty { return }
            if slot.first == key && slot.second == tag | number {
                slots.setSlot(area, i, PagedSlots.Slot(first: 0, second: Self.tombstone))
                return
            }
            i = step(i)
        }
    }

    /// The objects holding `value`, in the order their entries were made (until the table
    /// last grew). `confirm` is asked, for a value compared by hash, whether an object whose
    /// hash matches really holds it; objects in `known` are taken as holders without asking.
    func holders(of value: Value, known: UInt64? = nil, confirm: (UInt64) -> Bool) -> [UInt64] {
        let (key, tag) = Self.key(value)
        var i = start(key, tag)
        var found: [UInt64] = []
        for _ in 0..<capacity / 64 {
            let slot = slots.slot(area, i)
            if slot.isEmpty { break }
            if slot.first == key && slot.second & Self.tagMask == tag {
                let number = slot.second & ~Self.tagMask
                if tag == Self.exact || number == known || confirm(number) { found.append(number) }
            }
            i = step(i)
        }
        return found
    }

    /// Doubles the table into a new area, leaving the tombstones behind (and doubles again
    /// should a column fill up).
    private mutating func grow() {
        let old = area, oldCapacity = capacity
        var newCapacity = capacity * 2
        while true {
            area = slots.makeArea()
            capacity = newCapacity
            used = 0
            var i: UInt64 = 0
            var placedAll = true
            while placedAll, let next = slots.nextOccupied(old, from: i, through: oldCapacity - 1) {
                let slot = slots.slot(old, next)
                if slot.second & Self.tagMask != Self.tombstone {
                    placedAll = place(slot.first, slot.second)
                    used += 1
                }
                i = next + 1
            }
            if placedAll { break }
            slots.clear(area)
            newCapacity *= 2
        }
        slots.clear(old)
    }
}
