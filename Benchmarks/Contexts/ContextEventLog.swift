import Strata
import Synchronization

/// Keeps every ``ContextEvent`` a coordinator reports, as its observer.
final class ContextEventLog: Sendable {
    private let recorded = Mutex<[ContextEvent]>([])

    init() {}

    /// The observer to give the coordinator.
    var observer: ContextObserver {
        { [self] event in recorded.withLock { $0.append(event) } }
    }

    /// Forgets the events so far.
    func removeAll() {
        recorded.withLock { $0.removeAll() }
    }

    /// The events of one operation of one context, in order.
    func events(_ operation: ContextEvent.Operation, context: String) -> [ContextEvent] {
        recorded.withLock { events in events.filter { $0.operation == operation && $0.context == context } }
    }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
