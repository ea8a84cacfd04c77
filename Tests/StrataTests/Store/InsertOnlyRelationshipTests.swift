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

    /// Commits `graph` broken by `breaking`, expecting the refusal `code` naming `object` and `key`.
    static func expectRefusal(
        groups: Int, code: StoreError.Code, key: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ breaking: (inout Graph, Store) async throws -> ObjectID
    ) async throws {
        try await withStore { store in
            var graph = Graph(groups: groups, store: store)
            let object = try await breaking(&graph, store)
            let before = store.currentGeneration
            let error = await #expect(throws: StoreError.self, sourceLocation: sourceLocation) { try await store.commit(graph.changeSet) }
            #expect(error?.code == code, "\(String(describing: error))", sourceLocation: sourceLocation)
            #expect(error?.object == object && error?.key == key, "\(String(describing: error))", sourceLocation: sourceLocation)
            let after = store.currentGeneration
            #expect(after.transaction == before.transaction && after.totalCount == before.totalCount, sourceLocation: sourceLocation)
        }
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

    // MARK: One-to-many

    @Test(arguments: sizes) func aPersonNamingATeamThatDoesNotListThemIsRefused(groups: Int) async throws {
        try await Self.expectRefusal(groups: groups, code: .inverseViolation, key: "team") { graph, _ in
            let g = Self.brokenGroup(groups)
            graph.set(graph.teams[g], "members", .objects([graph.leaders[g]]))
            return graph.followers[g]
        }
    }

    @Test(arguments: sizes) func aTeamListingAPersonWhoNamesNoTeamIsRefused(groups: Int) async throws {
        try await Self.expectRefusal(groups: groups, code: .inverseViolation, key: "members") { graph, _ in
            let g = Self.brokenGroup(groups)
            graph.set(graph.followers[g], "team", .null)
            return graph.teams[g]
        }
    }

    /// The person names a team committed before, which this transaction does not change.
    @Test(arguments: sizes) func aPersonNamingATeamCommittedBeforeIsRefused(groups: Int) async throws {
        try await Self.expectRefusal(groups: groups, code: .inverseViolation, key: "team") { graph, store in
            let old = store.allocateObjectIDs(for: "Team")[0]
            try await store.commit(ChangeSet(inserted: [RowImage(id: old, values: [.string("old"), .objects([])])]))
            let g = Self.brokenGroup(groups)
            graph.set(graph.teams[g], "members", .objects([graph.leaders[g]]))
            graph.set(graph.followers[g], "team", .object(old))
            return graph.followers[g]
        }
    }

    @Test(arguments: sizes) func aTeamListingAPersonCommittedBeforeIsRefused(groups: Int) async throws {
        try await Self.expectRefusal(groups: groups, code: .inverseViolation, key: "members") { graph, store in
            let old = store.allocateObjectIDs(for: "Person")[0]
            try await store.commit(ChangeSet(inserted: [RowImage(id: old, values: [.string("old"), .null, .objects([]), .null, .objects([]), .null, .objects([])])]))
            let g = Self.brokenGroup(groups)
            graph.set(graph.teams[g], "members", .objects([graph.leaders[g], graph.followers[g], old]))
            return graph.teams[g]
        }
    }

    /// A team handed out but never inserted.
    @Test(arguments: sizes) func aPersonNamingATeamThatDoesNotExistIsRefused(groups: Int) async throws {
        try await Self.expectRefusal(groups: groups, code: .danglingReference, key: "team") { graph, store in
            let missing = store.allocateObjectIDs(for: "Team")[0]
            let g = Self.brokenGroup(groups)
            graph.set(graph.teams[g], "members", .objects([graph.leaders[g]]))
            graph.set(graph.followers[g], "team", .object(missing))
            return graph.followers[g]
        }
    }

    /// A person moved to another team that does not list them, while their team still
    /// does: their team, which comes before them, is named.
    @Test(arguments: sizes) func aPersonMovedWithoutEitherTeamAgreeingIsRefused(groups: Int) async throws {
        try await Self.expectRefusal(groups: groups, code: .inverseViolation, key: "members") { graph, _ in
            let g = Self.brokenGroup(groups)
            graph.set(graph.followers[g], "team", .object(graph.teams[g - 1]))
            return graph.teams[g]
        }
    }

    /// A person names the team of the group before, which lists them in place of its own
    /// follower, who still names it: every entry the team side lists has its inverse.
    @Test(arguments: sizes) func aTeamListingAnotherTeamsPersonInPlaceOfItsOwnIsRefused(groups: Int) async throws {
        try await Self.expectRefusal(groups: groups, code: .inverseViolation, key: "team") { graph, _ in
            let g = Self.brokenGroup(groups)
            graph.set(graph.teams[g - 1], "members", .objects([graph.leaders[g - 1], graph.followers[g]]))
            graph.set(graph.teams[g], "members", .objects([graph.leaders[g]]))
            graph.set(graph.followers[g], "team", .object(graph.teams[g - 1]))
            return graph.followers[g - 1]
        }
    }

    // MARK: Many-to-many, one-to-one, within an entity

    @Test(arguments: sizes) func aPersonListingAClubThatDoesNotListThemIsRefused(groups: Int) async throws {
        try await Self.expectRefusal(groups: groups, code: .inverseViolation, key: "clubs") { graph, _ in
            let g = Self.brokenGroup(groups)
            graph.set(graph.clubs[g], "people", .objects([graph.leaders[g]]))
            return graph.followers[g]
        }
    }

    @Test(arguments: sizes) func aClubListingAPersonWhoDoesNotListItIsRefused(groups: Int) async throws {
        try await Self.expectRefusal(groups: groups, code: .inverseViolation, key: "people") { graph, _ in
            let g = Self.brokenGroup(groups)
            graph.set(graph.followers[g], "clubs", .objects([]))
            return graph.clubs[g]
        }
    }

    @Test(arguments: sizes) func aBadgeNamingAPersonWhoHasNoBadgeIsRefused(groups: Int) async throws {
        try await Self.expectRefusal(groups: groups, code: .inverseViolation, key: "holder") { graph, _ in
            let g = Self.brokenGroup(groups)
            graph.set(graph.followers[g], "badge", .null)
            return graph.badges[2 * g + 1]
        }
    }

    @Test(arguments: sizes) func aPersonNamingABadgeThatNamesNoOneIsRefused(groups: Int) async throws {
        try await Self.expectRefusal(groups: groups, code: .inverseViolation, key: "badge") { graph, _ in
            let g = Self.brokenGroup(groups)
            graph.set(graph.badges[2 * g + 1], "holder", .null)
            return graph.followers[g]
        }
    }

    /// Two people name one badge, which names the second.
    @Test(arguments: sizes) func twoPeopleNamingOneBadgeAreRefused(groups: Int) async throws {
        try await Self.expectRefusal(groups: groups, code: .inverseViolation, key: "badge") { graph, _ in
            let g = Self.brokenGroup(groups)
            graph.set(graph.leaders[g], "badge", .object(graph.badges[2 * g + 1]))
            graph.set(graph.badges[2 * g], "holder", .null)
            return graph.leaders[g]
        }
    }

    @Test(arguments: sizes) func aFriendshipOnOneSideIsRefused(groups: Int) async throws {
        try await Self.expectRefusal(groups: groups, code: .inverseViolation, key: "friends") { graph, _ in
            let g = Self.brokenGroup(groups)
            graph.set(graph.followers[g], "friends", .objects([]))
            return graph.leaders[g]
        }
    }

    @Test(arguments: sizes) func aMentorNamedByAPersonTheyDoNotListIsRefused(groups: Int) async throws {
        try await Self.expectRefusal(groups: groups, code: .inverseViolation, key: "mentor") { graph, _ in
            let g = Self.brokenGroup(groups)
            graph.set(graph.leaders[g], "mentees", .objects([]))
            return graph.followers[g]
        }
    }

    @Test(arguments: sizes) func aMenteeListedByAPersonTheyDoNotNameIsRefused(groups: Int) async throws {
        try await Self.expectRefusal(groups: groups, code: .inverseViolation, key: "mentees") { graph, _ in
            let g = Self.brokenGroup(groups)
            graph.set(graph.followers[g], "mentor", .null)
            return graph.leaders[g]
        }
    }
}
