/// An immutable sparse array keyed by object number, with structural sharing: a radix
/// tree of 32-way nodes, the representation of one entity's objects in a generation.
///
/// Object numbers are allocated densely from 1, so a radix tree needs no hashing, keeps
/// its leaves full, iterates in number order, and is filled by appending. Like
/// ``PersistentMap``, copies are O(1) and a change copies only the O(log₃₂ n) nodes on
/// its path while the table is shared, and happens in place while it is not.
public struct PersistentTable<Element: Sendable>: Sendable {
    typealias Node = TableNode<Element>

    /// The root; `nil` when the table has never held anything.
    private var root: Node?
    /// How many bits of a key the levels above the leaves consume (0 for a single leaf).
    private var shift: UInt64 = 0
    /// The number of elements.
    public private(set) var count = 0

    /// Creates an empty table.
    public init() {}

    /// Whether the table has no elements.
    public var isEmpty: Bool { count == 0 }

    /// The largest key the current height can hold, plus one.
    private var capacity: UInt64 { shift >= 60 ? .max : UInt64(1) << (shift + 5) }

    /// The element for `key`, or `nil`; setting `nil` removes it.
    public subscript(key: UInt64) -> Element? {
        get { withLeaf(holding: key) { $0.elements[Int(key & 31)] } ?? nil }
        set {
            if let newValue {
                updateValue(newValue, forKey: key)
            } else {
                removeValue(forKey: key)
            }
        }
    }

    /// Calls `body` with the leaf that would hold `key`, borrowed, or returns `nil` when
    /// there is none.
    @inline(__always)
    private func withLeaf<R>(holding key: UInt64, _ body: (Node) -> R) -> R? {
        guard let root, key < capacity else { return nil }
        // The walk borrows the nodes (the table keeps them alive during the call)
        // instead of retaining and releasing one per level: lookups are the commit
        // pipeline's most frequent operation.
        return withExtendedLifetime(root) { () -> R? in
            var node = Unmanaged.passUnretained(root)
            var level = shift
            while level > 0 {
                let slot = Int((key >> level) & 31)
                let child = node._withUnsafeGuaranteedRef { current in
                    current.children.withUnsafeBufferPointer { $0[slot].map { Unmanaged.passUnretained($0) } }
                }
                guard let child else { return nil }
                node = child
                level -= 5
            }
            return node._withUnsafeGuaranteedRef(body)
        }
    }

    /// Sets the element for `key`; returns the one it replaced, if any.
    @discardableResult
    public mutating func updateValue(_ element: Element, forKey key: UInt64) -> Element? {
        let old = uniqueRoot(reaching: key).update(key, element, shift: shift)
        if old == nil { count += 1 }
        return old
    }

    /// The root, grown until it can hold `key` and copied if it is shared: a root this
    /// table alone owns, for a change to go through.
    private mutating func uniqueRoot(reaching key: UInt64) -> Node {
        if root == nil { root = Node(leaf: shift == 0) }
        while key >= capacity {
            // Grow a level: the old root becomes child 0 of a new root.
            let grown = Node(leaf: false)
            if root!.count > 0 {
                grown.children[0] = root
                grown.count = 1
            }
            root = grown
            shift += 5
        }
        if !isKnownUniquelyReferenced(&root!) { root = root!.copy() }
        return root!
    }

    /// Sets the elements `entry(0)`, `entry(1)`, … `entry(count - 1)` give, each for its
    /// key, as many ``updateValue(_:forKey:)`` calls would. A key in the same leaf as the
    /// key before it is set in that leaf without walking from the root again, so a run of
    /// consecutive keys — the objects a bulk insert adds — walks once per 32 keys.
    public mutating func updateValues(count entries: Int, _ entry: (Int) -> (key: UInt64, element: Element)) {
        // The leaf of the last key set, owned by this table alone: the walk that found it
        // made every node on its path unique, and nothing copies them meanwhile.
        var leaf: Unmanaged<Node>?
        var leafPrefix: UInt64 = 0
        for i in 0..<entries {
            let (key, element) = entry(i)
            if leaf == nil || key >> 5 != leafPrefix {
                let top = uniqueRoot(reaching: key)
                leaf = top.uniqueLeaf(for: key, shift: shift)
                leafPrefix = key >> 5
            }
            let added = leaf!._withUnsafeGuaranteedRef { $0.set(element, at: Int(key & 31)) } == nil
            if added { count += 1 }
        }
    }

    /// Removes the element for `key`; returns it, if there was one.
    @discardableResult
    public mutating func removeValue(forKey key: UInt64) -> Element? {
        guard self[key] != nil else { return nil }
        if !isKnownUniquelyReferenced(&root!) { root = root!.copy() }
        let old = root!.remove(key, shift: shift)
        count -= 1
        return old
    }

    /// Calls `body` with every element in increasing key order.
    public func forEach(_ body: (UInt64, Element) throws -> Void) rethrows {
        try root?.forEach(base: 0, shift: shift, body)
    }
}

extension PersistentTable where Element == StoredRow {
    /// One value of the row for `key` and the row's version, read in place — copying the
    /// row out would retain and release its values — or `nil` when there is no such row.
    func value(at property: Int, ofRow key: UInt64) -> (value: Value, version: UInt64)? {
        withLeaf(holding: key) { leaf in
            leaf.elements.withUnsafeBufferPointer { elements in
                switch elements[Int(key & 31)] {
                case .some(let row): (row.values[property], row.version)
                case .none: nil
                }
            }
        } ?? nil
    }
}

extension PersistentTable: Sequence {
    /// Iterates over the elements in increasing key order.
    public struct Iterator: IteratorProtocol {
        private var stack: [(node: Node, base: UInt64, shift: UInt64, slot: Int)] = []

        init(root: Node?, shift: UInt64) {
            if let root { stack = [(root, 0, shift, 0)] }
        }

        public mutating func next() -> (key: UInt64, element: Element)? {
            while let top = stack.last {
                let index = stack.count - 1
                if top.slot >= 32 {
                    stack.removeLast()
                    continue
                }
                stack[index].slot += 1
                if top.shift == 0 {
                    if let element = top.node.elements[top.slot] {
                        return (top.base | UInt64(top.slot), element)
                    }
                } else if let child = top.node.children[top.slot] {
                    stack.append((child, top.base | (UInt64(top.slot) << top.shift), top.shift - 5, 0))
                }
            }
            return nil
        }
    }

    public func makeIterator() -> Iterator { Iterator(root: root, shift: shift) }
    public var underestimatedCount: Int { count }
}

// Unchecked sendability: a node is mutated only while it is uniquely referenced (the
// copy-on-write checks in PersistentTable and below); once shared it is never changed, so
// threads that share it only read. For the same reason its properties skip the runtime's
// dynamic exclusivity checks (`@exclusivity(unchecked)`): no two accesses can overlap.
final class TableNode<Element: Sendable>: @unchecked Sendable {
    /// The 32 children of an interior node (empty for a leaf).
    @exclusivity(unchecked) var children: ContiguousArray<TableNode?>
    /// The 32 elements of a leaf (empty for an interior node).
    @exclusivity(unchecked) var elements: ContiguousArray<Element?>
    /// Occupied slots, so that emptied nodes are dropped.
    @exclusivity(unchecked) var count = 0

    init(leaf: Bool) {
        children = leaf ? [] : ContiguousArray(repeating: nil, count: 32)
        elements = leaf ? ContiguousArray(repeating: nil, count: 32) : []
    }

    private init(children: ContiguousArray<TableNode?>, elements: ContiguousArray<Element?>, count: Int) {
        self.children = children
        self.elements = elements
        self.count = count
    }

    func copy() -> TableNode { TableNode(children: children, elements: elements, count: count) }

    /// `self` must be uniquely referenced.
    func update(_ key: UInt64, _ element: Element, shift: UInt64) -> Element? {
        uniqueLeaf(for: key, shift: shift)._withUnsafeGuaranteedRef { $0.set(element, at: Int(key & 31)) }
    }

    /// Sets a leaf's slot; returns the element it replaced. `self` must be a uniquely
    /// referenced leaf.
    func set(_ element: Element, at slot: Int) -> Element? {
        let old = elements[slot]
        if old == nil { count += 1 }
        elements[slot] = element
        return old
    }

    /// The leaf that holds `key`, made (with the nodes on its path) or copied where shared
    /// so that this node's path to it is owned by this node alone. `self` must be uniquely
    /// referenced; the leaf lives as long as this node keeps it.
    func uniqueLeaf(for key: UInt64, shift: UInt64) -> Unmanaged<TableNode> {
        if shift == 0 { return Unmanaged.passUnretained(self) }
        let slot = Int((key >> shift) & 31)
        if children[slot] == nil {
            children[slot] = TableNode(leaf: shift == 5)
            count += 1
        } else if !isKnownUniquelyReferenced(&children[slot]!) {
            children[slot] = children[slot]!.copy()
        }
        // Borrowed: this node keeps the child alive (no retain and release per level).
        let child = children.withUnsafeBufferPointer { Unmanaged.passUnretained($0[slot]!) }
        return child._withUnsafeGuaranteedRef { $0.uniqueLeaf(for: key, shift: shift - 5) }
    }

    /// `self` must be uniquely referenced and hold `key`.
    func remove(_ key: UInt64, shift: UInt64) -> Element? {
        let slot = Int((key >> shift) & 31)
        if shift == 0 {
            let old = elements[slot]
            if old != nil { count -= 1 }
            elements[slot] = nil
            return old
        }
        if !isKnownUniquelyReferenced(&children[slot]!) { children[slot] = children[slot]!.copy() }
        let old = children[slot]!.remove(key, shift: shift - 5)
        if children[slot]!.count == 0 {
            children[slot] = nil
            count -= 1
        }
        return old
    }

    func forEach(base: UInt64, shift: UInt64, _ body: (UInt64, Element) throws -> Void) rethrows {
        if shift == 0 {
            for slot in 0..<32 {
                if let element = elements[slot] { try body(base | UInt64(slot), element) }
            }
        } else {
            for slot in 0..<32 {
                if let child = children[slot] { try child.forEach(base: base | (UInt64(slot) << shift), shift: shift - 5, body) }
            }
        }
    }
}
