import Foundation
import Strata
#if canImport(Glibc)
import Glibc
#endif

/// The stack presets under the names the command line and the reports use.
enum StackName {
    static let all: [(name: String, preset: StackPreset, summary: String)] = [
        ("main-parent", .mainParent, "background contexts are children of the main context, which saves to the store"),
        ("nested", .nested, "a private writer context saves asynchronously; main is its child, workers are main's children"),
        ("shared-coordinator", .sharedCoordinator, "main and background contexts are siblings on one coordinator; main merges their saves"),
        ("separate-coordinators", .separateCoordinators, "imports on their own coordinator; the main context merges what they commit"),
        ("hybrid", .hybrid, "async writer for main's saves, imports on their own coordinator, editors that merge imports"),
    ]

    static func name(of preset: StackPreset) -> String { all.first { $0.preset == preset }!.name }

    /// The presets a `--stacks` value names (`all` or a comma-separated list).
    static func parse(_ text: String) -> Result<[StackPreset], ScenarioError> {
        if text == "all" { return .success(all.map(\.preset)) }
        var presets: [StackPreset] = []
        for name in text.split(separator: ",").map(String.init) {
            guard let preset = all.first(where: { $0.name == name })?.preset else {
                return .failure(ScenarioError("unknown stack '\(name)'; the stacks are \(all.map(\.name).joined(separator: ", ")) or all"))
            }
            if !presets.contains(preset) { presets.append(preset) }
        }
        guard !presets.isEmpty else {
            return .failure(ScenarioError("no stack named in '\(text)'; the stacks are \(all.map(\.name).joined(separator: ", ")) or all"))
        }
        return .success(presets)
    }
}

/// A failure of a scenario run, named for the reader.
struct ScenarioError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A fresh store in a temporary directory with a stack over it; removed when closed.
struct StackBench {
    let directory: String
    let store: Store
    let stack: Stack
    let meter: MainActorMeter

    init(_ preset: StackPreset, label: String, durability: Durability = .full) throws {
        directory = Measure.temporaryDirectory(label)
        store = try Store.create(at: directory + "/store", schema: Workload.schema, configuration: .init(durability: durability))
        meter = MainActorMeter()
        stack = Stack(preset, store: store, modelClasses: [Song.self], observer: meter.observer)
    }

    /// Fills the store with `objects` songbook objects, committed straight to the store.
    func populate(objects: Int, seed: UInt64) async throws {
        for changes in Workload.insertions(objects: objects, batch: 5_000, seed: seed, store: store) {
            _ = try await store.commit(changes)
        }
    }

    /// Whether the view context learns of `context`'s saves by merging a store commit
    /// (rather than by taking them in as a child save).
    func viewMerges(savesOf context: ObjectContext) -> Bool { context.parentContext == nil }

    /// Waits until the view context has merged a save (its objects-did-change notification
    /// names merged objects), at most `timeout` seconds.
    static func awaitMerge(_ changes: AsyncStream<ObjectsDidChange>, timeout: Double) async throws {
        let waiter = Task {
            for await change in changes where !change.merged.isEmpty { return true }
            return false
        }
        let watchdog = Task {
            try? await Task.sleep(for: .seconds(timeout))
            waiter.cancel()
        }
        defer { watchdog.cancel() }
        guard await waiter.value else { throw ScenarioError("the view context did not merge a save within \(timeout) s") }
    }

    func close() async {
        await stack.close()  // the writer's accepted saves first, then the store
        try? FileManager.default.removeItem(atPath: directory)
    }
}

extension Measure {
    /// Resets the peak resident set size the kernel reports (VmHWM) to the current one, so
    /// each run reports its own peak. Linux only; elsewhere the peak is the process's. Free
    /// heap pages go back to the system first, so that memory an earlier stack's run left in
    /// the allocator does not count toward the next stack's peak.
    static func resetPeakMemory() {
        #if canImport(Glibc)
        // glibc's malloc_trim, looked up at run time (its header is not in the Glibc module).
        if let symbol = dlsym(nil, "malloc_trim") {
            _ = unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)(0)
        }
        #endif
        guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return }
        try? handle.write(contentsOf: Data("5".utf8))
        try? handle.close()
    }

    /// The peak resident set in megabytes (0 when the platform does not say).
    static var peakResidentMegabytes: Double { (status("VmHWM") ?? 0) / 1024 }
}
