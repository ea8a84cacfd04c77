import Foundation
import Testing
@testable import Strata

/// A key changed while a save is in flight, which the save does not send, was changed on the
/// value the context read before. When the save ends, the object is based again on what the
/// save leaves (the committed row, or the parent's): if another save changed that key since
/// the read, the next save must report the conflict, or resolve it by its merge policy —
/// never overwrite the other save's value silently. Three ways in: the object is part of the
/// save (its other changes are sent), the save only reaches it through a relationship whose
/// value the merge policy kept against the one sent, or it lists again an object whose
/// deletion the merge policy dropped. (Based on the newer value, the
/// name given to artist A1 here while the save ran replaced the one another save had given
/// it, without a conflict, under every policy.)
@Suite struct ChangedDuringSaveConflictTests {
    /// The second save's policies and what each leaves of A1's name.
    static let policies: [MergePolicy] = [.error, .storeWins, .contextWins]
    /// The first save's policies in which the store (or parent) keeps its own artist for Y.
    static let keepingTheirs: [MergePolicy] = [.storeWins, .rollback]

    /// Which of the two ways the save meets A1.
    enum Way: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// Y goes to A1: A1's list is part of the save.
        case saved
        /// Y goes to A2, but the other side had given Y to A1, and the policy keeps that:
        /// the save reaches A1 only through Y.
        case reached
        /// Y is deleted, but the other side had given Y to A1, and the policy keeps Y: A1,
        /// which the deletion did not touch here, lists Y again.
        case deletionKept
        var testDescription: String { rawValue }
    }

    static let cases: [(Way, MergePolicy)] = [(.saved, .error)] + keepingTheirs.map { (.reached, $0) } + keepingTheirs.map { (.deletionKept, $0) }

    /// What the other side does to A1 (and, for `reached`, to Y) before the save.
    static func otherSide(_ c: isolated ObjectContext, _ o: ConstraintTests.Objects, way: Way) {
        let a1 = c.object(with: o.a1, as: Artist.self)
        a1.name = "Theirs"
        if way != .saved { c.object(with: o.y, as: Album.self).artist = a1 }
    }

    /// What the context saves: Y to A1, or to A2, or Y deleted (and x retitled, so that the
    /// save is not empty when the policy drops Y's change).
    static func saved(_ c: isolated ObjectContext, _ o: ConstraintTests.Objects, way: Way) {
        if way == .deletionKept {
            c.delete(c.object(with: o.y))
        } else {
            c.object(with: o.y, as: Album.self).artist = c.object(with: way == .saved ? o.a1 : o.a2, as: Artist.self)
        }
        c.object(with: o.x, as: Album.self).title = "Retitled"
    }

    /// Reads what the test changes, as the context's user would have.
    static func read(_ c: isolated ObjectContext, _ o: ConstraintTests.Objects) {
        for artist in [o.a1, o.a2] { _ = c.object(with: artist, as: Artist.self).albums.count }
        _ = (c.object(with: o.a1, as: Artist.self).name, c.object(with: o.y, as: Album.self).artist)
    }

    /// After the first save: A1 shows "Ours", pending on the name it was read with.
    static func expectOursPending(_ context: ObjectContext, _ o: ConstraintTests.Objects,
                                  sourceLocation: SourceLocation = #_sourceLocation) async {
        let (name, read, changed, problems) = await context.perform { c in
            let a1 = c.object(with: o.a1, as: Artist.self)
            return (a1.name, a1.committedValues?["name"], Array(a1.changedValues.keys), relationshipDisagreements(c))
        }
        #expect(name == "Ours" && changed == ["name"], "A1 shows \(String(describing: name)), changed \(changed)", sourceLocation: sourceLocation)
        #expect(read == .string("One"), "A1's name is based on what was read: \(String(describing: read))", sourceLocation: sourceLocation)
        #expect(problems.isEmpty, "\(problems)", sourceLocation: sourceLocation)
    }

    /// The second save, under `policy`: `error` reports the conflict on A1's name and
    /// changes nothing; the others resolve it. Returns the name saved, read by `saved`.
    static func expectSecondSave(_ context: ObjectContext, policy: MergePolicy, _ o: ConstraintTests.Objects,
                                 saved: @Sendable () async -> Value?, sourceLocation: SourceLocation = #_sourceLocation) async {
        await context.setMergePolicy(policy)
        if policy == .error {
            let error = await #expect(throws: StoreError.self, sourceLocation: sourceLocation) { try await context.save() }
            #expect(error?.code == .conflict, "\(String(describing: error))", sourceLocation: sourceLocation)
            let conflict = error?.conflicts.first { $0.object == o.a1 && $0.key == "name" }
            #expect(conflict?.base == .string("One") && conflict?.ours == .string("Ours") && conflict?.theirs == .string("Theirs"),
                    "\(String(describing: error?.conflicts))", sourceLocation: sourceLocation)
            #expect(await saved() == .string("Theirs"), "nothing saved", sourceLocation: sourceLocation)
            return
        }
        await #expect(throws: Never.self, sourceLocation: sourceLocation) { try await context.save() }
        let kept: Value = .string(policy == .storeWins ? "Theirs" : "Ours")
        #expect(await saved() == kept, sourceLocation: sourceLocation)
        let (name, pending, problems) = await context.perform { c in
            (c.object(with: o.a1, as: Artist.self).name, c.hasChanges, relationshipDisagreements(c))
        }
        #expect(name.map(Value.string) == kept && !pending, "A1 shows \(String(describing: name)), pending: \(pending)", sourceLocation: sourceLocation)
        #expect(problems.isEmpty, "\(problems)", sourceLocation: sourceLocation)
    }

    @Test("a root context's key changed while its save ran, changed by another save since the read, is a conflict for the next save",
          arguments: cases, policies)
    @MainActor
    func rootContext(_ firstSave: (Way, MergePolicy), policy: MergePolicy) async throws {
        let (r, o) = try await Self.rootSave(firstSave, setBack: false)
        await Self.expectOursPending(r.context, o)
        await Self.expectSecondSave(r.context, policy: policy, o) { r.store.currentGeneration.value(o.a1, "name") }
        await r.close()
    }

    @Test("a root context's key set and set back while its save ran shows what was saved, and nothing is pending")
    @MainActor
    func rootContextSetBack() async throws {
        let (r, o) = try await Self.rootSave((.saved, .error), setBack: true)
        await Self.expectTheirsShown(r.context, o)
        #expect(r.store.currentGeneration.value(o.a1, "name") == .string("Later"))
        await r.close()
    }

    @Test("a child's key set and set back while its save ran shows what was saved, and nothing is pending")
    func childContextSetBack() async throws {
        let (f, view) = try await Self.childSave((.saved, .error), setBack: true)
        await Self.expectTheirsShown(f.child, f.objects)
        let name = await view.perform { c in c.object(with: f.objects.a1, as: Artist.self).name }
        #expect(name == "Later")
        await f.close()
    }

    /// After the first save: A1 shows "Theirs", as saved, with nothing pending — and based on
    /// it: a name given now saves without a conflict.
    static func expectTheirsShown(_ context: ObjectContext, _ o: ConstraintTests.Objects, sourceLocation: SourceLocation = #_sourceLocation) async {
        let (name, pending, problems) = await context.perform { c in
            (c.object(with: o.a1, as: Artist.self).name, c.hasChanges, relationshipDisagreements(c))
        }
        #expect(name == "Theirs" && !pending, "A1 shows \(String(describing: name)), pending: \(pending)", sourceLocation: sourceLocation)
        #expect(problems.isEmpty, "\(problems)", sourceLocation: sourceLocation)
        await context.perform { c in c.object(with: o.a1, as: Artist.self).name = "Later" }
        await #expect(throws: Never.self, sourceLocation: sourceLocation) { try await context.save(mergePolicy: .error) }
    }

    /// A store and a root context on the main actor.
    struct Root {
        let directory: TemporaryDirectory
        let store: Store
        let context: ObjectContext

        func close(sourceLocation: SourceLocation = #_sourceLocation) async {
            let problems = store.currentGeneration.integrityProblems()
            #expect(problems.isEmpty, "\(problems)", sourceLocation: sourceLocation)
            await store.close()
            directory.remove()
        }
    }

    /// `saved(...)`, saved by a root context while it sets A1's name (and back, with `setBack`).
    @MainActor
    static func rootSave(_ firstSave: (Way, MergePolicy), setBack: Bool) async throws -> (Root, ConstraintTests.Objects) {
        let (way, firstPolicy) = firstSave
        let directory = TemporaryDirectory("strata-changed-during-save")
        let (store, hold) = try StoreWinsInFlightTests.storeHoldingSyncs(in: directory)
        let o = try await seedSongbook(store)
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        // On the main actor, so that its save waits for durability without holding the
        // context: the change below is made while the save is in flight.
        let context = ObjectContext(coordinator: coordinator, executor: .main, name: "editor")
        await context.perform { c in Self.read(c, o) }
        let other = ObjectContext(coordinator: coordinator, name: "other")
        await other.perform { c in Self.otherSide(c, o, way: way) }
        try await other.save()
        await context.perform { c in Self.saved(c, o, way: way) }
        hold.arm()
        let saving = Task { @MainActor in try await context.save(mergePolicy: firstPolicy) }
        #expect(await signalled(hold.reached), "the save reached its sync")
        await context.perform { c in Self.changeName(c, o, setBack: setBack) }
        hold.open()
        _ = try await withTimeout(30, "the save") { try await saving.value }
        #expect(store.currentGeneration.value(o.y, "artist") == .object(o.a1))
        return (Root(directory: directory, store: store, context: context), o)
    }

    /// What the user does while the save is in flight.
    static func changeName(_ c: isolated ObjectContext, _ o: ConstraintTests.Objects, setBack: Bool) {
        let a1 = c.object(with: o.a1, as: Artist.self)
        a1.name = "Ours"
        if setBack { a1.name = "One" }
    }

    @Test("a child's key changed while its save ran, changed by its parent since the read, is a conflict for the next save",
          arguments: cases, policies)
    func childContext(_ firstSave: (Way, MergePolicy), policy: MergePolicy) async throws {
        let (f, view) = try await Self.childSave(firstSave, setBack: false)
        let (o, editor) = (f.objects, f.child)
        await Self.expectOursPending(editor, o)
        await Self.expectSecondSave(editor, policy: policy, o) {
            await view.perform { c in c.object(with: o.a1, as: Artist.self).name.map(Value.string) }
        }
        let problems = await view.perform { c in relationshipDisagreements(c) }
        #expect(problems.isEmpty, "view: \(problems)")
        await #expect(throws: Never.self) { try await view.save() }
        await f.close()
    }

    /// `saved(...)`, saved by a child while it sets A1's name (and back, with `setBack`).
    static func childSave(_ firstSave: (Way, MergePolicy), setBack: Bool) async throws -> (ChildFixture, ObjectContext) {
        let (way, firstPolicy) = firstSave
        let inFlight = SaveInFlight(of: "editor")
        let f = try await ChildFixture(parent: "view", child: "editor", observer: inFlight.observer)
        let (o, view, editor) = (f.objects, f.parent, f.child)
        await editor.setMergePolicy(firstPolicy)
        await editor.perform { c in Self.read(c, o) }
        await view.perform { c in Self.otherSide(c, o, way: way) }
        await editor.perform { c in Self.saved(c, o, way: way) }
        let failure = await inFlight.save(editor, holding: view) {
            await editor.perform { c in Self.changeName(c, o, setBack: setBack) }
        }
        #expect(failure == nil, "\(String(describing: failure))")
        let artist = await view.perform { c in c.object(with: o.y, as: Album.self).artist?.objectID }
        #expect(artist == o.a1)
        return (f, view)
    }
}
