#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A number naming an open file of a ``FileIO``.
public struct FileDescriptor: Sendable, Hashable, CustomStringConvertible {
    /// The raw number (a POSIX descriptor for ``POSIXFileIO``).
    public let rawValue: Int32
    /// Wraps a raw number.
    public init(rawValue: Int32) { self.rawValue = rawValue }
    public var description: String { "fd \(rawValue)" }
}

/// How ``FileIO/open(_:access:creation:)`` treats a file that does or does not exist.
public enum FileCreation: Sendable, Hashable {
    /// The file must exist.
    case mustExist
    /// Create the file (mode 0600) if it does not exist.
    case createIfMissing
    /// Create the file (mode 0600); fail with `EEXIST` if it exists. Used for temporary files.
    case createExclusive
}

/// Whether a file is opened for reading only or for reading and writing.
public enum FileAccess: Sendable, Hashable {
    case readOnly
    case readWrite
}

/// What a path names.
public enum FileKind: Sendable, Hashable {
    case file
    case directory
    case other
}

/// A failed file operation: the operation, the path, and the `errno` it failed with.
public struct FileIOError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The operation that failed (`open`, `write`, `fsync`, `rename`, ...).
    public var operation: String
    /// The file or directory the operation was on.
    public var path: String
    /// The POSIX error number.
    public var errno: Int32

    /// Creates an error.
    public init(operation: String, path: String, errno: Int32) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    public var description: String { "\(operation) \(path): \(FileIOError.describe(errno)) (errno \(errno))" }

    /// The error naming `path`: an operation on a descriptor knows only the descriptor's
    /// number, and an error should name the file.
    func naming(_ path: String) -> FileIOError {
        var error = self
        error.path = path
        return error
    }

    static func describe(_ code: Int32) -> String {
        // strerror_r, not strerror: errors are described on many threads at once.
        var buffer = [CChar](repeating: 0, count: 256)
        guard strerror_r(code, &buffer, buffer.count) == 0 else { return "error \(code)" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Every file operation Strata performs, behind one protocol so that tests can replace the
/// file system: ``POSIXFileIO`` for real files, ``InMemoryFileIO`` for fast tests and
/// simulated power loss, ``FaultInjectingFileIO`` to fail any call, and
/// ``IOOrderingChecker`` to verify the order of writes, syncs and renames.
///
/// Each requirement performs one system call's worth of work and reports `EINTR` and short
/// reads and writes as they happen; the extension methods (``writeAll(_:_:at:path:)``,
/// ``readAll(_:path:)``) retry them, so every implementation gets the same retry logic.
public protocol FileIO: Sendable {
    /// Opens a file. Never follows a symbolic link in the last path component.
    func open(_ path: String, access: FileAccess, creation: FileCreation) throws(FileIOError) -> FileDescriptor
    /// Closes a file. Errors are ignored: nothing Strata acknowledges depends on `close`.
    func close(_ fd: FileDescriptor)
    /// Reads up to `buffer.count` bytes at `offset`; returns the number read (0 at the end).
    func read(_ fd: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int
    /// Writes up to `bytes.count` bytes at `offset`; returns the number written.
    func write(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int
    /// The file's size in bytes.
    func size(of fd: FileDescriptor) throws(FileIOError) -> Int64
    /// Makes the file's data durable (`fsync`).
    func sync(_ fd: FileDescriptor) throws(FileIOError)
    /// Cuts or extends the file to `size` bytes.
    func truncate(_ fd: FileDescriptor, to size: Int64) throws(FileIOError)
    /// Renames a file (or a directory), replacing any file (or empty directory) at `destination`.
    func rename(_ source: String, to destination: String) throws(FileIOError)
    /// Removes a file.
    func remove(_ path: String) throws(FileIOError)
    /// Removes an empty directory (`rmdir`).
    func removeDirectory(_ path: String) throws(FileIOError)
    /// Makes a directory's entries durable (creates, renames and removes inside it).
    func syncDirectory(_ path: String) throws(FileIOError)
    /// Creates a directory with mode 0700.
    func createDirectory(_ path: String) throws(FileIOError)
    /// The names in a directory, without `.` and `..`.
    func contentsOfDirectory(_ path: String) throws(FileIOError) -> [String]
    /// What the path names, or `nil` if nothing is there. Does not follow a final symbolic link.
    func kind(of path: String) -> FileKind?
    /// Takes an exclusive advisory lock on an open file without waiting (`flock` semantics:
    /// held by the open file, released when it is closed or its process dies).
    /// - Returns: `false` when another open file holds the lock.
    func tryLock(_ fd: FileDescriptor) throws(FileIOError) -> Bool
}

// MARK: - Retrying helpers

extension FileIO {
    /// Writes all of `bytes` at `offset`, retrying `EINTR` and continuing short writes.
    public func writeAll(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String)
        throws(FileIOError)
    {
        var done = 0
        while done < bytes.count {
            let n: Int
            do throws(FileIOError) {
                n = try retryingInterrupts { () throws(FileIOError) in
                    try write(fd, UnsafeRawBufferPointer(rebasing: bytes[done...]), at: offset + Int64(done))
                }
            } catch {
                throw error.naming(path)
            }
            guard n > 0 else { throw FileIOError(operation: "write", path: path, errno: EIO) }
            done += n
        }
    }

    /// Syncs an open file (`fsync`); an error names `path`.
    public func sync(_ fd: FileDescriptor, path: String) throws(FileIOError) {
        do throws(FileIOError) { try sync(fd) } catch { throw error.naming(path) }
    }

    /// Writes all of a byte array at `offset`.
    public func writeAll(_ fd: FileDescriptor, _ bytes: [UInt8], at offset: Int64, path: String) throws(FileIOError) {
        let result: Result<Void, FileIOError> = bytes.withUnsafeBytes { raw in
            Result { () throws(FileIOError) in try writeAll(fd, raw, at: offset, path: path) }
        }
        try result.get()
    }

    /// Reads exactly `buffer.count` bytes at `offset` (fewer only at the end of the file),
    /// retrying `EINTR`; returns the number read.
    public func readFully(_ fd: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64)
        throws(FileIOError) -> Int
    {
        var done = 0
        while done < buffer.count {
            let n = try retryingInterrupts { () throws(FileIOError) in
                try read(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]), at: offset + Int64(done))
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Reads a whole file into memory.
    /// - Throws: ``FileIOError`` with `EFBIG` for a file larger than the machine's physical
    ///   memory (a store is held in memory, so no such file can be one this machine opens; a
    ///   hostile sparse file claiming terabytes must not make the reader allocate them).
    public func readAll(_ fd: FileDescriptor, path: String) throws(FileIOError) -> [UInt8] {
        let reported: Int64
        do throws(FileIOError) {
            reported = try retryingInterrupts { () throws(FileIOError) in try self.size(of: fd) }
        } catch {
            throw error.naming(path)
        }
        guard reported <= Self.largestWholeRead else {
            throw FileIOError(operation: "read (the file is \(reported) bytes, more than this machine's \(Self.largestWholeRead) bytes of memory)",
                              path: path, errno: EFBIG)
        }
        let size = Int(reported)
        var bytes = [UInt8](repeating: 0, count: size)
        let result: Result<Int, FileIOError> = bytes.withUnsafeMutableBytes { raw in
            Result { () throws(FileIOError) -> Int in try readFully(fd, into: raw, at: 0) }
        }
        let read: Int
        do throws(FileIOError) { read = try result.get() } catch { throw error.naming(path) }
        if read < size { bytes.removeLast(size - read) }
        return bytes
    }

    /// The largest file ``readAll(_:path:)`` reads: the machine's physical memory.
    static var largestWholeRead: Int64 {
        let pages = Int64(sysconf(Int32(_SC_PHYS_PAGES))), pageSize = Int64(sysconf(Int32(_SC_PAGESIZE)))
        guard pages > 0, pageSize > 0 else { return .max }  // unknown: no bound but the allocator's
        return pages.multipliedReportingOverflow(by: pageSize).overflow ? .max : pages * pageSize
    }

    /// Runs an operation again while it fails with `EINTR`.
    public func retryingInterrupts<T>(_ body: () throws(FileIOError) -> T) throws(FileIOError) -> T {
        while true {
            do throws(FileIOError) {
                return try body()
            } catch {
                if error.errno != EINTR { throw error }
            }
        }
    }
}

extension FileIO {
    /// What a store's own path names, following a symbolic link to a directory (a store kept
    /// on another volume and linked into place): `kind(of:)` names the link itself, so such
    /// a store was refused as "not a directory". Files inside the store are never reached
    /// through links (they are opened without following one).
    func storeDirectoryKind(_ path: String) -> FileKind? {
        let kind = kind(of: path)
        guard kind == .other, self.kind(of: StoreLayout.join(path, ".")) == .directory else { return kind }
        return .directory
    }
}
