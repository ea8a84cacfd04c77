#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Nanoseconds on the monotonic clock.
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Processor time the whole process has used (every thread), in nanoseconds.
func processorNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Seconds elapsed since `start` (from ``monotonicNanoseconds()``).
func secondsSince(_ start: UInt64) -> Double {
    Double(monotonicNanoseconds() - start) / 1e9
}

/// A failure of the benchmark program itself (not of the library under test).
struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }

    /// An error naming a failed system call and `errno`.
    static func system(_ call: String, _ path: String) -> BenchmarkError {
        let code = errno
        let text = strerror(code).map { String(cString: $0) } ?? "error \(code)"
        return BenchmarkError("\(call) \(path): \(text) (errno \(code))")
    }
}

/// A plain file written with `pwrite` and synced with `fsync`: the baseline the journal is
/// compared against. It syncs the way ``POSIXFileIO`` does (`F_FULLFSYNC` on Apple platforms).
struct RawFile: ~Copyable {
    let path: String
    let fd: Int32
    private(set) var size: Int64 = 0

    init(creating path: String) throws {
        self.path = path
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BenchmarkError.system("open", path) }
    }

    /// Writes `bytes` at `offset` (retrying short writes and `EINTR`).
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw BenchmarkError.system("pwrite", path)
            }
            done += n
        }
    }

    /// Writes `bytes` at the end of what this value has written.
    mutating func append(_ bytes: UnsafeRawBufferPointer) throws {
        try write(bytes, at: size)
        size += Int64(bytes.count)
    }

    func sync() throws {
        #if canImport(Darwin)
        if fcntl(fd, F_FULLFSYNC) == 0 { return }
        #endif
        guard fsync(fd) == 0 else { throw BenchmarkError.system("fsync", path) }
    }

    deinit { close(fd) }
}

/// A buffer of `count` arbitrary, incompressible bytes.
func filler(_ count: Int) -> [UInt8] {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    return (0..<count).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return UInt8(truncatingIfNeeded: state >> 33)
    }
}

/// The size of a file, or 0 if it cannot be read.
func fileSize(_ path: String) -> Int64 {
    var info = stat()
    guard stat(path, &info) == 0 else { return 0 }
    return Int64(info.st_size)
}

/// The regular files directly inside a directory, as full paths, sorted.
func filesIn(_ directory: String) -> [String] {
    guard let dir = opendir(directory) else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
        let name = withUnsafePointer(to: entry.pointee.d_name) {
            $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
        }
        let path = directory + "/" + name
        var info = stat()
        if name != ".", name != "..", stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG { names.append(path) }
    }
    return names.sorted()
}

/// Whether dropping files from the page cache is supported here (Linux `posix_fadvise`).
var canDropFileCache: Bool {
    #if os(Linux)
    true
    #else
    false
    #endif
}

/// Evicts the files' pages from the page cache (they must be synced, so every page is
/// clean), so that the next read comes from the disk. Only these files are affected.
func dropFromPageCache(_ paths: [String]) throws {
    #if os(Linux)
    for path in paths {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw BenchmarkError.system("open", path) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw BenchmarkError.system("fsync", path) }
        let result = posix_fadvise(fd, 0, 0, Int32(POSIX_FADV_DONTNEED))
        guard result == 0 else { throw BenchmarkError("posix_fadvise \(path): error \(result)") }
    }
    #endif
}

/// Reads files whole with `pread` in 1 MiB blocks and returns the bytes read (the raw read
/// baseline for replay).
func readFiles(_ paths: [String]) throws -> Int64 {
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    var total: Int64 = 0
    for path in paths {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw BenchmarkError.system("open", path) }
        defer { close(fd) }
        var offset: off_t = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw BenchmarkError.system("pread", path)
            }
            if n == 0 { break }
            offset += off_t(n)
        }
        total += Int64(offset)
    }
    return total
}
