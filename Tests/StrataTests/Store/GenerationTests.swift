import Foundation
import Synchronization
import Testing
@testable import Strata

/// A flag one task raises and others watch.
final class Flag: Sendable {
    private let raised = Atomic<Bool>(false)
    func raise() { raised.store(true, ordering: .releasing) }
    var isRaised: Bool { raised.load(ordering: .acquiring) }
}

@Suite struct GenerationTests {
    /// Accounts between which money moves; the total never changes.
    ///
    /// Every write also sets `stamp` to a value no other write uses. Three-way merging
    /// treats two saves that write the same value as agreeing, so without the stamp two
    /// transfers could coincidentally write equal balances and both be kept; with it, any
    /// concurrent write to the same account is a conflict, and the read-modify-write of a
    /// transfer is serialised.
    static let bank: Schema = try! Schema("Bank", entities: [
        Entity("Account", attributes: [Attribute("number", .int, unique: true), Attribute("balance", .int, min: .int(0)),
                                       Attribute("stamp", .int)]),
    ])
    static let accountCount = 16
    static let initialBalance: Int64 = 1_000
    static let total = Int64(accountCount) * initialBalance

    struct Transfer: Sendable {
        var transaction: UInt64
        var from: Int
        var to: Int
        var amount: Int64
    }

    /// A generation a reader kept, with the balances it read from it then.
    struct Sample: Sendable {
        var generation: Generation
        var balances: [Int64]
    }

    struct ReaderReport: Sendable {
        var samples: [Sample] = []
        var reads = 0
        var distinctGenerations = 0
        var problems: [String] = []
    }

    enum Part: Sendable {
        case transfers([[Transfer]], conflicts: Int)
        case reader(ReaderReport)
    }

    static func balances(_ g: Generation, _ ids: [ObjectID]) -> [Int64] {
        ids.map { id in
            guard case .int(let value)? = g.value(id, "balance") else { return -1 }
            return value
        }
    }

    static func openAccounts(_ store: Store) async throws -> [ObjectID] {
        let ids = store.allocateObjectIDs(for: "Account", count: accountCount)
        try await store.commit(ChangeSet(author: "bank", inserted: ids.enumerated().map { k, id in
            RowImage(id: id, values: [.int(Int64(k)), .int(initialBalance), .int(0)])
        }))
        return ids
    }

    /// Moves random amounts between random accounts until `count` transfers are committed,
    /// reading the current generation before each and retrying on conflict.
    static func transfer(_ store: Store, _ ids: [ObjectID], writer: Int, count: Int) async throws -> ([Transfer], conflicts: Int) {
        var rng = SeededGenerator(seed: UInt64(writer + 1) * 7_919)
        var done: [Transfer] = []
        var conflicts = 0
        var tries = 0
        while done.count < count {
            try Task.checkCancellation()
            tries += 1
            let g = store.currentGeneration
            let balances = balances(g, ids)
            let from = balances.indices.filter { balances[$0] > 0 }.randomElement(using: &rng)!
            var to = Int.random(in: 0..<(ids.count - 1), using: &rng)
            if to >= from { to += 1 }
            let amount = Int64.random(in: 1...min(balances[from], 200), using: &rng)
            let stamp = Value.int(Int64(writer) << 32 | Int64(tries))
            let changes = ChangeSet(author: "writer \(writer)", updated: [
                g.update(ids[from], ["balance": .int(balances[from] - amount), "stamp": stamp]),
                g.update(ids[to], ["balance": .int(balances[to] + amount), "stamp": stamp]),
            ])
            switch await attempt(store, changes) {
            case .success(let result):
                #expect(result.resolvedConflicts.isEmpty)
                done.append(Transfer(transaction: result.transaction, from: from, to: to, amount: amount))
            case .failure(let error) where error.code == .conflict:
                conflicts += 1
            case .failure(let error):
                throw error
            }
        }
        return (done, conflicts)
    }

    /// Reads the current generation over and over until `stop` is raised, checking each.
    static func read(_ store: Store, _ ids: [ObjectID], until stop: Flag) async throws -> ReaderReport {
        var report = ReaderReport()
        var last: UInt64 = 0
        func problem(_ text: String) { if report.problems.count < 10 { report.problems.append(text) } }
        while !stop.isRaised {
            try Task.checkCancellation()
            let g = store.currentGeneration
            if g.transaction < last { problem("transaction went back from \(last) to \(g.transaction)") }
            if g.transaction != last { report.distinctGenerations += 1 }
            last = g.transaction
            let balances = balances(g, ids)
            if balances.reduce(0, +) != total { problem("generation \(g.transaction): total \(balances.reduce(0, +)), balances \(balances)") }
            if balances.contains(where: { $0 < 0 }) { problem("generation \(g.transaction): negative balance in \(balances)") }
            if g.count(of: "Account") != accountCount { problem("generation \(g.transaction): \(g.count(of: "Account")) accounts") }
            if report.reads % 64 == 0 && !g.integrityProblems().isEmpty {
                problem("generation \(g.transaction): \(g.integrityProblems())")
            }
            if report.reads % 8 == 0 && report.samples.count < 300 { report.samples.append(Sample(generation: g, balances: balances)) }
            report.reads += 1
            await Task.yield()
        }
        return report
    }

    @Test(arguments: [Durability.none, .full])
    func readersSeeOnlyWholeTransactionsWhileTransfersCommit(durability: Durability) async throws {
        let directory = TemporaryDirectory("strata-generation")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, schema: Self.bank, durability: durability)
        let ids = try await Self.openAccounts(store)
        let writers = 4
        let perWriter = 128
        let stop = Flag()

        let parts = try await withTimeout(120, "\(writers * perWriter) transfers with readers running") {
            try await withThrowingTaskGroup(of: Part.self) { group in
                group.addTask {
                    defer { stop.raise() }
                    return try await withThrowingTaskGroup(of: ([Transfer], conflicts: Int).self) { writing in
                        for writer in 0..<writers {
                            writing.addTask { try await Self.transfer(store, ids, writer: writer, count: perWriter) }
                        }
                        var all: [[Transfer]] = []
                        var conflicts = 0
                        for try await (transfers, c) in writing {
                            all.append(transfers)
                            conflicts += c
                        }
                        return .transfers(all, conflicts: conflicts)
                    }
                }
                for _ in 0..<2 {
                    group.addTask { .reader(try await Self.read(store, ids, until: stop)) }
                }
                var parts: [Part] = []
                for try await part in group { parts.append(part) }
                return parts
            }
        }

        var transfers: [Transfer] = []
        var readers: [ReaderReport] = []
        for part in parts {
            switch part {
            case .transfers(let all, _): transfers = all.flatMap { $0 }
            case .reader(let report): readers.append(report)
            }
        }
        let committed = writers * perWriter
        #expect(transfers.count == committed)
        // Every transfer got its own transaction, and nothing else was committed.
        #expect(Set(transfers.map(\.transaction)) == Set((2...UInt64(committed + 1)).map { $0 }))
        transfers.sort { $0.transaction < $1.transaction }

        /// The balances after every transfer up to and including `transaction`.
        func expectedBalances(through transaction: UInt64) -> [Int64] {
            var balances = [Int64](repeating: Self.initialBalance, count: Self.accountCount)
            for t in transfers where t.transaction <= transaction {
                balances[t.from] -= t.amount
                balances[t.to] += t.amount
            }
            return balances
        }

        let final = store.currentGeneration
        #expect(final.transaction == UInt64(committed + 1))
        #expect(Self.balances(final, ids) == expectedBalances(through: final.transaction), "a transfer was lost")
        #expect(final.integrityProblems().isEmpty)

        for (r, report) in readers.enumerated() {
            #expect(report.problems.isEmpty, "reader \(r): \(report.problems)")
            // A generation holds exactly the transactions up to its number...
            let partial = report.samples.filter { $0.balances != expectedBalances(through: $0.generation.transaction) }
            #expect(partial.isEmpty, """
                reader \(r): \(partial.count) of \(report.samples.count) generations are not the transfers up to their number, \
                first \(partial.first.map { "\($0.generation.transaction): \($0.balances)" } ?? "")
                """)
            // ...and still reads the same, however many commits followed.
            let changed = report.samples.filter { Self.balances($0.generation, ids) != $0.balances }
            #expect(changed.isEmpty, "reader \(r): \(changed.count) pinned generations changed, first \(changed.first?.generation.transaction ?? 0)")
        }
        #expect(readers.map(\.distinctGenerations).reduce(0, +) >= 2, "the readers never saw a commit")
        await store.close()
    }

    @Test func pinnedGenerationNeverChanges() async throws {
        let directory = TemporaryDirectory("strata-generation")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        var builder = ChangeSetBuilder(base: store.currentGeneration)
        let artists = store.allocateObjectIDs(for: "Artist", count: 40)
        for (k, id) in artists.enumerated() { builder.insert(Songbook.artist(id, artistID: Int64(k), name: "Artist \(k)")) }
        try await store.commit(builder.changeSet())
        let pinned = store.currentGeneration
        let contents = pinned.allObjects

        // Change every object, delete half of them, insert others, reuse unique values.
        for round in 0..<5 {
            var next = ChangeSetBuilder(base: store.currentGeneration)
            for id in next.liveIDs(of: "Artist") { next.set(id, "name", .string("Round \(round)")) }
            try await store.commit(next.changeSet())
        }
        var deleting = ChangeSetBuilder(base: store.currentGeneration)
        for id in artists.prefix(20) { deleting.delete(id) }
        for (k, id) in store.allocateObjectIDs(for: "Artist", count: 20).enumerated() {
            deleting.insert(Songbook.artist(id, artistID: Int64(k), name: "New \(k)"))
        }
        try await store.commit(deleting.changeSet())

        #expect(pinned.transaction == 1)
        #expect(pinned.allObjects == contents)
        #expect(pinned.count(of: "Artist") == 40)
        for (k, id) in artists.enumerated() {
            #expect(pinned.object(of: "Artist", uniqueValue: .int(Int64(k)))?.id == id)
        }
        #expect(pinned.integrityProblems().isEmpty)
        let now = store.currentGeneration
        #expect(now.transaction == 7 && now.count(of: "Artist") == 40)
        #expect(now.object(of: "Artist", uniqueValue: .int(0))?.id != artists[0])
        await store.close()
    }
}
