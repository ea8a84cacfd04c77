import Foundation
import Strata
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Migrating a store of 1,000,000 objects in place, through one inferred step and then one
/// custom step, and the custom step again from the store as a legacy store into a new
/// location: time and peak resident memory of each, against the memory the store itself
/// needs once open.
///
/// - v1: `Track` (trackID unique, title, lyrics, milliseconds).
/// - v2, inferred: `title` renamed `name`, `rating` added (default 0), `milliseconds` removed.
/// - v3, custom: every `Track` split into a `Track` and a `TrackData` (the lyrics) sharing the
///   trackID, linked in the second pass; 2,000,000 objects after.
///
/// Peak memory is the process's high-water mark (`VmHWM`), reset (`/proc/self/clear_refs`)
/// after `malloc_trim` before each phase, so each figure is that phase's own peak.
enum Migrate {
    static let name = "migrate"

    static let v1 = try! Schema("Tracks", version: 1, entities: [
        Entity("Track", attributes: [Attribute("trackID", .int, unique: true), Attribute("title", .string),
                                     Attribute("lyrics", .string, optional: true), Attribute("milliseconds", .int)]),
    ])
    static let v2 = try! Schema("Tracks", version: 2, entities: [
        Entity("Track", attributes: [Attribute("trackID", .int, unique: true), Attribute("name", .string, renamedFrom: "title"),
                                     Attribute("lyrics", .string, optional: true), Attribute("rating", .int, default: .int(0))]),
    ])
    static let v3 = try! Schema("Tracks", version: 3, entities: [
        Entity("Track", attributes: [Attribute("trackID", .int, unique: true), Attribute("name", .string),
                                     Attribute("rating", .int, default: .int(0))],
               relationships: [Relationship("data", to: "TrackData", inverse: "track", optional: false, deleteRule: .cascade)]),
        Entity("TrackData", attributes: [Attribute("trackID", .int, unique: true), Attribute("lyrics", .string, optional: true)],
               relationships: [Relationship("track", to: "Track", inverse: "data", optional: false)]),
    ])

    static var split: MigrationStep {
        var step = MigrationStep(from: v2, to: v3)
        step.transform("Track") { track, destination in
            let id = try track["trackID"]
            try destination.insert("Track", values: ["trackID": id, "name": track["name"], "rating": track["rating"]])
            try destination.insert("TrackData", values: ["trackID": id, "lyrics": track["lyrics"]])
        }
        step.link("Track") { track, destination in
            let key = try destination.value(forKey: "trackID", of: track)
            guard let data = destination.object("TrackData", uniqueValue: key) else { return }
            try destination.setValue(.object(data), forKey: "data", of: track)
        }
        return step
    }

    static func run(_ context: BenchmarkContext) async throws -> GroupReport {
        let objects = context.quick ? 20_000 : 1_000_000
        var report = GroupReport(name: name, title: "Migrations: \(objects) objects through one inferred and one custom step")
        report.parameters = ["objects": String(objects), "durability": "full", "transaction size": "10000 objects"]
        let store = context.path("migrate")
        defer { removeItem(store) }
        try await build(store, objects: objects)
        report.add("store size (v1, one checkpoint)", "MB", runs: [Double(directorySize(store)) / 1e6])

        let config = Store.Configuration(durability: .full)
        var (seconds, peak, resident) = try await phase {
            let opened = try Store.open(at: store, configuration: config)
            await opened.close()
        }
        report.add("open v1 (the store's own footprint)", "s", runs: [seconds])
        report.add("open v1 (the store's own footprint): peak RSS", "MB", runs: [peak])
        (seconds, peak, resident) = try await phase {
            for _ in 0..<2 {
                let opened = try Store.open(at: store, configuration: config)
                await opened.close()
            }
        }
        report.add("control: open v1, close, open again (no migration): peak RSS", "MB", runs: [peak])

        let inferred = try MigrationPlan(schemas: [v1, v2])
        (seconds, peak, resident) = try await phase {
            let migrated = try await Store.open(at: store, migratingWith: inferred, configuration: config)
            await migrated.close()
        }
        report.add("inferred step v1 → v2 (validate, write, reopen)", "s", runs: [seconds])
        report.add("inferred step v1 → v2: objects/s", "objects/s", runs: [Double(objects) / seconds])
        report.add("inferred step v1 → v2: peak RSS", "MB", runs: [peak])

        (seconds, peak, resident) = try await phase {
            let opened = try Store.open(at: store, configuration: config)
            await opened.close()
        }
        report.add("open v2 (the store's own footprint)", "s", runs: [seconds])
        report.add("open v2 (the store's own footprint): peak RSS", "MB", runs: [peak])

        let custom = try MigrationPlan(schemas: [v2, v3], steps: [split])
        // A dry run of the custom step: run with its files in a scratch directory, nothing written.
        (seconds, peak, resident) = try await phase {
            let dryRun = try await custom.dryRun(storeAt: store)
            precondition(dryRun.wouldSucceed && dryRun.steps.first?.objectCounts.map(\.count).reduce(0, +) == 2 * objects)
        }
        report.add("dry run of the custom step v2 → v3", "s", runs: [seconds])
        report.add("dry run of the custom step v2 → v3: peak RSS", "MB", runs: [peak])

        // The same custom step from the v2 store as a legacy store into a new location: copied
        // into a staging directory, migrated there, renamed into place, opened.
        let moved = context.path("migrate-legacy")
        defer { removeItem(moved) }
        (seconds, peak, resident) = try await phase {
            let migrated = try await Store.migrate(legacyStoreAt: store, to: moved, with: custom, configuration: config)
            precondition(migrated.currentGeneration.count(of: "TrackData") == objects)
            await migrated.close()
        }
        removeItem(moved)
        report.add("legacy store v2 → new location v3 (copy, custom step, rename, open)", "s", runs: [seconds])
        report.add("legacy store v2 → new location v3: peak RSS", "MB", runs: [peak])

        // When the step starts writing its checkpoint: the time and peak RSS of making, linking
        // and validating its objects, before the checkpoint write and the reopen.
        // Also the sizes of the step's spill file (its destination rows, every version) and of
        // its index file (the bookkeeping) then.
        let beforeWriting = Mutex<(start: UInt64, seconds: Double, peak: Double, spill: Int64, index: Int64)>((0, 0, 0, 0, 0))
        (seconds, peak, resident) = try await phase {
            beforeWriting.withLock { $0.start = monotonicNanoseconds() }
            let migrated = try await Store.open(at: store, migratingWith: custom, configuration: config) { progress in
                guard progress.phase == .writing else { return }
                let peak = (status("VmHWM") ?? 0) / 1024
                let spill = fileSize(store + "/migration.strata.tmp"), index = fileSize(store + "/migration-index.strata.tmp")
                beforeWriting.withLock { $0.seconds = secondsSince($0.start); $0.peak = peak; $0.spill = spill; $0.index = index }
            }
            precondition(migrated.currentGeneration.count(of: "TrackData") == objects)
            await migrated.close()
        }
        report.add("custom step v2 → v3: resident memory at its start (left by earlier phases)", "MB", runs: [resident])
        report.add("custom step v2 → v3 (transform, link, validate, write, reopen)", "s", runs: [seconds])
        report.add("custom step v2 → v3: source objects/s", "objects/s", runs: [Double(objects) / seconds])
        report.add("custom step v2 → v3: peak RSS", "MB", runs: [peak])
        let (madeSeconds, madePeak, spillBytes, indexBytes) = beforeWriting.withLock { ($0.seconds, $0.peak, $0.spill, $0.index) }
        report.add("custom step: transform, link, validate (before the checkpoint write and reopen)", "s", runs: [madeSeconds])
        report.add("custom step: transform, link, validate: peak RSS", "MB", runs: [madePeak])
        report.add("custom step: spill file (temporary, removed after the step)", "MB", runs: [Double(spillBytes) / 1e6])
        report.add("custom step: index file (temporary, removed after the step)", "MB", runs: [Double(indexBytes) / 1e6])
        report.add("store size (v3, one checkpoint)", "MB", runs: [Double(directorySize(store)) / 1e6])

        (seconds, peak, resident) = try await phase {
            let opened = try Store.open(at: store, configuration: config)
            await opened.close()
        }
        report.add("open v3 (the store's own footprint)", "s", runs: [seconds])
        report.add("open v3 (the store's own footprint): peak RSS", "MB", runs: [peak])
        report.notes.append("peak RSS per phase: VmHWM after malloc_trim and a reset of the high-water mark; compare each step's peak with the open of its source and of its result")
        return report
    }

    /// Writes the v1 store in transactions of 10,000 objects and compacts it to one checkpoint.
    static func build(_ path: String, objects: Int) async throws {
        let store = try Store.create(at: path, schema: v1, configuration: .init(durability: .relaxed))
        var next = 0
        while next < objects {
            let count = min(10_000, objects - next)
            let ids = store.allocateObjectIDs(for: "Track", count: count)
            let rows = ids.map { id -> RowImage in
                let n = Int64(id.number)
                return RowImage(id: id, values: [.int(n), .string("Track number \(n)"),
                                                 n % 10 == 0 ? .null : .string("Lyrics of track \(n), verse and chorus"), .int(180_000 + n % 1000)])
            }
            try await store.commit(ChangeSet(author: "benchmark", inserted: rows))
            next += count
        }
        try await store.compact()
        await store.close()
    }

    /// Runs a phase: its time, its peak resident memory, and the resident memory it started
    /// from (what earlier phases left allocated), in MB.
    static func phase(_ body: () async throws -> Void) async throws -> (Double, Double, Double) {
        resetPeakResident()
        let resident = (status("VmRSS") ?? 0) / 1024
        let start = monotonicNanoseconds()
        try await body()
        let seconds = secondsSince(start)
        return (seconds, (status("VmHWM") ?? 0) / 1024, resident)
    }

    static func resetPeakResident() {
        #if canImport(Glibc)
        // glibc's malloc_trim, looked up at run time: returns freed heap pages to the system.
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") {
            typealias Trim = @convention(c) (Int) -> Int32
            _ = unsafeBitCast(symbol, to: Trim.self)(0)
        }
        #endif
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    /// A field of `/proc/self/status`, in kilobytes.
    static func status(_ field: String) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }

    static func directorySize(_ path: String) -> Int64 {
        filesIn(path).map(fileSize).reduce(0, +)
    }
}
