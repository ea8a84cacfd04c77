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
final class ChildProcess: @unchecked Sendable {
    /// What reading a line found.
    enum Reading: Equatable {
        case line(String)
        /// The child closed its output (it exited or was killed).
        case end
        /// The deadline passed first.
        case timedOut
    }

    let process = Process()
    let arguments: [String]
    private let output = Pipe()
    private let input = Pipe()
    private let errors = Pipe()
    private let exited = DispatchSemaphore(value: 0)
    private var pending: [UInt8] = []
    private var atEnd = false
    private var pendingErrors: [UInt8] = []
    private var errorsAtEnd = false

    /// Starts `executable` (the writer by default) with `arguments`; standard error is
    /// inherited so a crashing child's message reaches the test log, unless `readsErrors`
    /// (then ``readErrorLine(until:)`` reads it).
    init(_ arguments: [String], executable: URL? = WriterExecutable.url, standardStreams: Bool = true, readsErrors: Bool = false) throws {
        guard let executable else { throw ChildProcessFailure(description: "the executable for \(arguments) was not built next to the tests") }
        self.arguments = arguments
        process.executableURL = executable
        process.arguments = arguments
        if standardStreams {
            process.standardOutput = output
            process.standardInput = input
            process.standardError = readsErrors ? errors : FileHandle.standardError
        }
        process.terminationHandler = { [exited] _ in exited.signal() }
        // A child that exits before reading all its input makes writing to it fail with
        // EPIPE, not kill the test process with SIGPIPE.
        _ = Self.ignoringBrokenPipes
        try process.run()
    }

    /// Ignores SIGPIPE in the test process, once.
    private static let ignoringBrokenPipes: Void = { signal(SIGPIPE, SIG_IGN) }()

    deinit { sendKill() }

    var pid: pid_t { process.processIdentifier }

    /// Reads the next line, waiting at most until `deadline`.
    func readLine(until deadline: ContinuousClock.Instant) -> Reading {
        Self.readLine(from: output.fileHandleForReading.fileDescriptor, pending: &pending, atEnd: &atEnd, until: deadline)
    }

    /// Reads the next line of standard error (started with `readsErrors`), waiting at most
    /// until `deadline`.
    func readErrorLine(until deadline: ContinuousClock.Instant) -> Reading {
        Self.readLine(from: errors.fileHandleForReading.fileDescriptor, pending: &pendingErrors, atEnd: &errorsAtEnd, until: deadline)
    }

    /// Writes to the child's standard input.
    func writeInput(_ data: Data) throws { try input.fileHandleForWriting.write(contentsOf: data) }

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

    /// Sends `SIGKILL` unless the child has already been reaped (its PID may be reused).
    func sendKill() {
        if process.isRunning { _ = kill(pid, SIGKILL) }
    }

    /// Closes the child's standard input (the writer's `hold-lock` mode then lets go).
    func closeInput() { try? input.fileHandleForWriting.close() }

    /// Waits for the child to exit, at most `timeout`.
    @discardableResult
    func waitForExit(within timeout: Duration = .seconds(30)) throws -> (reason: Process.TerminationReason, status: Int32) {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        guard exited.wait(timeout: .now() + seconds) == .success else {
            sendKill()
            throw ChildProcessFailure(description: "\(arguments) did not exit within \(timeout)")
        }
        return (process.terminationReason, process.terminationStatus)
    }
}

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
