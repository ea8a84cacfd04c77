import Dispatch
import Foundation
import Testing

@testable import Strata

/// Where the crash and fault tests keep their store, inside an in-memory file system.
let storePath = "/store"

// MARK: - A history and its model

/// A deterministic history of valid transactions and the model state after each prefix:
/// the oracle every crash and fault test compares a recovered store against.
struct History: Sendable {
    /// `records[i]` is transaction `i + 1`.
    let records: [TransactionRecord]
    /// `models[p]` is the state after the first `p` transactions.
    let models: [ReplayedState]

    init(seed: UInt64, count: Int, maxChanges: Int = 4) {
        var generator = TransactionGenerator(seed: seed)
        var state = ReplayedState()
        var records: [TransactionRecord] = []
        var models = [state]
        for _ in 0..<count {
            let record = generator.next(after: state, maxChanges: maxChanges)
            try! state.apply(record)
            records.append(record)
            models.append(state)
        }
        self.records = records
        self.models = models
    }

    var count: Int { records.count }

    /// Transaction `number` (1-based).
    func record(_ number: UInt64) -> TransactionRecord { records[Int(number) - 1] }

    /// The model after the first `number` transactions.
    func model(_ number: UInt64) -> ReplayedState { models[Int(number)] }
}

/// The size of a new segment holding only its header and schema record, so that tests can
/// choose a segment size that rolls every few transactions.
let segmentPreambleSize: Int = {
    let fs = InMemoryFileIO()
    let journal = try! Journal.create(at: storePath, schema: Fixtures.songbook, configuration: .init(fileIO: fs))
    let size = fs.contents(of: journal.segmentPaths[0])!.count
    return size
}()

// MARK: - What a workload has done

/// What a workload has done so far — the oracle's bounds — readable by a file-system
/// wrapper at the moment of any call.
final class Progress: Sendable {
    struct Counts: Sendable, Hashable, CustomStringConvertible {
        /// The highest transaction whose append returned success.
        var acked: UInt64 = 0
        /// The highest transaction handed to the journal.
        var issued: UInt64 = 0
        /// Whether `Journal.create` has returned.
        var created = false

        var description: String { "acked \(acked), issued \(issued)\(created ? "" : ", store not yet created")" }
    }

    private let counts = Locked(Counts())

    var current: Counts { counts.withLock { $0 } }

    /// Call before handing transaction `number` to the journal.
    func issue(_ number: UInt64) { counts.withLock { $0.issued = max($0.issued, number) } }

    /// Call after the append of transaction `number` returned success.
    func acknowledge(_ number: UInt64) { counts.withLock { $0.acked = max($0.acked, number) } }

    /// Call after `Journal.create` returned.
    func markCreated() { counts.withLock { $0.created = true } }
}

// MARK: - Recording every moment of a workload

/// Every ``FileIO`` requirement, for logs and kill points.
enum FileCall: String, Sendable, Hashable {
    case open, close, read, write, size, sync, truncate, rename, remove
    case syncDirectory, createDirectory, contentsOfDirectory, kind, tryLock, removeDirectory
}

/// One moment of a recorded workload: just before or just after one file operation, with
/// the files as a crash at that moment would find them.
struct CrashPoint: Sendable, CustomStringConvertible {
    enum Phase: String, Sendable { case before, after }

    /// The call's number, from 0, among every call the journal made.
    var call: Int
    var phase: Phase
    var operation: FileCall
    /// The path (for calls on a descriptor, the path it was opened with).
    var path: String
    /// The offset of a write.
    var offset: Int64?
    /// Whether a write's bytes were all zeros (space a journal fills ahead of its appends).
    var zeros = false
    /// For `after`: whether the call threw.
    var failed = false
    /// The workload's progress at that moment.
    var progress: Progress.Counts
    /// The file system as a process crash at that moment leaves it. Its writes not yet
    /// synced are still pending, so `image.crashed(seed:mode: .powerLoss)` is a power loss
    /// at that moment. `nil` when the recorder was not taking images.
    var image: InMemoryFileIO?

    var name: String { (path as NSString).lastPathComponent }

    var description: String {
        "\(phase) call \(call) \(operation) \(path)\(offset.map { " @\($0)" } ?? "")\(failed ? " (failed)" : "") [\(progress)]"
    }
}

/// A ``FileIO`` that numbers every call (all requirements, `close` and `kind(of:)`
/// included), runs them one at a time, and records the moment before and after each with
/// an image of the in-memory file system underneath, so that a single run of a workload
/// yields a crash at every point of it.
///
/// Calls are serialized by the recorder's lock, so the image taken before call *k* is
/// exactly the file system after calls 0..<k, and the progress recorded with it was read
/// at that same moment.
final class CrashRecorder: FileIO {
    private struct State {
        var calls = 0
        var points: [CrashPoint] = []
        var paths: [Int32: String] = [:]
    }

    private let base: any FileIO
    private let memory: InMemoryFileIO
    private let progress: Progress
    private let takesImages: Bool
    private let state = Locked(State())

    /// - Parameters:
    ///   - base: What serves the calls (the in-memory file system, or a checker around it).
    ///   - memory: The in-memory file system at the bottom, whose images are taken.
    ///   - takesImages: `false` to only number and log the calls.
    init(wrapping base: any FileIO, memory: InMemoryFileIO, progress: Progress, takesImages: Bool = true) {
        self.base = base
        self.memory = memory
        self.progress = progress
        self.takesImages = takesImages
    }

    /// Every moment recorded so far, two per call, in order.
    var points: [CrashPoint] { state.withLock { $0.points } }

    /// How many calls have been made.
    var callCount: Int { state.withLock { $0.calls } }

    private func perform<T: Sendable, E: Error>(
        _ operation: FileCall, path: String? = nil, fd: FileDescriptor? = nil, offset: Int64? = nil, zeros: Bool = false,
        _ body: () throws(E) -> T
    ) throws(E) -> T {
        try state.withLock { (s) throws(E) -> T in
            let index = s.calls
            s.calls += 1
            let name = path ?? fd.map { s.paths[$0.rawValue] ?? $0.description } ?? ""
            s.points.append(moment(index, .before, operation, name, offset, zeros: zeros, failed: false))
            let result = Result { () throws(E) -> T in try body() }
            var failed = false
            if case .failure = result { failed = true }
            s.points.append(moment(index, .after, operation, name, offset, zeros: zeros, failed: failed))
            if operation == .open, case .success(let value) = result, let fd = value as? FileDescriptor {
                s.paths[fd.rawValue] = name
            }
            return try result.get()
        }
    }

    private func moment(
        _ call: Int, _ phase: CrashPoint.Phase, _ operation: FileCall, _ path: String, _ offset: Int64?, zeros: Bool, failed: Bool
    ) -> CrashPoint {
        CrashPoint(call: call, phase: phase, operation: operation, path: path, offset: offset, zeros: zeros, failed: failed,
                   progress: progress.current, image: takesImages ? memory.crashed(seed: 0, mode: .processCrash) : nil)
    }

    func open(_ path: String, access: FileAccess, creation: FileCreation) throws(FileIOError) -> FileDescriptor {
        try perform(.open, path: path) { () throws(FileIOError) in try base.open(path, access: access, creation: creation) }
    }

    func close(_ fd: FileDescriptor) {
        perform(.close, fd: fd) { base.close(fd) }
    }

    func read(_ fd: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int {
        try perform(.read, fd: fd) { () throws(FileIOError) in try base.read(fd, into: buffer, at: offset) }
    }

    func write(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int {
        try perform(.write, fd: fd, offset: offset, zeros: !bytes.isEmpty && bytes.allSatisfy { $0 == 0 }) { () throws(FileIOError) in
            try base.write(fd, bytes, at: offset)
        }
    }

    func size(of fd: FileDescriptor) throws(FileIOError) -> Int64 {
        try perform(.size, fd: fd) { () throws(FileIOError) in try base.size(of: fd) }
    }

    func sync(_ fd: FileDescriptor) throws(FileIOError) {
        try perform(.sync, fd: fd) { () throws(FileIOError) in try base.sync(fd) }
    }

    func truncate(_ fd: FileDescriptor, to size: Int64) throws(FileIOError) {
        try perform(.truncate, fd: fd, offset: size) { () throws(FileIOError) in try base.truncate(fd, to: size) }
    }

    func rename(_ source: String, to destination: String) throws(FileIOError) {
        try perform(.rename, path: "\(source) -> \(destination)") { () throws(FileIOError) in
            try base.rename(source, to: destination)
        }
    }

    func remove(_ path: String) throws(FileIOError) {
        try perform(.remove, path: path) { () throws(FileIOError) in try base.remove(path) }
    }

    func removeDirectory(_ path: String) throws(FileIOError) {
        try perform(.removeDirectory, path: path) { () throws(FileIOError) in try base.removeDirectory(path) }
    }

    func syncDirectory(_ path: String) throws(FileIOError) {
        try perform(.syncDirectory, path: path) { () throws(FileIOError) in try base.syncDirectory(path) }
    }

    func createDirectory(_ path: String) throws(FileIOError) {
        try perform(.createDirectory, path: path) { () throws(FileIOError) in try base.createDirectory(path) }
    }

    func contentsOfDirectory(_ path: String) throws(FileIOError) -> [String] {
        try perform(.contentsOfDirectory, path: path) { () throws(FileIOError) in try base.contentsOfDirectory(path) }
    }

    func kind(of path: String) -> FileKind? {
        perform(.kind, path: path) { base.kind(of: path) }
    }

    func tryLock(_ fd: FileDescriptor) throws(FileIOError) -> Bool {
        try perform(.tryLock, fd: fd) { () throws(FileIOError) in try base.tryLock(fd) }
    }
}

// MARK: - The crash workload

/// How the crash tests crash: which durability the workload runs with and what kind of
/// crash it must survive.
enum CrashCase: String, Sendable, CaseIterable, CustomTestStringConvertible {
    /// `.full` durability survives power loss.
    case fullPowerLoss
    /// `.full` durability survives a process crash (every returned write kept).
    case fullProcessCrash
    /// `.relaxed` durability promises only to survive a process crash.
    case relaxedProcessCrash

    var durability: Durability { self == .relaxedProcessCrash ? .relaxed : .full }
    var mode: InMemoryFileIO.CrashMode { self == .fullPowerLoss ? .powerLoss : .processCrash }
    var testDescription: String { rawValue }
}

/// A sequential workload — create, appends, compactions with the model at that point —
/// that records a crash image before and after every file operation.
struct CrashWorkload: Sendable {
    let history: History
    /// Compact right after these transactions, from the model at that point.
    let compactAfter: [UInt64]
    let durability: Durability
    let segmentSize: Int

    func configuration(_ io: any FileIO, observer: (@Sendable (String, Int64) -> Void)? = nil) -> Journal.Configuration {
        Journal.Configuration(durability: durability, segmentSize: segmentSize, fileIO: io, acknowledgementObserver: observer)
    }

    /// Runs the workload on `io`, telling `progress` what was issued and acknowledged.
    func run(on io: any FileIO, progress: Progress, observer: (@Sendable (String, Int64) -> Void)?) async throws {
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: configuration(io, observer: observer))
        progress.markCreated()
        for record in history.records {
            progress.issue(record.number)
            try await journal.append(record)
            progress.acknowledge(record.number)
            if compactAfter.contains(record.number) {
                try await journal.compact(from: history.model(record.number))
            }
        }
        await journal.close()
    }

    /// Runs the workload over an in-memory file system inside an ordering checker and
    /// returns every moment of it, with the checker's violations.
    func record() async throws -> (points: [CrashPoint], violations: [String]) {
        let memory = InMemoryFileIO()
        let checker = IOOrderingChecker(wrapping: memory)
        let progress = Progress()
        let recorder = CrashRecorder(wrapping: checker, memory: memory, progress: progress)
        try await run(on: recorder, progress: progress) { checker.noteAcknowledged(path: $0, durableThrough: $1) }
        return (recorder.points, checker.violations)
    }
}

// MARK: - Recovering a crash image

/// What opening a store found, and the checks every recovery must pass.
struct Recovered {
    var state: ReplayedState
    var report: RecoveryReport
    /// The store directory's names after opening.
    var names: [String]
    /// Ordering-rule violations during the open.
    var violations: [String]

    var last: UInt64 { state.lastTransaction }

    /// What is wrong with the store directory after a successful open: leftover temporary
    /// files, more than one checkpoint, segments the checkpoint covers.
    var untidiness: [String] {
        var problems: [String] = []
        let temporary = names.filter(StoreLayout.isTemporary)
        if !temporary.isEmpty { problems.append("temporary files left: \(temporary)") }
        let checkpoints = names.compactMap(StoreLayout.checkpointTransaction)
        if checkpoints.count > 1 { problems.append("\(checkpoints.count) checkpoints left: \(checkpoints.sorted())") }
        if let through = checkpoints.max() {
            let segments = names.compactMap(StoreLayout.segmentTransaction).sorted()
            for (k, first) in segments.enumerated() where k + 1 < segments.count && segments[k + 1] <= through + 1 {
                problems.append("segment starting at \(first) is covered by checkpoint \(through) but was kept")
            }
        }
        return problems
    }
}

/// Opens the store in `image` (through an ordering checker), lists it, and closes it.
func recover(_ image: InMemoryFileIO, durability: Durability = .full, segmentSize: Int = 64 << 20) async throws(StoreError) -> Recovered {
    let checker = IOOrderingChecker(wrapping: image)
    var state = ReplayedState()
    let journal = try Journal.open(
        at: storePath, schema: Fixtures.songbook,
        configuration: .init(durability: durability, segmentSize: segmentSize, fileIO: checker), replayingInto: &state)
    let recovery = journal.recovery
    await journal.close()
    let names = (try? image.contentsOfDirectory(storePath)) ?? []
    return Recovered(state: state, report: recovery, names: names, violations: checker.violations)
}

/// Checks the shared oracle on a store recovered from `image`: it opens, and it holds the
/// model after some prefix `p` with `acked ≤ p ≤ issued`, tidily. Returns `p`, or the
/// problems found.
func checkOracle(
    _ image: InMemoryFileIO, history: History, acked: UInt64, issued: UInt64,
    durability: Durability = .full, segmentSize: Int = 64 << 20
) async -> Result<Recovered, OracleFailure> {
    let recovered: Recovered
    do {
        recovered = try await recover(image, durability: durability, segmentSize: segmentSize)
    } catch {
        return .failure(OracleFailure("open failed: \(error)"))
    }
    var problems: [String] = []
    let p = recovered.last
    if p < acked || p > issued {
        problems.append("recovered transaction \(p), outside acked \(acked) ... issued \(issued)")
    } else if recovered.state != history.model(p) {
        problems.append("the state at transaction \(p) differs from the model")
    }
    problems += recovered.untidiness
    problems += recovered.violations.map { "ordering: \($0)" }
    return problems.isEmpty ? .success(recovered) : .failure(OracleFailure(problems.joined(separator: "; ")))
}

struct OracleFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Mixes a test seed and a point's number into a crash seed.
func crashSeed(_ seed: UInt64, _ index: Int) -> UInt64 {
    var generator = SeededGenerator(seed: seed &* 0x100_0000_01B3 &+ UInt64(index))
    return generator.next()
}

/// Reports a list of problems as one failed expectation (the first few of them).
func expectNoProblems(_ problems: [String], _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    guard !problems.isEmpty else { return }
    let shown = problems.prefix(12).joined(separator: "\n")
    Issue.record("\(problems.count) \(what):\n\(shown)", sourceLocation: sourceLocation)
}

// MARK: - Hooks into file operations

/// A ``FileIO`` that calls a hook before passing each call on: to delay, count or hold
/// calls.
final class HookedFileIO: FileIO {
    private let base: any FileIO
    private let hook: @Sendable (FileCall) -> Void

    init(wrapping base: any FileIO, hook: @escaping @Sendable (FileCall) -> Void) {
        self.base = base
        self.hook = hook
    }

    func open(_ path: String, access: FileAccess, creation: FileCreation) throws(FileIOError) -> FileDescriptor {
        hook(.open)
        return try base.open(path, access: access, creation: creation)
    }

    func close(_ fd: FileDescriptor) {
        hook(.close)
        base.close(fd)
    }

    func read(_ fd: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int {
        hook(.read)
        return try base.read(fd, into: buffer, at: offset)
    }

    func write(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int {
        hook(.write)
        return try base.write(fd, bytes, at: offset)
    }

    func size(of fd: FileDescriptor) throws(FileIOError) -> Int64 {
        hook(.size)
        return try base.size(of: fd)
    }

    func sync(_ fd: FileDescriptor) throws(FileIOError) {
        hook(.sync)
        try base.sync(fd)
    }

    func truncate(_ fd: FileDescriptor, to size: Int64) throws(FileIOError) {
        hook(.truncate)
        try base.truncate(fd, to: size)
    }

    func rename(_ source: String, to destination: String) throws(FileIOError) {
        hook(.rename)
        try base.rename(source, to: destination)
    }

    func remove(_ path: String) throws(FileIOError) {
        hook(.remove)
        try base.remove(path)
    }

    func removeDirectory(_ path: String) throws(FileIOError) {
        hook(.removeDirectory)
        try base.removeDirectory(path)
    }

    func syncDirectory(_ path: String) throws(FileIOError) {
        hook(.syncDirectory)
        try base.syncDirectory(path)
    }

    func createDirectory(_ path: String) throws(FileIOError) {
        hook(.createDirectory)
        try base.createDirectory(path)
    }

    func contentsOfDirectory(_ path: String) throws(FileIOError) -> [String] {
        hook(.contentsOfDirectory)
        return try base.contentsOfDirectory(path)
    }

    func kind(of path: String) -> FileKind? {
        hook(.kind)
        return base.kind(of: path)
    }

    func tryLock(_ fd: FileDescriptor) throws(FileIOError) -> Bool {
        hook(.tryLock)
        return try base.tryLock(fd)
    }
}

/// Counts file syncs, directory syncs and writes, and can hold one file sync (or one write)
/// until released: the writer thread then waits inside that call while the test lines up
/// more work.
final class SyncGate: Sendable {
    private struct State {
        var syncs = 0
        var directorySyncs = 0
        var writes = 0
        var holdAt: Int?
        var holdWriteAt: Int?
        var holding = false
    }

    private let state = Locked(State())
    private let release = DispatchSemaphore(value: 0)

    /// File syncs so far (the number the next one gets, counting from 0).
    var syncs: Int { state.withLock { $0.syncs } }
    /// Directory syncs so far.
    var directorySyncs: Int { state.withLock { $0.directorySyncs } }
    /// Whether the held sync has arrived and is waiting.
    var isHolding: Bool { state.withLock { $0.holding } }

    /// Holds the file sync numbered `index` (from 0) until ``release()``.
    func hold(sync index: Int) { state.withLock { $0.holdAt = index } }

    /// File writes so far (the number the next one gets, counting from 0).
    var writes: Int { state.withLock { $0.writes } }

    /// Holds the file write numbered `index` (from 0) until ``release()``.
    func hold(write index: Int) { state.withLock { $0.holdWriteAt = index } }

    /// Lets the held sync go on.
    func releaseHeld() { release.signal() }

    func observe(_ call: FileCall) {
        let hold = state.withLock { s -> Bool in
            switch call {
            case .sync:
                defer { s.syncs += 1 }
                guard s.syncs == s.holdAt else { return false }
                s.holding = true
                return true
            case .syncDirectory:
                s.directorySyncs += 1
                return false
            case .write:
                defer { s.writes += 1 }
                guard s.writes == s.holdWriteAt else { return false }
                s.holding = true
                return true
            default:
                return false
            }
        }
        if hold { release.wait() }
    }
}

/// Waits (polling) until `condition` holds; `false` after `seconds`.
///
/// The default limit is long because, with the whole suite running, the concurrency pool's
/// two threads are often held by processor-bound tests: a task the condition waits for can
/// wait tens of seconds to start (a 300-append in-memory test has taken 51 s of wall time).
/// A condition that holds returns at once, so the limit costs a passing test nothing.
func eventually(within seconds: Double = 60, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds) * TestTiming.slowdown
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}
