#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A ``FileIO`` that passes every call to another one but fails the calls you choose.
///
/// Every call except ``close(_:)`` and ``kind(of:)`` is numbered from 0 in the order it
/// arrives; ``callCount`` is how many there have been. A ``Fault`` names a call by that
/// number — or, with an ``Fault/operations`` filter, by its number among calls of those
/// operations only — and makes it fail with an `errno` (`EIO`, `ENOSPC`, `EFBIG`, `EINTR`,
/// ...) without reaching the wrapped file system, or, for a write, makes it write only the
/// first half of its bytes. A fault fires ``Fault/Persistence/once`` or, from that call on,
/// ``Fault/Persistence/forever``.
///
/// The usual test runs a workload once to count its calls, then runs it again once for
/// each call number, failing that call, and checks that nothing wrong was acknowledged:
///
/// ```swift
/// let probe = FaultInjectingFileIO(wrapping: InMemoryFileIO())
/// try runWorkload(probe)
/// for index in 0..<probe.callCount {
///     let fs = FaultInjectingFileIO(
///         wrapping: InMemoryFileIO(),
///         faults: [.init(callIndex: index, kind: .error(EIO), persistence: .forever)])
///     try? runWorkload(fs)
///     // check the store is consistent
/// }
///
/// // Fail only the first fsync:
/// let failSync = FaultInjectingFileIO(
///     wrapping: InMemoryFileIO(),
///     faults: [.init(callIndex: 0, kind: .error(EIO), operations: [.sync])])
/// ```
///
/// Injected errors carry the same operation names as ``POSIXFileIO`` reports (`open`,
/// `read`, `write`, `fstat`, `fsync`, `ftruncate`, `rename`, `unlink`, `fsync directory`,
/// `mkdir`, `opendir`, `flock`) and the call's path, or its descriptor for calls on an open
/// file. An `EINTR` fault with ``Fault/Persistence/forever`` makes the retrying helpers
/// such as ``FileIO/writeAll(_:_:at:path:)`` retry forever.
public final class FaultInjectingFileIO: FileIO {
    /// The calls a ``Fault`` can be limited to.
    public enum Operation: String, Sendable, Hashable, CaseIterable {
        case open, read, write, size, sync, truncate, rename, remove
        case syncDirectory, createDirectory, contentsOfDirectory, tryLock, removeDirectory

        /// The operation name in errors, the same as ``POSIXFileIO`` uses.
        var errorName: String {
            switch self {
            case .open: "open"
            case .read: "read"
            case .write: "write"
            case .size: "fstat"
            case .sync: "fsync"
            case .truncate: "ftruncate"
            case .rename: "rename"
            case .remove: "unlink"
            case .syncDirectory: "fsync directory"
            case .createDirectory: "mkdir"
            case .contentsOfDirectory: "opendir"
            case .tryLock: "flock"
            case .removeDirectory: "rmdir"
            }
        }
    }

    /// One failure to inject: which call, how it fails, and for how long.
    ///
    /// ```swift
    /// // The sixth call fails with ENOSPC, and so does every call after it.
    /// let full = FaultInjectingFileIO.Fault(callIndex: 5, kind: .error(ENOSPC), persistence: .forever)
    /// // The second write writes only half its bytes.
    /// let short = FaultInjectingFileIO.Fault(callIndex: 1, kind: .shortWrite, operations: [.write])
    /// ```
    public struct Fault: Sendable, Hashable {
        /// How the call fails.
        public enum Kind: Sendable, Hashable {
            /// The call throws a ``FileIOError`` with this `errno` and does nothing.
            case error(Int32)
            /// A write writes only the first half of its bytes (at least one) and returns that
            /// count. Any other call is not affected.
            case shortWrite
        }

        /// Whether the fault fires once or keeps firing.
        public enum Persistence: Sendable, Hashable {
            /// Only the call numbered ``Fault/callIndex`` fails.
            case once
            /// That call and every later one (among ``Fault/operations``, when given) fails.
            case forever
        }

        /// The 0-based number of the call that fails: among all counted calls, or, when
        /// ``operations`` is given, among calls of those operations only.
        public var callIndex: Int
        /// How the call fails.
        public var kind: Kind
        /// Whether later calls fail too.
        public var persistence: Persistence
        /// The operations this fault counts and fails, or `nil` for all of them.
        public var operations: Set<Operation>?

        /// Creates a fault.
        public init(callIndex: Int, kind: Kind, persistence: Persistence = .once, operations: Set<Operation>? = nil) {
            self.callIndex = callIndex
            self.kind = kind
            self.persistence = persistence
            self.operations = operations
        }

        /// Whether the fault fires on a call whose number, counted its way, is `index`.
        func fires(at index: Int) -> Bool {
            switch persistence {
            case .once: index == callIndex
            case .forever: index >= callIndex
            }
        }
    }

    private struct State {
        var faults: [Fault]
        /// Counted calls so far, of every operation.
        var callCount = 0
        /// Counted calls so far, per operation; a filtered fault's count is their sum.
        var counts: [Operation: Int] = [:]
        var injectedCount = 0
    }

    /// What a call should do.
    private enum Decision {
        case proceed
        case fail(Int32)
        case shortWrite
    }

    private let base: any FileIO
    private let state: Locked<State>

    /// Wraps a file system.
    /// - Parameters:
    ///   - base: The file system that serves every call that is not failed.
    ///   - faults: The faults to inject from the first call on.
    public init(wrapping base: any FileIO, faults: [Fault] = []) {
        self.base = base
        self.state = Locked(State(faults: faults))
    }

    /// Adds a fault. Call numbers keep counting from the first call, not from now.
    public func inject(_ fault: Fault) {
        state.withLock { $0.faults.append(fault) }
    }

    /// Removes every fault; later calls all succeed unless the wrapped file system fails them.
    public func clearFaults() {
        state.withLock { $0.faults.removeAll() }
    }

    /// How many counted calls have been made (failed ones included).
    public var callCount: Int {
        state.withLock { $0.callCount }
    }

    /// How many calls of one operation have been made (failed ones included): the range of
    /// ``Fault/callIndex`` for a fault counting only that operation.
    public func callCount(of operation: Operation) -> Int {
        state.withLock { $0.counts[operation] ?? 0 }
    }

    /// How many calls were failed or shortened.
    public var injectedCount: Int {
        state.withLock { $0.injectedCount }
    }

    /// Numbers the call and decides its fate.
    private func decide(_ operation: Operation, byteCount: Int = 0) -> Decision {
        state.withLock { s in
            var decision = Decision.proceed
            for fault in s.faults {
                let index: Int
                if let operations = fault.operations {
                    guard operations.contains(operation) else { continue }
                    index = operations.reduce(0) { $0 + s.counts[$1, default: 0] }
                } else {
                    index = s.callCount
                }
                guard fault.fires(at: index) else { continue }
                switch fault.kind {
                case .error(let code):
                    decision = .fail(code)
                case .shortWrite:
                    if operation == .write && byteCount > 1 { decision = .shortWrite }
                }
                if case .fail = decision { break }
            }
            s.callCount += 1
            s.counts[operation, default: 0] += 1
            if case .proceed = decision {} else { s.injectedCount += 1 }
            return decision
        }
    }

    /// Throws if the call is to fail.
    private func check(_ operation: Operation, _ path: String) throws(FileIOError) {
        if case .fail(let code) = decide(operation) {
            throw FileIOError(operation: operation.errorName, path: path, errno: code)
        }
    }

    // MARK: - FileIO

    public func open(_ path: String, access: FileAccess, creation: FileCreation) throws(FileIOError) -> FileDescriptor {
        try check(.open, path)
        return try base.open(path, access: access, creation: creation)
    }

    public func close(_ fd: FileDescriptor) {
        base.close(fd)
    }

    public func read(_ fd: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int {
        try check(.read, fd.description)
        return try base.read(fd, into: buffer, at: offset)
    }

    public func write(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int {
        switch decide(.write, byteCount: bytes.count) {
        case .proceed:
            return try base.write(fd, bytes, at: offset)
        case .fail(let code):
            throw FileIOError(operation: Operation.write.errorName, path: fd.description, errno: code)
        case .shortWrite:
            return try base.write(fd, UnsafeRawBufferPointer(rebasing: bytes.prefix(bytes.count / 2)), at: offset)
        }
    }

    public func size(of fd: FileDescriptor) throws(FileIOError) -> Int64 {
        try check(.size, fd.description)
        return try base.size(of: fd)
    }

    public func sync(_ fd: FileDescriptor) throws(FileIOError) {
        try check(.sync, fd.description)
        try base.sync(fd)
    }

    public func truncate(_ fd: FileDescriptor, to size: Int64) throws(FileIOError) {
        try check(.truncate, fd.description)
        try base.truncate(fd, to: size)
    }

    public func rename(_ source: String, to destination: String) throws(FileIOError) {
        try check(.rename, "\(source) -> \(destination)")
        try base.rename(source, to: destination)
    }

    public func remove(_ path: String) throws(FileIOError) {
        try check(.remove, path)
        try base.remove(path)
    }

    public func removeDirectory(_ path: String) throws(FileIOError) {
        try check(.removeDirectory, path)
        try base.removeDirectory(path)
    }

    public func syncDirectory(_ path: String) throws(FileIOError) {
        try check(.syncDirectory, path)
        try base.syncDirectory(path)
    }

    public func createDirectory(_ path: String) throws(FileIOError) {
        try check(.createDirectory, path)
        try base.createDirectory(path)
    }

    public func contentsOfDirectory(_ path: String) throws(FileIOError) -> [String] {
        try check(.contentsOfDirectory, path)
        return try base.contentsOfDirectory(path)
    }

    public func kind(of path: String) -> FileKind? {
        base.kind(of: path)
    }

    public func tryLock(_ fd: FileDescriptor) throws(FileIOError) -> Bool {
        try check(.tryLock, fd.description)
        return try base.tryLock(fd)
    }
}
