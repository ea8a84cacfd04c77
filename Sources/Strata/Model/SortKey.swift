/// One key of a sort order: a key path and a direction.
public struct SortKey: Sendable, Hashable, Codable {
    /// The attribute (or to-one key path) to sort by.
    public var key: String
    /// Whether smaller values come first.
    public var ascending: Bool

    /// Creates a sort key; ascending unless told otherwise.
    public init(_ key: String, ascending: Bool = true) {
        self.key = key
        self.ascending = ascending
    }
}
