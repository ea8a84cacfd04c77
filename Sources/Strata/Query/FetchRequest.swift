import Foundation

/// What to fetch: an entity, which of its objects, in what order, how many.
///
/// ```swift
/// var request = FetchRequest(entity: "Song", predicate: try ObjectPredicate(format: "milliseconds > 300000"))
/// request.sortBy = [SortKey("title")]
/// request.limit = 50
/// let songs = try context.fetch(request)
/// ```
public struct FetchRequest: Sendable, Hashable {
    /// The entity fetched.
    public var entity: String
    /// Which objects; `nil` for all.
    public var predicate: ObjectPredicate?
    /// The order; `nil` for the entity's declared default sort (then object ID).
    public var sortBy: [SortKey]?
    /// How many matching objects to skip.
    public var offset: Int
    /// How many to return at most; `nil` for all. (Unlike Core Data's `fetchLimit`, 0 is a
    /// limit: it returns no objects.)
    public var limit: Int?
    /// Whether a context's fetch sees its own and its ancestors' unsaved changes (default
    /// yes); without, it sees what the store holds.
    public var includesPendingChanges: Bool

    /// Creates a request.
    public init(
        entity: String, predicate: ObjectPredicate? = nil, sortBy: [SortKey]? = nil, offset: Int = 0, limit: Int? = nil,
        includesPendingChanges: Bool = true
    ) {
        self.entity = entity
        self.predicate = predicate
        self.sortBy = sortBy
        self.offset = offset
        self.limit = limit
        self.includesPendingChanges = includesPendingChanges
    }
}

/// A fetch request resolved against a schema.
struct BoundRequest {
    let entity: Int
    let predicate: BoundPredicate?
    let sort: [(path: BoundKeyPath, ascending: Bool)]
    let offset: Int
    let limit: Int?

    init(_ request: FetchRequest, schema: Schema) throws(StoreError) {
        guard let entity = schema.entityIndex(named: request.entity) else {
            throw StoreError(.invalidQuery, "schema \"\(schema.name)\" has no entity \"\(request.entity)\"; its entities are \(schema.entities.map(\.name))")
        }
        guard request.offset >= 0, (request.limit ?? 0) >= 0 else {
            throw StoreError(.invalidQuery, "offset \(request.offset) and limit \(request.limit ?? 0) must not be negative")
        }
        self.entity = entity
        predicate = try request.predicate.map { (p) throws(StoreError) in try BoundPredicate(p, entity: entity, schema: schema) }
        var sort: [(BoundKeyPath, Bool)] = []
        for key in request.sortBy ?? schema.entities[entity].defaultSort {
            sort.append((try BoundKeyPath(key.key, from: entity, schema: schema, allowMultiple: false), key.ascending))
        }
        self.sort = sort
        offset = request.offset
        limit = request.limit
    }

    func matches(_ values: [Value], reader: some RowReader) -> Bool {
        predicate?.evaluate(values, reader: reader) ?? true
    }

    /// Sorts matches by the sort keys (nil first when ascending, then object number), and
    /// applies offset and limit.
    func order(_ rows: [(number: UInt64, values: [Value])], reader: some RowReader) -> [(number: UInt64, values: [Value])] {
        var rows = rows
        if sort.isEmpty {
            rows.sort { $0.number < $1.number }
            return window(rows)
        }
        // A key of the fetched entity itself is read in place; others are followed.
        func key(_ path: BoundKeyPath, _ values: [Value]) -> Value {
            if path.steps.count == 1, !path.isCount, case .attribute = path.steps[0].kind { return values[path.steps[0].index] }
            return path.resolve(values, reader: reader).first ?? .null
        }
        if sort.count == 1 {
            // One sort key (the usual case): each row's key held as a value, not in an array
            // of one — a million arrays were most of a sorted scan's time.
            let path = sort[0].path, ascending = sort[0].ascending
            typealias KeyedOnce = (row: (number: UInt64, values: [Value]), key: Value)
            func precedesOnce(_ a: KeyedOnce, _ b: KeyedOnce) -> Bool {
                let order = SortedIndex.compare(a.key, b.key)
                if order != .orderedSame { return (order == .orderedAscending) == ascending }
                return a.row.number < b.row.number
            }
            let keyed = rows.map { row -> KeyedOnce in (row, key(path, row.values)) }
            if let limit, offset + limit < keyed.count / 4 {
                return window(Self.smallest(offset + limit, of: keyed, by: precedesOnce).map(\.row))
            }
            return window(keyed.sorted(by: precedesOnce).map(\.row))
        }
        typealias Keyed = (row: (number: UInt64, values: [Value]), keys: [Value])
        func precedes(_ a: Keyed, _ b: Keyed) -> Bool {
            for (i, sortKey) in sort.enumerated() {
                let order = SortedIndex.compare(a.keys[i], b.keys[i])
                if order != .orderedSame { return (order == .orderedAscending) == sortKey.ascending }
            }
            return a.row.number < b.row.number
        }
        let keyed = rows.map { row -> Keyed in (row, sort.map { key($0.path, row.values) }) }
        if let limit, offset + limit < keyed.count / 4 {
            // Top N: keep the first `offset + limit` in a bounded max-heap instead of sorting all.
            return window(Self.smallest(offset + limit, of: keyed, by: precedes).map(\.row))
        }
        return window(keyed.sorted(by: precedes).map(\.row))
    }

    /// The `count` first elements in `precedes` order, sorted (a bounded binary max-heap).
    static func smallest<T>(_ count: Int, of elements: [T], by precedes: (T, T) -> Bool) -> [T] {
        guard count > 0 else { return [] }
        var heap: [T] = []
        heap.reserveCapacity(count)
        func siftDown(_ start: Int) {
            var i = start
            while true {
                let l = 2 * i + 1, r = l + 1
                var largest = i
                if l < heap.count, precedes(heap[largest], heap[l]) { largest = l }
                if r < heap.count, precedes(heap[largest], heap[r]) { largest = r }
                if largest == i { return }
                heap.swapAt(i, largest)
                i = largest
            }
        }
        for element in elements {
            if heap.count < count {
                heap.append(element)
                var i = heap.count - 1
                while i > 0, precedes(heap[(i - 1) / 2], heap[i]) {
                    heap.swapAt(i, (i - 1) / 2)
                    i = (i - 1) / 2
                }
            } else if precedes(element, heap[0]) {
                heap[0] = element
                siftDown(0)
            }
        }
        return heap.sorted(by: precedes)
    }

    /// How many of `count` matches the window keeps.
    func windowCount(_ count: Int) -> Int {
        let afterOffset = max(0, count - offset)
        return limit.map { min($0, afterOffset) } ?? afterOffset
    }

    func window<T>(_ rows: [T]) -> [T] {
        let start = min(offset, rows.count)
        let end = limit.map { min(rows.count, start + $0) } ?? rows.count
        return Array(rows[start..<end])
    }
}
