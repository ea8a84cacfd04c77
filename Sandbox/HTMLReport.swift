import Foundation

/// One self-contained HTML page of scenario reports: for each, its verdict, its table, a
/// line chart per time series and a bar chart per numeric column. Inline SVG and CSS only,
/// no scripts or external assets.
struct HTMLReport {
    let reports: [ScenarioReport]

    init(_ reports: [ScenarioReport]) { self.reports = reports }

    static let palette = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#edc948", "#9c755f"]

    var text: String {
        var html = """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><title>Strata sandbox</title>
        <style>
        body { font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; padding: 0 1em; }
        h1 { font-size: 1.6em; } h2 { margin-top: 2.2em; border-bottom: 1px solid #ddd; }
        .verdict { background: #f4f6f8; border-left: 4px solid #4e79a7; padding: .6em 1em; }
        table { border-collapse: collapse; font-size: 12px; margin: 1em 0; }
        .wide { overflow-x: auto; }
        th, td { padding: 3px 8px; border-bottom: 1px solid #eee; text-align: right; white-space: nowrap; }
        th:first-child, td:first-child { text-align: left; }
        .bars { display: flex; flex-wrap: wrap; gap: 12px; }
        svg text { font: 11px sans-serif; fill: #333; }
        </style></head><body>
        <h1>Strata sandbox</h1>
        <p>\(escape(machine))</p>

        """
        for report in reports {
            html += "<h2>\(escape(report.scenario))</h2>\n"
            html += "<p>\(report.objects) objects\(report.saveEvery.map { ", a save every \($0)" } ?? ""), medians of \(report.runs) run(s)</p>\n"
            html += "<p class=\"verdict\">\(escape(report.verdict))</p>\n"
            for chart in report.charts { html += lineChart(chart) }
            html += table(report.table)
            html += "<div class=\"bars\">\n"
            for column in numericColumns(report.table) { html += barChart(report.table, column: column) }
            html += "</div>\n"
        }
        return html + "</body></html>\n"
    }

    private var machine: String {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let memory = Double(ProcessInfo.processInfo.physicalMemory) / Double(1 << 30)
        return "Run on \(ProcessInfo.processInfo.hostName): \(cores) cores, \(String(format: "%.0f", memory)) GiB, \(ProcessInfo.processInfo.operatingSystemVersionString)."
    }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    private func table(_ rows: [[String]]) -> String {
        guard let header = rows.first else { return "" }
        var html = "<div class=\"wide\"><table><tr>" + header.map { "<th>\(escape($0))</th>" }.joined() + "</tr>\n"
        for row in rows.dropFirst() { html += "<tr>" + row.map { "<td>\(escape($0))</td>" }.joined() + "</tr>\n" }
        return html + "</table></div>\n"
    }

    /// Columns that say which configuration a row is, not what it measured: they label the
    /// bars instead of being charted.
    static let parameterColumns: Set<String> = ["writers", "registered", "objects", "phase"]

    /// Columns (after the first, parameters aside) whose cells are numbers — empty cells
    /// allowed (a row without that figure) — in at least two rows.
    private func numericColumns(_ rows: [[String]]) -> [Int] {
        guard let header = rows.first, rows.count > 2 else { return [] }
        return (1..<header.count).filter { column in
            guard !Self.parameterColumns.contains(header[column]) else { return false }
            let cells = rows.dropFirst().map { column < $0.count ? $0[column] : "" }
            return cells.allSatisfy { $0.isEmpty || Double($0) != nil } && cells.filter { Double($0) != nil }.count >= 2
        }
    }

    /// A row's label: its first cell, a text second cell, and its parameter columns.
    private func label(_ row: [String], header: [String]) -> String {
        var parts = [row[0]]
        for column in 1..<min(row.count, header.count) {
            if (column == 1 && Double(row[1]) == nil && !row[1].isEmpty) || Self.parameterColumns.contains(header[column]) {
                parts.append(Self.parameterColumns.contains(header[column]) && !row[column].isEmpty ? "\(header[column]) \(row[column])" : row[column])
            }
        }
        return parts.joined(separator: " ")
    }

    private func barChart(_ rows: [[String]], column: Int) -> String {
        let labels = rows.dropFirst().map { label($0, header: rows[0]) }
        let values = rows.dropFirst().map { Double($0[column]) ?? 0 }
        // One colour per first cell (a stack keeps its colour in every chart, as in the line
        // charts), in the order the rows name them.
        var firsts: [String] = []
        for row in rows.dropFirst() where !firsts.contains(row[0]) { firsts.append(row[0]) }
        let top = max(values.max() ?? 0, 1e-12)
        // Labels are never cut: the label column is as wide as the longest (11 px text is
        // at most about 6.5 px a character).
        let barHeight = 16.0, barsWidth = 190.0
        let labelWidth = max(120, Double(labels.map(\.count).max() ?? 0) * 6.5 + 10), width = labelWidth + barsWidth
        let height = Double(values.count) * (barHeight + 4) + 28
        var svg = "<svg width=\"\(Int(width))\" height=\"\(Int(height))\" role=\"img\"><text x=\"0\" y=\"13\" font-weight=\"bold\">\(escape(rows[0][column]))</text>\n"
        for (index, value) in values.enumerated() {
            let y = 22 + Double(index) * (barHeight + 4)
            let length = (barsWidth - 60) * value / top
            let colour = Self.palette[(firsts.firstIndex(of: rows[index + 1][0]) ?? index) % Self.palette.count]
            svg += "<text x=\"0\" y=\"\(y + 12)\">\(escape(labels[index]))</text>"
            svg += "<rect x=\"\(labelWidth)\" y=\"\(y)\" width=\"\(max(length, 0.5))\" height=\"\(barHeight)\" fill=\"\(colour)\"/>"
            svg += "<text x=\"\(labelWidth + length + 4)\" y=\"\(y + 12)\">\(escape(rows[index + 1][column]))</text>\n"
        }
        return svg + "</svg>\n"
    }

    /// Axis ticks from 0 at a round step (1, 2 or 5 times a power of ten), three to six steps
    /// of it, the last at or just past `maximum`: the axis ends there.
    static func ticks(upTo maximum: Double) -> [Double] {
        let top = maximum > 0 && maximum.isFinite ? maximum : 1
        let magnitude = pow(10, floor(log10(top / 4)))
        let step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { top / $0 <= 5 } ?? 10 * magnitude
        let count = Int((top / step).rounded(.up))
        return (0...max(count, 1)).map { Double($0) * step }
    }

    /// A tick's label with as many decimals as the ticks' step needs ("0.1", "5", "0.0002").
    static func tickLabel(_ value: Double, of ticks: [Double]) -> String {
        let step = ticks.count > 1 ? ticks[1] - ticks[0] : 1
        return String(format: "%.\(max(0, Int(-floor(log10(step)))))f", value)
    }

    private func lineChart(_ chart: LineChart) -> String {
        let width = 1000.0, height = 320.0, left = 56.0, right = 170.0, top = 24.0, bottom = 40.0
        let points = chart.series.flatMap(\.points)
        let xTicks = Self.ticks(upTo: points.map(\.x).max() ?? 1)
        let yTicks = Self.ticks(upTo: max(points.map(\.y).max() ?? 1, chart.guide?.y ?? 0) * 1.05)
        let maxX = xTicks.last!, maxY = yTicks.last!
        func px(_ x: Double) -> Double { left + (width - left - right) * x / maxX }
        func py(_ y: Double) -> Double { top + (height - top - bottom) * (1 - y / maxY) }
        var svg = "<svg width=\"\(Int(width))\" height=\"\(Int(height))\" role=\"img\">"
        svg += "<text x=\"\(left)\" y=\"14\" font-weight=\"bold\">\(escape(chart.title))</text>\n"
        svg += "<line x1=\"\(left)\" y1=\"\(py(0))\" x2=\"\(width - right)\" y2=\"\(py(0))\" stroke=\"#999\"/>"
        svg += "<line x1=\"\(left)\" y1=\"\(top)\" x2=\"\(left)\" y2=\"\(py(0))\" stroke=\"#999\"/>\n"
        for y in yTicks { svg += "<text x=\"\(left - 6)\" y=\"\(py(y) + 4)\" text-anchor=\"end\">\(Self.tickLabel(y, of: yTicks))</text>" }
        for x in xTicks { svg += "<text x=\"\(px(x))\" y=\"\(py(0) + 16)\" text-anchor=\"middle\">\(Self.tickLabel(x, of: xTicks))</text>" }
        svg += "\n"
        svg += "<text x=\"\((left + width - right) / 2)\" y=\"\(height - 6)\" text-anchor=\"middle\">\(escape(chart.xLabel))</text>"
        svg += "<text transform=\"translate(14 \((top + height - bottom) / 2)) rotate(-90)\" text-anchor=\"middle\">\(escape(chart.yLabel))</text>\n"
        if let guide = chart.guide {
            svg += "<line x1=\"\(left)\" y1=\"\(py(guide.y))\" x2=\"\(width - right)\" y2=\"\(py(guide.y))\" stroke=\"#c00\" stroke-dasharray=\"4 3\"/>"
            svg += "<text x=\"\(width - right - 4)\" y=\"\(py(guide.y) - 5)\" text-anchor=\"end\" style=\"fill: #c00\">\(escape(guide.label))</text>\n"
        }
        for (index, series) in chart.series.enumerated() {
            let colour = Self.palette[index % Self.palette.count]
            let path = series.points.map { String(format: "%.1f,%.1f", px($0.x), py($0.y)) }.joined(separator: " ")
            svg += "<polyline fill=\"none\" stroke=\"\(colour)\" stroke-width=\"1.3\" points=\"\(path)\"/>\n"
            svg += "<rect x=\"\(width - right + 4)\" y=\"\(top + 24 + Double(index) * 18)\" width=\"10\" height=\"10\" fill=\"\(colour)\"/>"
            svg += "<text x=\"\(width - right + 18)\" y=\"\(top + 33 + Double(index) * 18)\">\(escape(series.name))</text>\n"
        }
        return svg + "</svg>\n"
    }
}
