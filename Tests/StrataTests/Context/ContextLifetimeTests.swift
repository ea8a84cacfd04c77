import Foundation
import Testing
@testable import Strata

/// Contexts are discarded by dropping them: whatever a context did, once nobody refers to
/// it, it is freed, and so are its graph and its objects, and the merge subscription and
/// notification streams it had end.
@Suite struct ContextLifetimeTests {
    /// What a context did before it was dropped.
    enum Work: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// Inserted objects related to each other, unsaved.
        case inserts
        /// Changed objects it read, unsaved.
        case edits
        /// Fetched objects.
        case fetches
        /// Inserted and saved.
        case save
        /// A save that validation refused.
        case failedSave
        /// A save refused by a conflict with another context's save.
        case conflictingSave
        /// Merged another context's save into objects it held.
        case merge
        /// Live results created, changed and dropped.
        case liveResults
        /// Its notification streams iterated by a task that was cancelled.
        case cancelledStreams
        /// Followed other contexts' saves automatically.
        case automaticMerging

        var testDescription: String { rawValue }
    }

    /// The ancestors of a context in `tier`, nearest first.
    static func ancestors(_ tier: Tier, _ f: LifetimeFixture) -> [ObjectContext] {
        switch tier {
        case .root, .mainRoot: return []
        case .child: return [ObjectContext(coordinator: f.coordinator, name: "root")]
        case .grandchild:
            let root = ObjectContext(coordinator: f.coordinator, name: "root")
            return [ObjectContext(parent: root, name: "child"), root]
        }
    }

    /// A context in `tier`, named `name`, under `parent` (its nearest ancestor) if it has one.
    static func context(_ tier: Tier, _ f: LifetimeFixture, parent: ObjectContext?, name: String) -> ObjectContext {
        switch tier {
        case .root: ObjectContext(coordinator: f.coordinator, name: name)
        case .mainRoot: ObjectContext(coordinator: f.coordinator, executor: .main, name: name)
        case .child, .grandchild: ObjectContext(parent: parent!, name: name)
        }
    }

    /// Saves from a sibling root context: a commit for automatic merging, or a did-save to merge.
    static func saveElsewhere(_ f: LifetimeFixture, _ change: @escaping @Sendable (isolated ObjectContext) -> Void) async throws -> DidSave {
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        let saves = other.didSave()
        await other.perform { c in change(c) }
        try await other.save()
        return try #require(await firstElement(of: saves, timeout: .seconds(10)))
    }

    @Test("a dropped context is freed with its graph and objects, whatever it did", arguments: Tier.allCases, Work.allCases)
    func droppedContextIsFreed(tier: Tier, work: Work) async throws {
        let f = try await LifetimeFixture()
        let o = f.objects
        let name = "lifetime-\(UUID().uuidString)"
        let ancestors = Self.ancestors(tier, f)
        var context: ObjectContext? = Self.context(tier, f, parent: ancestors.first, name: name)
        let parentLink = ancestors.first?.link
        let commitSubscribers = f.store.commitSubscriberCount
        let graph = await context!.perform { c in WeakReference(c.graph) }
        let held: [WeakReference<ManagedObject>]

        switch work {
        case .inserts:
            held = await context!.perform { c in
                (1...20).flatMap { n -> [WeakReference<ManagedObject>] in
                    let artist = c.insert(entity: "Artist")
                    artist["artistID"] = .int(Int64(100 + n))
                    let album = c.insert(Album.self)
                    album.albumID = 100 + n
                    album.title = "Album \(n)"
                    try! album.setValue(.object(artist.objectID), forKey: "artist")
                    return [WeakReference(artist), WeakReference(album)]
                }
            }
        case .edits:
            held = await context!.perform { c in
                let artist = c.object(with: o.a1)
                artist["name"] = .string("edited")
                try! c.object(with: o.x).setValue(.object(o.a2), forKey: "artist")
                return [WeakReference(artist), WeakReference(c.object(with: o.x))]
            }
        case .fetches:
            held = try await context!.perform { c in
                let artists = c.objects(ofEntity: "Artist")
                let albums = try c.fetch(FetchRequest(entity: "Album", predicate: try ObjectPredicate(format: "artist.name == 'One'")))
                return (artists + albums).map { WeakReference($0) }
            }
        case .save:
            held = await context!.perform { c in
                let artist = c.insert(entity: "Artist")
                artist["artistID"] = .int(100)
                c.object(with: o.a2)["name"] = .string("saved")
                return [WeakReference(artist), WeakReference(c.object(with: o.a2))]
            }
            try await context!.save()
        case .failedSave:
            held = await context!.perform { c in
                let song = c.insert(Song.self)
                song.songID = StoreTesting.uuid(100)
                song.title = "forbidden"
                song.album = c.object(with: o.y, as: Album.self)
                return [WeakReference(song), WeakReference(c.object(with: o.y))]
            }
            await #expect(throws: StoreError.self) { try await context!.save() }
        case .conflictingSave:
            held = await context!.perform { c in
                let artist = c.object(with: o.a3)
                artist["name"] = .string("ours")
                return [WeakReference(artist)]
            }
            _ = try await Self.saveElsewhere(f) { c in c.object(with: o.a3)["name"] = .string("theirs") }
            do {
                try await context!.save()
                for ancestor in ancestors { try await ancestor.save() }
                Issue.record("precondition: the save conflicts with the other context's")
            } catch {
                #expect(error.code == .conflict)
            }
        case .merge:
            held = await context!.perform { c in
                [WeakReference(c.object(with: o.a1)), WeakReference(c.object(with: o.a2))].map { reference in
                    _ = reference.object?["name"]
                    return reference
                }
            }
            let save = try await Self.saveElsewhere(f) { c in
                c.object(with: o.a1)["name"] = .string("merged")
                c.delete(c.object(with: o.a2))
            }
            let merged = await context!.perform { c in
                c.merge(save)
                return c.object(with: o.a1)["name"]
            }
            #expect(merged == .string("merged"))
        case .liveResults:
            let diffs = try await context!.perform { c -> Int in
                let results = try c.fetchedResults(Album.self, request: FetchRequest(entity: "Album", sortBy: [SortKey("title")]),
                                                   sectionedBy: "artist.name")
                var diffs = 0
                results.onChange = { _ in diffs += 1 }
                let album = c.insert(Album.self)
                album.albumID = 100
                album.title = "live"
                c.processPendingChanges()
                return diffs
            }
            #expect(diffs == 1)
            held = await context!.perform { c in c.registeredObjects.map { WeakReference($0) } }
        case .cancelledStreams:
            let streams = (context!.didSave(), context!.objectsDidChange(), context!.mergeConflicts())
            let listening = Task {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { for await _ in streams.0 {} }
                    group.addTask { for await _ in streams.1 {} }
                    group.addTask { for await _ in streams.2 {} }
                }
            }
            held = await context!.perform { c in
                let artist = c.object(with: o.a1)
                artist["name"] = .string("seen")
                return [WeakReference(artist)]
            }
            listening.cancel()
            let ended = await returns(within: .seconds(30)) { await listening.value; return true }
            #expect(ended, "the cancelled iteration of a context's streams did not end")
        case .automaticMerging:
            held = await context!.perform { c in
                c.automaticallyMergesChanges = true
                let artist = c.object(with: o.a1)
                _ = artist["name"]
                return [WeakReference(artist)]
            }
            let changes = context!.objectsDidChange()
            _ = try await Self.saveElsewhere(f) { c in c.object(with: o.a1)["name"] = .string("followed") }
            if tier == .root || tier == .mainRoot {
                // A child follows its parent, which does not merge here; a root merges the commit.
                #expect(await firstElement(of: changes, timeout: .seconds(10)) != nil, "the commit was not merged")
            }
        }

        // A stream nobody cancelled ends when its context goes away.
        let unended = context!.objectsDidChange()
        #expect(!held.isEmpty && !held.contains { $0.isGone }, "precondition: the context holds its objects")
        let reference = WeakReference(context)
        context = nil
        // A merge task holds its context until the merge it runs returns, and a context's
        // deinit is isolated: once the last reference goes, it runs as a job on the context's
        // executor (its queue, or the main actor), and only then tears the graph down and
        // cancels the merge task, whose stream leaves its broadcast when the task's iteration
        // ends. So what follows is freed asynchronously, by design: polled for, up to a hard
        // deadline.
        #expect(await eventually { reference.isGone }, "something else holds the dropped context")
        #expect(await eventually { graph.isGone }, "the graph of a dropped context is never freed")
        #expect(await eventually { held.allSatisfy(\.isGone) }, "objects of a dropped context are never freed")
        #expect(await eventually { CountedArtist.alive(in: name) == 0 }, "\(CountedArtist.alive(in: name)) artists of a dropped context live on")
        #expect(await eventually { f.store.commitSubscriberCount == commitSubscribers },
                "a dropped context still listens to the store's commits")
        #expect(await eventually { (parentLink?.changes.subscriberCount ?? 0) == 0 }, "a dropped child still follows its parent")
        let ended = await returns(within: .seconds(30)) {
            for await _ in unended {}
            return true
        }
        #expect(ended, "a dropped context's objects-did-change stream never ends")
        withExtendedLifetime(ancestors) {}
        await f.close()
    }
}

extension ContextLifetimeTests {
    /// Live results are held weakly by their context; one that is dropped stops observing
    /// at once, not at the context's next change (a screen rebuilding its results for every
    /// search in a context that changes nothing grew the list with each).
    @Test("live results dropped leave their context's observers at once", arguments: [Tier.root, .mainRoot, .child])
    func droppedResultsStopObserving(tier: Tier) async throws {
        let f = try await LifetimeFixture()
        let ancestors = Self.ancestors(tier, f)
        let context = Self.context(tier, f, parent: ancestors.first, name: "results")
        let request = FetchRequest(entity: "Album", sortBy: [SortKey("title")])
        let (dropped, observers) = try await context.perform { c in
            let dropped = try (0..<100).map { _ in WeakReference(try c.fetchedResults(Album.self, request: request)) }
            return (dropped, c.graph.resultsObservers.count)
        }
        let freed = dropped.allSatisfy(\.isGone)
        #expect(freed, "dropped live results live on")
        #expect(observers == 0, "\(observers) live results nobody holds are still observed")
        // Turns that change nothing do not prune them either.
        let later = await context.perform { c in c.graph.resultsObservers.count }
        #expect(later == 0, "\(later) live results nobody holds are still observed after a turn")
        let (diffs, remaining) = try await context.perform { c -> (Int, Int) in
            let results = try c.fetchedResults(Album.self, request: request)
            _ = try (0..<10).map { _ in try c.fetchedResults(Album.self, request: request) }
            var diffs = 0
            results.onChange = { _ in diffs += 1 }
            let album = c.insert(Album.self)
            album.albumID = 100
            album.title = "new"
            c.processPendingChanges()
            return (diffs, c.graph.resultsObservers.count)
        }
        #expect(diffs == 1, "the live results kept were not told of the change")
        #expect(remaining == 1, "\(remaining) live results observed; one is held")
        withExtendedLifetime(ancestors) {}
        await f.close()
    }
}
