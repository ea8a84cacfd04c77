import Foundation

/// An aggregate function over the objects a request matches.
public enum AggregateFunction: String, Sendable, Hashable, CaseIterable {
    /// How many objects match (with a key: how many have a non-nil value for it).
    case count
    /// The sum of a numeric key (int if every value is an int and the sum fits in one, else
    /// double).
    case sum
    /// The smallest non-nil value of a key.
    case min
    /// The largest non-nil value of a key.
    case max
    /// The mean of a numeric key, as a double (nil when there are no values): over ints,
    /// their exact sum over the count.
    case avg
}

/// One row of an aggregate: the group's value of the group-by key (`nil` without one) and
/// the aggregate's value.
public struct AggregateRow: Sendable, Hashable {
    /// The group-by key's value, or `nil` when not grouped.
    public var group: Value?
    /// The aggregate's value (`.null` for min, max and avg of nothing).
    public var value: Value
}

/// Computes aggregates over matched rows; the same code for stores and contexts.
struct Aggregation {
    let function: AggregateFunction
    let key: BoundKeyPath?
    let groupBy: BoundKeyPath?

    init(_ function: AggregateFunction, key: String?, groupBy: String?, entity: Int, schema: Schema) throws(StoreError) {
        self.function = function
        if function != .count && key == nil {
            throw StoreError(.invalidQuery, "\(function.rawValue) needs a key to aggregate")
        }
        self.key = try key.map { (k) throws(StoreError) in try BoundKeyPath(k, from: entity, schema: schema, allowMultiple: false) }
        self.groupBy = try groupBy.map { (k) throws(StoreError) in try BoundKeyPath(k, from: entity, schema: schema, allowMultiple: false) }
        if let key = self.key, function != .count, let destination = key.relationshipDestination {
            // Objects have no sum, mean or order to take the least or greatest of.
            let name = schema.entities[destination].name
            throw StoreError(.invalidQuery, "\(function.rawValue) needs an attribute; \"\(key.text)\" is a relationship to \(name): aggregate one of \(name)'s attributes (\"\(key.text).…\"), or count it",
                             key: key.text)
        }
        if let type = self.key?.attributeType, function == .sum || function == .avg, type != .int && type != .double {
            throw StoreError(.invalidQuery, "\(function.rawValue) needs a numeric key; \"\(self.key!.text)\" is a \(type.rawValue)", key: self.key!.text)
        }
    }

    /// The aggregate of each group, groups in ascending order of their value (nil first).
    func compute(_ rows: [[Value]], reader: some RowReader) -> [AggregateRow] {
        var groups: [Value: [Value]] = [:]
        var order: [Value] = []
        for row in rows {
            let group = groupBy.map { $0.resolve(row, reader: reader).first ?? .null } ?? .null
            let value = key.map { $0.resolve(row, reader: reader).first ?? .null } ?? .bool(true)
            if groups[group] == nil { order.append(group) }
            groups[group, default: []].append(value)
        }
        if groupBy == nil && order.isEmpty { order = [.null] }
        order.sort { SortedIndex.compare($0, $1) == .orderedAscending }
        return order.map { group in
            AggregateRow(group: groupBy == nil ? nil : group, value: aggregate(groups[group] ?? []))
        }
    }

    private func aggregate(_ values: [Value]) -> Value {
        let present = values.filter { !$0.isNull }
        switch function {
        case .count:
            return .int(Int64(present.count))
        case .sum, .avg:
            var intSum: Int64 = 0
            var doubleSum = 0.0
            var allInts = true
            // Net wraps of the 64-bit total past either end: the true sum is intSum plus wraps
            // × 2⁶⁴, so it fits exactly when they cancel out, in whatever order the rows came
            // (a partial sum past the end once made the result a double for good).
            var wraps = 0
            for value in present {
                switch value {
                case .int(let i):
                    let (sum, over) = intSum.addingReportingOverflow(i)
                    intSum = sum
                    if over { wraps += i > 0 ? 1 : -1 }
                    doubleSum += Double(i)
                case .double(let d):
                    allInts = false
                    doubleSum += d
                default: break
                }
            }
            // Ints alone: the exact total, rounded once (a running double sum rounds at each
            // step, and an average of 2^53 + 1 and -2^53 came out 0 against a sum of 1).
            let total = allInts ? Double(intSum) + Double(wraps) * 0x1p64 : doubleSum
            if function == .avg { return present.isEmpty ? .null : .double(total / Double(present.count)) }
            return allInts && wraps == 0 ? .int(intSum) : .double(total)
        case .min:
            return present.min { SortedIndex.compare($0, $1) == .orderedAscending } ?? .null
        case .max:
            return present.max { SortedIndex.compare($0, $1) == .orderedAscending } ?? .null
        }
    }
}

extension Generation {
    /// An aggregate over the objects of an entity that match a predicate, optionally per
    /// group of equal values of another key.
    /// - Throws: ``StoreError/Code/invalidQuery`` for unknown entities or keys, or a
    ///   non-numeric key for sum and avg.
    public func aggregate(
        _ function: AggregateFunction, of key: String? = nil, entity: String, where predicate: ObjectPredicate? = nil,
        groupBy: String? = nil
    ) throws(StoreError) -> [AggregateRow] {
        let bound = try BoundRequest(FetchRequest(entity: entity, predicate: predicate, sortBy: []), schema: schema)
        let aggregation = try Aggregation(function, key: key, groupBy: groupBy, entity: bound.entity, schema: schema)
        var rows: [[Value]] = []
        forEachCandidate(bound) { _, values in if bound.matches(values, reader: self) { rows.append(values) } }
        return aggregation.compute(rows, reader: self)
    }
}
