import Foundation
import Testing
@testable import Strata

/// The `strata` executable interrupted (SIGINT, as Ctrl-C sends) while it imports in batches:
/// it stops after its last acknowledged commit, says which lines it kept, exits with 1, and
/// the store holds exactly the commits it reported.
extension ImportCommandTests {
    @Test func anInterruptedImportKeepsExactlyTheReportedCommits() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        // Enough lines that the import is still running when the interrupt arrives.
        let count = 400_000
        let file = try catalog.file("artists.jsonl", (1...count).map { #"{"entity": "Artist", "values": {"artistID": \#($0)}}"# })
        let strata = try #require(BuiltExecutable.url(named: "strata") as URL?, "the strata executable is built next to the tests")
        let child = try ChildProcess(["import", catalog.path, file, "--batch-size", "1000", "--progress", "json"], executable: strata)
        let first = try await onOwnThread { try child.expectLine(within: .seconds(60)) }
        #expect(first?.hasPrefix(#"{"event":"committed""#) == true, "\(String(describing: first))")
        kill(child.pid, SIGINT)
        let rest = try await onOwnThread { try child.remainingLines(within: .seconds(60)) }
        let exit = try await onOwnThread { try child.waitForExit(within: .seconds(60)) }
        #expect(exit.reason == .exit && exit.status == 1, "\(exit)")
        // Every line of standard output is one commit: the store holds exactly those.
        let commits = ([first].compactMap { $0 } + rest).filter { $0.hasPrefix(#"{"event":"committed""#) }
        let generation = try await catalog.generation()
        #expect(generation.count(of: "Artist") == commits.count * 1000, "\(commits.count) commits reported")
        #expect(generation.count(of: "Artist") < count, "the import ran to its end before the interrupt arrived")
        #expect(generation.transaction == UInt64(commits.count))
    }
}
