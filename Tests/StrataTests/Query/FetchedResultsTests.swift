import Foundation
import Testing
@testable import Strata

@Suite struct FetchedResultsTests {
    /// Random diffs between random snapshots, applied to the old one, give the new one.
    @Test("diffs applied to the old snapshot give the new one (random snapshots)")
    func randomSnapshots() {
        var rng = SeededGenerator(seed: 2024)
        let ids = (1...40).map { ObjectID(entity: "Song", number: UInt64($0)) }
        func randomSnapshot() -> ResultsSnapshot {
            let keys = ["A", "B", "C", "D", "E"].filter { _ in Bool.random(using: &rng) }.map(Value.string)
            var sections = keys.map { ResultsSnapshot.Section(key: $0, ids: []) }
            guard !sections.isEmpty else { return ResultsSnapshot(sections: []) }
            for id in ids.shuffled(using: &rng) where Int.random(in: 0..<3, using: &rng) > 0 {
                sections[Int.random(in: 0..<sections.count, using: &rng)].ids.append(id)
            }
            return ResultsSnapshot(sections: sections.filter { !$0.ids.isEmpty })
        }
        for round in 0..<3_000 {
            let old = randomSnapshot()
            let new = randomSnapshot()
            let updated = Set(ids.filter { _ in Int.random(in: 0..<5, using: &rng) == 0 })
            let diff = ResultsDiff(from: old, to: new, updated: updated)
            #expect(old.applying(diff) == new, "round \(round): \(old) → \(new) by \(diff)")
            let oldIDs = Set(old.sections.flatMap(\.ids))
            for path in diff.updatedRows { #expect(oldIDs.contains(old.sections[path.section].ids[path.row])) }
        }
    }

    /// Sections that both snapshots hold, in another order: a diff between any two
    /// snapshots leads from one to the other (sections that kept their key but not their
    /// place once stayed where they were, their rows moved between them).
    @Test("diffs between snapshots whose sections changed order give the new one")
    func reorderedSections() {
        let ids = (1...6).map { ObjectID(entity: "Song", number: UInt64($0)) }
        let old = ResultsSnapshot(sections: [.init(key: .string("A"), ids: [ids[0], ids[1]]), .init(key: .string("B"), ids: [ids[2]]),
                                             .init(key: .string("C"), ids: [ids[3], ids[4]])])
        let new = ResultsSnapshot(sections: [.init(key: .string("C"), ids: [ids[3]]), .init(key: .string("A"), ids: [ids[0], ids[1], ids[5]]),
                                             .init(key: .string("B"), ids: [ids[2], ids[4]])])
        // Positions are checked before `applying`, which traps on one out of range.
        let diff = ResultsDiff(from: old, to: new)
        #expect(LiveResultsHarness.apply(diff, to: old) == new, "\(diff)")
        var rng = SeededGenerator(seed: 2025)
        for round in 0..<2_000 {
            func randomSnapshot() -> ResultsSnapshot {
                var sections = ["A", "B", "C", "D"].filter { _ in Bool.random(using: &rng) }.shuffled(using: &rng)
                    .map { ResultsSnapshot.Section(key: .string($0), ids: []) }
                guard !sections.isEmpty else { return ResultsSnapshot(sections: []) }
                for id in ids.shuffled(using: &rng) where Bool.random(using: &rng) {
                    sections[Int.random(in: 0..<sections.count, using: &rng)].ids.append(id)
                }
                return ResultsSnapshot(sections: sections)
            }
            let (a, b) = (randomSnapshot(), randomSnapshot())
            let diff = ResultsDiff(from: a, to: b, updated: Set(ids.prefix(2)))
            #expect(LiveResultsHarness.apply(diff, to: a) == b, "round \(round): \(a) → \(b) by \(diff)")
        }
    }

    /// A snapshot with two sections of one key cannot be diffed (sections are told apart by
    /// their keys): it traps, naming the key, instead of giving a diff that does not fit.
    @Test("a diff from a snapshot with a section key twice traps")
    func repeatedSectionKeyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let id = ObjectID(entity: "Song", number: 1)
            let old = ResultsSnapshot(sections: [.init(key: .string("A"), ids: [id]), .init(key: .string("B"), ids: []),
                                                 .init(key: .string("A"), ids: [])])
            _ = ResultsDiff(from: old, to: ResultsSnapshot(sections: []))
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("two sections with key \"A\""), "\(stderr.suffix(400))")
    }

    /// A live, sectioned result set in a context through thousands of random changes:
    /// every diff applied in order to the previous snapshot gives the next, and the last
    /// snapshot equals a fresh fetch.
    @Test("live results follow random changes, saves and merges", arguments: [Tier.root, .child])
    func liveResults(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        try await seedSongbook(f.store)
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        await f.context.perform { c in c.automaticallyMergesChanges = true }
        let failures = await f.context.perform { c -> [String] in
            var failures: [String] = []
            let request = FetchRequest(entity: "Album", predicate: .comparison(Comparison(.key("explicit"), .equal, .value(.bool(false)))),
                                       sortBy: [SortKey("albumID")])
            let results = try! c.fetchedResults(Album.self, request: request, sectionedBy: "rating")
            var previous = results.snapshot
            var delivered: [Int] = []
            results.onChange = { diff in
                let next = previous.applying(diff)
                if next != results.snapshot { failures.append("diff \(diff.version) gives \(next), results are \(results.snapshot)") }
                previous = next
                delivered.append(diff.version)
            }
            var rng = SeededGenerator(seed: 77)
            var albums = c.objects(of: Album.self)
            for step in 0..<2_000 {
                switch Int.random(in: 0..<6, using: &rng) {
                case 0:
                    let album = c.insert(Album.self)
                    album.albumID = 1_000 + step
                    album.title = "New \(step)"
                    album.rating = [nil, 1, 2, 3].randomElement(using: &rng)!
                    albums.append(album)
                case 1 where albums.count > 3:
                    let victim = albums.remove(at: Int.random(in: 0..<albums.count, using: &rng))
                    if victim.songs.isEmpty { c.delete(victim) } else { albums.append(victim) }
                default:
                    guard let album = albums.randomElement(using: &rng), !album.isDeleted else { continue }
                    switch Int.random(in: 0..<3, using: &rng) {
                    case 0: album.rating = [nil, 1, 2, 3].randomElement(using: &rng)!
                    case 1: album.explicit.toggle()
                    default: album.albumID = album.albumID + Int.random(in: -3...3, using: &rng) * 10_000
                    }
                }
                c.processPendingChanges()
                if step == 1_000 {
                    results.suspendUpdates()
                    albums.first { !$0.isDeleted }?.rating = 9
                    c.processPendingChanges()
                    let before = delivered.count
                    results.resumeUpdates()
                    if delivered.count != before { failures.append("resuming delivered a diff") }
                    previous = results.snapshot
                }
            }
            let fresh = try! c.fetchIDs(FetchRequest(entity: "Album", predicate: request.predicate, sortBy: [SortKey("rating"), SortKey("albumID")]))
            if results.snapshot.sections.flatMap(\.ids) != fresh { failures.append("the last snapshot is not a fresh fetch") }
            if delivered != Array(1...max(1, delivered.count)) && !delivered.isEmpty { failures.append("versions out of order") }
            // Keep the results alive through the merge below.
            c.processPendingChanges()
            _ = results
            return failures
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        _ = other
        await f.close()
    }

    /// Many result sets refreshed by one change share its changed rows: each must still end
    /// every turn equal to a fresh fetch, with many unsaved changes (and, in a child, its
    /// parent's), and when one result set's handler changes objects mid-way.
    @Test("many live result sets over many unsaved changes each equal a fresh fetch", arguments: [Tier.root, .child])
    func manyResultSetsOverUnsavedChanges(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        try await seedSongbook(f.store)
        let failures = await f.context.perform { c -> [String] in
            var failures: [String] = []
            var rng = SeededGenerator(seed: 31)
            var albums = c.objects(of: Album.self)
            for k in 0..<200 {
                let album = c.insert(Album.self)
                album.albumID = 5_000 + k
                album.title = "Unsaved \(k)"
                album.rating = [nil, 1, 2, 3].randomElement(using: &rng)!
                albums.append(album)
            }
            c.processPendingChanges()
            let requests: [FetchRequest] = (0..<12).map { k in
                let predicate: ObjectPredicate =
                    k % 3 == 0 ? .comparison(Comparison(.key("rating"), .equal, .value(.int(Int64(k % 4 + 1)))))
                    : k % 3 == 1 ? .comparison(Comparison(.key("explicit"), .equal, .value(.bool(k % 2 == 0))))
                    : .comparison(Comparison(.key("albumID"), .greaterThan, .value(.int(Int64(k * 400)))))
                return FetchRequest(entity: "Album", predicate: predicate, sortBy: [SortKey(k % 2 == 0 ? "albumID" : "title")])
            }
            let sets = requests.map { try! c.fetchedResults(Album.self, request: $0) }
            // The first set's handler changes an album the later sets may show.
            var handlerChanges = 0
            sets[0].onChange = { _ in
                guard handlerChanges < 20, let album = albums.last(where: { !$0.isDeleted }) else { return }
                handlerChanges += 1
                album.rating = (album.rating ?? 0) + 1
                album.explicit.toggle()
            }
            for step in 0..<20 {
                for _ in 0..<5 {
                    guard let album = albums.randomElement(using: &rng), !album.isDeleted else { continue }
                    switch Int.random(in: 0..<4, using: &rng) {
                    case 0: album.rating = [nil, 1, 2, 3].randomElement(using: &rng)!
                    case 1: album.explicit.toggle()
                    case 2: album.title = "Retitled \(step)"
                    default: album.albumID = album.albumID + Int.random(in: -3...3, using: &rng) * 1_000
                    }
                }
                c.processPendingChanges()
                // A handler's changes reach every result set with the next change.
                c.processPendingChanges()
                for (k, results) in sets.enumerated() {
                    let fresh = try! c.fetchIDs(requests[k])
                    if results.snapshot.sections.flatMap(\.ids) != fresh { failures.append("step \(step), result set \(k): \(results.snapshot.sections.flatMap(\.ids).count) vs fresh \(fresh.count) \(Array(results.snapshot.sections.flatMap(\.ids).prefix(4))) vs \(Array(fresh.prefix(4)))") }
                }
            }
            if handlerChanges == 0 { failures.append("the handler never ran") }
            _ = sets
            return failures
        }
        #expect(failures.count == 0, "\(failures.prefix(3))")
        await f.close()
    }

    @Test("a search predicate narrows live results and reports the difference")
    func searchPredicate() async throws {
        let f = try ContextFixture(.root)
        try await seedSongbook(f.store)
        let (count, versions) = await f.context.perform { c -> (Int, [Int]) in
            let results = try! c.fetchedResults(Artist.self, request: FetchRequest(entity: "Artist", sortBy: [SortKey("artistID")]))
            var versions: [Int] = []
            results.onChange = { versions.append($0.version) }
            results.searchPredicate = .comparison(Comparison(.key("name"), .beginsWith, .value(.string("t")), options: .caseInsensitive))
            return (results.objects.count, versions)
        }
        #expect(count == 2)  // Two, Three
        #expect(versions == [1])
        await f.close()
    }

    @Test("a search predicate set while updates are suspended takes effect on resuming, without a diff")
    func searchPredicateWhileSuspended() async throws {
        let f = try ContextFixture(.root)
        try await seedSongbook(f.store)
        let (during, after, diffs) = await f.context.perform { c -> ([ObjectID], [ObjectID], Int) in
            let results = try! c.fetchedResults(Artist.self, request: FetchRequest(entity: "Artist", sortBy: [SortKey("artistID")]))
            var diffs = 0
            results.onChange = { _ in diffs += 1 }
            results.suspendUpdates()
            results.searchPredicate = .comparison(Comparison(.key("name"), .beginsWith, .value(.string("t")), options: .caseInsensitive))
            let during = results.snapshot.sections.flatMap(\.ids)
            results.resumeUpdates()
            return (during, results.snapshot.sections.flatMap(\.ids), diffs)
        }
        #expect(during.count == 3, "the snapshot stays as it was while suspended")
        #expect(after.count == 2)  // Two, Three
        #expect(diffs == 0)
        await f.close()
    }

    @Test("the index path of an object is where the results show it, and follows changes")
    func indexPathOfObject() async throws {
        let f = try ContextFixture(.root)
        let o = try await seedSongbook(f.store)
        let (before, moved, gone, viaObject) = await f.context.perform { c -> ([ResultsIndexPath?], [ResultsIndexPath?], ResultsIndexPath?, Bool) in
            let results = try! c.fetchedResults(Album.self, request: FetchRequest(entity: "Album", sortBy: [SortKey("albumID")]),
                                                sectionedBy: "artist.name")
            let before = [o.x, o.y].map { results.indexPath(for: $0) }
            let viaObject = [o.x, o.y].allSatisfy { id in
                results.indexPath(for: c.object(with: id, as: Album.self)) == results.indexPath(for: id)
            }
            // Every position the results report holds the object asked for.
            let consistent = results.snapshot.sections.enumerated().allSatisfy { section, rows in
                rows.ids.enumerated().allSatisfy { row, id in results.indexPath(for: id) == ResultsIndexPath(section: section, row: row) }
            }
            // y moves to x's artist; then x is deleted.
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.x, as: Album.self).artist
            c.processPendingChanges()
            let moved = [o.x, o.y].map { results.indexPath(for: $0) }
            c.delete(c.object(with: o.x, as: Album.self))
            c.processPendingChanges()
            return (before, moved, results.indexPath(for: o.x), viaObject && consistent)
        }
        #expect(before.allSatisfy { $0 != nil })
        #expect(before[0] != before[1])
        #expect(viaObject)
        #expect(moved[1] != nil && moved[1]?.section == moved[0]?.section, "y is now in x's artist's section")
        #expect(moved[1] != before[1])
        #expect(gone == nil, "a deleted object has no position")
        await f.close()
    }
}
