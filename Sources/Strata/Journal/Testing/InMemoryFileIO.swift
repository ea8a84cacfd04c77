#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A POSIX-like file system held in memory that can simulate a process crash or a power loss.
///
/// `InMemoryFileIO` behaves like ``POSIXFileIO`` — the same errors (`ENOENT`, `EEXIST`,
/// `EISDIR`, `ENOTDIR`, `EBADF`, ...), files created with mode 0600 and directories with
/// 0700, descriptors that keep a removed or renamed file readable, `flock`-style locks — but
/// it is fast, deterministic and remembers what is not yet durable:
///
/// - Each file keeps its *current* bytes (what reads see), its *durable* image as of its
///   last ``sync(_:)``, and the ordered writes and truncates made since.
/// - Each directory keeps its entries as of its last ``syncDirectory(_:)`` and the ordered
///   creates, renames and removes made since. A file that was synced but whose directory
///   was never synced is not durably present.
///
/// ``crashed(seed:mode:)`` returns a new file system as it would be found after a crash of
/// this one right now. After a ``CrashMode/powerLoss`` each directory keeps its durable
/// entries plus a random prefix of its pending changes, and each pending write to a
/// surviving file is independently kept, dropped, torn or zero-filled. The same seed always
/// gives the same result.
///
/// Paths are absolute (`"/store/journal-1"`); a relative path is taken relative to `/`. A
/// new file system holds only the root directory `/`. There are no symbolic links, so
/// `.` and `..` are resolved by name.
///
/// ```swift
/// let fs = InMemoryFileIO()
/// try fs.createDirectory("/store")
/// let fd = try fs.open("/store/journal-1", access: .readWrite, creation: .createExclusive)
/// try fs.writeAll(fd, Array("hello".utf8), at: 0, path: "/store/journal-1")
/// try fs.sync(fd)
/// try fs.syncDirectory("/store")
/// try fs.writeAll(fd, Array(" world".utf8), at: 5, path: "/store/journal-1")
///
/// let after = fs.crashed(seed: 7, mode: .powerLoss)
/// // "hello" survives; " world" may be kept, lost, torn or zeroed.
/// let bytes = after.contents(of: "/store/journal-1")
/// ```
public final class InMemoryFileIO: FileIO {
    /// What kind of crash ``InMemoryFileIO/crashed(seed:mode:)`` simulates.
    public enum CrashMode: Sendable, Hashable {
        /// The process dies but the operating system survives: every write, create, rename
        /// and remove that returned is kept. Only descriptors and locks are lost. What was
        /// not yet durable stays pending, so a later power loss can still lose it.
        case processCrash
        /// The machine loses power: only what was synced is certain to survive; each
        /// pending change is kept, lost or damaged at random.
        case powerLoss
    }

    private let state: Locked<State>

    /// Creates a file system that holds only the root directory `/`.
    public init() {
        state = Locked(State())
    }

    private init(state: State) {
        self.state = Locked(state)
    }

    // MARK: - FileIO

    public func open(_ path: String, access: FileAccess, creation: FileCreation) throws(FileIOError) -> FileDescriptor {
        try state.withLock { (s) throws(FileIOError) -> FileDescriptor in
            s.operationCount += 1
            guard let (parent, name) = try s.resolve(path, operation: "open") else {
                throw FileIOError(operation: "open", path: path, errno: creation == .createExclusive ? EEXIST : EISDIR)
            }
            let node: Int
            if let existing = s.directories[parent]!.entries[name] {
                if creation == .createExclusive { throw FileIOError(operation: "open", path: path, errno: EEXIST) }
                if s.directories[existing] != nil { throw FileIOError(operation: "open", path: path, errno: EISDIR) }
                node = existing
            } else {
                if creation == .mustExist { throw FileIOError(operation: "open", path: path, errno: ENOENT) }
                node = s.makeNode()
                s.files[node] = File()
                s.directories[parent]!.change(.link(name: name, node: node))
            }
            let fd = s.nextDescriptor
            s.nextDescriptor += 1
            s.descriptors[fd] = Descriptor(node: node, access: access)
            return FileDescriptor(rawValue: fd)
        }
    }

    public func close(_ fd: FileDescriptor) {
        state.withLock { s in
            s.operationCount += 1
            guard let descriptor = s.descriptors.removeValue(forKey: fd.rawValue) else { return }
            if s.lockHolders[descriptor.node] == fd.rawValue { s.lockHolders[descriptor.node] = nil }
        }
    }

    public func read(_ fd: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int {
        try state.withLock { (s) throws(FileIOError) -> Int in
            s.operationCount += 1
            let node = try s.descriptor(fd, operation: "read").node
            guard offset >= 0 else { throw FileIOError(operation: "read", path: fd.description, errno: EINVAL) }
            let current = s.files[node]!.current
            guard offset < Int64(current.count), buffer.count > 0 else { return 0 }
            let start = Int(offset)
            let n = min(buffer.count, current.count - start)
            current.withUnsafeBytes { source in
                buffer.baseAddress!.copyMemory(from: source.baseAddress! + start, byteCount: n)
            }
            return n
        }
    }

    public func write(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int {
        try state.withLock { (s) throws(FileIOError) -> Int in
            s.operationCount += 1
            let descriptor = try s.descriptor(fd, operation: "write")
            guard descriptor.access == .readWrite else {
                throw FileIOError(operation: "write", path: fd.description, errno: EBADF)
            }
            guard offset >= 0 else { throw FileIOError(operation: "write", path: fd.description, errno: EINVAL) }
            guard !bytes.isEmpty else { return 0 }
            guard offset <= Self.maximumFileSize - Int64(bytes.count) else {
                throw FileIOError(operation: "write", path: fd.description, errno: EFBIG)
            }
            s.files[descriptor.node]!.change(.write(offset: Int(offset), bytes: Array(bytes)))
            return bytes.count
        }
    }

    public func size(of fd: FileDescriptor) throws(FileIOError) -> Int64 {
        try state.withLock { (s) throws(FileIOError) -> Int64 in
            s.operationCount += 1
            let node = try s.descriptor(fd, operation: "fstat").node
            return Int64(s.files[node]!.current.count)
        }
    }

    public func sync(_ fd: FileDescriptor) throws(FileIOError) {
        try state.withLock { (s) throws(FileIOError) in
            s.operationCount += 1
            let node = try s.descriptor(fd, operation: "fsync").node
            s.files[node]!.makeDurable()
        }
    }

    public func truncate(_ fd: FileDescriptor, to size: Int64) throws(FileIOError) {
        try state.withLock { (s) throws(FileIOError) in
            s.operationCount += 1
            let descriptor = try s.descriptor(fd, operation: "ftruncate")
            // Like Linux: a descriptor not open for writing, or a negative size, is EINVAL.
            guard descriptor.access == .readWrite, size >= 0 else {
                throw FileIOError(operation: "ftruncate", path: fd.description, errno: EINVAL)
            }
            guard size <= Self.maximumFileSize else {
                throw FileIOError(operation: "ftruncate", path: fd.description, errno: EFBIG)
            }
            s.files[descriptor.node]!.change(.truncate(size: Int(size)))
        }
    }

    public func rename(_ source: String, to destination: String) throws(FileIOError) {
        try state.withLock { (s) throws(FileIOError) in
            s.operationCount += 1
            let description = "\(source) -> \(destination)"
            func failure(_ code: Int32) -> FileIOError { FileIOError(operation: "rename", path: description, errno: code) }
            let from: (parent: Int, name: String)
            let to: (parent: Int, name: String)
            do throws(FileIOError) {
                guard let resolvedSource = try s.resolve(source, operation: "rename") else { throw failure(EBUSY) }
                guard let resolvedDestination = try s.resolve(destination, operation: "rename") else { throw failure(EBUSY) }
                from = resolvedSource
                to = resolvedDestination
            } catch {
                throw failure(error.errno)
            }
            guard let node = s.directories[from.parent]!.entries[from.name] else { throw failure(ENOENT) }
            let replaced = s.directories[to.parent]!.entries[to.name]
            if replaced == node { return }  // Both names are the same file: POSIX does nothing.
            let movingDirectory = s.directories[node] != nil
            if let replaced {
                let replacingDirectory = s.directories[replaced] != nil
                if movingDirectory && !replacingDirectory { throw failure(ENOTDIR) }
                if !movingDirectory && replacingDirectory { throw failure(EISDIR) }
                if replacingDirectory && !s.directories[replaced]!.entries.isEmpty { throw failure(ENOTEMPTY) }
            }
            if movingDirectory && s.isDirectory(to.parent, inside: node) { throw failure(EINVAL) }
            if from.parent == to.parent {
                s.directories[from.parent]!.change(.rename(from: from.name, to: to.name, node: node))
            } else {
                s.directories[from.parent]!.change(.unlink(name: from.name))
                s.directories[to.parent]!.change(.link(name: to.name, node: node))
            }
        }
    }

    public func remove(_ path: String) throws(FileIOError) {
        // Linux reports EISDIR for unlink of a directory.
        try unlinkEntry(path, operation: "unlink", atRoot: EISDIR) { s, node in s.files[node] == nil ? EISDIR : nil }
    }

    public func removeDirectory(_ path: String) throws(FileIOError) {
        try unlinkEntry(path, operation: "rmdir", atRoot: EBUSY) { s, node in
            guard let directory = s.directories[node] else { return ENOTDIR }
            return directory.entries.isEmpty ? nil : ENOTEMPTY
        }
    }

    /// Removes the entry at `path` unless `refusal` gives an errno for its node.
    private func unlinkEntry(
        _ path: String, operation: String, atRoot: Int32, refusal: (State, Int) -> Int32?
    ) throws(FileIOError) {
        try state.withLock { (s) throws(FileIOError) in
            s.operationCount += 1
            guard let (parent, name) = try s.resolve(path, operation: operation) else {
                throw FileIOError(operation: operation, path: path, errno: atRoot)
            }
            guard let node = s.directories[parent]!.entries[name] else {
                throw FileIOError(operation: operation, path: path, errno: ENOENT)
            }
            if let code = refusal(s, node) { throw FileIOError(operation: operation, path: path, errno: code) }
            s.directories[parent]!.change(.unlink(name: name))
        }
    }

    public func syncDirectory(_ path: String) throws(FileIOError) {
        try state.withLock { (s) throws(FileIOError) in
            s.operationCount += 1
            let node = try s.existingNode(path, operation: "open directory")
            guard s.directories[node] != nil else {
                throw FileIOError(operation: "open directory", path: path, errno: ENOTDIR)
            }
            s.directories[node]!.makeDurable()
        }
    }

    public func createDirectory(_ path: String) throws(FileIOError) {
        try state.withLock { (s) throws(FileIOError) in
            s.operationCount += 1
            guard let (parent, name) = try s.resolve(path, operation: "mkdir") else {
                throw FileIOError(operation: "mkdir", path: path, errno: EEXIST)
            }
            guard s.directories[parent]!.entries[name] == nil else {
                throw FileIOError(operation: "mkdir", path: path, errno: EEXIST)
            }
            let node = s.makeNode()
            s.directories[node] = Directory()
            s.directories[parent]!.change(.link(name: name, node: node))
        }
    }

    public func contentsOfDirectory(_ path: String) throws(FileIOError) -> [String] {
        try state.withLock { (s) throws(FileIOError) -> [String] in
            s.operationCount += 1
            let node = try s.existingNode(path, operation: "opendir")
            guard let directory = s.directories[node] else {
                throw FileIOError(operation: "opendir", path: path, errno: ENOTDIR)
            }
            return directory.entries.keys.sorted()
        }
    }

    public func kind(of path: String) -> FileKind? {
        state.withLock { s in
            s.operationCount += 1
            guard let node = try? s.existingNode(path, operation: "lstat") else { return nil }
            return s.directories[node] != nil ? .directory : .file
        }
    }

    public func tryLock(_ fd: FileDescriptor) throws(FileIOError) -> Bool {
        try state.withLock { (s) throws(FileIOError) -> Bool in
            s.operationCount += 1
            let node = try s.descriptor(fd, operation: "flock").node
            if let holder = s.lockHolders[node], holder != fd.rawValue { return false }
            s.lockHolders[node] = fd.rawValue
            return true
        }
    }

    // MARK: - Crashes

    /// A new file system as this one would be found after a crash right now.
    ///
    /// The result has no open descriptors and no locks; this file system is not changed.
    /// With ``CrashMode/processCrash`` it holds exactly the current files and directories.
    /// With ``CrashMode/powerLoss`` every directory holds its entries as of its last
    /// ``syncDirectory(_:)`` plus a random prefix of the creates, renames and removes made
    /// in it since, and every file still reachable holds its image as of its last
    /// ``sync(_:)`` with each later write, in order, kept, dropped, torn (only a prefix of its
    /// bytes lands) or zero-filled (its range becomes zeros), and each later truncate kept or
    /// dropped. Everything in the result is durable.
    ///
    /// ```swift
    /// let survivors = (0..<20).map { fs.crashed(seed: $0, mode: .powerLoss) }
    /// ```
    ///
    /// - Parameters:
    ///   - seed: Chooses the damage; the same seed on the same state gives the same result.
    ///   - mode: Whether the process or the whole machine crashed.
    public func crashed(seed: UInt64, mode: CrashMode) -> InMemoryFileIO {
        let snapshot = state.withLock { s in s }
        switch mode {
        case .processCrash:
            return InMemoryFileIO(state: snapshot.afterProcessCrash())
        case .powerLoss:
            var random = SplitMix64(seed: seed)
            return InMemoryFileIO(state: snapshot.afterPowerLoss(using: &random))
        }
    }

    // MARK: - Inspection

    /// The bytes a read of the file at `path` would see now, or `nil` if no file is there.
    public func contents(of path: String) -> [UInt8]? {
        state.withLock { s in
            guard let node = try? s.existingNode(path, operation: "lstat") else { return nil }
            return s.files[node]?.current
        }
    }

    /// Every file reachable from `/`, by absolute path, with the bytes a read would see now.
    public func allFiles() -> [String: [UInt8]] {
        state.withLock { s in
            var result: [String: [UInt8]] = [:]
            var pending: [(path: String, node: Int)] = [("", 0)]
            var visited: Set<Int> = [0]
            while let (path, node) = pending.popLast() {
                for (name, child) in s.directories[node]!.entries {
                    let childPath = path + "/" + name
                    if let file = s.files[child] {
                        result[childPath] = file.current
                    } else if visited.insert(child).inserted {
                        pending.append((childPath, child))
                    }
                }
            }
            return result
        }
    }

    /// Replaces the contents of the file at `path`, both what reads see and its durable
    /// image, dropping its pending writes; creates the file, durably, if it is missing.
    ///
    /// Meant for tests that damage a file on purpose:
    ///
    /// ```swift
    /// var bytes = fs.contents(of: "/store/journal-1")!
    /// bytes[20] ^= 0x01
    /// try fs.setContents(bytes, of: "/store/journal-1")
    /// ```
    ///
    /// - Throws: `ENOENT` or `ENOTDIR` if the parent directory is missing, `EISDIR` if the
    ///   path names a directory.
    public func setContents(_ bytes: [UInt8], of path: String) throws(FileIOError) {
        try state.withLock { (s) throws(FileIOError) in
            guard let (parent, name) = try s.resolve(path, operation: "open") else {
                throw FileIOError(operation: "open", path: path, errno: EISDIR)
            }
            let node: Int
            if let existing = s.directories[parent]!.entries[name] {
                guard s.files[existing] != nil else { throw FileIOError(operation: "open", path: path, errno: EISDIR) }
                node = existing
            } else {
                node = s.makeNode()
                s.directories[parent]!.entries[name] = node
                s.directories[parent]!.durable[name] = node
                s.files[node] = File()
            }
            s.files[node]!.current = bytes
            s.files[node]!.makeDurable()
        }
    }

    /// The permission bits of the file or directory at `path` (0o600 for files, 0o700 for
    /// directories), or `nil` if nothing is there.
    public func mode(of path: String) -> UInt32? {
        state.withLock { s in
            guard let node = try? s.existingNode(path, operation: "lstat") else { return nil }
            return s.directories[node] != nil ? Directory.mode : File.mode
        }
    }

    /// How many ``FileIO`` calls this file system has served (every requirement counts,
    /// including `close` and `kind(of:)`; the inspection helpers do not).
    public var operationCount: Int {
        state.withLock { $0.operationCount }
    }

    /// The largest size a file may reach; writes and truncates beyond it fail with `EFBIG`.
    static let maximumFileSize: Int64 = 1 << 32
}

// MARK: - State

extension InMemoryFileIO {
    /// A change to a file since its last sync.
    fileprivate enum FileChange {
        case write(offset: Int, bytes: [UInt8])
        case truncate(size: Int)
    }

    /// A change to a directory's entries since its last sync.
    fileprivate enum EntryChange {
        /// A create, or a rename into this directory from another one.
        case link(name: String, node: Int)
        /// A remove, or a rename out of this directory into another one.
        case unlink(name: String)
        /// A rename within this directory: atomic, like the real thing.
        case rename(from: String, to: String, node: Int)

        func apply(to entries: inout [String: Int]) {
            switch self {
            case .link(let name, let node):
                entries[name] = node
            case .unlink(let name):
                entries[name] = nil
            case .rename(let from, let to, let node):
                entries[from] = nil
                entries[to] = node
            }
        }
    }

    fileprivate struct File {
        static let mode: UInt32 = 0o600
        /// What reads see.
        var current: [UInt8] = []
        /// The contents as of the last sync.
        var durable: [UInt8] = []
        /// Writes and truncates since the last sync, in order.
        var pending: [FileChange] = []

        mutating func change(_ change: FileChange) {
            switch change {
            case .write(let offset, let bytes): Self.write(bytes, at: offset, into: &current)
            case .truncate(let size): Self.truncate(&current, to: size)
            }
            pending.append(change)
        }

        mutating func makeDurable() {
            durable = current
            pending = []
        }

        static func write(_ bytes: some Collection<UInt8>, at offset: Int, into data: inout [UInt8]) {
            if data.count < offset { data.append(contentsOf: repeatElement(0, count: offset - data.count)) }
            let overlap = min(bytes.count, data.count - offset)
            data.replaceSubrange(offset..<(offset + overlap), with: bytes.prefix(overlap))
            data.append(contentsOf: bytes.dropFirst(overlap))
        }

        static func truncate(_ data: inout [UInt8], to size: Int) {
            if size < data.count {
                data.removeLast(data.count - size)
            } else {
                data.append(contentsOf: repeatElement(0, count: size - data.count))
            }
        }
    }

    fileprivate struct Directory {
        static let mode: UInt32 = 0o700
        /// What lookups see.
        var entries: [String: Int] = [:]
        /// The entries as of the last directory sync.
        var durable: [String: Int] = [:]
        /// Creates, renames and removes since the last directory sync, in order.
        var pending: [EntryChange] = []

        mutating func change(_ change: EntryChange) {
            change.apply(to: &entries)
            pending.append(change)
        }

        mutating func makeDurable() {
            durable = entries
            pending = []
        }
    }

    fileprivate struct Descriptor {
        var node: Int
        var access: FileAccess
    }

    fileprivate struct State {
        /// Files and directories share one space of node numbers; node 0 is `/`.
        var files: [Int: File] = [:]
        var directories: [Int: Directory] = [0: Directory()]
        var nextNode = 1
        var descriptors: [Int32: Descriptor] = [:]
        var nextDescriptor: Int32 = 3
        /// The descriptor holding each locked node's lock.
        var lockHolders: [Int: Int32] = [:]
        var operationCount = 0

        mutating func makeNode() -> Int {
            defer { nextNode += 1 }
            return nextNode
        }

        func descriptor(_ fd: FileDescriptor, operation: String) throws(FileIOError) -> Descriptor {
            guard let descriptor = descriptors[fd.rawValue] else {
                throw FileIOError(operation: operation, path: fd.description, errno: EBADF)
            }
            return descriptor
        }

        /// The directory that holds the last component of `path`, and that component's name;
        /// `nil` for the root directory itself.
        func resolve(_ path: String, operation: String) throws(FileIOError) -> (parent: Int, name: String)? {
            guard !path.isEmpty else { throw FileIOError(operation: operation, path: path, errno: ENOENT) }
            var components: [String] = []
            for component in path.split(separator: "/", omittingEmptySubsequences: true) {
                switch component {
                case ".": continue
                case "..": _ = components.popLast()
                default: components.append(String(component))
                }
            }
            guard let name = components.popLast() else { return nil }
            var directory = 0
            for component in components {
                guard let next = directories[directory]!.entries[component] else {
                    throw FileIOError(operation: operation, path: path, errno: ENOENT)
                }
                guard directories[next] != nil else {
                    throw FileIOError(operation: operation, path: path, errno: ENOTDIR)
                }
                directory = next
            }
            return (directory, name)
        }

        /// The node `path` names; `ENOENT` if there is none.
        func existingNode(_ path: String, operation: String) throws(FileIOError) -> Int {
            guard let (parent, name) = try resolve(path, operation: operation) else { return 0 }
            guard let node = directories[parent]!.entries[name] else {
                throw FileIOError(operation: operation, path: path, errno: ENOENT)
            }
            return node
        }

        /// Whether `directory` is `ancestor` or lies anywhere below it.
        func isDirectory(_ directory: Int, inside ancestor: Int) -> Bool {
            var pending = [ancestor]
            var visited: Set<Int> = []
            while let node = pending.popLast() {
                if node == directory { return true }
                guard visited.insert(node).inserted, let entries = directories[node]?.entries else { continue }
                pending.append(contentsOf: entries.values.filter { directories[$0] != nil })
            }
            return false
        }

        /// The same files and directories, pending changes included, without descriptors,
        /// locks or the operation count.
        func afterProcessCrash() -> State {
            var result = self
            result.descriptors = [:]
            result.lockHolders = [:]
            result.operationCount = 0
            return result
        }

        /// What a power loss leaves: see ``InMemoryFileIO/crashed(seed:mode:)``.
        func afterPowerLoss(using random: inout SplitMix64) -> State {
            // Directories first, in node order so that a seed always means the same damage.
            var entries: [Int: [String: Int]] = [:]
            for node in directories.keys.sorted() {
                let directory = directories[node]!
                var survivors = directory.durable
                let kept = random.next(below: directory.pending.count + 1)
                for change in directory.pending.prefix(kept) { change.apply(to: &survivors) }
                entries[node] = survivors
            }

            // Only what the surviving entries reach is still there.
            var reachable: Set<Int> = [0]
            var queue = [0]
            while let node = queue.popLast() {
                for child in entries[node]!.values where reachable.insert(child).inserted {
                    if directories[child] != nil { queue.append(child) }
                }
            }

            var result = State()
            result.nextNode = nextNode
            result.directories = [:]
            for node in reachable.sorted() {
                if let survivors = entries[node] {
                    result.directories[node] = Directory(entries: survivors, durable: survivors, pending: [])
                    continue
                }
                let file = files[node]!
                var data = file.durable
                for change in file.pending {
                    switch change {
                    case .write(let offset, let bytes):
                        switch random.next(below: 4) {
                        case 0:  // kept
                            File.write(bytes, at: offset, into: &data)
                        case 1:  // dropped
                            break
                        case 2:  // torn: only a prefix lands
                            let landed = random.next(below: bytes.count)
                            if landed > 0 { File.write(bytes.prefix(landed), at: offset, into: &data) }
                        default:  // zero-filled
                            File.write(repeatElement(0, count: bytes.count), at: offset, into: &data)
                        }
                    case .truncate(let size):
                        if random.next(below: 2) == 0 { File.truncate(&data, to: size) }
                    }
                }
                result.files[node] = File(current: data, durable: data, pending: [])
            }
            return result
        }
    }
}
