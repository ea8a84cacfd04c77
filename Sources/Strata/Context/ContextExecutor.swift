/// Where a context runs its work.
public enum ContextExecutor: Sendable, Hashable {
    /// On the main actor: for UI code, usable synchronously from `@MainActor` code with
    /// ``ObjectContext/performAndWait(_:)``.
    case main
    /// On the context's own serial dispatch queue with this label.
    case privateQueue(String)

    /// The executor's kind, without the label.
    public enum Kind: String, Sendable, Hashable {
        case main
        case privateQueue
    }

    /// The executor's kind.
    public var kind: Kind {
        switch self {
        case .main: .main
        case .privateQueue: .privateQueue
        }
    }
}
