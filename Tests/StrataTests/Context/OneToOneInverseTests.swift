import Foundation
import Testing
@testable import Strata

/// One-to-one relationships (both sides to-one) where a merge policy decides between two
/// changes of the same pair: in a child's save into its parent, in a merge into a context
/// with a change of its own, and in a commit to the store. Whatever the policy keeps, both
/// sides of every pair agree afterwards — in the contexts, and in the store once saved and
/// opened again. (Putting back a dropped change left the previous partner's side empty: a
/// desk named its old owner, who had no desk.)
@Suite struct OneToOneInverseTests {
    /// People and desks: each person has at most one desk, each desk at most one owner.
    static let schema: Schema = try! Schema("Desks", version: 1, entities: [
        Entity("Person", attributes: [Attribute("name", .string)],
               relationships: [Relationship("desk", to: "Desk", inverse: "owner")]),
        Entity("Desk", attributes: [Attribute("label", .string)],
               relationships: [Relationship("owner", to: "Person", inverse: "desk")]),
    ])

    /// p1 sits at d0 and p2 at d1; d2 is free.
    struct Objects: Sendable {
        var p1, p2, d0, d1, d2: ObjectID
        var all: [ObjectID] { [p1, p2, d0, d1, d2] }
    }

    /// A store of people and desks, a coordinator and a context in a tier, with its ancestors.
    struct Fixture {
        let directory = TemporaryDirectory("strata-one-to-one")
        let store: Store
        let coordinator: Coordinator
        let context: ObjectContext
        let ancestors: [ObjectContext]
        let o: Objects

        init(_ tier: Tier) async throws {
            store = try StoreTesting.create(in: directory, schema: OneToOneInverseTests.schema, durability: .relaxed)
            let people = store.allocateObjectIDs(for: "Person", count: 2), desks = store.allocateObjectIDs(for: "Desk", count: 3)
            o = Objects(p1: people[0], p2: people[1], d0: desks[0], d1: desks[1], d2: desks[2])
            try await store.commit(ChangeSet(author: "setup", inserted: [
                RowImage(id: o.p1, values: [.string("one"), .object(o.d0)]),
                RowImage(id: o.p2, values: [.string("two"), .object(o.d1)]),
                RowImage(id: o.d0, values: [.string("zero"), .object(o.p1)]),
                RowImage(id: o.d1, values: [.string("one"), .object(o.p2)]),
                RowImage(id: o.d2, values: [.string("two"), .null]),
            ]))
            coordinator = Coordinator(store: store)
            (context, ancestors) = tier.contexts(on: coordinator)
        }

        /// Another context saving where `context` saves.
        func sibling() -> ObjectContext {
            if let parent = ancestors.first { return ObjectContext(parent: parent, name: "other") }
            return ObjectContext(coordinator: coordinator, name: "other")
        }

        /// Problems of the store opened again (the store is closed).
        func reopenedProblems() async throws -> [Generation.IntegrityProblem] {
            try await integrityProblemsAfterReopening(store, in: directory, schema: OneToOneInverseTests.schema)
        }
    }

    /// p1 takes p2's desk d1: p2 has none, d0 no owner.
    static func ours(_ c: isolated ObjectContext, _ o: Objects) {
        c.object(with: o.p1)["desk"] = .object(o.d1)
    }

    /// p1 takes the free desk d2: d0 has no owner.
    static func theirs(_ c: isolated ObjectContext, _ o: Objects) {
        c.object(with: o.p1)["desk"] = .object(o.d2)
    }

    /// Loads every object, so that the context holds them all.
    static func readAll(_ c: isolated ObjectContext, _ o: Objects) {
        for id in o.all { _ = c.object(with: id)[id.entity == "Person" ? "desk" : "owner"] }
    }

    /// Who sits where, as a context shows it: each object's partner.
    static func seating(_ c: isolated ObjectContext, _ o: Objects) -> [ObjectID: ObjectID?] {
        var seating: [ObjectID: ObjectID?] = [:]
        for id in o.all { seating[id] = c.object(with: id)[id.entity == "Person" ? "desk" : "owner"].objectID }
        return seating
    }

    /// Who sits where in the store.
    static func seating(_ g: Generation, _ o: Objects) -> [ObjectID: ObjectID?] {
        var seating: [ObjectID: ObjectID?] = [:]
        for id in o.all { seating[id] = g.value(id, id.entity == "Person" ? "desk" : "owner")?.objectID }
        return seating
    }

    /// The seating when `theirs` stands: p1 at d2, p2 back at d1.
    static func theirSeating(_ o: Objects) -> [ObjectID: ObjectID?] {
        [o.p1: o.d2, o.p2: o.d1, o.d0: nil, o.d1: o.p2, o.d2: o.p1]
    }

    /// The seating when `ours` stands: p1 at d1, p2 without a desk.
    static func ourSeating(_ o: Objects) -> [ObjectID: ObjectID?] {
        [o.p1: o.d1, o.p2: nil, o.d0: nil, o.d1: o.p1, o.d2: nil]
    }

    static let parentTiers: [Tier] = [.root, .mainRoot, .child]

    @Test("a child's one-to-one change meeting its parent's change of the same pair leaves every pair in step",
          arguments: parentTiers, [MergePolicy.storeWins, .rollback, .contextWins, .overwrite])
    func childSave(tier: Tier, policy: MergePolicy) async throws {
        let f = try await Fixture(tier)
        let o = f.o
        let parent = f.context
        let child = ObjectContext(parent: parent, name: "editor")
        await child.setMergePolicy(policy)
        await child.perform { c in Self.readAll(c, o) }
        await parent.perform { c in
            Self.readAll(c, o)
            Self.theirs(c, o)
        }
        await child.perform { c in Self.ours(c, o) }
        try await child.save()
        let parentKept = policy == .storeWins || policy == .rollback
        let expected = parentKept ? Self.theirSeating(o) : Self.ourSeating(o)
        let (seating, disagreements) = await parent.perform { c in (Self.seating(c, o), relationshipDisagreements(c)) }
        #expect(disagreements.isEmpty, "the parent: \(disagreements)")
        #expect(seating == expected, "the parent: \(seating)")
        let childDisagreements = await child.perform { c in relationshipDisagreements(c) }
        #expect(childDisagreements.isEmpty, "the child: \(childDisagreements)")
        for context in [parent] + f.ancestors { try await context.save() }
        #expect(Self.seating(f.store.currentGeneration, o) == expected)
        let problems = try await f.reopenedProblems()
        #expect(problems.isEmpty, "\(problems)")
        f.directory.remove()
    }

    @Test("a merged one-to-one change meeting a pending change of the same pair leaves every pair in step",
          arguments: Tier.allCases, [MergePolicy.error, .storeWins, .rollback, .contextWins, .overwrite])
    func merge(tier: Tier, policy: MergePolicy) async throws {
        let f = try await Fixture(tier)
        let o = f.o
        await f.context.setMergePolicy(policy)
        await f.context.perform { c in
            Self.readAll(c, o)
            Self.ours(c, o)
        }
        let other = f.sibling()
        let saves = other.didSave()
        await other.perform { c in Self.theirs(c, o) }
        try await other.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await f.context.merge(save)
        let disagreements = await f.context.perform { c in relationshipDisagreements(c) }
        #expect(disagreements.isEmpty, "after the merge: \(disagreements)")
        do {
            try await f.context.save()
        } catch {
            #expect(error.code == .conflict && policy == .error, "\(error)")
            await f.store.close()
            f.directory.remove()
            return
        }
        for ancestor in f.ancestors { try await ancestor.save() }
        let expected = policy == .storeWins || policy == .rollback ? Self.theirSeating(o) : Self.ourSeating(o)
        #expect(Self.seating(f.store.currentGeneration, o) == expected, "\(Self.seating(f.store.currentGeneration, o))")
        let (seating, after) = await f.context.perform { c in (Self.seating(c, o), relationshipDisagreements(c)) }
        #expect(seating == expected && after.isEmpty, "after the save: \(seating), \(after)")
        let problems = try await f.reopenedProblems()
        #expect(problems.isEmpty, "\(problems)")
        f.directory.remove()
    }

    @Test("a one-to-one change committed under a per-key policy over another commit of the same pair never breaks a pair",
          arguments: [Tier.root, .mainRoot], [MergePolicy.storeWins, .rollback, .contextWins, .overwrite])
    func storeCommit(tier: Tier, policy: MergePolicy) async throws {
        let f = try await Fixture(tier)
        let o = f.o
        await f.context.setMergePolicy(policy)
        await f.context.perform { c in Self.readAll(c, o) }
        let other = f.sibling()
        await other.perform { c in Self.theirs(c, o) }
        try await other.save()
        await f.context.perform { c in Self.ours(c, o) }
        let before = f.store.currentGeneration
        do {
            try await f.context.save()
            let g = f.store.currentGeneration
            #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
            let (seating, after) = await f.context.perform { c in (Self.seating(c, o), relationshipDisagreements(c)) }
            #expect(seating == Self.seating(g, o) && after.isEmpty, "\(seating), \(after)")
            // Ours wins the person's desk, and the desk theirs gave that person lets it go.
            if policy == .contextWins { #expect(Self.seating(g, o) == Self.ourSeating(o)) }
        } catch {
            // Taking one side of a pair per key breaks the pair: refused, the store unchanged,
            // the context's change still pending and whole. (`contextWins` keeps the pair.)
            #expect(error.code == .inverseViolation && policy != .contextWins, "\(error)")
            #expect(f.store.currentGeneration.transaction == before.transaction)
            let (seating, after) = await f.context.perform { c in (Self.seating(c, o), relationshipDisagreements(c)) }
            #expect(seating == Self.ourSeating(o) && after.isEmpty, "\(seating), \(after)")
        }
        let problems = try await f.reopenedProblems()
        #expect(problems.isEmpty, "\(problems)")
        f.directory.remove()
    }
}
