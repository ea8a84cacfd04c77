import Foundation
import Testing
@testable import Strata

/// A pending deletion meeting another context's save that relates objects to the deleted
/// one: the deletion's delete rules apply to them — `cascade` deletes them, `nullify` takes
/// the deleted object out of their relationships, `deny` refuses the save naming them — so
/// that the save of the deletion either commits a consistent state or is refused for a
/// stated reason. (A merged album for an artist deleted here was left to the store, which
/// refused the save as a delete-rule or inverse violation; a child's album for an artist its
/// parent deleted became an orphan.)
@Suite struct PendingDeletionMergeTests {
    enum Merging: String, CaseIterable, Sendable {
        case explicit, automatic
    }

    /// How the other save reaches the context, and the context's merge policy.
    struct Way: Sendable, CustomTestStringConvertible {
        var merging: Merging
        var policy: MergePolicy
        var testDescription: String { "\(merging), \(policy)" }

        static let all: [Way] = Merging.allCases.flatMap { merging in
            [MergePolicy.error, .contextWins, .overwrite, .storeWins, .rollback].map { Way(merging: merging, policy: $0) }
        }
    }

    /// A context saving where `f.context` saves: a root context on the same coordinator, or
    /// a sibling child.
    static func sibling(of f: ContextFixture) -> ObjectContext {
        if let parent = f.ancestors.first { return ObjectContext(parent: parent, name: "other") }
        return ObjectContext(coordinator: f.coordinator, name: "other")
    }

    /// Makes `change` in another context, saves it, and merges the save into `f.context`:
    /// explicitly, or by following its parent (the store's commits, for a root context)
    /// until `merged` holds.
    static func mergeOtherSave<T: Sendable>(
        into f: ContextFixture, _ merging: Merging, until merged: @escaping @Sendable (isolated ObjectContext) -> Bool,
        _ change: @escaping @Sendable (isolated ObjectContext) -> T
    ) async throws -> T {
        let other = sibling(of: f)
        if merging == .automatic { await f.context.perform { c in c.automaticallyMergesChanges = true } }
        let saves = other.didSave()
        let made = await other.perform { c in change(c) }
        try await other.save()
        switch merging {
        case .explicit:
            let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
            await f.context.merge(save)
        case .automatic:
            await waitUntil(f.context, "the context merges the other save", merged)
        }
        return made
    }

    /// Saves through (``saveThrough(_:)``): a refusal can only be the conflict merge policy
    /// `error` reports (the deletion of an object changed since it was read), and the store
    /// is consistent either way. Returns whether it saved, and the store's generation.
    static func saveExpectingConsistency(_ f: ContextFixture, _ way: Way) async throws -> (saved: Bool, generation: Generation) {
        let refusal = try await saveThrough(f)
        if let refusal { #expect(refusal.code == .conflict && way.policy == .error, "\(refusal)") }
        let g = f.generation
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        return (refusal == nil, g)
    }

    /// Saves the context, then its ancestors if it saved; the context's refusal, if any.
    static func saveThrough(_ f: ContextFixture) async throws -> StoreError? {
        do {
            try await f.context.save()
        } catch {
            return error
        }
        for ancestor in f.ancestors { try await ancestor.save() }
        return nil
    }

    @Test("a pending cascade deletion takes the members a merged save added to the deleted object",
          arguments: Tier.allCases, Way.all)
    func mergedMemberOfCascade(tier: Tier, way: Way) async throws {
        let f = try ContextFixture(tier, durability: .relaxed)
        let o = try await seedSongbook(f.store)
        // A2 has no albums yet; Artist.albums cascades.
        await f.context.perform { c in
            c.mergePolicy = way.policy
            c.delete(c.object(with: o.a2))
        }
        let z = try await Self.mergeOtherSave(into: f, way.merging, until: { c in c.object(with: o.a2)["albums"] != .objects([]) }) { c in
            let album = c.insert(Album.self)
            album.albumID = 50
            album.title = "Added"
            album.artist = c.object(with: o.a2, as: Artist.self)
            return album.objectID
        }
        let (taken, disagreements) = await f.context.perform { c in (c.object(with: z).isDeleted, relationshipDisagreements(c)) }
        #expect(taken, "the cascade left the album the merge added for the deleted artist")
        #expect(disagreements.isEmpty, "\(disagreements)")
        let (saved, g) = try await Self.saveExpectingConsistency(f, way)
        if saved {
            if g.object(o.a2) == nil { #expect(g.object(z) == nil, "an orphan album remains") }
            #expect(g.object(z) == nil || g.value(z, "artist") == .object(o.a2))
            let after = await f.context.perform { c in relationshipDisagreements(c) }
            #expect(after.isEmpty, "\(after)")
        }
        await f.close()
    }

    @Test("a pending nullify deletion is taken out of the relationships a merged save gave it",
          arguments: Tier.allCases, Way.all)
    func mergedReferenceToNullified(tier: Tier, way: Way) async throws {
        let f = try ContextFixture(tier, durability: .relaxed)
        let o = try await seedSongbook(f.store)
        // Y has no songs and no artist; Album.artist nullifies.
        await f.context.perform { c in
            c.mergePolicy = way.policy
            _ = c.object(with: o.a2, as: Artist.self).name
            c.delete(c.object(with: o.y))
        }
        try await Self.mergeOtherSave(into: f, way.merging, until: { c in c.object(with: o.y)["artist"] != .null }) { c in
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
        }
        let (albums, disagreements) = await f.context.perform { c in
            (c.object(with: o.a2)["albums"], relationshipDisagreements(c))
        }
        #expect(!albums.refers(to: o.y), "A2 still lists the album deleted here: \(albums)")
        #expect(disagreements.isEmpty, "\(disagreements)")
        let (saved, g) = try await Self.saveExpectingConsistency(f, way)
        if saved {
            #expect(g.object(o.y) == nil || g.value(o.y, "artist") == .object(o.a2))
            let after = await f.context.perform { c in relationshipDisagreements(c) }
            #expect(after.isEmpty, "\(after)")
        }
        await f.close()
    }

    @Test("a pending nullify deletion stays out of a relationship whose changes the merge policy drops for a conflict elsewhere in the object",
          arguments: Tier.allCases, Way.all)
    func droppedChangesKeepNullifiedOut(tier: Tier, way: Way) async throws {
        let f = try ContextFixture(tier, durability: .relaxed)
        let o = try await seedSongbook(f.store)
        // Y belongs to A2; deleting y takes it out of A2's albums (nullify) — a pending
        // change of A2's, beside its new name. Another context renames A2: the name
        // conflicts, and `rollback` drops every change of A2's, the list with it.
        await f.context.perform { c in
            c.object(with: o.y, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
        }
        for context in [f.context] + f.ancestors { try await context.save() }
        await f.context.perform { c in
            c.mergePolicy = way.policy
            c.object(with: o.a2, as: Artist.self).name = "Mine"
            c.delete(c.object(with: o.y))
        }
        // Merged: A2's base (or, under `error`, the row kept for the conflict) has their name.
        let merged: @Sendable (isolated ObjectContext) -> Bool = { c in
            let a2 = c.object(with: o.a2)
            return a2.base?[1] == .string("Theirs") || a2.mergedRowInConflict?.values[1] == .string("Theirs")
        }
        try await Self.mergeOtherSave(into: f, way.merging, until: merged) { c in
            c.object(with: o.a2, as: Artist.self).name = "Theirs"
        }
        let (albums, deleted, disagreements) = await f.context.perform { c in
            (c.object(with: o.a2)["albums"], c.object(with: o.y).isDeleted, relationshipDisagreements(c))
        }
        #expect(deleted, "the deletion stays pending")
        #expect(!albums.refers(to: o.y), "A2 lists the album deleted here again: \(albums)")
        #expect(disagreements.isEmpty, "\(disagreements)")
        let (saved, g) = try await Self.saveExpectingConsistency(f, way)
        if saved {
            #expect(g.object(o.y) == nil, "the deletion is saved")
            #expect(g.value(o.a2, "albums") == .objects([]))
        }
        await f.close()
    }

    @Test("a pending deletion whose deny rule meets an object a merged save related to it refuses the save, naming both",
          arguments: Tier.allCases, Way.all)
    func mergedMemberOfDeny(tier: Tier, way: Way) async throws {
        let f = try ContextFixture(tier, durability: .relaxed)
        let o = try await seedSongbook(f.store)
        // Album.songs denies.
        await f.context.perform { c in
            c.mergePolicy = way.policy
            c.delete(c.object(with: o.y))
        }
        let song = try await Self.mergeOtherSave(into: f, way.merging, until: { c in c.object(with: o.y)["songs"] != .objects([]) }) { c in
            let song = c.insert(Song.self)
            song.songID = StoreTesting.uuid(60)
            song.title = "Added"
            song.milliseconds = 1_000
            song.album = c.object(with: o.y, as: Album.self)
            return song.objectID
        }
        let error = await #expect(throws: StoreError.self) { try await f.context.save() }
        #expect(error?.code == .deleteRule && error?.object == o.y && error?.key == "songs", "\(String(describing: error))")
        #expect(error?.message.contains(song.description) == true, "\(String(describing: error))")
        await f.close()
    }

    // MARK: A child's save into a parent with a pending deletion

    static let parentTiers: [Tier] = [.root, .mainRoot, .child]
    static let childPolicies: [MergePolicy] = [.contextWins, .overwrite, .storeWins, .rollback]

    @Test("a child's album for an artist its parent deleted since is taken by the parent's cascade, not left an orphan",
          arguments: parentTiers, childPolicies)
    func childMemberOfParentsCascade(tier: Tier, policy: MergePolicy) async throws {
        let f = try ContextFixture(tier, durability: .relaxed)
        let o = try await seedSongbook(f.store)
        let parent = f.context
        let child = ObjectContext(parent: parent, name: "editor")
        await child.setMergePolicy(policy)
        _ = await child.perform { c in c.object(with: o.a2, as: Artist.self).name }
        await parent.perform { c in c.delete(c.object(with: o.a2)) }
        let z = await child.perform { c in
            let album = c.insert(Album.self)
            album.albumID = 50
            album.title = "Added"
            album.artist = c.object(with: o.a2, as: Artist.self)
            return album.objectID
        }
        try await child.save()
        let (taken, artist, disagreements) = await parent.perform { c in
            let album = c.object(with: z)
            return (album.isDeleted, album["artist"], relationshipDisagreements(c))
        }
        #expect(taken, "the parent kept the child's album with artist \(artist)")
        #expect(disagreements.isEmpty, "\(disagreements)")
        let (childSees, pending) = await child.perform { c in (c.object(with: z).isDeleted, c.hasChanges) }
        #expect(childSees && !pending, "the child still shows the album its parent's cascade took")
        for context in [parent] + f.ancestors { try await context.save() }
        let g = f.generation
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        #expect(g.object(o.a2) == nil && g.object(z) == nil)
        await f.close()
    }

    @Test("a child's song on an album its parent deleted since (songs: deny) refuses the child's save, and changes nothing",
          arguments: parentTiers, childPolicies)
    func childMemberOfParentsDeny(tier: Tier, policy: MergePolicy) async throws {
        let f = try ContextFixture(tier, durability: .relaxed)
        let o = try await seedSongbook(f.store)
        let parent = f.context
        let child = ObjectContext(parent: parent, name: "editor")
        await child.setMergePolicy(policy)
        _ = await child.perform { c in c.object(with: o.y, as: Album.self).title }
        await parent.perform { c in c.delete(c.object(with: o.y)) }
        let song = await child.perform { c in
            let song = c.insert(Song.self)
            song.songID = StoreTesting.uuid(60)
            song.title = "Added"
            song.milliseconds = 1_000
            song.album = c.object(with: o.y, as: Album.self)
            return song.objectID
        }
        let error = await #expect(throws: StoreError.self) { try await child.save() }
        #expect(error?.code == .deleteRule && error?.object == o.y && error?.key == "songs", "\(String(describing: error))")
        #expect(error?.message.contains(song.description) == true, "\(String(describing: error))")
        let (deleted, known) = await parent.perform { c in (c.object(with: o.y).isDeleted, c.registeredObject(for: song) != nil) }
        #expect(deleted && !known, "a refused save changed the parent")
        for context in [parent] + f.ancestors { try await context.save() }
        #expect(f.generation.object(o.y) == nil && f.generation.integrityProblems().isEmpty)
        await f.close()
    }
}

/// A child following its parent's changes holds an artist with a change of its own; the
/// parent, deleting the artist, merges an album for it that it had read and changed, which
/// the deletion's cascade takes, then rolls the deletion back: the child lists the album again, and its save of the
/// artist keeps it, as the parent and the store do.
extension PendingDeletionMergeTests {
    /// `lagging`: the child takes what the merge did once the parent has rolled back already.
    @Test("a child following its parent takes back an album the parent's rolled-back cascade had taken", arguments: [false, true])
    func childTakesBackAnAlbumOfARolledBackCascade(lagging: Bool) async throws {
        let directory = TemporaryDirectory("strata-pending-deletion-merge")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let o = try await seedSongbook(store)
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        let parent = ObjectContext(coordinator: coordinator, executor: .privateQueue("parent"), name: "parent")
        let child = ObjectContext(parent: parent, executor: .privateQueue("child"), name: "child")
        // What the parent hands to the children following it, handed over here in order.
        let followed = parent.link.changes.subscribe()
        func handOver(_ count: Int) async throws {
            for _ in 0..<count { await child.merge(try #require(await firstElement(of: followed, timeout: .seconds(10)))) }
        }
        await child.perform { c in c.object(with: o.a2, as: Artist.self).name = "ours" }
        await parent.perform { c in c.delete(c.object(with: o.a2)) }
        let other = ObjectContext(coordinator: coordinator, name: "other")
        let saves = other.didSave()
        let album = await other.perform { c in
            let album = c.insert(Album.self)
            album.albumID = 50
            album.title = "theirs"
            album.artist = c.object(with: o.a2, as: Artist.self)
            return album.objectID
        }
        try await other.save()
        let commit = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        // The parent reads the album before it merges the save, and retitles it.
        await parent.perform { c in c.object(with: album, as: Album.self).title = "retitled" }
        // The merge, then what it did beyond it: the cascade took the album.
        await parent.merge(commit)
        if !lagging { try await handOver(2) }
        // What the rollback undid: the artist and its album are back.
        await parent.rollback()
        try await handOver(lagging ? 3 : 1)
        let listed = await child.perform { c in c.object(with: o.a2, as: Artist.self).albums.map(\.objectID) }
        #expect(listed == [album], "after the parent's rollback the child's artist lists \(listed)")
        try await child.save()
        let shown = await parent.perform { c in c.object(with: o.a2, as: Artist.self).albums.map(\.objectID) }
        #expect(shown == [album], "after the child's save the parent's artist lists \(shown)")
        await #expect(throws: Never.self) { try await parent.save() }
        #expect(store.currentGeneration.value(o.a2, "albums") == .objects([album]))
        #expect(store.currentGeneration.value(o.a2, "name") == .string("ours"))
        await store.close()
    }
}
