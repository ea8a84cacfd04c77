import Foundation
import Testing
@testable import Strata

/// Commits a change set, returning what happened instead of throwing.
func attempt(_ store: Store, _ changes: ChangeSet) async -> Result<CommitResult, StoreError> {
    do {
        return .success(try await store.commit(changes))
    } catch {
        return .failure(error)
    }
}

@Suite struct ConflictTests {
    /// The objects every scenario starts from (transaction 1): three artists, one album by
    /// the first, and two album IDs allocated for scenarios that insert.
    struct Objects: Sendable {
        var a1, a2, a3, x, y, z: ObjectID

        static func commit(into store: Store) async throws -> Objects {
            let artists = store.allocateObjectIDs(for: "Artist", count: 3)
            let albums = store.allocateObjectIDs(for: "Album", count: 3)
            let objects = Objects(a1: artists[0], a2: artists[1], a3: artists[2], x: albums[0], y: albums[1], z: albums[2])
            try await store.commit(ChangeSet(author: "setup", inserted: [
                Songbook.artist(objects.a1, artistID: 1, name: "Base", albums: [objects.x]),
                Songbook.artist(objects.a2, artistID: 2, name: "Second"),
                Songbook.artist(objects.a3, artistID: 3, name: "Third"),
                Songbook.album(objects.x, albumID: 10, title: "Title", rating: 3.5, artist: objects.a1),
            ]))
            return objects
        }
    }

    static let later = Songbook.epoch.addingTimeInterval(1_000)
    static let latest = Songbook.epoch.addingTimeInterval(2_000)

    /// What a scenario's second save should end in.
    enum Outcome {
        /// Committed (or resolved to nothing); the keys listed hold these values, `nil` for an absent object.
        case committed([ObjectID: [String: Value]?], writes: Bool)
        /// Refused with this code; the store is unchanged.
        case refused(StoreError.Code)
    }

    /// Two saves based on the same generation: *theirs* commits first, then *ours*.
    enum Scenario: String, CaseIterable, Sendable {
        case sameKey, severalKeys, differentKeys, sameValue, deletedByThem, deletedByUs
        case relationshipSameKey, relationshipTheirsAttributeOurs, relationshipSameValue, toManyBothAdd

        func theirs(_ g: Generation, _ o: Objects) -> ChangeSet {
            switch self {
            case .sameKey: ChangeSet(author: "theirs", updated: [g.update(o.a1, ["name": .string("Theirs"), "artistID": .int(100)])])
            case .severalKeys:
                ChangeSet(author: "theirs", updated: [g.update(o.a1, ["name": .string("Theirs"), "createdAt": .date(ConflictTests.latest)]),
                                                      g.update(o.a2, ["name": .string("T2")])])
            case .differentKeys: ChangeSet(author: "theirs", updated: [g.update(o.a1, ["name": .string("Theirs")])])
            case .sameValue: ChangeSet(author: "theirs", updated: [g.update(o.a1, ["name": .string("Same")])])
            case .deletedByThem: ChangeSet(author: "theirs", deleted: [g.deletion(o.a2)])
            case .deletedByUs: ChangeSet(author: "theirs", updated: [g.update(o.a2, ["name": .string("Theirs")])])
            case .relationshipSameKey, .relationshipTheirsAttributeOurs, .relationshipSameValue:
                Self.move(o.x, from: o.a1, to: o.a2, in: g)
            case .toManyBothAdd:
                ChangeSet(author: "theirs", inserted: [Songbook.album(o.y, albumID: 20, artist: o.a2)],
                          updated: [g.update(o.a2, ["albums": .objects([o.y])])])
            }
        }

        func ours(_ g: Generation, _ o: Objects, _ policy: MergePolicy) -> ChangeSet {
            var changes: ChangeSet
            switch self {
            case .sameKey: changes = ChangeSet(updated: [g.update(o.a1, ["name": .string("Ours"), "createdAt": .date(ConflictTests.later)])])
            case .severalKeys:
                changes = ChangeSet(updated: [g.update(o.a1, ["name": .string("Ours"), "createdAt": .date(ConflictTests.later)]),
                                              g.update(o.a2, ["name": .string("O2")]),
                                              g.update(o.a3, ["name": .string("O3")])])
            case .differentKeys: changes = ChangeSet(updated: [g.update(o.a1, ["createdAt": .date(ConflictTests.later)])])
            case .sameValue: changes = ChangeSet(updated: [g.update(o.a1, ["name": .string("Same")])])
            case .deletedByThem: changes = ChangeSet(updated: [g.update(o.a2, ["name": .string("Ours")])])
            case .deletedByUs: changes = ChangeSet(deleted: [g.deletion(o.a2)])
            case .relationshipSameKey: changes = Self.move(o.x, from: o.a1, to: o.a3, in: g)
            case .relationshipTheirsAttributeOurs: changes = ChangeSet(updated: [g.update(o.x, ["title": .string("Ours")])])
            case .relationshipSameValue: changes = Self.move(o.x, from: o.a1, to: o.a2, in: g)
            case .toManyBothAdd:
                changes = ChangeSet(inserted: [Songbook.album(o.z, albumID: 21, artist: o.a2)],
                                    updated: [g.update(o.a2, ["albums": .objects([o.z])])])
            }
            changes.author = "ours"
            changes.mergePolicy = policy
            return changes
        }

        static func move(_ album: ObjectID, from old: ObjectID, to new: ObjectID, in g: Generation) -> ChangeSet {
            ChangeSet(author: "theirs", updated: [
                g.update(old, ["albums": .objects([])]), g.update(new, ["albums": .objects([album])]),
                g.update(album, ["artist": .object(new)]),
            ].sorted { $0.id < $1.id })
        }

        /// The conflicts found (thrown under `.error`, resolved under the others).
        func conflicts(_ o: Objects) -> [Conflict] {
            switch self {
            case .sameKey:
                [Conflict(object: o.a1, key: "name", base: .string("Base"), ours: .string("Ours"), theirs: .string("Theirs"), theirVersion: 2)]
            case .severalKeys:
                [Conflict(object: o.a1, key: "name", base: .string("Base"), ours: .string("Ours"), theirs: .string("Theirs"), theirVersion: 2),
                 Conflict(object: o.a1, key: "createdAt", base: .date(Songbook.epoch), ours: .date(ConflictTests.later),
                          theirs: .date(ConflictTests.latest), theirVersion: 2),
                 Conflict(object: o.a2, key: "name", base: .string("Second"), ours: .string("O2"), theirs: .string("T2"), theirVersion: 2)]
            case .differentKeys, .relationshipTheirsAttributeOurs: []
            case .sameValue:
                [Conflict(object: o.a1, key: "name", base: .string("Base"), ours: .string("Same"), theirs: .string("Same"), theirVersion: 2)]
            case .relationshipSameValue:
                [Conflict(object: o.x, key: "artist", base: .object(o.a1), ours: .object(o.a2), theirs: .object(o.a2), theirVersion: 2),
                 Conflict(object: o.a1, key: "albums", base: .objects([o.x]), ours: .objects([]), theirs: .objects([]), theirVersion: 2),
                 Conflict(object: o.a2, key: "albums", base: .objects([]), ours: .objects([o.x]), theirs: .objects([o.x]), theirVersion: 2)]
            case .deletedByThem: [Conflict(object: o.a2, key: nil, base: nil, ours: nil, theirs: nil, theirVersion: nil)]
            case .deletedByUs: [Conflict(object: o.a2, key: nil, base: nil, ours: nil, theirs: nil, theirVersion: 2)]
            case .relationshipSameKey:
                [Conflict(object: o.x, key: "artist", base: .object(o.a1), ours: .object(o.a3), theirs: .object(o.a2), theirVersion: 2),
                 Conflict(object: o.a1, key: "albums", base: .objects([o.x]), ours: .objects([]), theirs: .objects([]), theirVersion: 2)]
            case .toManyBothAdd:
                [Conflict(object: o.a2, key: "albums", base: .objects([]), ours: .objects([o.z]), theirs: .objects([o.y]), theirVersion: 2)]
            }
        }

        func outcome(_ policy: MergePolicy, _ o: Objects) -> Outcome {
            if policy == .error && !conflicts(o).isEmpty { return .refused(.conflict) }
            let later = Value.date(ConflictTests.later)
            switch (self, policy) {
            case (.sameKey, .storeWins):
                return .committed([o.a1: ["name": .string("Theirs"), "artistID": .int(100), "createdAt": later]], writes: true)
            case (.sameKey, .contextWins):
                return .committed([o.a1: ["name": .string("Ours"), "artistID": .int(100), "createdAt": later]], writes: true)
            case (.sameKey, .overwrite):
                // Our whole object: their change to artistID, which we did not touch, is undone too.
                return .committed([o.a1: ["name": .string("Ours"), "artistID": .int(1), "createdAt": later]], writes: true)
            case (.sameKey, _):  // rollback: nothing of ours is saved
                return .committed([o.a1: ["name": .string("Theirs"), "artistID": .int(100), "createdAt": .date(Songbook.epoch)]], writes: false)

            case (.severalKeys, .storeWins), (.severalKeys, .rollback):
                return .committed([o.a1: ["name": .string("Theirs"), "createdAt": .date(ConflictTests.latest)],
                                   o.a2: ["name": .string("T2")], o.a3: ["name": .string("O3")]], writes: true)
            case (.severalKeys, _):
                return .committed([o.a1: ["name": .string("Ours"), "createdAt": later],
                                   o.a2: ["name": .string("O2")], o.a3: ["name": .string("O3")]], writes: true)

            case (.differentKeys, .overwrite):
                return .committed([o.a1: ["name": .string("Base"), "createdAt": later]], writes: true)
            case (.differentKeys, _):
                return .committed([o.a1: ["name": .string("Theirs"), "createdAt": later]], writes: true)

            case (.sameValue, _):
                // Only contextWins writes our (equal) value again; the others keep theirs.
                return .committed([o.a1: ["name": .string("Same")]], writes: policy == .contextWins)

            case (.deletedByThem, _):
                return .committed([o.a2: nil], writes: false)

            case (.deletedByUs, .storeWins), (.deletedByUs, .rollback):
                return .committed([o.a2: ["name": .string("Theirs")]], writes: false)
            case (.deletedByUs, _):
                return .committed([o.a2: nil], writes: true)

            // The store's artist stays, and the one ours gave the album lets go of it again:
            // nothing is left to write.
            case (.relationshipSameKey, .storeWins), (.relationshipSameKey, .rollback):
                return .committed([o.x: ["artist": .object(o.a2)], o.a1: ["albums": .objects([])], o.a2: ["albums": .objects([o.x])],
                                   o.a3: ["albums": .objects([])]], writes: false)
            // Ours wins the album's artist; the artist theirs gave it lets go of it. (So under
            // overwrite, whose relationships go per key, as in contexts.)
            case (.relationshipSameKey, _):
                return .committed([o.x: ["artist": .object(o.a3)], o.a1: ["albums": .objects([])], o.a2: ["albums": .objects([])],
                                   o.a3: ["albums": .objects([o.x])]], writes: true)
            // Lists both sides changed are merged element by element: both albums stay.
            case (.toManyBothAdd, _):
                return .committed([o.a2: ["albums": .objects([o.y, o.z])], o.y: ["artist": .object(o.a2)], o.z: ["artist": .object(o.a2)]],
                                  writes: true)
            case (.relationshipTheirsAttributeOurs, _):
                return .committed([o.x: ["artist": .object(o.a2), "title": .string("Ours")],
                                   o.a1: ["albums": .objects([])], o.a2: ["albums": .objects([o.x])]], writes: true)

            case (.relationshipSameValue, _):
                return .committed([o.x: ["artist": .object(o.a2)], o.a1: ["albums": .objects([])], o.a2: ["albums": .objects([o.x])]],
                                  writes: policy == .contextWins)
            }
        }
    }

    /// Compares conflicts key by key. `theirs` of a whole-object conflict where the object
    /// still exists (we delete what they changed) carries no value and is not compared.
    static func expectSame(_ found: [Conflict], _ expected: [Conflict], _ context: Comment) {
        #expect(found.count == expected.count, context)
        for (f, e) in zip(found, expected) {
            #expect(f.object == e.object && f.key == e.key && f.base == e.base && f.ours == e.ours && f.theirVersion == e.theirVersion,
                    "\(context): found \(f), expected \(e)")
            if e.key != nil || e.theirVersion == nil { #expect(f.theirs == e.theirs, "\(context): theirs of \(f)") }
        }
    }

    @Test(arguments: MergePolicy.allCases, Scenario.allCases)
    func resolution(policy: MergePolicy, scenario: Scenario) async throws {
        let directory = TemporaryDirectory("strata-conflict")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let o = try await Objects.commit(into: store)
        let base = store.currentGeneration
        try await store.commit(scenario.theirs(base, o))
        let before = StoreState(store)
        #expect(before.transaction == 2)

        let result = await attempt(store, scenario.ours(base, o, policy))
        let context: Comment = "\(scenario) under \(policy)"
        switch (scenario.outcome(policy, o), result) {
        case (.refused(let code), .failure(let error)):
            #expect(error.code == code, "\(context): \(error)")
            if code == .conflict {
                Self.expectSame(error.conflicts, scenario.conflicts(o), context)
                #expect(error.object == error.conflicts.first?.object && error.key == error.conflicts.first?.key, context)
            }
            if let object = error.object { #expect(error.message.contains(object.description), context) }
            if let key = error.key { #expect(error.message.contains(key), context) }
            #expect(StoreState(store) == before, "\(context): a refused commit changed the store")
        case (.committed(let expected, let writes), .success(let committed)):
            Self.expectSame(committed.resolvedConflicts, policy == .error ? [] : scenario.conflicts(o), context)
            #expect(committed.transaction == (writes ? 3 : 2), context)
            #expect(store.journal.lastTransaction == committed.transaction, context)
            let now = store.currentGeneration
            #expect(now.transaction == committed.transaction && committed.generation.transaction == now.transaction, context)
            if !writes { #expect(StoreState(store) == before, "\(context): a commit that resolved to nothing wrote") }
            for (id, keys) in expected {
                guard let keys else {
                    #expect(now.object(id) == nil, "\(context): \(id) exists")
                    continue
                }
                for (key, value) in keys {
                    #expect(now.value(id, key) == value, "\(context): \(id).\(key)")
                }
            }
            #expect(now.integrityProblems().isEmpty, context)
        case (let outcome, let result):
            Issue.record("\(context): expected \(outcome), got \(result)")
        }

        // A refusal or a resolution leaves the store usable: the next save gets the next number.
        let next = store.currentGeneration
        let followUp = try await store.commit(ChangeSet(updated: [next.update(o.a3, ["name": .string("Follow-up")])]))
        #expect(followUp.transaction == next.transaction + 1)
        await store.close()
    }

    @Test(arguments: MergePolicy.allCases)
    func unchangedBaseNeverConflicts(policy: MergePolicy) async throws {
        let directory = TemporaryDirectory("strata-conflict")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let o = try await Objects.commit(into: store)
        var g = store.currentGeneration
        for round in 0..<3 {
            let changes = ChangeSet(updated: [g.update(o.a1, ["name": .string("Round \(round)")])], mergePolicy: policy)
            let result = try await store.commit(changes)
            #expect(result.resolvedConflicts.isEmpty)
            g = result.generation
            #expect(g.value(o.a1, "name") == .string("Round \(round)"))
            #expect(g.object(o.a1)?.version == result.transaction)
        }
        await store.close()
    }

    @Test func refusedConflictAtFullDurabilityLeavesFilesAndReopenedStateUnchanged() async throws {
        let directory = TemporaryDirectory("strata-conflict")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .full)
        let o = try await Objects.commit(into: store)
        let base = store.currentGeneration
        try await store.commit(Scenario.severalKeys.theirs(base, o))
        let before = StoreState(store)
        let histories = try store.journal.transactions()

        guard case .failure(let error) = await attempt(store, Scenario.severalKeys.ours(base, o, .error)) else {
            Issue.record("the conflicting save was accepted")
            return
        }
        #expect(error.code == .conflict)
        Self.expectSame(error.conflicts, Scenario.severalKeys.conflicts(o), "severalKeys at .full")
        #expect(error.description.contains("3 conflict(s)"))
        #expect(StoreState(store) == before)
        #expect(try store.journal.transactions() == histories)
        await store.close()

        let reopened = try StoreTesting.open(in: directory, durability: .full)
        #expect(reopened.currentGeneration.allObjects == before.objects)
        #expect(reopened.currentGeneration.transaction == 2)
        // The refusal used no transaction number.
        let g = reopened.currentGeneration
        let result = try await reopened.commit(ChangeSet(updated: [g.update(o.a1, ["name": .string("After")])]))
        #expect(result.transaction == 3)
        await reopened.close()
    }

    @Test("a deletion the merge policy drops keeps the references the save's nullify changes took from it",
          arguments: [MergePolicy.storeWins, .rollback])
    func droppedDeletionKeepsReferences(policy: MergePolicy) async throws {
        let directory = TemporaryDirectory("strata-conflict")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let o = try await Objects.commit(into: store)
        let base = store.currentGeneration
        // Theirs renames album X; ours deletes X, taking it out of A1's albums (artist: nullify).
        try await store.commit(ChangeSet(author: "theirs", updated: [base.update(o.x, ["title": .string("Theirs")])]))
        var builder = ChangeSetBuilder(base: base)
        builder.delete(o.x)
        var ours = builder.changeSet(author: "ours", mergePolicy: policy)
        ours.updated.append(base.update(o.a3, ["name": .string("Ours")]))
        let result = try await store.commit(ours)
        #expect(result.resolvedConflicts.map(\.object) == [o.x] && result.resolvedConflicts.first?.key == nil, "\(result.resolvedConflicts)")
        let g = store.currentGeneration
        #expect(g.value(o.x, "title") == .string("Theirs") && g.value(o.x, "artist") == .object(o.a1))
        #expect(g.value(o.a1, "albums") == .objects([o.x]), "A1 lost the album the policy kept")
        #expect(g.value(o.a3, "name") == .string("Ours"), "the rest of the save was not committed")
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        await store.close()
    }
}
