#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// Real `strata import --batch-size` processes killed with SIGKILL at points chosen from a
/// seed: after the k-th durable-commit event read from the child's output. Every batch the
/// child acknowledged must be in the reopened store, and no batch may be there in part.
@Suite struct ImportKillTests {
    static let lines = 600
    static let batch = 20

    @Test func killedImportsKeepEveryAcknowledgedBatchAndNoPartialOne() async throws {
        let strata = try #require(StrataExecutable.url, "the strata executable was not built next to the tests")
        let directory = TemporaryDirectory("strata-import-kill")
        defer { directory.remove() }
        let file = directory.appending("artists.jsonl")
        // Albums refer to the artist on the line after them (a forward reference in the batch).
        var text = ""
        for n in 1...Self.lines {
            if n % 2 == 1 {
                text += #"{"entity": "Album", "values": {"albumID": \#(n), "title": "album \#(n)", "artist": \#(n + 1)}}"# + "\n"
            } else {
                text += #"{"entity": "Artist", "values": {"artistID": \#(n), "name": "artist \#(n)"}}"# + "\n"
            }
        }
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let batches = Self.lines / Self.batch
        var rng = SplitMix64(seed: 2026)
        var killedMidway = 0
        for run in 0..<24 {
            let store = directory.appending("store-\(run).strata")
            await (try Store.create(at: store, schema: CommandFixtures.catalog)).close()
            // Kill points spread over the whole import, the very start and the very end included.
            let killAfter = run == 0 ? 0 : run == 1 ? batches : rng.next(below: batches + 1)
            let child = try ChildProcess(["import", store, file, "--batch-size", String(Self.batch), "--progress", "json"], executable: strata)
            let acknowledged = try await onOwnThread { () throws -> Int in
                var objects = 0
                for _ in 0..<killAfter {
                    guard let line = try child.expectLine(within: .seconds(60)) else { break }
                    let event = try JSON.parse(line)
                    guard case .int(let count)? = event["objects"], event["event"] == .string("committed") else {
                        throw ChildProcessFailure(description: "unexpected output: \(line)")
                    }
                    objects = Int(count)
                }
                child.sendKill()
                try child.waitForExit(within: .seconds(60))
                return objects
            }
            let generation = try await Self.reopen(store)
            let count = generation.count(of: "Album") + generation.count(of: "Artist")
            #expect(count >= acknowledged, "run \(run): \(acknowledged) acknowledged, \(count) in the store")
            #expect(count % Self.batch == 0, "run \(run): \(count) objects is not a whole number of batches")
            #expect(generation.transaction == UInt64(count / Self.batch), "run \(run)")
            #expect(generation.integrityProblems().isEmpty, "run \(run)")
            for n in stride(from: 2, through: count, by: 2) {
                let artist = generation.object(of: "Artist", uniqueValue: .int(Int64(n)))
                #expect(artist?.values[3] == .objects([ObjectID(entity: "Album", number: UInt64(n / 2))]), "run \(run): artist \(n)")
            }
            if count > 0 && count < Self.lines { killedMidway += 1 }
        }
        #expect(killedMidway >= 10, "too few runs were killed in the middle of the import")
    }

    /// Opens a store for writing (which cuts a torn tail) and returns its contents.
    static func reopen(_ path: String) async throws -> Generation {
        let store = try Store.open(at: path)
        let generation = store.currentGeneration
        await store.close()
        return generation
    }
}
