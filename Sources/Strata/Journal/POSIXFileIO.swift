#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The real file system, through POSIX calls.
///
/// Files are created with mode 0600 and directories with 0700; opening never follows a
/// symbolic link in the last path component (`O_NOFOLLOW`); every descriptor is
/// close-on-exec and numbered above the standard streams. Locks are `flock` locks, held by
/// the open file, so a killed holder never leaves a stale lock.
public struct POSIXFileIO: FileIO {
    /// Creates the real file system.
    public init() {}

    private func fail(_ operation: String, _ path: String) -> FileIOError {
        FileIOError(operation: operation, path: path, errno: errno)
    }

    public func open(_ path: String, access: FileAccess, creation: FileCreation) throws(FileIOError) -> FileDescriptor {
        var flags: Int32 = O_CLOEXEC | O_NOFOLLOW
        flags |= access == .readOnly ? O_RDONLY : O_RDWR
        switch creation {
        case .mustExist: break
        case .createIfMissing: flags |= O_CREAT
        case .createExclusive: flags |= O_CREAT | O_EXCL
        }
        while true {
            let fd = systemOpen(path, flags, 0o600)
            if fd >= 0 { return FileDescriptor(rawValue: try aboveStandardStreams(fd, path: path)) }
            if errno != EINTR { throw fail("open", path) }
        }
    }

    /// Moves a descriptor numbered 0, 1 or 2 above them. Those numbers are free only when the
    /// process was started with a standard stream closed, and a store file holding one would
    /// receive whatever the program later prints or logs to that stream.
    private func aboveStandardStreams(_ fd: Int32, path: String) throws(FileIOError) -> Int32 {
        guard fd <= STDERR_FILENO else { return fd }
        let moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1)
        let error = errno
        _ = systemClose(fd)
        guard moved >= 0 else { throw FileIOError(operation: "fcntl", path: path, errno: error) }
        return moved
    }

    public func close(_ fd: FileDescriptor) {
        _ = systemClose(fd.rawValue)
    }

    public func read(_ fd: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int {
        let n = pread(fd.rawValue, buffer.baseAddress, buffer.count, off_t(offset))
        guard n >= 0 else { throw fail("read", fd.description) }
        return n
    }

    public func write(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int {
        let n = pwrite(fd.rawValue, bytes.baseAddress, bytes.count, off_t(offset))
        guard n >= 0 else { throw fail("write", fd.description) }
        return n
    }

    public func size(of fd: FileDescriptor) throws(FileIOError) -> Int64 {
        var info = stat()
        guard fstat(fd.rawValue, &info) == 0 else { throw fail("fstat", fd.description) }
        return Int64(info.st_size)
    }

    public func sync(_ fd: FileDescriptor) throws(FileIOError) {
        #if canImport(Darwin)
        // On Apple platforms fsync does not flush the drive's cache; F_FULLFSYNC does.
        if fcntl(fd.rawValue, F_FULLFSYNC) == 0 { return }
        #endif
        guard fsync(fd.rawValue) == 0 else { throw fail("fsync", fd.description) }
    }

    public func truncate(_ fd: FileDescriptor, to size: Int64) throws(FileIOError) {
        guard ftruncate(fd.rawValue, off_t(size)) == 0 else { throw fail("ftruncate", fd.description) }
    }

    public func rename(_ source: String, to destination: String) throws(FileIOError) {
        guard systemRename(source, destination) == 0 else { throw fail("rename", "\(source) -> \(destination)") }
    }

    public func remove(_ path: String) throws(FileIOError) {
        guard unlink(path) == 0 else { throw fail("unlink", path) }
    }

    public func removeDirectory(_ path: String) throws(FileIOError) {
        guard rmdir(path) == 0 else { throw fail("rmdir", path) }
    }

    public func syncDirectory(_ path: String) throws(FileIOError) {
        var fd: Int32
        repeat { fd = systemOpen(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0) } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw fail("open directory", path) }
        defer { _ = systemClose(fd) }
        guard fsync(fd) == 0 else { throw fail("fsync directory", path) }
    }

    public func createDirectory(_ path: String) throws(FileIOError) {
        guard mkdir(path, 0o700) == 0 else { throw fail("mkdir", path) }
    }

    public func contentsOfDirectory(_ path: String) throws(FileIOError) -> [String] {
        guard let dir = opendir(path) else { throw fail("opendir", path) }
        defer { closedir(dir) }
        var names: [String] = []
        while true {
            // readdir returns nil both at the end and on error; only errno tells them apart.
            errno = 0
            guard let entry = readdir(dir) else {
                if errno != 0 { throw fail("readdir", path) }
                break
            }
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    public func kind(of path: String) -> FileKind? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .file
        case S_IFDIR: return .directory
        default: return .other
        }
    }

    public func tryLock(_ fd: FileDescriptor) throws(FileIOError) -> Bool {
        while true {
            if flock(fd.rawValue, LOCK_EX | LOCK_NB) == 0 { return true }
            switch errno {
            case EWOULDBLOCK: return false
            case EINTR: continue
            default: throw fail("flock", fd.description)
            }
        }
    }
}

// The protocol's method names shadow the C functions inside the type; these reach them.
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
private func systemClose(_ fd: Int32) -> Int32 { close(fd) }
private func systemRename(_ a: String, _ b: String) -> Int32 { rename(a, b) }
