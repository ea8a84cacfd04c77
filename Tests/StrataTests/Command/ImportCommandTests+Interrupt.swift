import Foundation
import Testing
@testable import Strata

/// The `strata` executable interrupted (SIGINT, as Ctrl-C sends) while it imports in batches
/// from its standard input and waits for more: it stops after its last acknowledged commit
/// without waiting for the input to end, says which lines it kept, exits with 1, and the
/// store holds exactly the commits it reported.
extension ImportCommandTests {
    @Test func anInterruptedImportKeepsExactlyTheReportedCommits() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let strata = try #require(BuiltExecutable.url(named: "strata") as URL?, "the strata executable is built next to the tests")
        let child = try ChildProcess(["import", catalog.path, "-", "--batch-size", "1000", "--progress", "json"], executable: strata,
                                     readsErrors: true)
        func lines(_ keys: ClosedRange<Int>) -> Data {
            Data(keys.map { #"{"entity": "Artist", "values": {"artistID": \#($0)}}"# + "\n" }.joined().utf8)
        }
        // Two batches are committed; the third waits for more input.
        try child.writeInput(lines(1...2_500))
        for _ in 0..<2 {
            let line = try await onOwnThread { try child.expectLine(within: .seconds(60)) }
            #expect(line?.hasPrefix(#"{"event":"committed""#) == true, "\(String(describing: line))")
        }
        kill(child.pid, SIGINT)
        let stopping = try await onOwnThread { () -> String? in
            // (After a line break that ends a progress bar drawn on a terminal.)
            while case .line(let line) = child.readErrorLine(until: .now + .seconds(60)) {
                if !line.isEmpty { return line }
            }
            return nil
        }
        #expect(stopping?.contains("stopping the import after its last acknowledged commit") == true, "\(String(describing: stopping))")
        // It does not wait for more input (its standard input stays open until it exits).
        let rest = try await onOwnThread { try child.remainingLines(within: .seconds(60)) }
        #expect(rest.isEmpty, "\(rest)")
        var errors: [String] = []
        while case .line(let line) = child.readErrorLine(until: .now + .seconds(60)) { errors.append(line) }
        let exit = try await onOwnThread { try child.waitForExit(within: .seconds(60)) }
        child.closeInput()
        #expect(exit.reason == .exit && exit.status == 1, "\(exit)")
        #expect(errors.first?.contains("lines 1–2000 are committed (2 transactions through 2) and nothing after them") == true, "\(errors)")
        let generation = try await catalog.generation()
        #expect(generation.count(of: "Artist") == 2_000)
        #expect(generation.transaction == 2)
    }
}
