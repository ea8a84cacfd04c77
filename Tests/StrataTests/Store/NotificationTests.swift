import Foundation
import Testing
@testable import Strata

@Suite struct NotificationTests {
    /// The notification a commit of `changes` should produce (timestamp aside).
    static func expected(_ changes: ChangeSet, _ result: CommitResult) -> CommitNotification {
        let schema = result.generation.schema
        var changedKeys: [ObjectID: [String]] = [:]
        var values: [ObjectID: [Value]] = [:]
        for row in changes.inserted { values[row.id] = row.values }
        for update in changes.updated {
            let entity = schema.entity(named: update.id.entity)!
            changedKeys[update.id] = update.changes.map { entity.property(at: $0.index).name }
            values[update.id] = result.generation.object(update.id)!.values
        }
        return CommitNotification(transaction: result.transaction, timestamp: Date(timeIntervalSince1970: 0), author: changes.author,
                                  inserted: changes.inserted.map(\.id), updated: changes.updated.map(\.id),
                                  deleted: changes.deleted.map(\.id), changedKeys: changedKeys, values: values)
    }

    static func expectMatches(_ notification: CommitNotification, _ expected: CommitNotification, _ context: Comment) {
        var found = notification
        found.timestamp = expected.timestamp
        #expect(found == expected, context)
    }

    /// Reads a stream until it ends.
    static func drain(_ stream: AsyncStream<CommitNotification>) async -> [CommitNotification] {
        var list: [CommitNotification] = []
        for await notification in stream { list.append(notification) }
        return list
    }

    @Test(arguments: [Durability.none, .full])
    func everyCommitArrivesOnceInOrderWithItsChanges(durability: Durability) async throws {
        let directory = TemporaryDirectory("strata-notification")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: durability)
        let streams = [store.commits(), store.commits()]
        let artists = store.allocateObjectIDs(for: "Artist", count: 2)
        let album = store.allocateObjectIDs(for: "Album")[0]
        let song = store.allocateObjectIDs(for: "Song")[0]

        var commits: [(ChangeSet, CommitResult)] = []
        func commit(_ author: String, _ edit: (inout ChangeSetBuilder) -> Void) async throws {
            var builder = ChangeSetBuilder(base: store.currentGeneration)
            edit(&builder)
            let changes = builder.changeSet(author: author)
            commits.append((changes, try await store.commit(changes)))
        }
        try await commit("insert") { b in
            b.insert(Songbook.artist(artists[0], artistID: 1, name: "One"))
            b.insert(Songbook.artist(artists[1], artistID: 2, name: "Two"))
            b.insert(Songbook.album(album, albumID: 10))
            b.setToOne(album, "artist", to: artists[0])
        }
        try await commit("rename") { b in
            b.set(artists[0], "name", .string("Uno"))
            b.set(artists[0], "createdAt", .date(Songbook.epoch.addingTimeInterval(60)))
        }
        try await commit("move") { b in b.setToOne(album, "artist", to: artists[1]) }
        try await commit("add song") { b in
            b.insert(Songbook.song(song, songID: StoreTesting.uuid(1), milliseconds: 180_000))
            b.setToOne(song, "album", to: album)
        }
        try await commit("remove song") { b in b.delete(song) }
        try await commit("cascade") { b in b.delete(artists[1]) }
        #expect(commits.map(\.1.transaction) == Array(1...6))
        #expect(commits[5].0.deleted.map(\.id) == [album, artists[1]])
        #expect(commits[1].0.updated.first?.changes.count == 2)

        await store.close()
        let history = try store.journal.transactions()
        for (k, stream) in streams.enumerated() {
            let received = try await withTimeout(10, "subscriber \(k)") { await Self.drain(stream) }
            #expect(received.map(\.transaction) == Array(1...6), "subscriber \(k)")
            for (notification, (changes, result)) in zip(received, commits) {
                Self.expectMatches(notification, Self.expected(changes, result), "subscriber \(k), transaction \(notification.transaction)")
            }
            // The notification carries the time the journal recorded.
            #expect(received.map(\.timestamp) == history.map(\.timestamp))
            #expect(received.map(\.version) == received.map(\.transaction))
        }
    }

    @Test func concurrentCommitsReachEverySubscriberOnceInOrder() async throws {
        let directory = TemporaryDirectory("strata-notification")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let streams = (0..<3).map { _ in store.commits() }
        let committers = 4
        let perCommitter = 25

        enum Part: Sendable {
            case committed([(ChangeSet, CommitResult)])
            case received(Int, [CommitNotification], early: Int)
        }
        let parts = try await withTimeout(60, "concurrent commits and their notifications") {
            try await withThrowingTaskGroup(of: Part.self) { group in
                for (k, stream) in streams.enumerated() {
                    group.addTask {
                        var list: [CommitNotification] = []
                        var early = 0
                        for await notification in stream {
                            // Delivered only once its generation is published.
                            if store.currentGeneration.transaction < notification.transaction { early += 1 }
                            list.append(notification)
                        }
                        return .received(k, list, early: early)
                    }
                }
                group.addTask {
                    let all = try await withThrowingTaskGroup(of: [(ChangeSet, CommitResult)].self) { committing in
                        for c in 0..<committers {
                            committing.addTask {
                                var mine: [(ChangeSet, CommitResult)] = []
                                var previous: ObjectID?
                                for i in 0..<perCommitter {
                                    var builder = ChangeSetBuilder(base: store.currentGeneration)
                                    let id = store.allocateObjectIDs(for: "Artist")[0]
                                    builder.insert(Songbook.artist(id, artistID: Int64(c * 1_000 + i), name: "c\(c) i\(i)"))
                                    if let previous { builder.set(previous, "name", .string("superseded by \(id)")) }
                                    previous = id
                                    let changes = builder.changeSet(author: "committer \(c)")
                                    mine.append((changes, try await store.commit(changes)))
                                }
                                return mine
                            }
                        }
                        var all: [(ChangeSet, CommitResult)] = []
                        for try await mine in committing { all += mine }
                        return all
                    }
                    await store.close()
                    return .committed(all)
                }
                var parts: [Part] = []
                for try await part in group { parts.append(part) }
                return parts
            }
        }

        var byTransaction: [UInt64: (ChangeSet, CommitResult)] = [:]
        var received: [Int: ([CommitNotification], Int)] = [:]
        for part in parts {
            switch part {
            case .committed(let all): for item in all { byTransaction[item.1.transaction] = item }
            case .received(let k, let list, let early): received[k] = (list, early)
            }
        }
        let count = committers * perCommitter
        #expect(byTransaction.count == count)
        #expect(received.count == streams.count)
        for (k, (list, early)) in received.sorted(by: { $0.key < $1.key }) {
            #expect(list.map(\.transaction) == Array(1...UInt64(count)), "subscriber \(k)")
            #expect(early == 0, "subscriber \(k) got \(early) notifications before their generation was published")
            for notification in list {
                guard let (changes, result) = byTransaction[notification.transaction] else { continue }
                Self.expectMatches(notification, Self.expected(changes, result), "subscriber \(k), transaction \(notification.transaction)")
            }
        }
    }

    @Test func lateSubscribersAndCommitsThatSaveNothing() async throws {
        let directory = TemporaryDirectory("strata-notification")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let early = store.commits()
        let artist = store.allocateObjectIDs(for: "Artist")[0]
        try await store.commit(ChangeSet(inserted: [Songbook.artist(artist, artistID: 1, name: "Base")]))
        let late = store.commits()
        let base = store.currentGeneration

        // Refused, empty, and resolved-to-nothing commits deliver nothing.
        let twin = store.allocateObjectIDs(for: "Artist")[0]
        guard case .failure = await attempt(store, ChangeSet(inserted: [Songbook.artist(twin, artistID: 1)])) else {
            Issue.record("the duplicate was accepted")
            return
        }
        let empty = try await store.commit(ChangeSet())
        #expect(empty.transaction == 1)
        try await store.commit(ChangeSet(author: "theirs", updated: [base.update(artist, ["name": .string("Theirs")])]))
        let dropped = try await store.commit(ChangeSet(author: "ours", updated: [base.update(artist, ["name": .string("Ours")])],
                                                       mergePolicy: .storeWins))
        #expect(dropped.transaction == 2 && dropped.resolvedConflicts.count == 1)
        try await store.commit(ChangeSet(author: "last", updated: [store.currentGeneration.update(artist, ["name": .string("Last")])]))
        await store.close()

        let fromEarly = try await withTimeout(10, "the early subscriber") { await Self.drain(early) }
        let fromLate = try await withTimeout(10, "the late subscriber") { await Self.drain(late) }
        #expect(fromEarly.map(\.transaction) == [1, 2, 3])
        #expect(fromLate.map(\.transaction) == [2, 3])
        #expect(fromLate.map(\.author) == ["theirs", "last"])
        #expect(fromLate.last?.changedKeys == [artist: ["name"]])
        #expect(fromLate.last?.values[artist]?[1] == .string("Last"))
    }

    @Test func aStreamRequestedAfterCloseEndsAtOnce() async throws {
        let directory = TemporaryDirectory("strata-notification")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        await store.close()
        let received = try await withTimeout(30, "a stream requested after close to end") { await Self.drain(store.commits()) }
        #expect(received.isEmpty)
    }

    @Test func anAbandonedSubscriberDoesNotDisturbOthers() async throws {
        let directory = TemporaryDirectory("strata-notification")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let abandoned = store.commits()
        let kept = store.commits()
        let listener = Task {
            var seen = 0
            for await _ in abandoned { seen += 1 }
            return seen
        }
        listener.cancel()
        #expect(await listener.value <= 1)
        for k in 0..<10 {
            let id = store.allocateObjectIDs(for: "Artist")[0]
            try await store.commit(ChangeSet(inserted: [Songbook.artist(id, artistID: Int64(k))]))
        }
        await store.close()
        let received = try await withTimeout(10, "the remaining subscriber") { await Self.drain(kept) }
        #expect(received.map(\.transaction) == Array(1...10))
    }
}
