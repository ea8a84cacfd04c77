/// The names of the files in a store directory.
///
/// ```
/// songs.strata/
///   lock                                   flock'd by the writing process; holds its PID
///   checkpoint-00000000000000000400.strata every row as of transaction 400
///   journal-00000000000000000401.strata    transactions 401, 402, ...
///   checkpoint-….strata.tmp                a checkpoint being written (removed at open)
///   migration.strata.tmp                   a custom migration step's rows (removed at open)
/// ```
enum StoreLayout {
    static let lockFile = "lock"
    static let temporarySuffix = ".tmp"
    /// The temporary file a custom migration step keeps its destination rows in.
    static let migrationSpillName = "migration.strata.tmp"
    /// The temporary file of a custom migration step's bookkeeping: where each row is, what
    /// each source object became, the unique values.
    static let migrationIndexName = "migration-index.strata.tmp"
    private static let segmentPrefix = "journal-"
    private static let checkpointPrefix = "checkpoint-"
    private static let suffix = ".strata"

    static func segmentName(firstTransaction: UInt64) -> String {
        segmentPrefix + String(firstTransaction).leftPadded(to: 20) + suffix
    }

    static func checkpointName(through: UInt64) -> String {
        checkpointPrefix + String(through).leftPadded(to: 20) + suffix
    }

    /// The transaction number in a segment file name, or `nil` if the name is not one.
    static func segmentTransaction(_ name: String) -> UInt64? { number(in: name, prefix: segmentPrefix) }

    /// The transaction number in a checkpoint file name, or `nil` if the name is not one.
    static func checkpointTransaction(_ name: String) -> UInt64? { number(in: name, prefix: checkpointPrefix) }

    static func isTemporary(_ name: String) -> Bool {
        name == migrationSpillName || name == migrationIndexName
            || name.hasSuffix(temporarySuffix) && (name.hasPrefix(segmentPrefix) || name.hasPrefix(checkpointPrefix))
    }

    private static func number(in name: String, prefix: String) -> UInt64? {
        guard name.hasPrefix(prefix), name.hasSuffix(suffix) else { return nil }
        let digits = name.dropFirst(prefix.count).dropLast(suffix.count)
        guard digits.count == 20, digits.allSatisfy(\.isASCII) else { return nil }
        return UInt64(digits)
    }

    static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// The directory containing `path` (for syncing it after creating `path`).
    static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }
}
