/// Where a command writes: standard output and standard error, as closures so that tests
/// capture them.
struct Output: Sendable {
    let standard: @Sendable (String) -> Void
    let error: @Sendable (String) -> Void
    /// Whether standard error is a terminal (progress bars are drawn only then).
    var errorIsTerminal = false

    func line(_ text: String) { standard(text + "\n") }
    /// One line of standard error: line breaks in `text` (a culprit the input gave) are
    /// written escaped, `\n` and `\r` as JSON writes them, so that the first line names
    /// the culprit whole.
    func errorLine(_ text: String) {
        guard text.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D }) else { return error(text + "\n") }
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        error(escaped + "\n")
    }
}

/// Left-aligned text columns for tables people read.
func columns(_ rows: [[String]], separator: String = "  ") -> [String] {
    guard let width = rows.map(\.count).max() else { return [] }
    let widths = (0..<width).map { column in rows.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0 }
    return rows.map { row in
        row.enumerated().map { column, cell in
            column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
        }.joined(separator: separator)
    }
}

/// Lines for standard output gathered into large writes (a dump of a million objects is
/// then a few hundred writes, not a million).
final class BufferedLines {
    private let output: Output
    private var buffer = ""

    init(_ output: Output) {
        self.output = output
        buffer.reserveCapacity(1 << 16)
    }

    func line(_ text: String) {
        buffer += text
        buffer += "\n"
        if buffer.utf8.count >= 1 << 16 { flush() }
    }

    func flush() {
        guard !buffer.isEmpty else { return }
        output.standard(buffer)
        buffer = ""
    }

    deinit { flush() }
}
