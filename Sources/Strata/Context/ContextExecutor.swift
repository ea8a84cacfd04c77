import Dispatch

/// Where a context runs its work.
public enum ContextExecutor: Sendable, Hashable {
    /// On the main actor: for UI code, usable synchronously from `@MainActor` code with
    /// ``ObjectContext/performAndWait(_:)``.
    case main
    /// On the context's own serial queue with this label, at this priority.
    case privateQueue(String, priority: ContextPriority = .userInitiated)

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

/// How urgently a private-queue context's work competes for processors with the rest of
/// the process — above all with the main actor: the quality of service of the context's
/// Dispatch queue.
///
/// On Linux, Dispatch runs each quality of service on threads of its own absolute `nice`
/// value (as seen with Swift 6.3: `utility` 2, `default` 0, and `userInitiated` −2 when
/// the process may raise priorities, as root can), and the main queue at the process's
/// own. So a background context at ``userInitiated`` can outrank the main actor there; at
/// ``utility`` it yields to it.
public enum ContextPriority: String, Sendable, Hashable, CaseIterable {
    /// Work the user is waiting for, such as an editor's save.
    case userInitiated
    /// Work the user is not waiting for: imports, background saving, the stack presets'
    /// writer and background contexts. It yields processors to the main actor.
    case utility
}

extension ContextExecutor {
    /// A new serial executor for a private-queue context; `nil` for the main actor's.
    func makeSerialExecutor() -> DispatchQueueExecutor? {
        switch self {
        case .main:
            nil
        case .privateQueue(let label, let priority):
            DispatchQueueExecutor(label: label, qos: priority == .utility ? .utility : .userInitiated)
        }
    }
}
