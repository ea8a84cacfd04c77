/// Strings from bytes that must be valid UTF-8 — with a fast path for ASCII, which is most
/// of what stores and import files hold. (The standard library's validating initializer is
/// generic and not specialized for raw buffers, which makes it several times slower.)
enum UTF8Text {
    /// The string the bytes encode, or `nil` if they are not valid UTF-8.
    @inline(__always)
    static func string(_ bytes: UnsafeRawBufferPointer) -> String? {
        if isASCII(bytes) { return String(decoding: bytes, as: UTF8.self) }
        return String(validating: bytes.bindMemory(to: UInt8.self), as: UTF8.self)
    }

    /// Whether every byte is below 0x80, checked eight bytes at a time.
    static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        let count = bytes.count
        while count - i >= 8 {
            if bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
            i += 8
        }
        while i < count {
            if bytes[i] >= 0x80 { return false }
            i += 1
        }
        return true
    }
}

extension String {
    /// The text to quote in an error message: the whole of it, or for a long one (a
    /// culprit taken from hostile input may be megabytes) its start and its length.
    var excerpt: String {
        let limit = 100
        guard utf8.count > limit else { return self }
        let length = count
        guard length > limit else { return self }
        return String(prefix(limit - 20)) + "… (\(length) characters)"
    }
}
