#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How much longer the tests' hard timeouts are in this process.
///
/// Under ThreadSanitizer everything runs several times slower, and when the whole suite runs
/// at once its processor-bound tests hold the concurrency pool's few threads for long
/// stretches, so a test that waits for another task can wait minutes for a thread. The
/// timeouts stay hard; they are only scaled to the build.
enum TestTiming {
    /// 8 under ThreadSanitizer, 1 otherwise.
    static let slowdown: Int = isThreadSanitized ? 8 : 1

    /// Whether the ThreadSanitizer runtime is loaded into the process.
    static var isThreadSanitized: Bool {
        // The program's own handle searches every object loaded with it, the runtime included.
        dlsym(dlopen(nil, RTLD_NOW), "__tsan_init") != nil
    }
}
