// Strata's benchmarks.
//
//     swift run -c release strata-benchmarks [journal | store | contexts | queries | migrations | GROUP ...] [--quick] [--json FILE] [--dir DIR]
//
// With no group, every benchmark runs; `journal` runs every journal benchmark, `store` every store benchmark, `contexts`
// every context benchmark, `queries` every query benchmark, `migrations` every migration benchmark. Files go to a fresh directory
// inside DIR (default: the temporary directory), removed at the end; put DIR on the disk
// you want to measure.

import Foundation

struct Group {
    var name: String
    var run: (BenchmarkContext) async throws -> GroupReport
}

let journalGroups: [Group] = [
    Group(name: FsyncLatency.name) { try FsyncLatency.run($0) },
    Group(name: SmallAppend.name) { try await SmallAppend.run($0) },
    Group(name: BulkAppend.name) { try await BulkAppend.run($0) },
    Group(name: GroupCommit.name) { try await GroupCommit.run($0) },
    Group(name: Replay.name) { try await Replay.run($0) },
]

let contextGroups: [Group] = [
    Group(name: InsertSave.name) { try await InsertSave.run($0) },
    Group(name: ChildSave.name) { try await ChildSave.run($0) },
    Group(name: SmallSave.name) { try await SmallSave.run($0) },
    Group(name: Merge.name) { try await Merge.run($0) },
]

let storeGroups: [Group] = [
    Group(name: BulkCommit.name) { try await BulkCommit.run($0) },
    Group(name: LongListCommit.name) { try await LongListCommit.run($0) },
]

let queryGroups: [Group] = [
    Group(name: QueryFetch.name) { try await QueryFetch.run($0) },
    Group(name: QueryResults.name) { try await QueryResults.run($0) },
]

let migrationGroups: [Group] = [
    Group(name: Migrate.name) { try await Migrate.run($0) },
]

let allGroups = journalGroups + storeGroups + contextGroups + queryGroups + migrationGroups

let usage = """
    usage: strata-benchmarks [journal | store | contexts | queries | migrations | GROUP ...] [--quick] [--json FILE] [--dir DIR]

      (no group)    every benchmark: the journal's, the store's, the contexts', the queries', then the migrations'
      journal       every journal benchmark: \(journalGroups.map(\.name).joined(separator: ", "))
      store         every store benchmark: \(storeGroups.map(\.name).joined(separator: ", "))
      contexts      every context benchmark: \(contextGroups.map(\.name).joined(separator: ", "))
      queries       every query benchmark: \(queryGroups.map(\.name).joined(separator: ", "))
      migrations    every migration benchmark: \(migrationGroups.map(\.name).joined(separator: ", "))
      GROUP         one benchmark alone (one of the names above)
      --quick       a small, fast version, for smoke testing (figures are not meaningful)
      --json FILE   also write the results as JSON to FILE
      --dir DIR     where to put the test files (default: the temporary directory)
    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

var quick = false
var jsonPath: String?
var parent = FileManager.default.temporaryDirectory.path
var selected: [Group] = []
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--quick": quick = true
    case "--json":
        guard let path = arguments.popFirst() else { fail("--json needs a file name\n\n" + usage) }
        jsonPath = path
    case "--dir":
        guard let path = arguments.popFirst() else { fail("--dir needs a directory\n\n" + usage) }
        parent = path
    case "-h", "--help":
        print(usage)
        exit(0)
    case "journal": selected += journalGroups
    case "store": selected += storeGroups
    case "contexts": selected += contextGroups
    case "queries": selected += queryGroups
    case "migrations": selected += migrationGroups
    default:
        guard let group = allGroups.first(where: { $0.name == argument }) else {
            fail("unknown benchmark or option \"\(argument)\"\n\n" + usage)
        }
        selected.append(group)
    }
}
if selected.isEmpty { selected = allGroups }

let directory = parent + "/strata-benchmarks-\(UUID().uuidString)"
do {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
} catch {
    fail("cannot create the test directory \(directory): \(error)")
}

let machine = MachineDescription.describe(testDirectory: directory)
let context = BenchmarkContext(quick: quick, directory: directory)
var report = RunReport(
    machine: machine, mode: quick ? "quick" : "full", directory: directory,
    startedAt: ISO8601DateFormatter().string(from: Date()), loadAverageBefore: loadAverage(), loadAverageAfter: "")

print("Strata benchmarks (\(report.mode))")
print(machine.summary)
print("test directory: \(directory)")
print("load average before: \(report.loadAverageBefore)")
print("figures are medians over the runs shown; MB = 10^6 bytes")

for group in selected {
    let start = monotonicNanoseconds()
    do {
        var result = try await group.run(context)
        result.parameters["elapsed seconds"] = formatted(secondsSince(start))
        result.parameters["load average after"] = loadAverage()
        print(table(result))
        report.groups.append(result)
    } catch {
        removeItem(directory)
        fail("benchmark \(group.name) failed: \(error)")
    }
}

removeItem(directory)
report.loadAverageAfter = loadAverage()
print("\nload average after: \(report.loadAverageAfter)")
if let jsonPath {
    do {
        try writeJSON(report, to: jsonPath)
        print("results written to \(jsonPath)")
    } catch {
        fail("cannot write \(jsonPath): \(error)")
    }
}
