import Foundation
import Testing
@testable import Strata

/// A transaction that only inserts has each relationship's targets looked up from one side
/// only, the other side's entries counted (``CommitPlan/checkInserted(_:in:lists:tally:)``).
/// Every kind of relationship, broken from either side — in a change set small enough for
/// one thread and in one large enough for two — is refused with the error a pass that
/// follows every relationship finds first, and the store is left unchanged.
@Suite struct InsertOnlyRelationshipTests {
    /// One-to-many (`Team.members`/`Person.team`), many-to-many (`Person.clubs`/`Club.people`),
    /// one-to-one (`Person.badge`/`Badge.holder`), a to-many relationship that is its own
    /// inverse (`Person.friends`) and one-to-many within an entity (`Person.mentor`/`mentees`).
    static let schema: Schema = try! Schema("Clubs", version: 1, entities: [
        Entity("Team", attributes: [Attribute("name", .string)],
               relationships: [Relationship("members", to: "Person", inverse: "team", toMany: true)]),
        Entity("Person", attributes: [Attribute("name", .string)],
               relationships: [Relationship("team", to: "Team", inverse: "members"),
                               Relationship("clubs", to: "Club", inverse: "people", toMany: true),
                               Relationship("badge", to: "Badge", inverse: "holder"),
                               Relationship("friends", to: "Person", inverse: "friends", toMany: true),
                               Relationship("mentor", to: "Person", inverse: "mentees"),
                               Relationship("mentees", to: "Person", inverse: "mentor", toMany: true)]),
        Entity("Club", attributes: [Attribute("name", .string)],
               relationships: [Relationship("people", to: "Person", inverse: "clubs", toMany: true)]),
        Entity("Badge", attributes: [Attribute("code", .string)],
               relationships: [Relationship("holder", to: "Person", inverse: "badge")]),
    ])

    /// Groups of a team, two people (the first the second's mentor, friends with each other),
    /// a club they both belong to and a badge for each: six rows a group. 12 groups are
    /// checked on one thread, 700 on two.
    static let sizes = [12, 700]

    /// The rows of `groups` groups in the order given, by ID, and the IDs in that order.
    struct Graph {
        var rows: [ObjectID: [Value]] = [:]
        var order: [ObjectID] = []
        var teams: [ObjectID] = [], leaders: [ObjectID] = [], followers: [ObjectID] = [], clubs: [ObjectID] = [], badges: [ObjectID] = []

        init(groups: Int, store: Store) {
            teams = store.allocateObjectIDs(for: "Team", count: groups)
            leaders = store.allocateObjectIDs(for: "Person", count: groups)
            followers = store.allocateObjectIDs(for: "Person", count: groups)
            clubs = store.allocateObjectIDs(for: "Club", count: groups)
            badges = store.allocateObjectIDs(for: "Badge", count: 2 * groups)
            for g in 0..<groups {
                let (team, leader, follower, club) = (teams[g], leaders[g], followers[g], clubs[g])
                let (leaderBadge, followerBadge) = (badges[2 * g], badges[2 * g + 1])
                add(leader, [.string("L\(g)"), .object(team), .objects([club]), .object(leaderBadge), .objects([follower]), .null, .objects([follower])])
                add(team, [.string("T\(g)"), .objects([leader, follower])])
                add(follower, [.string("F\(g)"), .object(team), .objects([club]), .object(followerBadge), .objects([leader]), .object(leader), .objects([])])
                add(club, [.string("C\(g)"), .objects([leader, follower])])
                add(leaderBadge, [.string("B\(2 * g)"), .object(leader)])
                add(followerBadge, [.string("B\(2 * g + 1)"), .object(follower)])
            }
        }

        private mutating func add(_ id: ObjectID, _ values: [Value]) {
            rows[id] = values
            order.append(id)
        }

        mutating func set(_ id: ObjectID, _ key: String, _ value: Value) {
            rows[id]![InsertOnlyRelationshipTests.schema.entity(named: id.entity)!.propertyIndex(named: key)!] = value
        }

        var changeSet: ChangeSet { ChangeSet(inserted: order.map { RowImage(id: $0, values: rows[$0]!) }) }
    }

    static func withStore(_ body: (Store) async throws -> Void) async throws {
        let directory = TemporaryDirectory("strata-insert-only-relationships")
        defer { directory.remove() }
        let store = try Store.create(at: directory.appending("store"), schema: schema, configuration: .init(durability: .none))
        try await body(store)
        await store.close()
    }

    /// The group broken: past the first half of a large change set, so that the chunks the
    /// second thread checks matter.
    static func brokenGroup(_ groups: Int) -> Int { groups * 2 / 3 }

    @Test(arguments: sizes) func aConsistentGraphCommitsWhole(groups: Int) async throws {
        try await Self.withStore { store in
            let graph = Graph(groups: groups, store: store)
            try await store.commit(graph.changeSet)
            let generation = store.currentGeneration
            #expect(generation.totalCount == 6 * groups)
            let g = Self.brokenGroup(groups)
            #expect(generation.object(graph.followers[g])?.values == graph.rows[graph.followers[g]])
            #expect(generation.object(graph.teams[g])?.values == graph.rows[graph.teams[g]])
        }
    }

    /// A way to break the graph of group `g`, and the refusal it must meet: its code, key,
    /// and the object `apply` returns.
    struct Breakage: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let code: StoreError.Code
        let key: String
        let apply: @Sendable (_ graph: inout Graph, _ g: Int, Store) async throws -> ObjectID

        init(_ description: String, _ code: StoreError.Code = .inverseViolation, key: String,
             _ apply: @escaping @Sendable (_ graph: inout Graph, _ g: Int, Store) async throws -> ObjectID) {
            testDescription = description
            self.code = code
            self.key = key
            self.apply = apply
        }
    }

    static let breakages: [Breakage] = [
        // One-to-many.
        Breakage("a person naming a team that does not list them", key: "team") { graph, g, _ in
            graph.set(graph.teams[g], "members", .objects([graph.leaders[g]]))
            return graph.followers[g]
        },
        Breakage("a team listing a person who names no team", key: "members") { graph, g, _ in
            graph.set(graph.followers[g], "team", .null)
            return graph.teams[g]
        },
        // The person names a team committed before, which this transaction does not change.
        Breakage("a person naming a team committed before", key: "team") { graph, g, store in
            let old = store.allocateObjectIDs(for: "Team")[0]
            try await store.commit(ChangeSet(inserted: [RowImage(id: old, values: [.string("old"), .objects([])])]))
            graph.set(graph.teams[g], "members", .objects([graph.leaders[g]]))
            graph.set(graph.followers[g], "team", .object(old))
            return graph.followers[g]
        },
        Breakage("a team listing a person committed before", key: "members") { graph, g, store in
            let old = store.allocateObjectIDs(for: "Person")[0]
            try await store.commit(ChangeSet(inserted: [RowImage(id: old, values: [.string("old"), .null, .objects([]), .null, .objects([]), .null, .objects([])])]))
            graph.set(graph.teams[g], "members", .objects([graph.leaders[g], graph.followers[g], old]))
            return graph.teams[g]
        },
        // A team handed out but never inserted.
        Breakage("a person naming a team that does not exist", .danglingReference, key: "team") { graph, g, store in
            let missing = store.allocateObjectIDs(for: "Team")[0]
            graph.set(graph.teams[g], "members", .objects([graph.leaders[g]]))
            graph.set(graph.followers[g], "team", .object(missing))
            return graph.followers[g]
        },
        // Their team, which comes before them, is named.
        Breakage("a person moved to a team that does not list them, their team still listing them", key: "members") { graph, g, _ in
            graph.set(graph.followers[g], "team", .object(graph.teams[g - 1]))
            return graph.teams[g]
        },
        // Every entry the team side lists has its inverse; the group before's follower has none.
        Breakage("a team listing another team's person in place of its own", key: "team") { graph, g, _ in
            graph.set(graph.teams[g - 1], "members", .objects([graph.leaders[g - 1], graph.followers[g]]))
            graph.set(graph.teams[g], "members", .objects([graph.leaders[g]]))
            graph.set(graph.followers[g], "team", .object(graph.teams[g - 1]))
            return graph.followers[g - 1]
        },
        // Many-to-many, one-to-one, within an entity.
        Breakage("a person listing a club that does not list them", key: "clubs") { graph, g, _ in
            graph.set(graph.clubs[g], "people", .objects([graph.leaders[g]]))
            return graph.followers[g]
        },
        Breakage("a club listing a person who does not list it", key: "people") { graph, g, _ in
            graph.set(graph.followers[g], "clubs", .objects([]))
            return graph.clubs[g]
        },
        Breakage("a badge naming a person who has no badge", key: "holder") { graph, g, _ in
            graph.set(graph.followers[g], "badge", .null)
            return graph.badges[2 * g + 1]
        },
        Breakage("a person naming a badge that names no one", key: "badge") { graph, g, _ in
            graph.set(graph.badges[2 * g + 1], "holder", .null)
            return graph.followers[g]
        },
        // The badge names the second.
        Breakage("two people naming one badge", key: "badge") { graph, g, _ in
            graph.set(graph.leaders[g], "badge", .object(graph.badges[2 * g + 1]))
            graph.set(graph.badges[2 * g], "holder", .null)
            return graph.leaders[g]
        },
        Breakage("a friendship on one side", key: "friends") { graph, g, _ in
            graph.set(graph.followers[g], "friends", .objects([]))
            return graph.leaders[g]
        },
        Breakage("a mentor named by a person they do not list", key: "mentor") { graph, g, _ in
            graph.set(graph.leaders[g], "mentees", .objects([]))
            return graph.followers[g]
        },
        Breakage("a mentee listed by a person they do not name", key: "mentees") { graph, g, _ in
            graph.set(graph.followers[g], "mentor", .null)
            return graph.leaders[g]
        },
    ]

    @Test(arguments: breakages, sizes)
    func aBrokenRelationshipIsRefusedAsAFullPassFindsIt(breakage: Breakage, groups: Int) async throws {
        try await Self.withStore { store in
            var graph = Graph(groups: groups, store: store)
            let object = try await breakage.apply(&graph, Self.brokenGroup(groups), store)
            let before = store.currentGeneration
            let error = await #expect(throws: StoreError.self) { try await store.commit(graph.changeSet) }
            #expect(error?.code == breakage.code, "\(String(describing: error))")
            #expect(error?.object == object && error?.key == breakage.key, "\(String(describing: error))")
            let after = store.currentGeneration
            #expect(after.transaction == before.transaction && after.totalCount == before.totalCount)
        }
    }
}
