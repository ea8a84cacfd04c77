import Foundation
import Strata

/// Builds stores of N objects, then opens them in a fresh process — from the journal
/// alone, and from a checkpoint — measuring time, MB/s and resident memory.
struct ColdOpenScenario: Scenario {
    let name = "cold-open"
    let summary = "open stores of 100,000 and 1,000,000 objects with and without a checkpoint: time, MB/s, memory"
    let ignoredOptions = ["--stacks"]

    func run(_ options: ScenarioOptions, progress: @Sendable (String) -> Void) async throws -> ScenarioReport {
        let sizes = options.objects.map { [$0] } ?? [100_000, 1_000_000]
        let batch = options.saveEvery ?? 10_000
        var results: [JSON] = []
        var table: [[String]] = [["objects", "phase", "seconds", "MB", "MB/s", "objects/s", "bytes/object RSS"]]
        var verdicts: [String] = []
        // The objects each store holds: the workload rounds a size up to whole artists.
        var built: [Int] = []
        for size in sizes {
            let directory = Measure.temporaryDirectory("cold-open")
            // STRATA_SANDBOX_KEEP keeps the built store for diagnosis (sandbox --probe-decode).
            let keep = ProcessInfo.processInfo.environment["STRATA_SANDBOX_KEEP"] != nil
            defer { if keep { FileHandle.standardError.write(Data("kept \(directory)\n".utf8)) } else { try? FileManager.default.removeItem(atPath: directory) } }
            let path = directory + "/store"
            progress("cold-open: building a store of \(size) objects in batches of \(batch) (durability full)")
            let build = try await buildStore(at: path, objects: size, batch: batch, seed: options.seed)
            let raw = try rawWrite(bytes: build.bytes, chunks: build.batches, directory: directory)
            results.append(.object([
                ("objects", .int(Int64(build.objects))), ("phase", .string("build")),
                ("seconds", number(build.seconds)), ("megabytes", number(Double(build.bytes) / 1e6, decimals: 1)),
                ("megabytesPerSecond", number(Double(build.bytes) / 1e6 / build.seconds, decimals: 1)),
                ("rawWriteMegabytesPerSecond", number(Double(build.bytes) / 1e6 / raw, decimals: 1)),
                ("batches", .int(Int64(build.batches))),
            ]))
            table.append([String(build.objects), "build (commit)", format(build.seconds), format(Double(build.bytes) / 1e6),
                          format(Double(build.bytes) / 1e6 / build.seconds), format(Double(build.objects) / build.seconds), ""])
            table.append([String(build.objects), "raw write+fsync", format(raw), format(Double(build.bytes) / 1e6),
                          format(Double(build.bytes) / 1e6 / raw), "", ""])
            let buildRatio = raw / build.seconds

            for checkpoint in [false, true] {
                if checkpoint {
                    progress("cold-open: compacting into a checkpoint")
                    let store = try Store.open(at: path, configuration: .init(durability: .full))
                    try await store.compact()
                    await store.close()
                }
                progress("cold-open: opening \(size) objects \(checkpoint ? "from a checkpoint" : "from the journal") × \(options.runs) in a fresh process")
                var probes: [Probe] = []
                for _ in 0..<options.runs { probes.append(try probe(path)) }
                let seconds = Measure.median(probes.map(\.seconds))
                let bytes = probes[0].bytes
                let perObject = Measure.median(probes.map { $0.residentBytes / Double(max($0.objects, 1)) })
                let peak = Measure.median(probes.map(\.peakMegabytes))
                results.append(.object([
                    ("objects", .int(Int64(probes[0].objects))), ("phase", .string(checkpoint ? "open-checkpoint" : "open-journal")),
                    ("seconds", number(seconds)), ("megabytes", number(Double(bytes) / 1e6, decimals: 1)),
                    ("megabytesPerSecond", number(Double(bytes) / 1e6 / seconds, decimals: 1)),
                    ("objectsPerSecond", number(Double(probes[0].objects) / seconds, decimals: 0)),
                    ("residentBytesPerObject", number(perObject, decimals: 0)),
                    ("peakResidentMegabytes", number(peak, decimals: 1)),
                ]))
                table.append([String(probes[0].objects), checkpoint ? "open (checkpoint)" : "open (journal)", format(seconds),
                              format(Double(bytes) / 1e6), format(Double(bytes) / 1e6 / seconds),
                              format(Double(probes[0].objects) / seconds), format(perObject)])
                if checkpoint && size >= 1_000_000 {
                    verdicts.append("open of \(probes[0].objects) objects from a checkpoint: \(format(seconds)) s (target < 1 s: \(seconds < 1 ? "holds" : "missed"))")
                }
            }
            built.append(build.objects)
            verdicts.append("commit of \(build.objects) objects: \(format(buildRatio * 100)) % of raw write+fsync speed (target ≥ 50 %: \(buildRatio >= 0.5 ? "holds" : "missed"))")
        }
        return ScenarioReport(scenario: name, objects: built.max() ?? 0, saveEvery: batch, runs: options.runs,
                              results: results, table: table, verdict: verdicts.joined(separator: "; "))
    }

    struct Build {
        var objects: Int
        var seconds: Double
        var processorSeconds: Double
        var bytes: Int64
        var batches: Int
    }

    private func buildStore(at path: String, objects: Int, batch: Int, seed: UInt64) async throws -> Build {
        let (store, build) = try await Self.commitWorkload(at: path, objects: objects, batch: batch, seed: seed, durability: .full, inOrder: true)
        await store.close()
        return build
    }

    /// Creates a store at `path` and commits the workload's change sets to it one after the
    /// other — with ``Store/commit(inOrder:)``, as a bulk load would, or, unless `inOrder`,
    /// each with its own awaited ``Store/commit(_:)``; the clock runs only over the commits.
    /// The store is left open.
    private static func commitWorkload(at path: String, objects: Int, batch: Int, seed: UInt64,
                                       durability: Durability, inOrder: Bool) async throws -> (Store, Build) {
        let store = try Store.create(at: path, schema: Workload.schema, configuration: .init(durability: durability))
        let sets = Workload.insertions(objects: objects, batch: batch, seed: seed, store: store)
        let processorStart = Measure.processorSeconds()
        let start = Measure.now()
        if inOrder {
            try await store.commit(inOrder: sets)
        } else {
            for set in sets { try await store.commit(set) }
        }
        let seconds = Measure.seconds(since: start)
        let processor = Measure.processorSeconds() - processorStart
        return (store, Build(objects: store.currentGeneration.totalCount, seconds: seconds, processorSeconds: processor,
                             bytes: store.journal.statistics.bytes, batches: sets.count))
    }

    /// Seconds to write `bytes` to a plain file in `chunks` writes, each followed by fsync.
    private func rawWrite(bytes: Int64, chunks: Int, directory: String) throws -> Double {
        let path = directory + "/raw"
        let fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o600)
        guard fd >= 0 else { throw StoreError(.io, "cannot create \(path)") }
        defer { close(fd); unlink(path) }
        let chunk = Int(bytes) / max(chunks, 1)
        let buffer = [UInt8](repeating: 0xA5, count: chunk)
        let start = Measure.now()
        for _ in 0..<chunks {
            _ = buffer.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            fsync(fd)
        }
        return Measure.seconds(since: start)
    }

    /// Diagnostics for the commit path, to run under a profiler: builds the scenario's
    /// change sets for `objects` objects (batches of 10,000, seed 1), then commits them
    /// one after the other and prints the commits' wall and processor time — nothing else
    /// runs while the clock does, and the process exits without closing the store or
    /// freeing its generation. `sandbox --probe-commit OBJECTS full|relaxed|none [awaited]`.
    static func probeCommit(objects: Int, durability: Durability, inOrder: Bool) async throws -> Never {
        let directory = Measure.temporaryDirectory("probe-commit")
        let (store, build) = try await commitWorkload(at: directory + "/store", objects: objects, batch: 10_000, seed: 1,
                                                      durability: durability, inOrder: inOrder)
        printLine("committed \(build.objects) objects in \(build.batches) change sets \(inOrder ? "in order" : "awaited one by one") at .\(durability.rawValue): \(format(build.seconds)) s, \(format(build.processorSeconds)) s of processor time, \(format(Double(build.bytes) / 1e6)) MB")
        try? FileManager.default.removeItem(atPath: directory)
        withExtendedLifetime(store) { exit(0) }
    }

    struct Probe: Codable {
        var seconds: Double
        var objects: Int
        var bytes: Int64
        var residentBytes: Double
        var peakMegabytes: Double
    }

    /// Opens the store in a fresh copy of this executable (so memory figures are its own).
    private func probe(_ path: String) throws -> Probe {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["--probe-open", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw StoreError(.io, "the open probe failed with status \(process.terminationStatus)") }
        return try JSONDecoder().decode(Probe.self, from: data)
    }

    /// The child side of ``probe(_:)``: open, measure, print one JSON line.
    static func probeOpen(_ path: String) throws {
        let before = (Measure.status("VmRSS") ?? 0) * 1024
        let start = Measure.now()
        let store = try Store.open(at: path, configuration: .init(readOnly: true))
        let seconds = Measure.seconds(since: start)
        let generation = store.currentGeneration
        let after = (Measure.status("VmRSS") ?? 0) * 1024
        let probe = Probe(seconds: seconds, objects: generation.totalCount, bytes: store.recovery.replayedBytes + checkpointBytes(path),
                          residentBytes: after - before, peakMegabytes: (Measure.status("VmHWM") ?? 0) / 1024)
        FileHandle.standardOutput.write(try JSONEncoder().encode(probe))
        withExtendedLifetime(generation) {}
    }

    private static func checkpointBytes(_ path: String) -> Int64 {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.filter { $0.hasPrefix("checkpoint-") && !$0.hasSuffix(".tmp") }.reduce(0) { total, name in
            total + ((try? FileManager.default.attributesOfItem(atPath: path + "/" + name)[.size] as? NSNumber)?.int64Value ?? 0)
        }
    }
}

/// Diagnostics for the open path: how long decoding alone takes (rows discarded), versus
/// building the generation. `sandbox --probe-decode STORE`.
struct DiscardingTarget: JournalReplayTarget {
    var rows = 0
    mutating func loadCheckpointRow(_ row: RowImage) throws(ReplayError) { rows += 1 }
    mutating func finishCheckpoint(through transaction: UInt64, highestObjectNumbers: [String: UInt64]) throws(ReplayError) {}
    mutating func apply(_ transaction: TransactionRecord) throws(ReplayError) { rows += transaction.inserted.count }
}
