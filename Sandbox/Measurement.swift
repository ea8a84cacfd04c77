import Foundation

/// Timing and memory helpers.
enum Measure {
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
    static func seconds(since start: UInt64) -> Double { Double(now() - start) / 1e9 }

    /// The value at a quantile of a sorted copy of `values` (nearest rank).
    static func quantile(_ values: [Double], _ q: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let rank = min(sorted.count - 1, max(0, Int((q * Double(sorted.count)).rounded(.up)) - 1))
        return sorted[rank]
    }

    /// The middle value; for an even count, the mean of the two middle values.
    static func median(_ values: [Double]) -> Double {
        guard values.count % 2 == 0, !values.isEmpty else { return quantile(values, 0.5) }
        let sorted = values.sorted()
        return (sorted[values.count / 2 - 1] + sorted[values.count / 2]) / 2
    }

    /// The median of counts: for an even number of them, the upper of the two middle
    /// values, so that a count stays whole — the JSON writes it as an integer, and a verdict
    /// must judge the figure it prints (half a dropped frame printed as 0 and judged missed).
    static func medianCount(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        return values.sorted()[values.count / 2]
    }

    /// Processor time (user + system) the process has used, in seconds.
    static func processorSeconds() -> Double {
        var usage = rusage()
        #if os(Linux)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// A field of `/proc/self/status` in kilobytes (VmHWM: peak resident; VmRSS: resident).
    static func status(_ field: String) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }

    /// The machine's processor time so far, and how much of it the hypervisor gave to other
    /// guests ("steal"), in clock ticks, from the first line of `/proc/stat`; `nil` where
    /// there is no such file.
    static func processorTicks() -> (total: UInt64, steal: UInt64)? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = text.split(separator: "\n").first, line.hasPrefix("cpu ")
        else { return nil }
        // user nice system idle iowait irq softirq steal (guest time is counted in user).
        let fields = line.split(separator: " ").dropFirst().prefix(8).compactMap { UInt64($0) }
        guard fields.count == 8 else { return nil }
        return (fields.reduce(0, +), fields[7])
    }

    /// The share of the machine's processor time stolen by the hypervisor between two
    /// ``processorTicks()`` readings, in percent.
    static func stealPercent(from start: (total: UInt64, steal: UInt64)?, to end: (total: UInt64, steal: UInt64)?) -> Double? {
        guard let start, let end, end.total > start.total else { return nil }
        return Double(end.steal - start.steal) / Double(end.total - start.total) * 100
    }

    /// Total size of the files in a directory.
    static func directorySize(_ path: String) -> Int64 {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.reduce(0) { total, name in
            total + ((try? FileManager.default.attributesOfItem(atPath: path + "/" + name)[.size] as? NSNumber)?.int64Value ?? 0)
        }
    }

    static func temporaryDirectory(_ label: String) -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("strata-sandbox-\(label)-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
