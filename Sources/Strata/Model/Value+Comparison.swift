import Foundation

extension Value {
    /// Compares two values of the same kind; `nil` when they cannot be ordered against
    /// each other (different kinds, or relationship values).
    ///
    /// `int` and `double` compare numerically with each other, by their exact values (as
    /// SQLite compares an integer with a real: 2^53 + 1 is more than 2^53 as a double, which
    /// converting the int to a double would make equal); NaN is ordered against
    /// nothing (every comparison with it is false). Strings compare by their UTF-8 bytes,
    /// which is Unicode scalar order (the same order in memory and in the store).
    public static func compare(_ lhs: Value, _ rhs: Value) -> ComparisonResult? {
        if lhs.isNaN || rhs.isNaN { return nil }
        func order<T: Comparable>(_ a: T, _ b: T) -> ComparisonResult {
            a < b ? .orderedAscending : (a == b ? .orderedSame : .orderedDescending)
        }
        switch (lhs, rhs) {
        case (.null, .null): return .orderedSame
        case (.string(let a), .string(let b)):
            if sameBytes(a, b) { return .orderedSame }
            return a.utf8.lexicographicallyPrecedes(b.utf8) ? .orderedAscending : .orderedDescending
        case (.int(let a), .int(let b)): return order(a, b)
        case (.double(let a), .double(let b)): return order(a, b)
        case (.int(let a), .double(let b)): return compare(a, b)
        case (.double(let a), .int(let b)): return compare(b, a).flipped
        case (.bool(let a), .bool(let b)): return order(a ? 1 : 0, b ? 1 : 0)
        case (.date(let a), .date(let b)): return order(a, b)
        case (.uuid(let a), .uuid(let b)): return order(a.uuidString, b.uuidString)
        case (.data(let a), .data(let b)):
            return a.lexicographicallyPrecedes(b) ? .orderedAscending : (a == b ? .orderedSame : .orderedDescending)
        default: return nil
        }
    }

    /// An int against a double (not NaN), exactly.
    private static func compare(_ int: Int64, _ double: Double) -> ComparisonResult {
        // Every double at or beyond ±2^63 is beyond every Int64; between, its integral part
        // is an Int64 exactly.
        if double >= 0x1p63 { return .orderedAscending }
        if double < -0x1p63 { return .orderedDescending }
        let integral = double.rounded(.towardZero)
        let whole = Int64(integral)
        if int != whole { return int < whole ? .orderedAscending : .orderedDescending }
        let fraction = double - integral
        return fraction > 0 ? .orderedAscending : (fraction < 0 ? .orderedDescending : .orderedSame)
    }
}

extension ComparisonResult {
    /// The result with its sides swapped.
    var flipped: ComparisonResult {
        switch self {
        case .orderedAscending: .orderedDescending
        case .orderedDescending: .orderedAscending
        case .orderedSame: .orderedSame
        }
    }
}
