import Foundation

extension Generation {
    /// The objects a request matches in this generation, in its order (the store's view:
    /// no context's pending changes). Uses the ordered indexes of `indexed` and `unique`
    /// attributes for equality and range conditions and for sorted fetches with a limit.
    /// - Throws: ``StoreError/Code/invalidQuery`` naming the unknown entity or key.
    public func fetch(_ request: FetchRequest) throws(StoreError) -> [StoredObject] {
        let bound = try BoundRequest(request, schema: schema)
        let name = schema.layout.entityNames[bound.entity]
        return matches(bound).map { number, values in
            StoredObject(id: ObjectID(entityName: name, number: number), values: values,
                         version: tables[bound.entity][number]!.version)
        }
    }

    /// The number of objects a request matches (offset and limit applied).
    public func count(for request: FetchRequest) throws(StoreError) -> Int {
        let bound = try BoundRequest(request, schema: schema)
        if bound.predicate == nil { return bound.windowCount(tables[bound.entity].count) }
        if let counted = countFromIndex(bound) { return bound.windowCount(counted) }
        var count = 0
        forEachCandidate(bound) { _, values in if bound.matches(values, reader: self) { count += 1 } }
        return bound.windowCount(count)
    }

    /// The number of matches an index gives by itself, without reading a row: for a
    /// predicate that is one equality between an indexed attribute and a value of its type,
    /// with no string options — not a double, since NaN equals nothing yet has its place in
    /// the index. (Reading every candidate row made an indexed count six times SQLite's.)
    func countFromIndex(_ bound: BoundRequest) -> Int? {
        guard case .comparison(let comparison)? = bound.predicate?.root, comparison.op == .equal, comparison.quantifier == nil,
              comparison.options.isEmpty, case .key(let path) = comparison.left, let attribute = path.ownIndex,
              case .attribute(let type) = path.steps[0].kind, type != .double,
              case .value(let literal) = comparison.right, literal.attributeType == type,
              hasOrderedIndex(entity: bound.entity, attribute: attribute),
              let index = orderedIndex(entity: bound.entity, attribute: attribute)
        else { return nil }
        var count = 0
        let edge = SortedIndex.Bound(value: literal, inclusive: true)
        index.forEach(from: edge, to: edge) { _, _ in
            count += 1
            return true
        }
        return count
    }

    /// Matching rows, ordered and windowed.
    /// - Parameter values: `false` when the caller needs only the object numbers, which lets
    ///   a sorted page read from an index skip reading the rows.
    func matches(_ bound: BoundRequest, values: Bool = true) -> [(number: UInt64, values: [Value])] {
        if let ordered = orderedByIndex(bound, values: values) { return ordered }
        if let top = bound.orderedTop(reader: self, scan: { forEachCandidate(bound, $0) }) { return top }
        var rows: [(number: UInt64, values: [Value])] = []
        forEachCandidate(bound) { number, values in
            if bound.matches(values, reader: self) { rows.append((number, values)) }
        }
        return bound.order(rows, reader: self)
    }

    /// Every row that may match: those an index condition selects, or every row of the entity.
    func forEachCandidate(_ bound: BoundRequest, _ body: (UInt64, [Value]) -> Void) {
        if let numbers = indexedCandidates(bound) {
            for number in numbers { if let row = tables[bound.entity][number] { body(number, row.values) } }
        } else {
            tables[bound.entity].forEach { number, row in body(number, row.values) }
        }
    }

    /// The object numbers an index gives for the request's most selective top-level
    /// condition (equality before ranges), or `nil` if no condition can use one.
    func indexedCandidates(_ bound: BoundRequest) -> [UInt64]? {
        guard let plan = Self.indexPlan(bound, indexed: { hasOrderedIndex(entity: bound.entity, attribute: $0) }),
            let index = orderedIndex(entity: bound.entity, attribute: plan.attribute)
        else { return nil }
        return plan.numbers(in: index)
    }

    /// Which index condition narrows a request best: the attribute and the ranges of its
    /// values that every match lies in (a superset of the matches; the predicate decides).
    struct IndexPlan {
        var attribute: Int
        var ranges: [(SortedIndex.Bound?, SortedIndex.Bound?)]

        /// The object numbers in the ranges of an index of the attribute, each once.
        func numbers(in index: SortedIndex) -> [UInt64] {
            var numbers: [UInt64] = []
            var seen = Set<UInt64>()
            for (lower, upper) in ranges {
                index.forEach(from: lower, to: upper) { number, _ in
                    if ranges.count == 1 || seen.insert(number).inserted { numbers.append(number) }
                    return true
                }
            }
            return numbers
        }
    }

    /// The most selective top-level condition an index of an attribute for which `indexed`
    /// is true can answer, or `nil`.
    static func indexPlan(_ bound: BoundRequest, indexed: (Int) -> Bool) -> IndexPlan? {
        guard let predicate = bound.predicate else { return nil }
        var best: (rank: Int, ranges: [(SortedIndex.Bound?, SortedIndex.Bound?)], attribute: Int)?
        /// Range conditions per attribute, narrowed together (`a >= 1 AND a < 9` reads 1..<9).
        var lower: [Int: SortedIndex.Bound] = [:]
        var upper: [Int: SortedIndex.Bound] = [:]
        func edge(_ value: Value, _ inclusive: Bool) -> SortedIndex.Bound { SortedIndex.Bound(value: value, inclusive: inclusive) }
        func tighterLower(_ a: SortedIndex.Bound?, _ b: SortedIndex.Bound) -> SortedIndex.Bound {
            guard let a else { return b }
            switch SortedIndex.compare(a.value, b.value) {
            case .orderedAscending: return b
            case .orderedDescending: return a
            case .orderedSame: return edge(a.value, a.inclusive && b.inclusive)
            }
        }
        func tighterUpper(_ a: SortedIndex.Bound?, _ b: SortedIndex.Bound) -> SortedIndex.Bound {
            guard let a else { return b }
            switch SortedIndex.compare(a.value, b.value) {
            case .orderedAscending: return a
            case .orderedDescending: return b
            case .orderedSame: return edge(a.value, a.inclusive && b.inclusive)
            }
        }
        for comparison in predicate.conjuncts {
            guard comparison.quantifier == nil, comparison.options.isEmpty,
                case .key(let path) = comparison.left, path.steps.count == 1, !path.isCount,
                case .attribute = path.steps[0].kind, indexed(path.steps[0].index)
            else { continue }
            let attribute = path.steps[0].index
            var candidate: (Int, [(SortedIndex.Bound?, SortedIndex.Bound?)])?
            switch (comparison.op, comparison.right) {
            case (.equal, .value(let v)): candidate = (0, [(edge(v, true), edge(v, true))])
            case (.in, .list(let values)): candidate = (1, values.map { (edge($0, true), edge($0, true)) })
            case (.between, .list(let b)) where b.count == 2 && !b[0].isNull && !b[1].isNull:
                lower[attribute] = tighterLower(lower[attribute], edge(b[0], true))
                upper[attribute] = tighterUpper(upper[attribute], edge(b[1], true))
            case (.lessThan, .value(let v)) where !v.isNull: upper[attribute] = tighterUpper(upper[attribute], edge(v, false))
            case (.lessThanOrEqual, .value(let v)) where !v.isNull: upper[attribute] = tighterUpper(upper[attribute], edge(v, true))
            case (.greaterThan, .value(let v)) where !v.isNull: lower[attribute] = tighterLower(lower[attribute], edge(v, false))
            case (.greaterThanOrEqual, .value(let v)) where !v.isNull: lower[attribute] = tighterLower(lower[attribute], edge(v, true))
            default: break
            }
            // Only values of the attribute's own kind are in its index's order.
            guard let found = candidate, found.1.allSatisfy({ Self.indexable($0.0?.value, path) && Self.indexable($0.1?.value, path) })
            else { continue }
            if best == nil || found.0 < best!.rank { best = (found.0, found.1, attribute) }
        }
        if best == nil {
            for attribute in Set(lower.keys).union(upper.keys) {
                let path = predicate.conjuncts.compactMap { c -> BoundKeyPath? in
                    if case .key(let p) = c.left, p.steps.count == 1, p.steps[0].index == attribute { p } else { nil }
                }.first!
                guard Self.indexable(lower[attribute]?.value, path), Self.indexable(upper[attribute]?.value, path) else { continue }
                // A range excludes nulls: they sort first, below any lower bound.
                let from = lower[attribute] ?? edge(.null, false)
                let rank = lower[attribute] != nil && upper[attribute] != nil ? 2 : 3
                if best == nil || rank < best!.rank { best = (rank, [(from, upper[attribute])], attribute) }
            }
        }
        guard let best else { return nil }
        return IndexPlan(attribute: best.attribute, ranges: best.ranges)
    }

    /// Whether a literal orders within the attribute's index (same kind, or a number for a number).
    private static func indexable(_ value: Value?, _ path: BoundKeyPath) -> Bool {
        guard let value, !value.isNull else { return true }
        switch (path.attributeType, value) {
        case (.int?, .int), (.int?, .double), (.double?, .double), (.double?, .int), (.string?, .string), (.bool?, .bool),
            (.date?, .date), (.uuid?, .uuid), (.data?, .data):
            return true
        default:
            return false
        }
    }

    /// For a sorted request with a limit whose first sort key has an index and whose
    /// conditions none can use: walks the index in order and stops once the window is full
    /// (finishing the last group of equal first keys, which later keys order).
    /// - Parameters:
    ///   - skipping: object numbers to pass over (rows a context has changed, which it
    ///     considers itself).
    ///   - windowed: `false` returns the rows walked, unordered by later keys and unwindowed,
    ///     for a caller that adds rows of its own before ordering.
    ///   - values: `false` returns object numbers with empty values; a request without a
    ///     predicate sorted by the index's key alone then reads no row at all (the index
    ///     holds only existing rows, and their keys order them).
    func orderedByIndex(_ bound: BoundRequest, skipping: Set<UInt64> = [], windowed: Bool = true, values: Bool = true) -> [(number: UInt64, values: [Value])]? {
        guard let limit = bound.limit, let first = bound.sort.first, first.path.steps.count == 1, !first.path.isCount,
            case .attribute = first.path.steps[0].kind,
            hasOrderedIndex(entity: bound.entity, attribute: first.path.steps[0].index),
            indexedCandidates(bound) == nil
        else { return nil }
        guard let index = orderedIndex(entity: bound.entity, attribute: first.path.steps[0].index) else { return nil }
        let needed = BoundRequest.sum(bound.offset, limit)
        if !values, windowed, bound.predicate == nil, bound.sort.count == 1 {
            var found: [(number: UInt64, key: Value)] = []
            index.forEach(descending: !first.ascending) { number, key in
                if found.count >= needed, let last = found.last, SortedIndex.compare(key, last.key) != .orderedSame { return false }
                if !skipping.contains(number) { found.append((number, key)) }
                return true
            }
            // The order `BoundRequest.order` gives: by the key, equal keys by object number.
            found.sort { a, b in
                let order = SortedIndex.compare(a.key, b.key)
                return order == .orderedSame ? a.number < b.number : (order == .orderedAscending) == first.ascending
            }
            return bound.window(found.map { (number: $0.number, values: [Value]()) })
        }
        var rows: [(number: UInt64, values: [Value])] = []
        var lastKey: Value?
        index.forEach(descending: !first.ascending) { number, key in
            if rows.count >= needed, let lastKey, SortedIndex.compare(key, lastKey) != .orderedSame { return false }
            guard !skipping.contains(number), let row = tables[bound.entity][number], bound.matches(row.values, reader: self) else { return true }
            rows.append((number, row.values))
            lastKey = key
            return true
        }
        return windowed ? bound.order(rows, reader: self) : rows
    }
}
