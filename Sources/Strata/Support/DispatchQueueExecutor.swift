import Dispatch

/// A serial executor that runs jobs on a private serial `DispatchQueue`.
///
/// `DispatchSerialQueue` is not available on Linux, so private-queue contexts use this
/// small adapter: jobs are submitted with `async` and run synchronously on the queue, and
/// ``checkIsolated()`` lets `assumeIsolated` recognise code already running on it.
final class DispatchQueueExecutor: SerialExecutor {
    let queue: DispatchQueue

    init(label: String, qos: DispatchQoS) {
        queue = DispatchQueue(label: label, qos: qos)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // The block holds the executor: a job may release the last reference to the actor
        // that owns it (an isolated deinit), and the executor must outlive the job.
        queue.async { [self] in job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    func checkIsolated() {
        dispatchPrecondition(condition: .onQueue(queue))
    }
}
