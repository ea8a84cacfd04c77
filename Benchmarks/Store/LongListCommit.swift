import Foundation
import Strata

/// One object added to, then one taken from, a long to-many list, committed straight to a
/// store: what a save that changes one member of a list of N costs at the store (its
/// conflict, constraint and inverse checks, the journal, the new generation). Each change
/// set names the list's whole new value, as a context's save does; the commit should cost
/// in proportion to the list, not to its square (it once compared every old member with
/// every new one, under the commit lock: 14 s at 20,000 members in a debug build).
enum LongListCommit {
    static let name = "long-list"

    static let schema: Schema = {
        do {
            return try Schema("Lists", entities: [
                Entity("Owner", attributes: [Attribute("label", .string)],
                       relationships: [Relationship("items", to: "Item", inverse: "owner", toMany: true)]),
                Entity("Item", attributes: [Attribute("n", .int)],
                       relationships: [Relationship("owner", to: "Owner", inverse: "items")]),
            ])
        } catch {
            fatalError("the list schema is invalid: \(error)")
        }
    }()

    static func run(_ context: BenchmarkContext) async throws -> GroupReport {
        let sizes = context.quick ? [1_000, 10_000] : [10_000, 100_000, 1_000_000]
        let changes = context.quick ? 3 : 15
        var report = GroupReport(name: name, title: "One member added to and taken from a long to-many list, committed to a store")
        report.parameters = ["list sizes": sizes.map(String.init).joined(separator: ", "), "commits per size and kind": String(changes),
                             "durability": "none"]
        for size in sizes {
            let store = try Store.create(at: context.path("long-list"), schema: schema, configuration: .init(durability: .none))
            let owner = store.allocateObjectIDs(for: "Owner")[0]
            var items = store.allocateObjectIDs(for: "Item", count: size)
            var rows = [RowImage(id: owner, values: [.string("owner"), .objects(items)])]
            for (k, item) in items.enumerated() { rows.append(RowImage(id: item, values: [.int(Int64(k)), .object(owner)])) }
            try await store.commit(ChangeSet(author: "setup", inserted: rows))
            var adds: [Double] = [], removals: [Double] = []
            for k in 0..<changes {
                // Add one new item at the end.
                let added = store.allocateObjectIDs(for: "Item")[0]
                let g = store.currentGeneration
                let before = g.object(owner)!
                let add = ChangeSet(author: "add", inserted: [RowImage(id: added, values: [.int(Int64(size + k)), .object(owner)])],
                                    updated: [ObjectUpdate(id: owner, baseVersion: before.version, baseValues: before.values,
                                                        changes: [PropertyChange(index: 1, value: .objects(items + [added]))])])
                var start = monotonicNanoseconds()
                try await store.commit(add)
                adds.append(secondsSince(start))
                items.append(added)
                // Delete one from the middle (its owner lets go of it in the same save).
                let removed = items.remove(at: items.count / 2)
                let h = store.currentGeneration
                let current = h.object(owner)!, gone = h.object(removed)!
                let remove = ChangeSet(author: "remove",
                                       updated: [ObjectUpdate(id: owner, baseVersion: current.version, baseValues: current.values,
                                                           changes: [PropertyChange(index: 1, value: .objects(items))])],
                                       deleted: [ObjectDeletion(id: removed, baseVersion: gone.version)])
                start = monotonicNanoseconds()
                try await store.commit(remove)
                removals.append(secondsSince(start))
            }
            let problems = store.currentGeneration.integrityProblems()
            guard problems.isEmpty else { throw BenchmarkError("the long list broke its store: \(problems.prefix(3))") }
            await store.close()
            report.measurements.append(Measurement("add one to a list of \(size)", "ms", runs: adds.map { $0 * 1000 }))
            report.measurements.append(Measurement("delete one from a list of \(size)", "ms", runs: removals.map { $0 * 1000 }))
        }
        return report
    }
}
