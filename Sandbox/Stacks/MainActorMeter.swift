import Foundation
import Strata
import Synchronization

/// Sums the library work the main actor does, from the contexts' instrumentation: every
/// save, merge, fetch, child-save application, change processing and live-results update
/// that ran on the main executor while the meter was recording. Busy time is the processor
/// time of that work (what Kugler's "time on the main thread" sampled); wall time adds the
/// moments the main thread was runnable but another thread had the processor.
final class MainActorMeter: Sendable {
    struct Totals: Sendable {
        var busy: Duration = .zero
        var wall: Duration = .zero
        var longest: Duration = .zero
        var longestOperation = ""
        var operations = 0
        /// Merges counted (each merges one save into a context on the main executor).
        var merges = 0
        var byOperation: [ContextEvent.Operation: Duration] = [:]
    }

    private let state = Mutex<(recording: Bool, totals: Totals)>((false, Totals()))

    /// The observer to give the stack.
    var observer: ContextObserver {
        { [self] event in
            guard event.executor == .main else { return }
            self.state.withLock { state in
                guard state.recording else { return }
                state.totals.busy += event.processorTime
                state.totals.wall += event.duration
                state.totals.operations += 1
                if event.operation == .merge { state.totals.merges += 1 }
                state.totals.byOperation[event.operation, default: .zero] += event.processorTime
                if event.duration > state.totals.longest {
                    state.totals.longest = event.duration
                    state.totals.longestOperation = "\(event.operation) of \(event.objectCount) objects in \(event.context)"
                }
            }
        }
    }

    func start() { state.withLock { $0 = (true, Totals()) } }

    func stop() -> Totals {
        state.withLock { state in
            state.recording = false
            return state.totals
        }
    }

    func read() -> Totals { state.withLock { $0.totals } }

    /// Waits (polling, up to `timeout` seconds) until `count` merges have been counted;
    /// returns whether they were.
    func waitForMerges(_ count: Int, timeout: Double) async -> Bool {
        let deadline = Measure.now() + UInt64(timeout * 1e9)
        while read().merges < count {
            guard Measure.now() < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }
}

extension Duration {
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }

    var milliseconds: Double { seconds * 1000 }
}
