import Foundation
import Testing
@testable import Strata

/// Live results against a brute-force fetch, through random sequences of inserts, updates
/// of sort, section and predicate keys, deletes (cascades included), rollbacks, saves,
/// child saves into the parent, merges of another context's saves (explicit, or automatic),
/// refreshes, resets and search predicates, in a root context and in a child context (whose
/// parent holds live results too). After every turn, for every result set:
///
/// 1. its snapshot equals the request's matches (a fetch) put in order here, by the sort
///    keys read from the rows, and grouped by the section key (and the fetch's own order
///    is that order);
/// 2. the diffs it delivered, applied in order to the previous snapshot, give exactly the
///    new one (versions counting up by one, every position in range);
/// 3. it delivered no diff when nothing it shows changed (same snapshot, and no value of
///    an object it shows — or of that object's artist, when the request reads artists).
///
/// Operations are recorded as they are generated, so a failing sequence replays without
/// the generator and is shrunk to a short one, printed with the failure.
@Suite struct FetchedResultsPropertyTests {
    struct Scenario: Sendable, CustomTestStringConvertible {
        var tier: Tier
        var automaticMerges: Bool
        var seed: UInt64
        var steps: Int
        var testDescription: String { "\(tier.rawValue), \(automaticMerges ? "automatic" : "explicit") merges, seed \(seed)" }
    }

    /// Root and child contexts, explicit and automatic merges, two seeds each: about 1,200
    /// operations in all, a few seconds in a debug build.
    static let scenarios: [Scenario] = [Tier.root, .child].flatMap { tier in
        [false, true].flatMap { automatic in
            [UInt64(1), 2].map { k in Scenario(tier: tier, automaticMerges: automatic, seed: k * 2 + (automatic ? 1 : 0), steps: 150) }
        }
    }

    @Test("live results equal a fresh fetch, and their diffs lead from snapshot to snapshot", arguments: scenarios)
    func randomTurns(scenario: Scenario) async throws {
        let run = try await LiveResultsHarness.run(scenario)
        guard let failure = run.failure else { return }
        let shrunk = try await LiveResultsHarness.shrink(scenario, run)
        Issue.record("""
            \(scenario.testDescription): \(failure.message)
            shortest failing sequence found (\(shrunk.operations.count) of \(run.operations.count) operations):
            \(LiveResultsHarness.describe(shrunk.operations, setup: shrunk.setup))
            its failure: \(shrunk.failure?.message ?? "-")
            """)
    }

    /// Runs scenarios from the environment and prints each failure, shrunk: `LIVE_SEED`
    /// (with `LIVE_TIER=child`, `LIVE_AUTO=1`), or `LIVE_SWEEP=n` for seeds 1...n in both
    /// tiers; `LIVE_STEPS` operations each (default 150).
    @Test("scenarios from the environment", .enabled(if: ProcessInfo.processInfo.environment["LIVE_SEED"] != nil
                                                     || ProcessInfo.processInfo.environment["LIVE_SWEEP"] != nil))
    func fromEnvironment() async throws {
        let env = ProcessInfo.processInfo.environment
        let steps = Int(env["LIVE_STEPS"] ?? "150")!
        var scenarios: [Scenario] = []
        if let sweep = env["LIVE_SWEEP"].flatMap(Int.init) {
            for seed in 1...sweep {
                for tier in [Tier.root, .child] { scenarios.append(Scenario(tier: tier, automaticMerges: seed % 2 == 1, seed: UInt64(seed), steps: steps)) }
            }
        } else {
            scenarios = [Scenario(tier: env["LIVE_TIER"] == "child" ? .child : .root, automaticMerges: env["LIVE_AUTO"] != nil,
                                  seed: UInt64(env["LIVE_SEED"]!)!, steps: steps)]
        }
        for scenario in scenarios {
            let run = try await LiveResultsHarness.run(scenario)
            guard let failure = run.failure else {
                print("\(scenario.testDescription): passed")
                continue
            }
            let shrunk = try await LiveResultsHarness.shrink(scenario, run)
            print("\(scenario.testDescription): \(failure.signature) after operation \(failure.step + 1); shrunk to \(shrunk.operations.count) operations:\n"
                  + "\(LiveResultsHarness.describe(shrunk.operations, setup: shrunk.setup))\n    \(shrunk.failure?.message ?? "")")
        }
    }
}

// MARK: - Operations

/// An object named in an operation: one that existed before the operations, or the one
/// inserted by the change with a tag (so that a shortened sequence still names it).
enum LiveRef: Hashable, Sendable, CustomStringConvertible {
    case id(ObjectID)
    case new(Int)
    var description: String {
        switch self {
        case .id(let id): "\(id)"
        case .new(let tag): "new#\(tag)"
        }
    }
}

/// One change to objects, in some context.
enum LiveChange: Sendable, CustomStringConvertible {
    case insertAlbum(tag: Int, albumID: Int, title: String, rating: Double?, explicit: Bool, artist: LiveRef?)
    case rating(LiveRef, Double?)
    case title(LiveRef, String)
    case explicit(LiveRef, Bool)
    case artist(LiveRef, LiveRef?)
    case albumID(LiveRef, Int)
    case deleteAlbum(LiveRef)
    case insertArtist(tag: Int, artistID: Int, name: String?)
    case name(LiveRef, String?)
    case deleteArtist(LiveRef)
    case insertSong

    var description: String {
        func d(_ v: Double?) -> String { v.map { "\($0)" } ?? "nil" }
        switch self {
        case .insertAlbum(let tag, let albumID, let title, let rating, let explicit, let artist):
            return "insert album new#\(tag) (albumID \(albumID), title \(title.debugDescription), rating \(d(rating)), explicit \(explicit), artist \(artist?.description ?? "nil"))"
        case .rating(let r, let v): return "\(r).rating = \(d(v))"
        case .title(let r, let v): return "\(r).title = \(v.debugDescription)"
        case .explicit(let r, let v): return "\(r).explicit = \(v)"
        case .artist(let r, let v): return "\(r).artist = \(v?.description ?? "nil")"
        case .albumID(let r, let v): return "\(r).albumID = \(v)"
        case .deleteAlbum(let r): return "delete \(r)"
        case .insertArtist(let tag, let artistID, let name): return "insert artist new#\(tag) (artistID \(artistID), name \(name?.debugDescription ?? "nil"))"
        case .name(let r, let v): return "\(r).name = \(v?.debugDescription ?? "nil")"
        case .deleteArtist(let r): return "delete artist \(r) (cascading to its albums)"
        case .insertSong: return "insert a song without album"
        }
    }
}

/// One step of a sequence.
enum LiveOperation: Sendable, CustomStringConvertible {
    /// Changes in the context under test, in one turn.
    case turn([LiveChange])
    case rollback
    case save
    /// The parent of a child context saves to the store.
    case parentSave
    /// Another context on the coordinator resets, makes changes and saves; the contexts
    /// under test merge the save.
    case other([LiveChange])
    case refresh(LiveRef, mergeChanges: Bool)
    case reset
    /// A result set (by its index) gets a search predicate.
    case search(Int, String?)
    case emptyTurn

    var description: String {
        switch self {
        case .turn(let changes): "turn: " + changes.map(\.description).joined(separator: "; ")
        case .rollback: "rollback"
        case .save: "save"
        case .parentSave: "the parent saves"
        case .other(let changes): "another context saves: " + changes.map(\.description).joined(separator: "; ") + "; merged"
        case .refresh(let r, let merge): "refresh \(r) (mergeChanges \(merge))"
        case .reset: "reset"
        case .search(let k, let p): "search predicate of result set \(k) = \(p ?? "nil")"
        case .emptyTurn: "an empty turn"
        }
    }

    var changes: [LiveChange]? {
        switch self {
        case .turn(let c), .other(let c): c
        default: nil
        }
    }

    func with(_ changes: [LiveChange]) -> LiveOperation {
        switch self {
        case .turn: .turn(changes)
        case .other: .other(changes)
        default: self
        }
    }
}

// MARK: - Watching results

/// One live result set under watch, and what its diffs built from the last snapshot.
final class WatchedResults: @unchecked Sendable {
    let label: String
    let results: FetchedResults<Album>
    /// The snapshot the delivered diffs lead to.
    var previous: ResultsSnapshot
    /// The snapshot at the last check.
    var checked: ResultsSnapshot
    var lastVersion = 0
    var diffsSinceCheck = 0
    let readsArtist: Bool
    var problems: [(kind: String, text: String)] = []

    init(label: String, results: FetchedResults<Album>, readsArtist: Bool) {
        self.label = label
        self.results = results
        self.previous = results.snapshot
        self.checked = results.snapshot
        self.readsArtist = readsArtist
        results.onChange = { [weak self] diff in self?.received(diff) }
    }

    private func received(_ diff: ResultsDiff) {
        diffsSinceCheck += 1
        if diff.version != lastVersion + 1 { problems.append(("version", "diff version \(diff.version) after \(lastVersion)")) }
        lastVersion = diff.version
        if let next = LiveResultsHarness.apply(diff, to: previous) {
            if next != results.snapshot {
                problems.append(("diff", "the diff \(diff) turns [\(LiveResultsHarness.describe(previous))] into [\(LiveResultsHarness.describe(next))], the results hold [\(LiveResultsHarness.describe(results.snapshot))]"))
            }
        } else {
            problems.append(("diff", "the diff \(diff) does not fit [\(LiveResultsHarness.describe(previous))] (positions out of range); the results hold [\(LiveResultsHarness.describe(results.snapshot))]"))
        }
        previous = results.snapshot
    }
}

// MARK: - The harness

/// Drives the contexts of a ``FetchedResultsPropertyTests/Scenario``.
final class LiveResultsHarness: @unchecked Sendable {
    struct Failure {
        var step: Int
        /// The kind of problem and the result set: what a shortened sequence must still show.
        var signature: String
        var message: String
    }

    struct Run {
        var operations: [LiveOperation]
        var setup: [String]
        var failure: Failure?
    }

    let scenario: FetchedResultsPropertyTests.Scenario
    /// Draws the objects, the result sets and the merge policy.
    var setupRNG: SeededGenerator
    /// Draws the operations.
    var rng: SeededGenerator
    let coordinator: Coordinator
    /// The context under test, its parent (child tier), and another root context whose saves
    /// are merged.
    let context: ObjectContext
    let parent: ObjectContext?
    let other: ObjectContext
    var watched: [(context: ObjectContext, watched: WatchedResults)] = []
    var setupLog: [String] = []
    var operations: [LiveOperation] = []
    var failure: Failure?
    var nextKey = 1_000
    var nextTag = 0
    /// Objects inserted by the operations: tag → ID, and back.
    var tagged: [Int: ObjectID] = [:]
    var tags: [ObjectID: Int] = [:]
    /// Album and artist values as each context saw them at the last check.
    var world: [ObjectIdentifier: [ObjectID: [Value]]] = [:]
    /// Whether the operations are given (changes are made when performed) rather than
    /// generated (changes are made as they are drawn).
    var isReplaying = false

    static let titles = ["", "a", "b", "B", "\u{E9}", "e\u{301}", "z"]
    static let ratings: [Double?] = [nil, 0, -0.0, 1, 2.5, .nan, .infinity, -1]
    static let names: [String?] = [nil, "A", "B", "b", "Mot\u{F6}rhead", ""]
    static let predicates: [String?] = [
        nil, nil, "explicit == NO", "rating >= 1", "rating == nil", "rating != 2.5", "title BEGINSWITH 'b'",
        "title IN {'a', 'b', 'z'}", "artist.name == 'B'", "rating < 2 OR explicit == YES", "NOT (title == 'a')",
        "rating BETWEEN {0, 2}", "albumID > 1020", "artist == nil",
    ]
    static let searches: [String?] = [nil, "rating > 0", "title CONTAINS[c] 'b'", "explicit == YES", "artist.name != 'A'"]
    static let sectionKeys: [String?] = [nil, nil, "rating", "explicit", "title", "artist.name", "artist"]
    static let sortKeys = ["rating", "title", "albumID", "explicit", "artist.name"]

    init(_ scenario: FetchedResultsPropertyTests.Scenario, coordinator: Coordinator) {
        self.scenario = scenario
        setupRNG = SeededGenerator(seed: scenario.seed)
        rng = SeededGenerator(seed: scenario.seed &* 0x9E37_79B9 &+ 17)
        self.coordinator = coordinator
        other = ObjectContext(coordinator: coordinator, name: "other")
        if scenario.tier == .child {
            let root = ObjectContext(coordinator: coordinator, name: "root")
            parent = root
            context = ObjectContext(parent: root, name: "child")
        } else {
            parent = nil
            context = ObjectContext(coordinator: coordinator, name: "root")
        }
    }

    /// Runs a scenario: generated operations, or the given ones.
    static func run(_ scenario: FetchedResultsPropertyTests.Scenario, replaying: [LiveOperation]? = nil) async throws -> Run {
        let directory = TemporaryDirectory("strata-live-results")
        let store = try StoreTesting.create(in: directory, durability: .none)
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        let h = LiveResultsHarness(scenario, coordinator: coordinator)
        h.isReplaying = replaying != nil
        try await h.seed()
        await h.setUp()
        await h.check(step: -1)
        let count = replaying?.count ?? scenario.steps
        for step in 0..<count where h.failure == nil {
            let operation: LiveOperation
            if let replaying {
                operation = replaying[step]
            } else {
                operation = await h.generate()
            }
            h.operations.append(operation)
            await h.perform(operation)
            await h.check(step: step)
        }
        for (c, w) in h.watched { await c.perform { _ in w.results.onChange = nil } }
        let run = Run(operations: h.operations, setup: h.setupLog, failure: h.failure)
        h.watched = []
        await store.close()
        directory.remove()
        return run
    }

    /// The shortest sequence found that still fails the same way (same kind of problem in
    /// the same result set): chunks of operations left out, then single ones, then single
    /// changes within a turn.
    static func shrink(_ scenario: FetchedResultsPropertyTests.Scenario, _ original: Run, budget: Int = 300,
                       seconds: Double = 15) async throws -> Run {
        guard let failure = original.failure else { return original }
        var best = original
        best.operations = Array(original.operations.prefix(failure.step + 1))
        var tries = 0
        let deadline = Date().addingTimeInterval(seconds * Double(TestTiming.slowdown))
        func fails(_ operations: [LiveOperation]) async throws -> Run? {
            tries += 1
            if Date() > deadline { tries = budget }
            let attempt = try await run(scenario, replaying: operations)
            return attempt.failure?.signature == failure.signature ? attempt : nil
        }
        var chunk = max(1, best.operations.count / 2)
        while chunk >= 1 && tries < budget {
            var start = 0
            var removed = false
            while start < best.operations.count && tries < budget {
                var candidate = best.operations
                candidate.removeSubrange(start..<min(start + chunk, candidate.count))
                if let shorter = try await fails(candidate) {
                    best = shorter
                    best.operations = Array(shorter.operations.prefix(shorter.failure!.step + 1))
                    removed = true
                } else {
                    start += chunk
                }
            }
            if !removed { chunk /= 2 }
        }
        // Single changes within turns.
        var index = 0
        while index < best.operations.count && tries < budget {
            if let changes = best.operations[index].changes, changes.count > 1 {
                var k = 0
                var current = changes
                while k < current.count && current.count > 1 && tries < budget {
                    var fewer = current
                    fewer.remove(at: k)
                    var candidate = best.operations
                    candidate[index] = candidate[index].with(fewer)
                    if let shorter = try await fails(candidate) {
                        best = shorter
                        current = fewer
                    } else {
                        k += 1
                    }
                }
            }
            index += 1
        }
        return best
    }

    static func describe(_ operations: [LiveOperation], setup: [String]) -> String {
        (setup.map { "    " + $0 } + operations.enumerated().map { "    \($0.offset + 1). \($0.element)" }).joined(separator: "\n")
    }

    /// A short description of a snapshot: each section's key and object numbers.
    static func describe(_ snapshot: ResultsSnapshot) -> String {
        snapshot.sections.map { "\($0.key): \($0.ids.map { String($0.number) }.joined(separator: ","))" }.joined(separator: " | ")
    }

    // MARK: Setting up

    func seed() async throws {
        let setup = ObjectContext(coordinator: coordinator, name: "setup")
        let described = await setup.perform { c -> [String] in
            var artists: [Artist] = []
            var lines: [String] = []
            for _ in 0..<5 {
                let artist = c.insert(Artist.self)
                artist.artistID = self.nextKey
                self.nextKey += 1
                artist.name = Self.names.randomElement(using: &self.setupRNG)!
                artists.append(artist)
            }
            for _ in 0..<30 {
                let album = c.insert(Album.self)
                album.albumID = self.nextKey
                self.nextKey += 1
                album.title = Self.titles.randomElement(using: &self.setupRNG)!
                album.rating = Self.ratings.randomElement(using: &self.setupRNG)!
                album.explicit = Bool.random(using: &self.setupRNG)
                if Int.random(in: 0..<4, using: &self.setupRNG) > 0 { album.artist = artists.randomElement(using: &self.setupRNG)! }
            }
            for artist in artists { lines.append("\(artist.objectID): name \(artist.name?.debugDescription ?? "nil")") }
            return lines
        }
        setupLog.append("saved: " + described.joined(separator: ", ") + ", and 30 random albums")
        try await setup.save()
    }

    func randomRequest() -> (FetchRequest, String?) {
        var sort: [SortKey]? = nil
        if Int.random(in: 0..<5, using: &setupRNG) > 0 {
            sort = (0..<Int.random(in: 0...3, using: &setupRNG)).map { _ in
                SortKey(Self.sortKeys.randomElement(using: &setupRNG)!, ascending: Bool.random(using: &setupRNG))
            }
        }
        let predicate = Self.predicates.randomElement(using: &setupRNG)!.map { try! ObjectPredicate(format: $0) }
        var request = FetchRequest(entity: "Album", predicate: predicate, sortBy: sort)
        if Int.random(in: 0..<6, using: &setupRNG) == 0 {
            request.limit = Int.random(in: 0...30, using: &setupRNG)
            request.offset = Int.random(in: 0...5, using: &setupRNG)
        }
        return (request, Self.sectionKeys.randomElement(using: &setupRNG)!)
    }

    func watch(_ c: isolated ObjectContext, label: String) -> (context: ObjectContext, watched: WatchedResults) {
        let (request, sectionKey) = randomRequest()
        let results = try! c.fetchedResults(Album.self, request: request, sectionedBy: sectionKey)
        let keys = (request.sortBy ?? []).map(\.key) + [sectionKey ?? "", request.predicate?.description ?? ""]
        let sort = (request.sortBy ?? []).map { "\($0.key)\($0.ascending ? "" : " desc")" }.joined(separator: ", ")
        let text = "\(label): \(request.predicate?.description ?? "all") sorted by [\(sort)] in sections by \(sectionKey ?? "none")"
            + (request.limit.map { ", limit \($0) offset \(request.offset)" } ?? "")
        return (c, WatchedResults(label: text, results: results, readsArtist: keys.contains { $0.contains("artist") }))
    }

    func setUp() async {
        let policies: [MergePolicy] = [.storeWins, .contextWins, .overwrite, .rollback]
        let policy = policies.randomElement(using: &setupRNG)!
        setupLog.append("merge policy \(policy) in the contexts under test; \(scenario.automaticMerges ? "automatic" : "explicit") merges")
        await context.perform { c in c.mergePolicy = policy }
        if let parent {
            await parent.perform { p in p.mergePolicy = policy }
            let made = await parent.perform { p in (0..<2).map { k in self.watch(p, label: "parent's result set \(k)") } }
            watched += made
        }
        let made = await context.perform { c in (0..<3).map { k in self.watch(c, label: "result set \(k)") } }
        watched += made
        for (index, w) in watched.enumerated() { setupLog.append("[\(index)] \(w.watched.label)") }
        if scenario.automaticMerges {
            if let parent { await parent.perform { p in p.automaticallyMergesChanges = true } }
            await context.perform { c in c.automaticallyMergesChanges = true }
        }
    }

    // MARK: Checking

    /// A diff applied the way a table view applies it, with every position checked first;
    /// `nil` if a position is out of range or the library's `applying` disagrees.
    static func apply(_ diff: ResultsDiff, to old: ResultsSnapshot) -> ResultsSnapshot? {
        func fits(_ path: ResultsIndexPath) -> Bool {
            path.section >= 0 && path.section < old.sections.count && path.row >= 0 && path.row < old.sections[path.section].ids.count
        }
        for path in diff.deletedRows + diff.movedRows.map(\.from) + diff.updatedRows where !fits(path) { return nil }
        for index in diff.deletedSections where index < 0 || index >= old.sections.count { return nil }
        var sections = old.sections.map { (key: $0.key, ids: $0.ids.map(Optional.some)) }
        for path in diff.deletedRows { sections[path.section].ids[path.row] = nil }
        for move in diff.movedRows { sections[move.from.section].ids[move.from.row] = nil }
        for index in Set(diff.deletedSections).sorted(by: >) { sections.remove(at: index) }
        var result = sections.map { ResultsSnapshot.Section(key: $0.key, ids: $0.ids.compactMap { $0 }) }
        for inserted in diff.insertedSections.sorted(by: { $0.index < $1.index }) {
            guard inserted.index >= 0, inserted.index <= result.count else { return nil }
            result.insert(ResultsSnapshot.Section(key: inserted.key, ids: inserted.ids), at: inserted.index)
        }
        let insertions = diff.insertedRows.map { ($0.path, $0.id) } + diff.movedRows.map { ($0.to, $0.id) }
        for (path, id) in insertions.sorted(by: { $0.0 < $1.0 }) {
            guard path.section >= 0, path.section < result.count, path.row >= 0, path.row <= result[path.section].ids.count else { return nil }
            result[path.section].ids.insert(id, at: path.row)
        }
        let applied = ResultsSnapshot(sections: result)
        return old.applying(diff) == applied ? applied : nil
    }

    /// The value of a key path of an object as the context sees it, read from its rows.
    static func value(of key: String, for id: ObjectID, reader: ContextReader, schema: Schema) -> Value {
        var entity = schema.entity(named: id.entity)!
        guard var values = reader.values(of: id) else { return .null }
        let parts = key.split(separator: ".").map(String.init)
        for (i, part) in parts.enumerated() {
            let value = values[entity.propertyIndex(named: part)!]
            if i == parts.count - 1 { return value }
            guard case .object(let next) = value, let nextValues = reader.values(of: next) else { return .null }
            values = nextValues
            entity = schema.entity(named: next.entity)!
        }
        return .null
    }

    /// What the results should hold: the request's matches, in the order of its sort keys
    /// (the section key first) worked out here, in sections by the section key. Also
    /// returns a problem if the context's own ordered fetch disagrees.
    static func expected(_ c: isolated ObjectContext, _ results: FetchedResults<Album>) -> (ResultsSnapshot, String?) {
        var request = results.request
        if let search = results.searchPredicate { request.predicate = request.predicate.map { $0 && search } ?? search }
        var sort = request.sortBy ?? []
        if let key = results.sectionKey {
            // Sections in the direction the request sorts the section key by (else ascending).
            let ascending = sort.first { $0.key == key }?.ascending ?? true
            sort = [SortKey(key, ascending: ascending)] + sort.filter { $0.key != key }
        }
        request.sortBy = sort
        var unordered = request
        unordered.sortBy = []
        unordered.limit = nil
        unordered.offset = 0
        let reader = ContextReader(graph: c.graph, view: c.link.sourceView())
        let keyed = try! c.fetchIDs(unordered).map { id in (id: id, keys: sort.map { Self.value(of: $0.key, for: id, reader: reader, schema: c.schema) }) }
        let sorted = keyed.sorted { a, b in
            for (i, key) in sort.enumerated() {
                let order = SortedIndex.compare(a.keys[i], b.keys[i])
                if order != .orderedSame { return (order == .orderedAscending) == key.ascending }
            }
            return a.id.number < b.id.number
        }.map(\.id)
        let start = min(request.offset, sorted.count)
        let ids = Array(sorted[start..<(request.limit.map { min(sorted.count, start + $0) } ?? sorted.count)])
        let fetched = try! c.fetchIDs(request)
        let orderProblem = fetched == ids ? nil
            : "a fetch sorted by \(sort.map(\.key)) gives \(fetched.map(\.number)), the matches sorted by their values give \(ids.map(\.number))"
        guard let key = results.sectionKey else { return (ResultsSnapshot(sections: [ResultsSnapshot.Section(key: .null, ids: ids)]), orderProblem) }
        var sections: [ResultsSnapshot.Section] = []
        for id in ids {
            let value = Self.value(of: key, for: id, reader: reader, schema: c.schema)
            if let last = sections.last, last.key == value {
                sections[sections.count - 1].ids.append(id)
            } else {
                sections.append(ResultsSnapshot.Section(key: value, ids: [id]))
            }
        }
        return (ResultsSnapshot(sections: sections), orderProblem)
    }

    /// Every album's and artist's values as the context sees them.
    static func worldState(_ c: isolated ObjectContext) -> [ObjectID: [Value]] {
        var state: [ObjectID: [Value]] = [:]
        for entity in ["Album", "Artist"] {
            for row in try! c.matches(FetchRequest(entity: entity, sortBy: [])).rows {
                state[ObjectID(entity: entity, number: row.number)] = row.values
            }
        }
        return state
    }

    func check(step: Int) async {
        if scenario.automaticMerges, parent != nil, failure == nil {
            // A child that follows its parent shows every object it holds unchanged as the
            // parent does, once the merges in flight have run (they are asynchronous: wait
            // for its notifications, up to a hard timeout).
            let stale: @Sendable (isolated ObjectContext) -> [String] = { c in
                let view = c.link.sourceView()
                return c.graph.registered.values.compactMap { object in
                    guard let row = view.row(object.objectID) else { return nil }
                    if object.lifecycle == .deletedElsewhere, object.deletionSavedToParent { return "\(object.objectID) is deleted, the parent has it" }
                    guard object.isLoaded, object.lifecycle == .persistent, object.changedKeys.isEmpty, object.storage != row.values else { return nil }
                    return "\(object.objectID) shows \(object.storage), the parent \(row.values)"
                }
            }
            let changes = context.objectsDidChange()
            if await !context.perform({ stale($0).isEmpty }) {
                _ = await returns(within: .seconds(2)) { [context] in
                    for await _ in changes where await context.perform({ stale($0).isEmpty }) { return true }
                    return false
                }
            }
            let left = await context.perform { stale($0) }
            if !left.isEmpty {
                failure = Failure(step: step, signature: "stale in the child",
                                  message: "after operation \(step + 1): the child shows objects otherwise than its parent: " + left.sorted().joined(separator: "; "))
                return
            }
        }
        for c in [context] + (parent.map { [$0] } ?? []) {
            let key = ObjectIdentifier(c)
            let mine = watched.filter { $0.context === c }.map(\.watched)
            let problems = await c.perform { c -> [(kind: String, label: String, text: String)] in
                var problems: [(kind: String, label: String, text: String)] = []
                let now = Self.worldState(c)
                let before = self.world[key] ?? now
                let artistIndex = c.schema.entity(named: "Album")!.propertyIndex(named: "artist")!
                for w in mine {
                    problems += w.problems.map { ($0.kind, w.label, $0.text) }
                    w.problems = []
                    let snapshot = w.results.snapshot
                    if let error = w.results.lastError { problems.append(("error", w.label, "refresh failed: \(error)")) }
                    let (expected, orderProblem) = Self.expected(c, w.results)
                    if let orderProblem { problems.append(("fetch order", w.label, orderProblem)) }
                    if snapshot != expected {
                        let shown = Set(snapshot.sections.flatMap(\.ids)), fetched = Set(expected.sections.flatMap(\.ids))
                        problems.append(("snapshot", w.label, "shows [\(Self.describe(snapshot))] but should show [\(Self.describe(expected))] "
                                         + "(shown only: \(shown.subtracting(fetched).map(\.number).sorted()), missing: \(fetched.subtracting(shown).map(\.number).sorted()))"))
                    }
                    if w.previous != snapshot {
                        problems.append(("diffs", w.label, "the diffs lead to [\(Self.describe(w.previous))] but the results hold [\(Self.describe(snapshot))]"))
                    }
                    if w.diffsSinceCheck > 0 && snapshot == w.checked {
                        let changed = snapshot.sections.flatMap(\.ids).contains { id in
                            if before[id] != now[id] { return true }
                            guard w.readsArtist, let values = now[id] ?? before[id], case .object(let artist) = values[artistIndex] else { return false }
                            return before[artist] != now[artist]
                        }
                        if !changed { problems.append(("spurious", w.label, "\(w.diffsSinceCheck) diff(s) delivered though nothing it shows changed")) }
                    }
                    w.diffsSinceCheck = 0
                    w.checked = snapshot
                    w.previous = snapshot
                }
                self.world[key] = now
                return problems
            }
            if let first = problems.first, failure == nil {
                failure = Failure(step: step, signature: "\(first.kind) in \(first.label)",
                                  message: "after operation \(step + 1): " + problems.map { "\($0.label): \($0.text)" }.joined(separator: "\n"))
            }
        }
    }

    // MARK: Generating

    func ref(_ id: ObjectID) -> LiveRef { tags[id].map(LiveRef.new) ?? .id(id) }

    func generateChange(_ c: isolated ObjectContext) -> LiveChange? {
        let albums = try! c.fetchIDs(FetchRequest(entity: "Album", sortBy: []))
        let artists = try! c.fetchIDs(FetchRequest(entity: "Artist", sortBy: []))
        func album() -> LiveRef? { albums.randomElement(using: &rng).map(ref) }
        func artist() -> LiveRef? { artists.randomElement(using: &rng).map(ref) }
        func newAlbum() -> LiveChange {
            defer { nextKey += 1; nextTag += 1 }
            return .insertAlbum(tag: nextTag, albumID: nextKey, title: Self.titles.randomElement(using: &rng)!,
                                rating: Self.ratings.randomElement(using: &rng)!, explicit: Bool.random(using: &rng),
                                artist: Int.random(in: 0..<4, using: &rng) > 0 ? artist() : nil)
        }
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<20: return newAlbum()
        case 20..<36: return album().map { .rating($0, Self.ratings.randomElement(using: &rng)!) }
        case 36..<44: return album().map { .title($0, Self.titles.randomElement(using: &rng)!) }
        case 44..<52:
            guard let id = albums.randomElement(using: &rng) else { return nil }
            return .explicit(ref(id), !c.object(with: id, as: Album.self).explicit)
        case 52..<58: return album().map { .artist($0, Int.random(in: 0..<4, using: &rng) == 0 ? nil : artist()) }
        case 58..<62:
            defer { nextKey += 1 }
            return album().map { .albumID($0, nextKey) }
        case 62..<76: return album().map { .deleteAlbum($0) }
        case 76..<84: return artist().map { .name($0, Self.names.randomElement(using: &rng)!) }
        case 84..<88:
            defer { nextKey += 1; nextTag += 1 }
            return .insertArtist(tag: nextTag, artistID: nextKey, name: Self.names.randomElement(using: &rng)!)
        case 88..<90: return artist().map { .deleteArtist($0) }
        default: return .insertSong
        }
    }

    func generateChanges(_ c: isolated ObjectContext, count: Int) -> [LiveChange] {
        var changes: [LiveChange] = []
        for _ in 0..<count {
            guard let change = generateChange(c) else { continue }
            apply(change, in: c)  // later changes of the turn see it
            changes.append(change)
        }
        return changes
    }

    /// The next operation, drawn from the current state (changes in the context under test
    /// are made as they are drawn; `perform` then only ends the turn).
    func generate() async -> LiveOperation {
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<42:
            return .turn(await context.perform { c in self.generateChanges(c, count: 1) })
        case 42..<48:
            let count = Int.random(in: 2...4, using: &rng)
            return .turn(await context.perform { c in self.generateChanges(c, count: count) })
        case 48..<50:
            // Many changed rows at once (past the size where a context indexes its changed rows).
            let count = Int.random(in: 65...80, using: &rng)
            return .turn(await context.perform { c in self.generateChanges(c, count: count) })
        case 50..<55: return .rollback
        case 55..<65: return .save
        case 65..<70 where parent != nil: return .parentSave
        case 65..<82:
            let count = Int.random(in: 1...4, using: &rng)
            // Made as drawn; `perform` saves them.
            return .other(await other.perform { o in
                o.reset()
                return self.generateChanges(o, count: count)
            })
        case 82..<88:
            return await context.perform { c -> LiveOperation in
                let albums = c.registeredObjects.compactMap { $0 as? Album }.map(\.objectID).sorted()
                guard let id = albums.randomElement(using: &self.rng) else { return .emptyTurn }
                return .refresh(self.ref(id), mergeChanges: Bool.random(using: &self.rng))
            }
        case 88..<90: return .reset
        case 90..<95: return .search(Int.random(in: 0..<watched.count, using: &rng), Self.searches.randomElement(using: &rng)!)
        default: return .emptyTurn
        }
    }

    // MARK: Performing

    func resolve(_ ref: LiveRef) -> ObjectID? {
        switch ref {
        case .id(let id): id
        case .new(let tag): tagged[tag]
        }
    }

    func existing<T: ManagedObject>(_ ref: LiveRef?, _ type: T.Type, in c: isolated ObjectContext) -> T? {
        guard let ref, let id = resolve(ref), let object = try? c.existingObject(with: id) else { return nil }
        return object as? T
    }

    /// Makes a change in a context; a change naming an object the context does not have
    /// (left out of a shortened sequence, or deleted) is skipped.
    func apply(_ change: LiveChange, in c: isolated ObjectContext) {
        switch change {
        case .insertAlbum(let tag, let albumID, let title, let rating, let explicit, let artist):
            let album = c.insert(Album.self)
            album.albumID = albumID
            album.title = title
            album.rating = rating
            album.explicit = explicit
            if let artist = existing(artist, Artist.self, in: c) { album.artist = artist }
            tagged[tag] = album.objectID
            tags[album.objectID] = tag
        case .rating(let r, let v): existing(r, Album.self, in: c)?.rating = v
        case .title(let r, let v): existing(r, Album.self, in: c)?.title = v
        case .explicit(let r, let v): existing(r, Album.self, in: c)?.explicit = v
        case .artist(let r, let v):
            guard let album = existing(r, Album.self, in: c) else { return }
            if v == nil {
                album.artist = nil
            } else if let artist = existing(v, Artist.self, in: c) {
                album.artist = artist
            }
        case .albumID(let r, let v): existing(r, Album.self, in: c)?.albumID = v
        case .deleteAlbum(let r): if let album = existing(r, Album.self, in: c) { c.delete(album) }
        case .insertArtist(let tag, let artistID, let name):
            let artist = c.insert(Artist.self)
            artist.artistID = artistID
            artist.name = name
            tagged[tag] = artist.objectID
            tags[artist.objectID] = tag
        case .name(let r, let v): existing(r, Artist.self, in: c)?.name = v
        case .deleteArtist(let r): if let artist = existing(r, Artist.self, in: c) { c.delete(artist) }
        case .insertSong:
            let song = c.insert(Song.self)
            song.songID = UUID()
            song.title = "unrelated"
            song.milliseconds = 1
        }
    }

    /// Waits until a context's merges reach the transaction, or a timeout.
    static func waitForMerge(_ stream: AsyncStream<DidSave>, transaction: UInt64) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await save in stream where save.transaction == transaction { return true }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(10))
                return false
            }
            let first = await group.next()!
            group.cancelAll()
            return first
        }
    }

    func perform(_ operation: LiveOperation) async {
        switch operation {
        case .turn(let changes):
            // Generated changes are already made; replayed ones are made here.
            if isReplaying {
                await context.perform { c in for change in changes { self.apply(change, in: c) } }
            } else {
                await context.perform { _ in }
            }
        case .rollback:
            await context.rollback()
        case .save:
            do {
                try await context.save()
            } catch {
                // A refused save (a merged object refers to one deleted here, say) changes
                // nothing; take the changes back to go on.
                await context.rollback()
            }
        case .parentSave:
            _ = try? await parent?.save()
            if scenario.automaticMerges, parent != nil {
                // A deletion this context saved into the parent that the parent's save dropped
                // is announced to it asynchronously, as merges are: wait until it has taken
                // each such object back before checking.
                _ = await waitUntil(context, "the context to take back the objects its parent kept") { c in
                    let view = c.link.sourceView()
                    return !c.graph.registered.values.contains { object in
                        object.lifecycle == .deletedElsewhere && object.deletionSavedToParent && view.row(object.objectID) != nil
                    }
                }
            }
        case .other(let changes):
            if isReplaying {
                await other.perform { o in
                    o.reset()
                    for change in changes { self.apply(change, in: o) }
                }
            }
            let saves = other.didSave()
            let followed = scenario.automaticMerges ? context.link.changes.subscribe() : nil
            let parentFollowed = scenario.automaticMerges ? parent?.link.changes.subscribe() : nil
            guard let transaction = try? await other.save() else {
                await other.rollback()
                return
            }
            if let followed {
                if let parentFollowed, !(await Self.waitForMerge(parentFollowed, transaction: transaction)) {
                    Issue.record("the parent never merged transaction \(transaction)")
                }
                if !(await Self.waitForMerge(followed, transaction: transaction)) {
                    Issue.record("the context never merged transaction \(transaction)")
                }
            } else if let save = await firstElement(of: saves, timeout: .seconds(10)) {
                if let parent { await parent.merge(save) }
                await context.merge(save)
            } else {
                Issue.record("no did-save from the other context")
            }
        case .refresh(let r, let mergeChanges):
            await context.perform { c in
                guard let id = self.resolve(r), let album = c.registeredObject(for: id) as? Album else { return }
                c.refresh(album, mergeChanges: mergeChanges)
            }
        case .reset:
            await context.reset()
        case .search(let index, let format):
            let (c, w) = watched[index]
            await c.perform { _ in w.results.searchPredicate = format.map { try! ObjectPredicate(format: $0) } }
        case .emptyTurn:
            await context.perform { _ in }
        }
    }
}
