#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import Testing
@testable import Strata

/// An executable of the package, built next to the tests.
///
/// `swift build --build-tests` and `swift test` build every executable of the package into
/// the products directory that also holds the test bundle, so it is looked for next to the
/// running test executable and next to the test bundle.
enum BuiltExecutable {
    static func url(named name: String) -> URL? {
        var directories: [URL] = []
        #if os(Linux)
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            directories.append(URL(fileURLWithPath: executable).deletingLastPathComponent())
        }
        #endif
        for bundle in [Bundle.main] + Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") || bundle === Bundle.main {
            directories += [bundle.bundleURL, bundle.bundleURL.deletingLastPathComponent()]
        }
        for directory in directories {
            let candidate = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }
}

/// The `strata-journal-writer` executable the process tests spawn (Tests/JournalWriter).
enum WriterExecutable {
    static let url: URL? = BuiltExecutable.url(named: "strata-journal-writer")

    static var isAvailable: Bool { url != nil }
}

/// The `strata` command-line tool, for tests that kill it mid-import.
enum StrataExecutable {
    static let url: URL? = BuiltExecutable.url(named: "strata")
}

/// Whether this process runs as root, which bypasses file permissions.
let runningAsRoot = getuid() == 0

/// A problem with a child process: it did not answer in time, or said something unexpected.
struct ChildProcessFailure: Error, CustomStringConvertible {
    var description: String
}

/// A child process whose standard output is read line by line with hard deadlines.
///
/// Lines are the events the tests wait for (`ack 12`, `locked`): nothing sleeps to let the
/// child get ahead. Every wait has a deadline; a child still running when the value is
/// dropped is killed.
///
/// Started with `posix_spawn`, not Foundation's `Process`: on Linux, `Process.run()` lists
/// `/proc/self/fd` to close every descriptor in the child, and copies each entry's whole
/// name field, reading past the directory buffer — with the thousands of descriptors the
/// tests running alongside hold open (their stores), that read crossed into an unmapped
/// page and crashed the test process. The child inherits only its standard streams: every
/// descriptor Strata opens, and the pipes made here, are close-on-exec.
final class ChildProcess: @unchecked Sendable {
    // @unchecked: `state` is guarded by its lock; the descriptors are set once in `init`,
    // and `input` is closed under the lock.

    /// What reading a line found.
    enum Reading: Equatable {
        case line(String)
        /// The child closed its output (it exited or was killed).
        case end
        /// The deadline passed first.
        case timedOut
    }

    let arguments: [String]
    let pid: pid_t
    /// The parent's ends of the child's standard output, input and error (-1: not a pipe).
    private let output: Int32, errors: Int32
    private let state = Locked<(running: Bool, input: Int32, reason: Process.TerminationReason, status: Int32)>((true, -1, .exit, 0))
    private let exited = DispatchSemaphore(value: 0)
    private var pending: [UInt8] = []
    private var atEnd = false
    private var pendingErrors: [UInt8] = []
    private var errorsAtEnd = false

    /// Starts `executable` (the writer by default) with `arguments`; standard error is
    /// inherited so a crashing child's message reaches the test log, unless `readsErrors`
    /// (then ``readErrorLine(until:)`` reads it). Without `standardStreams` the child
    /// inherits all three.
    init(_ arguments: [String], executable: URL? = WriterExecutable.url, standardStreams: Bool = true, readsErrors: Bool = false) throws {
        guard let executable else { throw ChildProcessFailure(description: "the executable for \(arguments) was not built next to the tests") }
        self.arguments = arguments
        // A child that exits before reading all its input makes writing to it fail with
        // EPIPE, not kill the test process with SIGPIPE.
        _ = Self.ignoringBrokenPipes
        let (child, parentEnds) = try Self.spawning.withLock { _ throws -> (pid_t, (output: Int32, input: Int32, errors: Int32)) in
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            // The child's ends, closed here once it has them.
            var childEnds: [Int32] = []
            defer { for fd in childEnds { close(fd) } }
            var parentEnds = (output: Int32(-1), input: Int32(-1), errors: Int32(-1))
            if standardStreams {
                let stdout = try Self.pipe(), stdin = try Self.pipe()
                parentEnds.output = stdout.read
                parentEnds.input = stdin.write
                childEnds += [stdout.write, stdin.read]
                posix_spawn_file_actions_adddup2(&actions, stdout.write, 1)
                posix_spawn_file_actions_adddup2(&actions, stdin.read, 0)
                if readsErrors {
                    let stderr = try Self.pipe()
                    parentEnds.errors = stderr.read
                    childEnds.append(stderr.write)
                    posix_spawn_file_actions_adddup2(&actions, stderr.write, 2)
                }
            }
            var attributes = posix_spawnattr_t()
            posix_spawnattr_init(&attributes)
            defer { posix_spawnattr_destroy(&attributes) }
            #if canImport(Darwin)
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_CLOEXEC_DEFAULT))
            #else
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
            #endif
            let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
            defer { for argument in argv { free(argument) } }
            var child = pid_t()
            let spawned = posix_spawn(&child, executable.path, &actions, &attributes, argv, environ)
            guard spawned == 0 else {
                for fd in [parentEnds.output, parentEnds.input, parentEnds.errors] where fd >= 0 { close(fd) }
                throw ChildProcessFailure(description: "could not start \(executable.path) \(arguments): \(String(cString: strerror(spawned)))")
            }
            return (child, parentEnds)
        }
        pid = child
        output = parentEnds.output
        errors = parentEnds.errors
        state.withLock { $0.input = parentEnds.input }
        // Waits for the exit on a thread of its own; the child is reaped under the lock
        // `sendKill` takes, so a kill never reaches a reused process ID.
        let (state, exited) = (state, exited)
        Thread {
            var info = siginfo_t()
            while waitid(P_PID, id_t(child), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
            state.withLock { s in
                var status: Int32 = 0
                while waitpid(child, &status, 0) == -1 && errno == EINTR {}
                s.running = false
                if status & 0x7f == 0 {
                    (s.reason, s.status) = (.exit, (status >> 8) & 0xff)
                } else {
                    (s.reason, s.status) = (.uncaughtSignal, status & 0x7f)
                }
            }
            exited.signal()
        }.start()
    }

    /// A pipe whose two ends are close-on-exec, so that no other child inherits them
    /// (children are started one at a time, under ``spawning``, so none starts between the
    /// pipe's making and its ends' marking).
    private static func pipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard systemPipe(&fds) == 0 else { throw ChildProcessFailure(description: "pipe: \(String(cString: strerror(errno)))") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }

    /// Held while a child's pipes are made and it is started.
    private static let spawning = Locked(())

    /// Ignores SIGPIPE in the test process, once.
    private static let ignoringBrokenPipes: Void = { signal(SIGPIPE, SIG_IGN) }()

    deinit {
        sendKill()
        closeInput()
        for fd in [output, errors] where fd >= 0 { close(fd) }
    }

    /// Reads the next line, waiting at most until `deadline`.
    func readLine(until deadline: ContinuousClock.Instant) -> Reading {
        Self.readLine(from: output, pending: &pending, atEnd: &atEnd, until: deadline)
    }

    /// Reads the next line of standard error (started with `readsErrors`), waiting at most
    /// until `deadline`.
    func readErrorLine(until deadline: ContinuousClock.Instant) -> Reading {
        Self.readLine(from: errors, pending: &pendingErrors, atEnd: &errorsAtEnd, until: deadline)
    }

    /// Writes to the child's standard input.
    func writeInput(_ data: Data) throws {
        let fd = state.withLock { $0.input }
        try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws in
            var offset = 0
            while offset < bytes.count {
                let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw ChildProcessFailure(description: "writing to \(arguments): \(String(cString: strerror(errno)))")
                }
                offset += n
            }
        }
    }

    private static func readLine(
        from fd: Int32, pending: inout [UInt8], atEnd: inout Bool, until deadline: ContinuousClock.Instant
    ) -> Reading {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return .line(line)
            }
            if atEnd { return .end }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return .timedOut }
            let milliseconds = Int32(min(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1, 60_000))
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0 && errno != EINTR { return .end }
            guard ready > 0 else { continue }
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if n <= 0 {
                atEnd = true
            } else {
                pending += buffer[..<n]
            }
        }
    }

    /// Reads the next line, which must arrive within `timeout`; `nil` at the end of output.
    func expectLine(within timeout: Duration = .seconds(30)) throws -> String? {
        switch readLine(until: .now + timeout) {
        case .line(let line): return line
        case .end: return nil
        case .timedOut: throw ChildProcessFailure(description: "no output from \(arguments) within \(timeout)")
        }
    }

    /// Every line until the child closes its output (within `timeout`).
    func remainingLines(within timeout: Duration = .seconds(30)) throws -> [String] {
        let deadline = ContinuousClock.now + timeout
        var lines: [String] = []
        while true {
            switch readLine(until: deadline) {
            case .line(let line): lines.append(line)
            case .end: return lines
            case .timedOut: throw ChildProcessFailure(description: "\(arguments) did not finish its output within \(timeout)")
            }
        }
    }

    /// Everything the child writes to its standard output and error (started with
    /// `readsErrors`) until it closes both, read side by side so that neither pipe fills
    /// and blocks it; `timedOut` when `deadline` came first.
    func remainingOutput(until deadline: ContinuousClock.Instant) -> (output: [UInt8], errors: [UInt8], timedOut: Bool) {
        var collected: [[UInt8]] = [[], []]
        var open = [output, errors].map { $0 >= 0 }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while open.contains(true) {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return (collected[0], collected[1], true) }
            let milliseconds = Int32(min(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1, 60_000))
            var descriptors = [output, errors].enumerated().map { pollfd(fd: open[$0.offset] ? $0.element : -1, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&descriptors, 2, milliseconds)
            if ready < 0 && errno != EINTR { break }
            guard ready > 0 else { continue }
            for i in 0..<2 where open[i] && descriptors[i].revents != 0 {
                let n = read(descriptors[i].fd, &buffer, buffer.count)
                if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                if n <= 0 { open[i] = false } else { collected[i] += buffer[..<n] }
            }
        }
        return (collected[0], collected[1], false)
    }

    /// Sends `SIGKILL` unless the child has already been reaped (its PID may be reused).
    func sendKill() {
        state.withLock { if $0.running { _ = kill(pid, SIGKILL) } }
    }

    /// Closes the child's standard input (the writer's `hold-lock` mode then lets go).
    func closeInput() {
        state.withLock { s in
            if s.input >= 0 { close(s.input) }
            s.input = -1
        }
    }

    /// Waits for the child to exit, at most `timeout`.
    @discardableResult
    func waitForExit(within timeout: Duration = .seconds(30)) throws -> (reason: Process.TerminationReason, status: Int32) {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        guard exited.wait(timeout: .now() + seconds) == .success else {
            sendKill()
            throw ChildProcessFailure(description: "\(arguments) did not exit within \(timeout)")
        }
        return state.withLock { ($0.reason, $0.status) }
    }
}

/// `pipe(2)`, under a name the type above does not shadow.
private func systemPipe(_ fds: UnsafeMutablePointer<Int32>) -> Int32 { pipe(fds) }

/// Runs blocking work (reading a child's output, waiting for it) on a thread of its own,
/// so it never occupies one of the few threads of the concurrency pool.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.start()
    }
}

/// Models of the process workload, built once per seed and extended as needed.
struct WorkloadModel {
    let seed: UInt64
    private(set) var state = ReplayedState()

    init(seed: UInt64) { self.seed = seed }

    /// The state after transactions `1...number`.
    mutating func state(through number: UInt64) throws -> ReplayedState {
        if number < state.lastTransaction { state = ReplayedState() }
        while state.lastTransaction < number {
            try state.apply(ProcessWorkload.transaction(state.lastTransaction + 1, seed: seed))
        }
        return state
    }
}

/// The names in a store directory that an interrupted write or compaction leaves behind.
func temporaryFiles(in directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter(StoreLayout.isTemporary)
}

@Suite struct ProcessWorkloadTests {
    @Test func workloadSchemaIsTheSongbookFixture() {
        #expect(ProcessWorkload.schema.fingerprint == Fixtures.songbook.fingerprint)
    }

    @Test func workloadTransactionsAreValidAndDeterministic() throws {
        var model = ReplayedState()
        let codec = RecordCodec(schema: Fixtures.songbook, storeID: UUID())
        for n in 1...60 as ClosedRange<UInt64> {
            let record = ProcessWorkload.transaction(n, seed: 99)
            try codec.validate(record)
            #expect(record == ProcessWorkload.transaction(n, seed: 99))
            try model.apply(record)
        }
        #expect(model.rows.count > 60)
        #expect(ProcessWorkload.transaction(5, seed: 1) != ProcessWorkload.transaction(5, seed: 2))
    }
}
