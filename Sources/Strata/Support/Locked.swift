import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value that threads share under a lock: a `pthread_mutex_t`.
///
/// Strata uses this instead of `Synchronization.Mutex` because on Linux `Mutex` is a futex
/// that ThreadSanitizer cannot see: every access it protects would be reported as a race,
/// and `swift test --sanitize=thread` could not tell real races from those.
final class Locked<State>: @unchecked Sendable {
    // @unchecked: `state` is only read or written between `pthread_mutex_lock` and
    // `pthread_mutex_unlock` of `mutex`, in `withLock`.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var state: State

    init(_ state: State) {
        self.state = state
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let result = pthread_mutex_init(mutex, nil)
        precondition(result == 0, "pthread_mutex_init failed with error \(result)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    @inline(__always)
    func withLock<Result, Failure: Error>(_ body: (inout State) throws(Failure) -> Result) throws(Failure) -> Result {
        if pthread_mutex_trylock(mutex) != 0 { lockContended() }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }

    /// Takes the lock another thread holds: yields the processor between tries for up to
    /// 50 µs before sleeping on it. Strata's locks are held for microseconds, and a thread
    /// put to sleep on a lock must be woken by the holder — on a virtual machine that takes
    /// tens of microseconds, longer than the wait it saved (four contexts saving at once
    /// spent more time waking each other than committing).
    @inline(never)
    private func lockContended() {
        let deadline = DispatchTime.now().uptimeNanoseconds + 50_000
        repeat {
            sched_yield()
            if pthread_mutex_trylock(mutex) == 0 { return }
        } while DispatchTime.now().uptimeNanoseconds < deadline
        pthread_mutex_lock(mutex)
    }
}
