import Foundation
import Testing
@testable import Strata

/// `overwrite` in every tier: a child's save into its parent and a merge keep the saving (or
/// receiving) context's whole object as it sees it — every attribute, the keys the other side
/// changed alone included — as the store's `overwrite` does, where `contextWins` keeps only
/// the keys both sides changed. Relationships stay per key (ours where we changed them,
/// theirs elsewhere), so that both sides of every relationship stay in step. (`overwrite`
/// behaved like `contextWins` in both.)
@Suite struct OverwritePolicyTests {
    static let parentTiers: [Tier] = [.root, .mainRoot, .child]
    static let later = Date(timeIntervalSince1970: 1_700_000_000)

    @Test("a child's save under overwrite writes its whole artist into the parent; under contextWins only what it changed",
          arguments: parentTiers, [MergePolicy.contextWins, .overwrite])
    func childSave(tier: Tier, policy: MergePolicy) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let parent = f.context
        let child = ObjectContext(parent: parent, name: "editor")
        await child.setMergePolicy(policy)
        _ = await child.perform { c in c.object(with: o.a1, as: Artist.self).albums.count }
        // The parent renames A1 and dates it, and moves its album X to A2: keys of A1 the
        // child does not change, but for the name.
        await parent.perform { c in
            let a1 = c.object(with: o.a1, as: Artist.self)
            a1.name = "parent's"
            a1.createdAt = Self.later
            c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
        }
        await child.perform { c in c.object(with: o.a1, as: Artist.self).name = "child's" }
        try await child.save()
        let whole = policy == .overwrite
        let (name, created, albums, disagreements) = await parent.perform { c in
            let a1 = c.object(with: o.a1, as: Artist.self)
            return (a1.name, a1.createdAt, a1.albums.map(\.objectID), relationshipDisagreements(c))
        }
        #expect(name == "child's")
        #expect(created == (whole ? Songbook.epoch : Self.later), "\(policy): createdAt \(created)")
        #expect(albums.isEmpty, "the parent's move of X stays: relationships are per key")
        #expect(disagreements.isEmpty, "\(disagreements)")
        let childCreated = await child.perform { c in c.object(with: o.a1, as: Artist.self).createdAt }
        #expect(childCreated == created, "the child shows what its parent holds")
        for context in [parent] + f.ancestors { try await context.save() }
        let g = f.generation
        #expect(g.value(o.a1, "createdAt") == .date(whole ? Songbook.epoch : Self.later) && g.value(o.a1, "name") == .string("child's"))
        #expect(g.value(o.x, "artist") == .object(o.a2))
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        await f.close()
    }

    @Test("a merge under overwrite keeps the whole changed artist as this context sees it; under contextWins only what it changed",
          arguments: Tier.allCases, [MergePolicy.contextWins, .overwrite])
    func merge(tier: Tier, policy: MergePolicy) async throws {
        let f = try ContextFixture(tier, durability: .relaxed)
        let o = try await seedSongbook(f.store)
        await f.context.setMergePolicy(policy)
        await f.context.perform { c in
            _ = c.object(with: o.x, as: Album.self).title
            c.object(with: o.a1, as: Artist.self).name = "ours"
        }
        let other = PendingDeletionMergeTests.sibling(of: f)
        let saves = other.didSave()
        await other.perform { c in
            let a1 = c.object(with: o.a1, as: Artist.self)
            a1.name = "theirs"
            a1.createdAt = Self.later
            c.object(with: o.x, as: Album.self).artist = c.object(with: o.a2, as: Artist.self)
        }
        try await other.save()
        let save = try #require(await firstElement(of: saves, timeout: .seconds(10)))
        await f.context.merge(save)
        let whole = policy == .overwrite
        let (name, created, albums, pending, disagreements) = await f.context.perform { c in
            let a1 = c.object(with: o.a1, as: Artist.self)
            return (a1.name, a1.createdAt, a1.albums.map(\.objectID), a1.changedValues.keys.sorted(), relationshipDisagreements(c))
        }
        #expect(name == "ours")
        #expect(created == (whole ? Songbook.epoch : Self.later), "\(policy): createdAt \(created)")
        #expect(pending == (whole ? ["createdAt", "name"] : ["name"]), "\(pending)")
        #expect(albums.isEmpty, "the other save's move of X is merged: relationships are per key")
        #expect(disagreements.isEmpty, "\(disagreements)")
        try await f.saveThrough()
        let g = f.generation
        #expect(g.value(o.a1, "createdAt") == .date(whole ? Songbook.epoch : Self.later) && g.value(o.a1, "name") == .string("ours"))
        #expect(g.value(o.x, "artist") == .object(o.a2) && g.value(o.a1, "albums") == .objects([]))
        #expect(g.integrityProblems().isEmpty, "\(g.integrityProblems())")
        await f.close()
    }
}
