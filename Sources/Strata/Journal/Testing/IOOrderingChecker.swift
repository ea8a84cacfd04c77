
/// A ``FileIO`` that passes every call to another one and records each break of the rules
/// that keep a journal consistent across a crash.
///
/// The rules, each reported as a line in ``violations`` naming the path and the operation:
///
/// - **Append only.** A write must start exactly where the file ends, or overwrite only
///   zeros (space a journal filled ahead of its appends). The checker tracks sizes itself:
///   the wrapped file system's size when the file is opened, grown by writes, set by
///   truncates; it reads the bytes a write would overwrite. Cutting a file short with
///   `truncate` is allowed (recovery cuts torn tails).
/// - **No rename before fsync.** A file must not be renamed while it has writes or
///   truncates not yet followed by a ``sync(_:)`` of it.
/// - **Acknowledge only what is durable.** When the journal tells the checker, through
///   ``noteAcknowledged(path:durableThrough:)``, that data is durable, the file must have
///   been synced since those bytes were written, and its directory entry must be durable:
///   if it was created or renamed into place, its directory was synced since with
///   ``syncDirectory(_:)`` — and so was the parent of any directory created through the
///   checker on the way to it.
///
/// The checker remembers the path each descriptor was opened with and follows renames.
/// Files it never saw opened or created are assumed to have durable entries. Calls run one
/// at a time, in the order they arrive.
///
/// On every open it also asks the wrapped file system whether the path exists and, once
/// open, the file's size, so it makes more calls than it serves. To combine it with
/// ``FaultInjectingFileIO`` without shifting the fault's call numbers, put the checker
/// inside: `FaultInjectingFileIO(wrapping: IOOrderingChecker(wrapping: fs))`.
///
/// ```swift
/// let checker = IOOrderingChecker(wrapping: InMemoryFileIO())
/// try checker.createDirectory("/store")
/// try checker.syncDirectory("/")
/// let fd = try checker.open("/store/journal-1", access: .readWrite, creation: .createExclusive)
/// try checker.writeAll(fd, record, at: 0, path: "/store/journal-1")
/// try checker.sync(fd)
/// try checker.syncDirectory("/store")
/// checker.noteAcknowledged(path: "/store/journal-1", durableThrough: Int64(record.count))
/// assert(checker.isClean, checker.violations.joined(separator: "\n"))
/// ```
public final class IOOrderingChecker: FileIO {
    /// What the checker knows about one file.
    private struct Tracked {
        /// The size the file has after the calls seen so far, if known.
        var size: Int64?
        /// Every byte before this offset was written before the file's last sync.
        var syncedThrough: Int64 = 0
        /// Whether the file was written or truncated since its last sync.
        var hasUnsyncedChanges = false
        /// Whether the entry naming the file was created or renamed into place and its
        /// directory not synced since.
        var entryPending = false
    }

    private struct State {
        var violations: [String] = []
        /// Tracked files by an internal number, so that open descriptors follow renames
        /// and removes.
        var files: [Int: Tracked] = [:]
        var nextFile = 0
        /// The file each path currently names.
        var paths: [String: Int] = [:]
        /// The file and path behind each open descriptor.
        var descriptors: [FileDescriptor: Int] = [:]
        /// Directories created through the checker whose parent was not synced since.
        var pendingDirectories: Set<String> = []

        /// The current path of a tracked file, for messages.
        func path(of file: Int) -> String {
            paths.first { $0.value == file }?.key ?? "(removed file)"
        }

        mutating func note(_ violation: String) {
            violations.append(violation)
        }
    }

    private let base: any FileIO
    private let state = Locked(State())

    /// Wraps a file system.
    public init(wrapping base: any FileIO) {
        self.base = base
    }

    /// Every rule broken so far, in order, each naming the path and the operation.
    public var violations: [String] {
        state.withLock { $0.violations }
    }

    /// Whether no rule has been broken.
    public var isClean: Bool { violations.isEmpty }

    /// Records that the journal acknowledged the first `offset` bytes of the file at `path`
    /// as durable, and checks that they are: the file was synced after they were written,
    /// and its directory entry (and any directory created on the way to it) is durable.
    public func noteAcknowledged(path: String, durableThrough offset: Int64) {
        let path = Self.normalized(path)
        state.withLock { s in
            guard let file = s.paths[path], let tracked = s.files[file] else {
                s.note("acknowledge \(path): the file was never opened through the checker")
                return
            }
            if offset > tracked.syncedThrough {
                s.note(
                    "acknowledge \(path): durable through \(offset) claimed, "
                        + "but only \(tracked.syncedThrough) bytes were synced")
            }
            if tracked.entryPending {
                s.note(
                    "acknowledge \(path): its directory \(Self.parent(of: path)) "
                        + "was not synced since it was created or renamed")
            }
            var directory = Self.parent(of: path)
            while directory != "/" && directory != "." {
                if s.pendingDirectories.contains(directory) {
                    s.note(
                        "acknowledge \(path): directory \(directory) was created "
                            + "but \(Self.parent(of: directory)) was not synced since")
                }
                directory = Self.parent(of: directory)
            }
        }
    }

    // MARK: - FileIO

    public func open(_ path: String, access: FileAccess, creation: FileCreation) throws(FileIOError) -> FileDescriptor {
        let path = Self.normalized(path)
        return try state.withLock { (s) throws(FileIOError) -> FileDescriptor in
            let existed = base.kind(of: path) != nil
            let fd = try base.open(path, access: access, creation: creation)
            let size = try? base.size(of: fd)
            let file: Int
            if existed, let known = s.paths[path] {
                file = known
            } else {
                file = s.nextFile
                s.nextFile += 1
                s.paths[path] = file
                s.files[file] = Tracked(size: nil, syncedThrough: 0, hasUnsyncedChanges: false, entryPending: !existed)
            }
            s.files[file]!.size = size
            if existed && s.files[file]!.syncedThrough == 0 && !s.files[file]!.hasUnsyncedChanges {
                // A file the checker has not seen change: take what is there as durable.
                s.files[file]!.syncedThrough = size ?? 0
            }
            s.descriptors[fd] = file
            return fd
        }
    }

    public func close(_ fd: FileDescriptor) {
        state.withLock { s in
            base.close(fd)
            s.descriptors[fd] = nil
        }
    }

    public func read(_ fd: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int {
        try base.read(fd, into: buffer, at: offset)
    }

    public func write(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int {
        try state.withLock { (s) throws(FileIOError) -> Int in
            guard let file = s.descriptors[fd] else { return try base.write(fd, bytes, at: offset) }
            if let size = s.files[file]!.size, offset != size {
                if offset > size || !overwritesOnlyZeros(fd, at: offset, count: min(Int64(bytes.count), size - offset)) {
                    s.note(
                        "write \(s.path(of: file)): \(bytes.count) bytes at offset \(offset), "
                            + "but the file ends at \(size) (not an append, nor a write over zeros)")
                }
            }
            let n = try base.write(fd, bytes, at: offset)
            guard n > 0 else { return n }
            s.files[file]!.hasUnsyncedChanges = true
            s.files[file]!.syncedThrough = min(s.files[file]!.syncedThrough, offset)
            if let size = s.files[file]!.size { s.files[file]!.size = max(size, offset + Int64(n)) }
            return n
        }
    }

    /// Whether the `count` bytes at `offset` are all zero (read from the wrapped file system).
    private func overwritesOnlyZeros(_ fd: FileDescriptor, at offset: Int64, count: Int64) -> Bool {
        guard count > 0 else { return true }
        var bytes = [UInt8](repeating: 0xFF, count: Int(count))
        let read = bytes.withUnsafeMutableBytes { buffer in
            try? base.readFully(fd, into: buffer, at: offset)
        }
        guard read == Int(count) else { return false }
        return bytes.allSatisfy { $0 == 0 }
    }

    public func size(of fd: FileDescriptor) throws(FileIOError) -> Int64 {
        try state.withLock { (s) throws(FileIOError) -> Int64 in
            let size = try base.size(of: fd)
            if let file = s.descriptors[fd], s.files[file]!.size == nil { s.files[file]!.size = size }
            return size
        }
    }

    public func sync(_ fd: FileDescriptor) throws(FileIOError) {
        try state.withLock { (s) throws(FileIOError) in
            try base.sync(fd)
            guard let file = s.descriptors[fd] else { return }
            s.files[file]!.hasUnsyncedChanges = false
            if let size = s.files[file]!.size { s.files[file]!.syncedThrough = size }
        }
    }

    public func truncate(_ fd: FileDescriptor, to size: Int64) throws(FileIOError) {
        try state.withLock { (s) throws(FileIOError) in
            try base.truncate(fd, to: size)
            guard let file = s.descriptors[fd] else { return }
            if s.files[file]!.size != size { s.files[file]!.hasUnsyncedChanges = true }
            s.files[file]!.size = size
            s.files[file]!.syncedThrough = min(s.files[file]!.syncedThrough, size)
        }
    }

    public func rename(_ source: String, to destination: String) throws(FileIOError) {
        let source = Self.normalized(source)
        let destination = Self.normalized(destination)
        try state.withLock { (s) throws(FileIOError) in
            if let file = s.paths[source], s.files[file]!.hasUnsyncedChanges {
                s.note("rename \(source) -> \(destination): \(source) has writes not yet synced")
            }
            try base.rename(source, to: destination)
            guard source != destination else { return }
            if let file = s.paths.removeValue(forKey: source) {
                s.paths[destination] = file
                s.files[file]!.entryPending = true
            } else if base.kind(of: destination) == .file {
                // A file the checker never saw change: take its contents as durable.
                s.paths[destination] = s.nextFile
                s.files[s.nextFile] = Tracked(size: nil, syncedThrough: .max, hasUnsyncedChanges: false, entryPending: true)
                s.nextFile += 1
            } else {
                s.paths[destination] = nil
            }
            // A renamed directory takes the files below it along.
            let prefix = source + "/"
            for (path, file) in s.paths where path.hasPrefix(prefix) {
                s.paths[path] = nil
                s.paths[destination + "/" + path.dropFirst(prefix.count)] = file
            }
            if s.pendingDirectories.remove(source) != nil { s.pendingDirectories.insert(destination) }
        }
    }

    public func remove(_ path: String) throws(FileIOError) {
        let path = Self.normalized(path)
        try state.withLock { (s) throws(FileIOError) in
            try base.remove(path)
            s.paths[path] = nil
        }
    }

    public func removeDirectory(_ path: String) throws(FileIOError) {
        let path = Self.normalized(path)
        try state.withLock { (s) throws(FileIOError) in
            try base.removeDirectory(path)
            s.pendingDirectories.remove(path)
        }
    }

    public func syncDirectory(_ path: String) throws(FileIOError) {
        let path = Self.normalized(path)
        try state.withLock { (s) throws(FileIOError) in
            try base.syncDirectory(path)
            for (child, file) in s.paths where Self.parent(of: child) == path {
                s.files[file]!.entryPending = false
            }
            s.pendingDirectories = s.pendingDirectories.filter { Self.parent(of: $0) != path }
        }
    }

    public func createDirectory(_ path: String) throws(FileIOError) {
        let path = Self.normalized(path)
        try state.withLock { (s) throws(FileIOError) in
            try base.createDirectory(path)
            s.pendingDirectories.insert(path)
        }
    }

    public func contentsOfDirectory(_ path: String) throws(FileIOError) -> [String] {
        try base.contentsOfDirectory(path)
    }

    public func kind(of path: String) -> FileKind? {
        base.kind(of: path)
    }

    public func tryLock(_ fd: FileDescriptor) throws(FileIOError) -> Bool {
        try base.tryLock(fd)
    }

    // MARK: - Paths

    /// The path without repeated or trailing slashes.
    static func normalized(_ path: String) -> String {
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        let joined = components.joined(separator: "/")
        return path.hasPrefix("/") ? "/" + joined : joined
    }

    /// The directory holding `path` (`/` for a top-level name).
    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
