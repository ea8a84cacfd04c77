/// The object numbers of one entity that a store has handed out and no commit has used
/// yet: the only numbers an insert may take, so that a number, once its object is
/// inserted, is never inserted again — not even after that object is deleted.
///
/// Numbers are handed out in increasing order (from the entity's counter), so they are
/// kept as sorted, disjoint ranges; inserts usually take them in order too, from the front
/// of a range, which costs a binary search and a bound's change.
struct UnusedNumbers: Sendable {
    private var ranges: [Range<UInt64>] = []

    /// Adds `numbers`, which lie above every number added before.
    mutating func add(_ numbers: Range<UInt64>) {
        guard !numbers.isEmpty else { return }
        if let last = ranges.last {
            precondition(numbers.lowerBound >= last.upperBound, "object numbers are handed out in increasing order")
            if last.upperBound == numbers.lowerBound {
                ranges[ranges.count - 1] = last.lowerBound..<numbers.upperBound
                return
            }
        }
        ranges.append(numbers)
    }

    /// How many disjoint ranges hold the numbers (for tests: what the numbers cost).
    var rangeCount: Int { ranges.count }

    /// Whether `number` was handed out and not used.
    func contains(_ number: UInt64) -> Bool {
        contains(number..<number + 1)
    }

    /// Whether every number of `run` was handed out and not used.
    func contains(_ run: Range<UInt64>) -> Bool {
        run.isEmpty || rangeIndex(holding: run) != nil
    }

    /// Marks `number` used; it must be unused.
    mutating func use(_ number: UInt64) {
        use(number..<number + 1)
    }

    /// Marks the numbers of `run` used; they must all be unused.
    mutating func use(_ run: Range<UInt64>) {
        guard !run.isEmpty else { return }
        guard let index = rangeIndex(holding: run) else { preconditionFailure("object numbers \(run) are used twice") }
        let range = ranges[index]
        switch (range.lowerBound == run.lowerBound, range.upperBound == run.upperBound) {
        case (true, true): ranges.remove(at: index)
        case (true, false): ranges[index] = run.upperBound..<range.upperBound
        case (false, true): ranges[index] = range.lowerBound..<run.lowerBound
        case (false, false):
            ranges[index] = range.lowerBound..<run.lowerBound
            ranges.insert(run.upperBound..<range.upperBound, at: index + 1)
        }
    }

    /// The index of the range that holds every number of the non-empty `run`, if one does.
    private func rangeIndex(holding run: Range<UInt64>) -> Int? {
        guard let index = rangeIndex(of: run.lowerBound), run.upperBound <= ranges[index].upperBound else { return nil }
        return index
    }

    /// The index of the last range starting at or below `number`.
    private func rangeIndex(of number: UInt64) -> Int? {
        var low = 0, high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].lowerBound <= number { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? nil : low - 1
    }
}
