import Dispatch

/// An actor on a private serial Dispatch queue: where a benchmark runs work the way a
/// private-queue context does (on a thread that may block, unlike the cooperative pool's).
actor PrivateQueue {
    private let executor: QueueExecutor

    init(label: String) { executor = QueueExecutor(queue: DispatchQueue(label: label, qos: .utility)) }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Runs `body` on the queue.
    func run<T: Sendable>(_ body: nonisolated(nonsending) @Sendable () async throws -> T) async rethrows -> T {
        try await body()
    }

    /// Runs jobs on the queue (the blocks hold the executor, which must outlive its jobs).
    private final class QueueExecutor: SerialExecutor {
        let queue: DispatchQueue
        init(queue: DispatchQueue) { self.queue = queue }
        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            queue.async { [self] in job.runSynchronously(on: asUnownedSerialExecutor()) }
        }
        func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }
    }
}
