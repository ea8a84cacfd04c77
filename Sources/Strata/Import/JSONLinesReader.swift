#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file (or standard input) line by line in fixed-size chunks, handing out each line
/// as bytes in place: memory stays at one chunk (or the longest line), whatever the file's
/// size.
///
/// ```swift
/// let reader = try JSONLinesReader(path: "songs.jsonl")
/// while let length = try reader.nextLine({ bytes in bytes.count }) { print(reader.lineNumber, length) }
/// ```
public final class JSONLinesReader {
    /// Why the input could not be read.
    public struct ReadError: Error, Sendable, CustomStringConvertible {
        /// The path read (`-` for standard input).
        public var path: String
        /// What failed.
        public var reason: String
        public var description: String { "\(path): \(reason)" }
    }

    /// The path read (`-` for standard input).
    public let path: String
    /// The 1-based number of the line last handed out (0 before the first).
    public private(set) var lineNumber = 0
    /// Bytes read from the input so far.
    public private(set) var bytesRead: Int64 = 0
    /// The input's size in bytes, when it is a regular file.
    public let size: Int64?

    private let fd: Int32
    private let ownsDescriptor: Bool
    private var buffer: UnsafeMutableRawBufferPointer
    private var start = 0
    private var end = 0
    private var atEnd = false

    /// Opens `path` for reading; `-` reads standard input.
    /// - Parameter chunkSize: bytes read at a time (the buffer grows for a longer line).
    public init(path: String, chunkSize: Int = 1 << 20) throws(ReadError) {
        self.path = path
        if path == "-" {
            fd = 0
            ownsDescriptor = false
        } else {
            fd = open(path, O_RDONLY)
            guard fd >= 0 else { throw ReadError(path: path, reason: String(cString: strerror(errno))) }
            ownsDescriptor = true
        }
        var info = stat()
        size = fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG ? Int64(info.st_size) : nil
        buffer = .allocate(byteCount: max(chunkSize, 64), alignment: 8)
    }

    deinit {
        buffer.deallocate()
        if ownsDescriptor { close(fd) }
    }

    /// Hands the next line (without its line break, `\r\n` or `\n`, and without a UTF-8 byte
    /// order mark opening the input) to `body`; the bytes are valid only during the call.
    /// Returns `nil` at the end of the input.
    public func nextLine<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(ReadError) -> Result<R, E>? {
        while true {
            let lineEnd: Int, next: Int
            if let newline = findNewline() {
                (lineEnd, next) = (newline, newline + 1)
            } else if atEnd {
                guard start < end else { return nil }
                (lineEnd, next) = (end, end)
            } else {
                try fill()
                continue
            }
            var first = start, last = lineEnd
            if last > first, buffer[last - 1] == UInt8(ascii: "\r") { last -= 1 }
            if lineNumber == 0, last - first >= 3, buffer[first] == 0xEF, buffer[first + 1] == 0xBB, buffer[first + 2] == 0xBF {
                first += 3
            }
            let line = UnsafeRawBufferPointer(rebasing: buffer[first..<last])
            start = next
            lineNumber += 1
            return Result { () throws(E) -> R in try body(line) }
        }
    }

    private var searched = 0

    private func findNewline() -> Int? {
        var i = max(start, searched)
        guard let base = buffer.baseAddress else { return nil }
        let found = memchr(base + i, 0x0A, end - i)
        if let found {
            i = base.distance(to: found)
            searched = i + 1
            return i
        }
        searched = end
        return nil
    }

    /// Whether handing out the next line would wait for its writer: no whole line is
    /// buffered, and the input (a pipe or a terminal, never a regular file) has nothing to
    /// read at once. Lines read so far can then be used before the next ones come.
    var mustWaitForInput: Bool {
        if atEnd || size != nil || hasWholeLine { return false }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        // Readable, ended (a hang-up) or failed: a read returns at once.
        return poll(&descriptor, 1, 0) == 0
    }

    /// Whether a whole line is buffered. Unlike ``findNewline()``, it leaves the newline to
    /// be found by the next read, and only remembers that the bytes before `end` hold none.
    private var hasWholeLine: Bool {
        let from = max(start, searched)
        guard let base = buffer.baseAddress, from < end else { return false }
        if memchr(base + from, 0x0A, end - from) != nil { return true }
        searched = end
        return false
    }

    /// The rest of the input, whole, read until its end (a pipe's or a terminal's too).
    public func readToEnd() throws(ReadError) -> [UInt8] {
        var bytes: [UInt8] = []
        while true {
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[start..<end]))
            start = end
            searched = end
            if atEnd { return bytes }
            try fill()
        }
    }

    /// Moves the unread bytes to the front (growing the buffer if a line fills it) and reads more.
    private func fill() throws(ReadError) {
        if start > 0 {
            let remaining = end - start
            if remaining > 0 { buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: remaining) }
            searched -= start
            start = 0
            end = remaining
        }
        if end == buffer.count {
            let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: buffer.count * 2, alignment: 8)
            larger.baseAddress!.copyMemory(from: buffer.baseAddress!, byteCount: end)
            buffer.deallocate()
            buffer = larger
        }
        while true {
            let n = read(fd, buffer.baseAddress! + end, buffer.count - end)
            if n < 0 {
                if errno == EINTR { continue }
                throw ReadError(path: path, reason: String(cString: strerror(errno)))
            }
            if n == 0 { atEnd = true }
            end += n
            bytesRead += Int64(n)
            return
        }
    }
}
