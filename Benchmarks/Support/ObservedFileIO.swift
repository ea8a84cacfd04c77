import Strata
import Synchronization

/// The real file system, recording when each read, write and sync the journal issues
/// starts and ends (to see how appends are batched, and where the time goes).
final class ObservedFileIO: FileIO {
    struct Event: Sendable {
        enum Kind: Sendable { case read, write, sync }
        var kind: Kind
        var fd: Int32
        var bytes: Int
        var start: UInt64
        var end: UInt64
    }

    private let base = POSIXFileIO()
    private let recorded = Mutex<[Event]>([])

    init() {}

    /// Every read, write and sync so far, in order.
    var events: [Event] { recorded.withLock { $0 } }

    /// Seconds spent in reads so far.
    var readSeconds: Double {
        recorded.withLock { events in Double(events.filter { $0.kind == .read }.reduce(0) { $0 + ($1.end - $1.start) }) / 1e9 }
    }

    private func record(_ kind: Event.Kind, _ fd: FileDescriptor, bytes: Int, since start: UInt64) {
        let event = Event(kind: kind, fd: fd.rawValue, bytes: bytes, start: start, end: monotonicNanoseconds())
        recorded.withLock { $0.append(event) }
    }

    func write(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int {
        let start = monotonicNanoseconds()
        let n = try base.write(fd, bytes, at: offset)
        record(.write, fd, bytes: n, since: start)
        return n
    }

    func sync(_ fd: FileDescriptor) throws(FileIOError) {
        let start = monotonicNanoseconds()
        try base.sync(fd)
        record(.sync, fd, bytes: 0, since: start)
    }

    func open(_ path: String, access: FileAccess, creation: FileCreation) throws(FileIOError) -> FileDescriptor {
        try base.open(path, access: access, creation: creation)
    }
    func close(_ fd: FileDescriptor) { base.close(fd) }
    func read(_ fd: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int {
        let start = monotonicNanoseconds()
        let n = try base.read(fd, into: buffer, at: offset)
        record(.read, fd, bytes: n, since: start)
        return n
    }
    func size(of fd: FileDescriptor) throws(FileIOError) -> Int64 { try base.size(of: fd) }
    func truncate(_ fd: FileDescriptor, to size: Int64) throws(FileIOError) { try base.truncate(fd, to: size) }
    func rename(_ source: String, to destination: String) throws(FileIOError) { try base.rename(source, to: destination) }
    func remove(_ path: String) throws(FileIOError) { try base.remove(path) }
    func removeDirectory(_ path: String) throws(FileIOError) { try base.removeDirectory(path) }
    func syncDirectory(_ path: String) throws(FileIOError) { try base.syncDirectory(path) }
    func createDirectory(_ path: String) throws(FileIOError) { try base.createDirectory(path) }
    func contentsOfDirectory(_ path: String) throws(FileIOError) -> [String] { try base.contentsOfDirectory(path) }
    func kind(of path: String) -> FileKind? { base.kind(of: path) }
    func tryLock(_ fd: FileDescriptor) throws(FileIOError) -> Bool { try base.tryLock(fd) }
}
