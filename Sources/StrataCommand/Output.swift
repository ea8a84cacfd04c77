/// Where a command writes: standard output and standard error, as closures so that tests
/// capture them.
struct Output: Sendable {
    let standard: @Sendable (String) -> Void
    let error: @Sendable (String) -> Void

    func line(_ text: String) { standard(text + "\n") }
    func errorLine(_ text: String) { error(text + "\n") }
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
