import Synchronization

/// Whether the task that started a long operation has been cancelled, for the parts of the
/// operation that run on a queue of their own, where `Task.isCancelled` cannot see the task
/// (writing a checkpoint, a migration step). They look at it where they report progress.
final class CancellationFlag: Sendable {
    private let cancelled = Atomic<Bool>(false)

    init() {}

    /// Whether the task was cancelled.
    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }

    /// Sets the flag.
    func cancel() { cancelled.store(true, ordering: .relaxed) }

    /// Runs `operation` with a flag that is set when the current task is cancelled — at once
    /// if it already is.
    static func watching<T, E: Error>(_ operation: (CancellationFlag) async throws(E) -> T) async throws(E) -> T {
        let flag = CancellationFlag()
        let result: Result<T, E> = await withTaskCancellationHandler {
            do throws(E) { return .success(try await operation(flag)) } catch { return .failure(error) }
        } onCancel: {
            flag.cancel()
        }
        return try result.get()
    }
}
