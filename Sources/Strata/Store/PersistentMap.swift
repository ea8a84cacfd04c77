import Foundation

/// An immutable hash map with structural sharing (a CHAMP trie: compressed hash-array
/// mapped prefix tree), the representation of a store generation.
///
/// Copies are O(1) and share every node; a change copies only the O(log₃₂ n) nodes on the
/// path to the key, so publishing a new generation costs O(changes · log n), not O(size),
/// and every older copy stays unchanged for the readers that hold it. While a map is not
/// shared, changes happen in place (copy-on-write), so building one is as cheap as
/// filling a dictionary.
///
/// ```swift
/// var v1 = PersistentMap<ObjectID, Int>()
/// v1[id] = 1
/// var v2 = v1          // O(1)
/// v2[id] = 2           // copies one path; v1[id] is still 1
/// ```
public struct PersistentMap<Key: PersistentHashable, Value: Sendable>: Sendable {
    typealias Node = ChampNode<Key, Value>

    private var root: Node
    /// The number of entries.
    public private(set) var count: Int

    /// Creates an empty map.
    public init() {
        root = Node()
        count = 0
    }

    /// Creates a map from entries in one pass, far faster than inserting them one by one:
    /// the entries are ordered by the trie path of their hash and the nodes built bottom-up.
    /// For a key given more than once, the last entry wins.
    public init(bulk entries: [(key: Key, value: Value)]) {
        var order: [BulkEntry] = []
        order.reserveCapacity(entries.count)
        for (index, entry) in entries.enumerated() {
            let hash = Self.hash(entry.key)
            order.append(BulkEntry(path: Self.path(hash), hash: hash, index: index))
        }
        BulkEntry.sort(&order)
        var count = 0
        root = order.isEmpty ? Node() : entries.withUnsafeBufferPointer { entries in
            Node.build(order[...], entries: entries, shift: 0, count: &count)
        }
        self.count = count
    }

    /// The hash with its 5-bit slots in trie order (level 0's slot most significant), so
    /// that sorting by it groups entries exactly as the trie does.
    static func path(_ hash: UInt64) -> UInt64 {
        var path: UInt64 = 0
        var shift: UInt64 = 0
        while shift <= 60 {
            let bits: UInt64 = shift == 60 ? 4 : 5
            path = path << bits | ((hash >> shift) & ((1 << bits) - 1))
            shift += 5
        }
        return path
    }

    /// Whether the map has no entries.
    public var isEmpty: Bool { count == 0 }

    /// The value for `key`, or `nil`; setting `nil` removes the entry.
    public subscript(key: Key) -> Value? {
        get { root.find(key, hash: Self.hash(key), shift: 0) }
        set {
            if let newValue {
                updateValue(newValue, forKey: key)
            } else {
                removeValue(forKey: key)
            }
        }
    }

    /// Sets the value for `key`; returns the value it replaced, if any.
    @discardableResult
    public mutating func updateValue(_ value: Value, forKey key: Key) -> Value? {
        if !isKnownUniquelyReferenced(&root) { root = root.copy() }
        let old = root.insert(key, value, hash: Self.hash(key), shift: 0)
        if old == nil { count += 1 }
        return old
    }

    /// Sets values for keys, as many ``updateValue(_:forKey:)`` calls would, through the
    /// inserter `body` is given. The inserter starts each key's walk at the node where the
    /// key before it went when the two hashes share that node's path: keys whose hashes
    /// differ only in their last slot — runs of 32 consecutive ``IntegerKey``s — walk from
    /// the root once per run. Nothing else can reach the map while `body` runs.
    mutating func withInserter<R, E: Error>(_ body: (inout Inserter) throws(E) -> R) throws(E) -> R {
        if !isKnownUniquelyReferenced(&root) { root = root.copy() }
        var inserter = Inserter(root: root)
        defer { count += inserter.added }
        return try body(&inserter)
    }

    /// Inserts into a map that ``withInserter(_:)`` holds exclusively (see there).
    struct Inserter: ~Copyable {
        /// The map's root, uniquely the map's.
        private let root: Node
        /// How many keys were new.
        fileprivate var added = 0
        /// The node the last key went to, owned by the map alone (every node on the way to
        /// it was made unique, and a node is never replaced while it is), with its shift and
        /// the hash bits above it.
        private var last: Unmanaged<Node>?
        private var lastShift: UInt64 = 0
        private var lastPrefix: UInt64 = 0

        fileprivate init(root: Node) { self.root = root }

        /// Sets the value for `key`; returns the value it replaced, if any.
        mutating func updateValue(_ value: Value, forKey key: Key) -> Value? {
            let hash = PersistentMap.hash(key)
            let placed: (old: Value?, node: Unmanaged<Node>, shift: UInt64)
            if let last, hash & ((1 << lastShift) &- 1) == lastPrefix {
                placed = last._withUnsafeGuaranteedRef { $0.insertFindingNode(key, value, hash: hash, shift: lastShift) }
            } else {
                placed = root.insertFindingNode(key, value, hash: hash, shift: 0)
            }
            if placed.old == nil { added += 1 }
            // A node past the hash's last bits holds collisions: not a place to start from.
            if placed.shift < 64 {
                last = placed.node
                lastShift = placed.shift
                lastPrefix = hash & ((1 << placed.shift) &- 1)
            } else {
                last = nil
            }
            return placed.old
        }
    }

    /// Removes the entry for `key`; returns its value, if there was one.
    @discardableResult
    public mutating func removeValue(forKey key: Key) -> Value? {
        guard root.find(key, hash: Self.hash(key), shift: 0) != nil else { return nil }
        if !isKnownUniquelyReferenced(&root) { root = root.copy() }
        let old = root.remove(key, hash: Self.hash(key), shift: 0)
        if old != nil { count -= 1 }
        return old
    }

    /// Calls `body` with every entry, in no particular order.
    public func forEach(_ body: (Key, Value) throws -> Void) rethrows {
        try root.forEach(body)
    }

    /// Whether two maps are the same version (share their root): O(1), for tests and caches.
    func isIdentical(to other: PersistentMap) -> Bool { root === other.root }

    @inline(__always) static func hash(_ key: Key) -> UInt64 { key.persistentHash }
}

extension PersistentMap: Sequence {
    /// Iterates over the entries in no particular order.
    public struct Iterator: IteratorProtocol {
        private var stack: [(node: Node, item: Int, child: Int)]

        init(root: Node) { stack = [(root, 0, 0)] }

        public mutating func next() -> (key: Key, value: Value)? {
            while let top = stack.last {
                let index = stack.count - 1
                if top.item < top.node.items.count {
                    stack[index].item += 1
                    return top.node.items[top.item]
                }
                if top.child < top.node.children.count {
                    stack[index].child += 1
                    stack.append((top.node.children[top.child], 0, 0))
                    continue
                }
                stack.removeLast()
            }
            return nil
        }
    }

    public func makeIterator() -> Iterator { Iterator(root: root) }
    public var underestimatedCount: Int { count }
}

// Unchecked sendability: a node is mutated only while it is uniquely referenced (the
// copy-on-write checks in PersistentMap and below); once shared it is never changed, so
// threads that share it only read. For the same reason its properties skip the runtime's
// dynamic exclusivity checks (`@exclusivity(unchecked)`): no two accesses can overlap.
final class ChampNode<Key: PersistentHashable, Value: Sendable>: @unchecked Sendable {
    /// Which of the 32 slots hold an entry directly.
    @exclusivity(unchecked) var dataMap: UInt32 = 0
    /// Which of the 32 slots hold a child node.
    @exclusivity(unchecked) var nodeMap: UInt32 = 0
    /// Entries, in slot order. In a collision node (below the last level), every entry
    /// has the same hash and the maps are unused.
    @exclusivity(unchecked) var items: ContiguousArray<(key: Key, value: Value)> = []
    /// Children, in slot order.
    @exclusivity(unchecked) var children: ContiguousArray<ChampNode> = []

    init() {}

    /// Builds a node from entries ordered by trie path (see ``PersistentMap/init(bulk:)``).
    static func build(
        _ order: ArraySlice<BulkEntry>, entries: UnsafeBufferPointer<(key: Key, value: Value)>, shift: UInt64, count: inout Int
    ) -> ChampNode {
        let node = ChampNode()
        if shift > maximumShift {
            // Every entry has the same hash: keep the last of each key.
            for entry in order {
                let item = entries[entry.index]
                if let i = node.items.firstIndex(where: { $0.key == item.key }) {
                    node.items[i].value = item.value
                } else {
                    node.items.append(item)
                    count += 1
                }
            }
            return node
        }
        var i = order.startIndex
        while i < order.endIndex {
            let slot = Self.slot(order[i].hash, shift)
            var j = i + 1
            while j < order.endIndex && Self.slot(order[j].hash, shift) == slot { j += 1 }
            let bit = UInt32(1) << slot
            let first = entries[order[i].index].key
            if j - i == 1 || order[i..<j].allSatisfy({ entries[$0.index].key == first }) {
                node.dataMap |= bit
                node.items.append(entries[order[j - 1].index])
                count += 1
            } else {
                node.nodeMap |= bit
                node.children.append(build(order[i..<j], entries: entries, shift: shift + 5, count: &count))
            }
            i = j
        }
        return node
    }

    func copy() -> ChampNode {
        let node = ChampNode()
        node.dataMap = dataMap
        node.nodeMap = nodeMap
        node.items = items
        node.children = children
        return node
    }

    /// Hash bits are consumed five at a time; past this shift, nodes hold collisions.
    private static var maximumShift: UInt64 { 60 }

    @inline(__always) private static func slot(_ hash: UInt64, _ shift: UInt64) -> UInt32 {
        UInt32(truncatingIfNeeded: (hash >> shift) & 0x1F)
    }

    @inline(__always) private static func index(_ map: UInt32, _ bit: UInt32) -> Int {
        (map & (bit &- 1)).nonzeroBitCount
    }

    /// The value for `key`. The walk borrows the nodes (`self` keeps them alive during the
    /// call) instead of retaining and releasing one per level: unique checks look up every
    /// inserted key, and a large trie's nodes are rarely in cache, so each retain would be
    /// a cache miss of its own.
    func find(_ key: Key, hash: UInt64, shift: UInt64) -> Value? {
        var node = Unmanaged.passUnretained(self)
        var shift = shift
        while true {
            let next: Unmanaged<ChampNode>? = node._withUnsafeGuaranteedRef { current in
                if shift > Self.maximumShift { return nil }
                let bit = UInt32(1) << Self.slot(hash, shift)
                guard current.nodeMap & bit != 0 else { return nil }
                return current.children.withUnsafeBufferPointer { Unmanaged.passUnretained($0[Self.index(current.nodeMap, bit)]) }
            }
            guard let next else { break }
            node = next
            shift += 5
        }
        return node._withUnsafeGuaranteedRef { current -> Value? in
            if shift > Self.maximumShift {
                return current.items.first(where: { $0.key == key })?.value
            }
            let bit = UInt32(1) << Self.slot(hash, shift)
            guard current.dataMap & bit != 0 else { return nil }
            return current.items.withUnsafeBufferPointer { items in
                let item = items[Self.index(current.dataMap, bit)]
                return item.key == key ? item.value : nil
            }
        }
    }

    /// Inserts or replaces; returns the replaced value. `self` must be uniquely referenced.
    func insert(_ key: Key, _ value: Value, hash: UInt64, shift: UInt64) -> Value? {
        insertFindingNode(key, value, hash: hash, shift: shift).old
    }

    /// ``insert(_:_:hash:shift:)``, returning also the node whose entries hold `key`
    /// afterwards and that node's shift. `self` must be uniquely referenced; so is that
    /// node afterwards, and every node on the way to it.
    func insertFindingNode(_ key: Key, _ value: Value, hash: UInt64, shift: UInt64) -> (old: Value?, node: Unmanaged<ChampNode>, shift: UInt64) {
        if shift > Self.maximumShift {
            if let i = items.firstIndex(where: { $0.key == key }) {
                let old = items[i].value
                items[i].value = value
                return (old, Unmanaged.passUnretained(self), shift)
            }
            items.append((key, value))
            return (nil, Unmanaged.passUnretained(self), shift)
        }
        let bit = UInt32(1) << Self.slot(hash, shift)
        if dataMap & bit != 0 {
            let i = Self.index(dataMap, bit)
            let existing = items[i]
            if existing.key == key {
                items[i].value = value
                return (existing.value, Unmanaged.passUnretained(self), shift)
            }
            // Two keys share this slot: push both down into a new child.
            let child = ChampNode()
            _ = child.insert(existing.key, existing.value, hash: PersistentMap<Key, Value>.hash(existing.key), shift: shift + 5)
            let placed = child.insertFindingNode(key, value, hash: hash, shift: shift + 5)
            items.remove(at: i)
            dataMap &= ~bit
            nodeMap |= bit
            children.insert(child, at: Self.index(nodeMap, bit))
            return (nil, placed.node, placed.shift)
        }
        if nodeMap & bit != 0 {
            let i = Self.index(nodeMap, bit)
            if !isKnownUniquelyReferenced(&children[i]) { children[i] = children[i].copy() }
            // Borrowed, as in `find`: this node keeps the child alive.
            let child = children.withUnsafeBufferPointer { Unmanaged.passUnretained($0[i]) }
            return child._withUnsafeGuaranteedRef { $0.insertFindingNode(key, value, hash: hash, shift: shift + 5) }
        }
        dataMap |= bit
        items.insert((key, value), at: Self.index(dataMap, bit))
        return (nil, Unmanaged.passUnretained(self), shift)
    }

    /// Removes; returns the removed value. `self` must be uniquely referenced. Keeps the
    /// trie canonical: a child left with a single entry and no children is pulled up.
    func remove(_ key: Key, hash: UInt64, shift: UInt64) -> Value? {
        if shift > Self.maximumShift {
            guard let i = items.firstIndex(where: { $0.key == key }) else { return nil }
            return items.remove(at: i).value
        }
        let bit = UInt32(1) << Self.slot(hash, shift)
        if dataMap & bit != 0 {
            let i = Self.index(dataMap, bit)
            guard items[i].key == key else { return nil }
            dataMap &= ~bit
            return items.remove(at: i).value
        }
        guard nodeMap & bit != 0 else { return nil }
        let i = Self.index(nodeMap, bit)
        if !isKnownUniquelyReferenced(&children[i]) { children[i] = children[i].copy() }
        let child = children[i]
        let old = child.remove(key, hash: hash, shift: shift + 5)
        if old != nil, child.children.isEmpty, child.items.count <= 1 {
            children.remove(at: i)
            nodeMap &= ~bit
            if let last = child.items.first {
                dataMap |= bit
                items.insert(last, at: Self.index(dataMap, bit))
            }
        }
        return old
    }

    func forEach(_ body: (Key, Value) throws -> Void) rethrows {
        for item in items { try body(item.key, item.value) }
        for child in children { try child.forEach(body) }
    }
}

/// An entry of a bulk build: where its hash puts it in the trie, and its place in the input.
struct BulkEntry {
    /// The hash's 5-bit slots in trie order (see ``PersistentMap/path(_:)``).
    var path: UInt64
    var hash: UInt64
    var index: Int

    /// Sorts by path, keeping input order among equal paths (so that the last entry of a
    /// key given twice is last): a least-significant-digit radix sort, a byte per pass,
    /// skipping bytes every path shares — far cheaper than comparison sorting a million
    /// entries.
    static func sort(_ entries: inout [BulkEntry]) {
        guard entries.count > 64 else {
            entries.sort { $0.path != $1.path ? $0.path < $1.path : $0.index < $1.index }
            return
        }
        let n = entries.count
        // Every byte's histogram in one pass: counts[byte * 256 + value].
        var counts = [Int](repeating: 0, count: 8 * 256)
        counts.withUnsafeMutableBufferPointer { counts in
            entries.withUnsafeBufferPointer { entries in
                for entry in entries {
                    var path = entry.path
                    for byte in 0..<8 {
                        counts[byte &* 256 &+ Int(truncatingIfNeeded: path & 0xFF)] &+= 1
                        path >>= 8
                    }
                }
            }
        }
        var buffer = [BulkEntry](repeating: BulkEntry(path: 0, hash: 0, index: 0), count: n)
        for byte in 0..<8 {
            let start = byte * 256
            if counts[start..<start + 256].contains(n) { continue }  // every path has this byte
            let shift = UInt64(byte * 8)
            counts.withUnsafeMutableBufferPointer { counts in
                var total = 0
                for i in start..<start + 256 {
                    let count = counts[i]
                    counts[i] = total
                    total &+= count
                }
                entries.withUnsafeBufferPointer { source in
                    buffer.withUnsafeMutableBufferPointer { destination in
                        for entry in source {
                            let bucket = start &+ Int(truncatingIfNeeded: (entry.path >> shift) & 0xFF)
                            destination[counts[bucket]] = entry
                            counts[bucket] &+= 1
                        }
                    }
                }
            }
            swap(&entries, &buffer)
        }
    }
}

/// A key of a ``PersistentMap``: hashable, with a 64-bit hash the trie consumes five bits
/// at a time. The default is `hashValue`; types on hot paths give a cheaper one.
public protocol PersistentHashable: Hashable, Sendable {
    /// A well-mixed 64-bit hash, equal for equal keys.
    var persistentHash: UInt64 { get }
}

extension PersistentHashable {
    public var persistentHash: UInt64 { UInt64(bitPattern: Int64(hashValue)) }
}

/// Mixes 64 bits so that every input bit affects every output bit (SplitMix64's finalizer).
@inline(__always) func mix64(_ value: UInt64) -> UInt64 {
    var z = value &+ 0x9E37_79B9_7F4A_7C15
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
}

extension Int: PersistentHashable {
    public var persistentHash: UInt64 { mix64(UInt64(bitPattern: Int64(self))) }
}

extension UInt64: PersistentHashable {
    public var persistentHash: UInt64 { mix64(self) }
}

extension String: PersistentHashable {}
extension ObjectID: PersistentHashable {}

extension Value: PersistentHashable {
    /// Integers, doubles, booleans and dates hash with a cheap mixer (the common unique
    /// keys); everything else with the standard hasher. Equal values hash equally: the
    /// cases never compare equal across kinds.
    public var persistentHash: UInt64 {
        switch self {
        case .int(let i): return mix64(UInt64(bitPattern: i))
        case .double(let d): return mix64((d == 0 ? 0.0 : d.isNaN ? .nan : d).bitPattern ^ 0x5555_5555_5555_5555)  // 0.0 == -0.0, NaNs equal
        case .bool(let b): return b ? 0xA5A5_A5A5_A5A5_A5A5 : 0x5A5A_5A5A_5A5A_5A5A
        case .date(let d):
            let t = d.timeIntervalSinceReferenceDate
            return mix64((t == 0 ? 0.0 : t).bitPattern ^ 0x3333_3333_3333_3333)
        default: return UInt64(bitPattern: Int64(hashValue))
        }
    }
}
