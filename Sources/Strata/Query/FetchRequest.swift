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
    /// yes); without, it sees what the store holds. Live results
    /// (``ObjectContext/fetchedResults(_:request:sectionedBy:)``) need it: they follow the
    /// context's objects.
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
        if sort.count == 1 {
            // One sort key (the usual case): each row's key held as a value, not in an array
            // of one — a million arrays were most of a sorted scan's time.
            let path = sort[0].path
            return ordered(rows.map { row -> KeyedOnce in (row, sortValue(path, row.values, reader: reader)) }, by: precedesByOneKey, \.row)
        }
        typealias Keyed = (row: (number: UInt64, values: [Value]), keys: [Value])
        func precedes(_ a: Keyed, _ b: Keyed) -> Bool {
            for (i, sortKey) in sort.enumerated() {
                let order = SortedIndex.compare(a.keys[i], b.keys[i])
                if order != .orderedSame { return (order == .orderedAscending) == sortKey.ascending }
            }
            return a.row.number < b.row.number
        }
        return ordered(rows.map { row -> Keyed in (row, sort.map { sortValue($0.path, row.values, reader: reader) }) }, by: precedes, \.row)
    }

    /// Keyed rows in `precedes` order, windowed: the first `offset + limit` kept in a bounded
    /// max-heap when that is a small part of them, instead of sorting all.
    private func ordered<T>(_ keyed: [T], by precedes: @escaping (T, T) -> Bool, _ row: (T) -> (number: UInt64, values: [Value])) -> [(number: UInt64, values: [Value])] {
        if let limit, Self.sum(offset, limit) < keyed.count / 4 {
            return window(Self.smallest(Self.sum(offset, limit), of: keyed, by: precedes).map(row))
        }
        return window(keyed.sorted(by: precedes).map(row))
    }

    /// A row with its one sort key's value.
    typealias KeyedOnce = (row: (number: UInt64, values: [Value]), key: Value)

    /// The order of rows sorted by one key (the request's only one), ties by object number.
    func precedesByOneKey(_ a: KeyedOnce, _ b: KeyedOnce) -> Bool {
        let order = SortedIndex.compare(a.key, b.key)
        if order != .orderedSame { return (order == .orderedAscending) == sort[0].ascending }
        return a.row.number < b.row.number
    }

    /// A sort key's value for a row: a key of the fetched entity itself is read in place;
    /// others are followed.
    func sortValue(_ path: BoundKeyPath, _ values: [Value], reader: some RowReader) -> Value {
        if path.steps.count == 1, !path.isCount, case .attribute = path.steps[0].kind { return values[path.steps[0].index] }
        return path.resolve(values, reader: reader).first ?? .null
    }

    /// For a request sorted by one key with a limit: the matches in order and windowed, from
    /// rows `scan` offers one at a time to a bounded heap, so that only the rows kept are
    /// held (collecting every match first held a million rows to keep fifty). `nil` for
    /// other requests.
    func orderedTop(reader: some RowReader, scan: ((UInt64, [Value]) -> Void) -> Void) -> [(number: UInt64, values: [Value])]? {
        guard sort.count == 1, let limit else { return nil }
        let path = sort[0].path
        var kept = BoundedHeap<KeyedOnce>(keeping: Self.sum(offset, limit), by: precedesByOneKey)
        scan { number, values in
            if matches(values, reader: reader) { kept.offer(((number, values), sortValue(path, values, reader: reader))) }
        }
        return window(kept.sorted().map(\.row))
    }

    /// `offset + limit`, or `Int.max` where that overflows (a limit of `Int.max` means all).
    static func sum(_ offset: Int, _ limit: Int) -> Int {
        let (sum, overflow) = offset.addingReportingOverflow(limit)
        return overflow ? Int.max : sum
    }

    /// The `count` first elements in `precedes` order, sorted (a bounded binary max-heap).
    static func smallest<T>(_ count: Int, of elements: [T], by precedes: @escaping (T, T) -> Bool) -> [T] {
        var kept = BoundedHeap(keeping: count, by: precedes)
        for element in elements { kept.offer(element) }
        return kept.sorted()
    }

    /// How many of `count` matches the window keeps.
    func windowCount(_ count: Int) -> Int {
        let afterOffset = max(0, count - offset)
        return limit.map { min($0, afterOffset) } ?? afterOffset
    }

    func window<T>(_ rows: [T]) -> [T] {
        let start = min(offset, rows.count)
        let end = limit.map { start + min(rows.count - start, $0) } ?? rows.count  // no overflow for a limit of Int.max
        return Array(rows[start..<end])
    }
}

/// The `count` first of the elements offered, in `precedes` order: a bounded binary
/// max-heap whose top is the last element kept.
struct BoundedHeap<T> {
    private var heap: [T] = []
    private let count: Int
    private let precedes: (T, T) -> Bool

    init(keeping count: Int, by precedes: @escaping (T, T) -> Bool) {
        self.count = count
        self.precedes = precedes
        heap.reserveCapacity(min(count, 1 << 16))
    }

    mutating func offer(_ element: T) {
        guard count > 0 else { return }
        if heap.count < count {
            heap.append(element)
            var i = heap.count - 1
            while i > 0, precedes(heap[(i - 1) / 2], heap[i]) {
                heap.swapAt(i, (i - 1) / 2)
                i = (i - 1) / 2
            }
        } else if precedes(element, heap[0]) {
            heap[0] = element
            var i = 0
            while true {
                let l = 2 * i + 1, r = l + 1
                var largest = i
                if l < heap.count, precedes(heap[largest], heap[l]) { largest = l }
                if r < heap.count, precedes(heap[largest], heap[r]) { largest = r }
                if largest == i { break }
                heap.swapAt(i, largest)
                i = largest
            }
        }
    }

    /// The elements kept, in order.
    func sorted() -> [T] { heap.sorted(by: precedes) }
}
