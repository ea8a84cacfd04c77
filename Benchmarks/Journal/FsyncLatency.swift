/// How long `fsync` takes on the test disk with nothing else involved: the floor under
/// every durable append.
///
/// Two cases, each a loop of write-then-sync on a plain file, timing only the `fsync`:
/// - overwrite: rewrite the same 4 KiB in place (data only; the file's size does not change);
/// - append: add 128 bytes at the end (data plus a size change, so the file system also
///   commits metadata — what a journal append needs).
enum FsyncLatency {
    static let name = "fsync"

    static func run(_ context: BenchmarkContext) throws -> GroupReport {
        let rounds = context.quick ? 1 : 5
        let count = context.quick ? 50 : 1000
        var report = GroupReport(name: name, title: "fsync latency of the test disk (no journal)")
        report.parameters = ["syncs per round": String(count), "rounds": String(rounds)]
        var overwrite50: [Double] = [], overwrite99: [Double] = [], append50: [Double] = [], append99: [Double] = []
        let page = filler(4096)
        let small = filler(128)
        for _ in 0..<rounds {
            let overwrite = try measure(context.path("fsync-overwrite"), count: count, prepare: page) { file in
                try page.withUnsafeBytes { bytes in try file.write(bytes, at: 0) }
            }
            overwrite50.append(overwrite.percentile(50))
            overwrite99.append(overwrite.percentile(99))
            let append = try measure(context.path("fsync-append"), count: count, prepare: []) { file in
                try small.withUnsafeBytes { bytes in try file.append(bytes) }
            }
            append50.append(append.percentile(50))
            append99.append(append.percentile(99))
        }
        report.add("fsync after 4 KiB overwrite, p50", "ms", runs: overwrite50)
        report.add("fsync after 4 KiB overwrite, p99", "ms", runs: overwrite99)
        report.add("fsync after 128 B append, p50", "ms", runs: append50)
        report.add("fsync after 128 B append, p99", "ms", runs: append99)
        return report
    }

    /// Times `count` syncs, each after `change`, in milliseconds.
    private static func measure(
        _ path: String, count: Int, prepare: [UInt8], change: (inout RawFile) throws -> Void
    ) throws -> Distribution {
        var file = try RawFile(creating: path)
        defer { removeItem(path) }
        if !prepare.isEmpty {
            try prepare.withUnsafeBytes { bytes in try file.append(bytes) }
        }
        try file.sync()
        var samples: [Double] = []
        samples.reserveCapacity(count)
        for _ in 0..<count {
            try change(&file)
            let start = monotonicNanoseconds()
            try file.sync()
            samples.append(secondsSince(start) * 1e3)
        }
        return Distribution(samples)
    }
}
