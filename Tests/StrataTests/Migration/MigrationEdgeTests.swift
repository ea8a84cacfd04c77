import Foundation
import Testing
@testable import Strata

/// What a migration promises at its edges: dry runs that report what the migration does,
/// progress, errors that name the object and the store's state, the validation of custom
/// steps, the order of to-many lists, and object numbers.
@Suite struct MigrationEdgeTests {
    static func id(_ entity: String, _ number: UInt64) -> ObjectID { ObjectID(entity: entity, number: number) }

    // MARK: - Dry runs

    /// An inferred step's dry run finds the problems the migration finds, with the same
    /// messages: three objects sharing a newly unique value (each repeat names the first
    /// holder, as the store's integrity check does), required relationships left empty and
    /// values beyond a new limit.
    @Test("a dry run of an inferred step reports the problems the migration reports")
    func dryRunAgreesWithTheRealRun() async throws {
        let directory = TemporaryDirectory("migration-dry-run-agrees")
        defer { directory.remove() }
        let tagsV1 = try Schema("Tags", version: 1, entities: [Entity("Tag", attributes: [Attribute("name", .string)])])
        let tagsV2 = try Schema("Tags", version: 2, entities: [Entity("Tag", attributes: [Attribute("name", .string, unique: true)])])
        let shopV1 = try Schema("Shop", version: 1, entities: [
            Entity("Owner", attributes: [Attribute("n", .int)],
                   relationships: [Relationship("items", to: "Item", inverse: "owner", toMany: true)]),
            Entity("Item", attributes: [Attribute("n", .int)], relationships: [Relationship("owner", to: "Owner", inverse: "items")]),
        ])
        let shopV2 = try Schema("Shop", version: 2, entities: [
            Entity("Owner", attributes: [Attribute("n", .int)],
                   relationships: [Relationship("items", to: "Item", inverse: "owner", toMany: true)]),
            Entity("Item", attributes: [Attribute("n", .int, max: .int(5))],
                   relationships: [Relationship("owner", to: "Owner", inverse: "items", optional: false)]),
        ])
        let tags: [RowImage] = (1...3).map { MusicModel.row(tagsV1, "Tag", UInt64($0), ["name": .string("rock")]) }
        let items: [RowImage] = (1...3).map { (n: Int) -> RowImage in
            let owner: Value = n == 2 ? .object(Self.id("Owner", 1)) : .null
            return MusicModel.row(shopV1, "Item", UInt64(n), ["n": .int(Int64(n * 3)), "owner": owner])
        }
        let owner = MusicModel.row(shopV1, "Owner", 1, ["n": .int(1), "items": .objects([Self.id("Item", 2)])])
        let cases: [(String, Schema, Schema, [RowImage])] = [("tags", tagsV1, tagsV2, tags), ("shop", shopV1, shopV2, [owner] + items)]
        for (name, v1, v2, rows) in cases {
            let path = directory.appending("\(name).strata")
            try await MigrationFixture.makeStore(at: path, v1, rows)
            let plan = try MigrationPlan(schemas: [v1, v2])
            let dryRun = try await plan.dryRun(storeAt: path)
            let error = await MigrationFixture.migrate(path, plan)
            let dry = dryRun.steps[0].problems.map(\.problem.description)
            let real = error?.problems.map(\.description) ?? []
            #expect(!dryRun.wouldSucceed && error?.code == .validationFailed, "\(name)")
            #expect(dry == real, "\(name): dry run: \(dry); migration: \(real)")
            #expect(dryRun.steps[0].problems.first?.cause == error?.cause, "\(name)")
        }
    }

    /// A dry run reports the progress the migration reports — each step's phases and its
    /// `.finished` — except writing, which it does not do.
    @Test("a dry run reports the migration's progress, finished included, but for writing")
    func dryRunProgressFinishes() async throws {
        let directory = TemporaryDirectory("migration-dry-run-progress")
        defer { directory.remove() }
        let dryPath = directory.appending("dry.strata"), realPath = directory.appending("real.strata")
        try await MusicModel.createStore(version: 1, at: dryPath)
        try await MusicModel.createStore(version: 1, at: realPath)
        let dryReports = Locked<[MigrationProgress]>([]), realReports = Locked<[MigrationProgress]>([])
        let dryRun = try await MusicModel.plan().dryRun(storeAt: dryPath) { p in dryReports.withLock { $0.append(p) } }
        #expect(dryRun.wouldSucceed)
        let store = try await Store.open(at: realPath, migratingWith: try MusicModel.plan()) { p in realReports.withLock { $0.append(p) } }
        await store.close()
        let dry = dryReports.withLock { $0 }, real = realReports.withLock { $0 }
        #expect(dry.filter { $0.phase == .finished }.map(\.stepNumber) == [1, 2], "\(dry.map(\.description))")
        #expect(dry == real.filter { $0.phase != .writing }, "dry run: \(dry.map(\.description))\nmigration: \(real.map(\.description))")
    }

    // MARK: - Progress and errors

    /// An inferred step reports the start and end of its validation and of its writing;
    /// the objects written are those the new schema keeps (v1's Label is removed).
    @Test("an inferred step reports each phase's end, counting the objects it writes")
    func inferredStepProgress() async throws {
        let directory = TemporaryDirectory("migration-inferred-progress")
        defer { directory.remove() }
        let path = directory.appending("music.strata")
        try await MusicModel.createStore(version: 1, at: path)
        let reports = Locked<[MigrationProgress]>([])
        let store = try await Store.open(at: path, migratingWith: try MigrationPlan(schemas: [MusicModel.v1, MusicModel.v2])) { p in
            reports.withLock { $0.append(p) }
        }
        await store.close()
        let all = reports.withLock { $0 }.map { "\($0.phase.rawValue) \($0.completed)/\($0.total)" }
        #expect(all == ["validating 0/14", "validating 14/14", "writing 0/14", "writing 14/14", "finished 14/14"], "\(all)")
    }

    /// Step 1 (inferred) succeeds and is written; step 2 fails validation. The error says the
    /// step was not written and which version the store is at now.
    @Test("a failure in a later step says which version the store is at")
    func laterStepFailureMessage() async throws {
        let directory = TemporaryDirectory("migration-later-step")
        defer { directory.remove() }
        let path = directory.appending("music.strata")
        try await MusicModel.createStore(version: 1, at: path)
        var broken = MigrationStep(from: MusicModel.v2, to: MusicModel.v3)
        broken.transform("Song") { song, destination in
            try destination.insert("Song", values: ["songID": song["songID"], "title": song["title"]])
        }
        let plan = try MigrationPlan(schemas: [MusicModel.v1, MusicModel.v2, MusicModel.v3], steps: [broken])
        let message = (await MigrationFixture.migrate(path, plan))?.description ?? ""
        let reader = try Store.open(at: path, configuration: .init(readOnly: true))
        let version = reader.schema.version
        await reader.close()
        #expect(version == 2)
        #expect(message.hasPrefix("validationFailed: step Music 2 → 3 (custom): Song/1.data: the relationship is required but empty"), "\(message)")
        #expect(message.contains("; the step was not written; the steps before it were written: the store is at schema version 2 now"), "\(message)")
        #expect(!message.contains("the store was not changed"), "\(message)")
    }

    /// "up to 100 validation problems": the integrity problems and the delete-rule problems
    /// share the limit.
    @Test("a validation failure lists at most 100 problems")
    func atMostOneHundredProblems() async throws {
        let v1 = try Schema("Shop", version: 1, entities: [
            Entity("Owner", attributes: [Attribute("n", .int)],
                   relationships: [Relationship("items", to: "Item", inverse: "owner", toMany: true, deleteRule: .deny)]),
            Entity("Item", attributes: [Attribute("n", .int)],
                   relationships: [Relationship("owner", to: "Owner", inverse: "items")]),
        ])
        let v2 = try Schema("Shop", version: 2, entities: [
            Entity("Owner", attributes: [Attribute("n", .int)],
                   relationships: [Relationship("items", to: "Item", inverse: "owner", toMany: true, deleteRule: .deny)]),
            Entity("Item", attributes: [Attribute("n", .int, max: .int(0))],
                   relationships: [Relationship("owner", to: "Owner", inverse: "items")]),
        ])
        let directory = TemporaryDirectory("migration-hundred")
        defer { directory.remove() }
        let path = directory.appending("store.strata")
        let items = (1...150).map { Self.id("Item", UInt64($0)) }
        try await MigrationFixture.makeStore(at: path, v1, [MusicModel.row(v1, "Owner", 1, ["n": .int(1), "items": .objects(items)])]
            + items.map { MusicModel.row(v1, "Item", $0.number, ["n": .int(Int64($0.number)), "owner": .object(Self.id("Owner", 1))]) })
        var step = MigrationStep(from: v1, to: v2)
        step.transform("Owner") { _, _ in }  // drops the owner: deny, its items are kept
        let plan = try MigrationPlan(schemas: [v1, v2], steps: [step])
        let dryRun = try await plan.dryRun(storeAt: path)
        #expect(dryRun.steps[0].problems.count == 100)
        let error = await MigrationFixture.migrate(path, plan)
        #expect(error?.problems.count == 100, "\(String(describing: error))")
    }

    /// A transform or link that throws its own `MigrationError` without naming an object gets
    /// the object it was running for (and its entity), as any other error does.
    @Test("a MigrationError thrown by a transform or a link is completed with its entity and object")
    func thrownMigrationErrorsNameTheObject() async throws {
        let directory = TemporaryDirectory("migration-thrown")
        defer { directory.remove() }
        let path = directory.appending("music.strata")
        try await MusicModel.createStore(version: 2, at: path)
        var throwing = MigrationStep(from: MusicModel.v2, to: MusicModel.v3)
        throwing.transform("Song") { song, _ in
            if try song["lyrics"] == .null { throw MigrationError(.transformFailed, "no lyrics") }
        }
        let error = await MigrationFixture.migrate(path, try MigrationPlan(schemas: [MusicModel.v2, MusicModel.v3], steps: [throwing]))
        #expect(error?.entity == "Song" && error?.object == Self.id("Song", 6), "\(String(describing: error))")
        #expect(error?.description == "transformFailed: step Music 2 → 3 (custom): Song/6: no lyrics")
        var link = MusicModel.split
        link.link("Song") { song, destination in
            if try destination.value(forKey: "songID", of: song) == .int(104) { throw MigrationError(.transformFailed, "bad song") }
        }
        let linkError = await MigrationFixture.migrate(path, try MigrationPlan(schemas: [MusicModel.v2, MusicModel.v3], steps: [link],
                                                                               modelClasses: [SongDataModel.self]))
        #expect(linkError?.entity == "Song" && linkError?.object == Self.id("Song", 4), "\(String(describing: linkError))")
    }

    // MARK: - Custom steps

    /// A link that lists an object twice in a to-many relationship: validation reports it,
    /// as the store's integrity check would, and nothing is written.
    @Test("a custom step that lists an object twice in a to-many relationship fails validation")
    func duplicateTargetsInAToManyRelationshipAreRefused() async throws {
        let v1 = MusicModel.disc
        let v2 = try Schema("Disc", version: 2, entities: [
            Entity("Album", attributes: [Attribute("title", .string), Attribute("note", .string, optional: true)],
                   relationships: [Relationship("songs", to: "Song", inverse: "album", toMany: true)]),
            Entity("Song", attributes: [Attribute("title", .string)],
                   relationships: [Relationship("album", to: "Album", inverse: "songs")]),
        ])
        let directory = TemporaryDirectory("migration-listed-twice")
        defer { directory.remove() }
        let path = directory.appending("store.strata")
        try await MigrationFixture.makeStore(at: path, v1, [
            MusicModel.row(v1, "Album", 1, ["title": .string("A"), "songs": .objects([Self.id("Song", 1)])]),
            MusicModel.row(v1, "Song", 1, ["title": .string("S"), "album": .object(Self.id("Album", 1))]),
        ])
        var step = MigrationStep(from: v1, to: v2)
        step.link("Album") { album, destination in
            guard case .objects(let songs) = try destination.value(forKey: "songs", of: album) else { return }
            try destination.setValue(.objects(songs + songs), forKey: "songs", of: album)
        }
        let before = try MusicModel.files(path)
        let error = await MigrationFixture.migrate(path, try MigrationPlan(schemas: [v1, v2], steps: [step]))
        #expect(error?.code == .validationFailed)
        #expect(error?.problems.map(\.description) == ["Album/1.songs: lists an object twice"], "\(String(describing: error))")
        #expect(try MusicModel.files(path) == before)
    }

    /// To-many lists are ordered. Hand-ordered lists keep their order through a custom step
    /// that transforms the objects on one side or on both, whichever side the schema lists
    /// first, one-to-many and many-to-many (and through an inferred step).
    @Test("a custom step keeps the order of carried-over to-many relationships",
          arguments: [("Album", false), ("Album", true), ("Song", true), ("Playlist", true)])
    func toManyOrderSurvivesACustomStep(listing: String, bothTransformed: Bool) async throws {
        // "Album": albums listed first; "Song": songs first; "Playlist": songs first, many-to-many.
        let manyToMany = listing == "Playlist"
        let listEntity = manyToMany ? "Playlist" : "Album", back = manyToMany ? "playlists" : "album"
        func schema(_ version: Int) throws -> Schema {
            let list = Entity(listEntity, attributes: [Attribute("title", .string)],
                              relationships: [Relationship("songs", to: "Song", inverse: back, toMany: true)])
            let song = Entity("Song", attributes: [Attribute("title", .string)] + (version == 2 ? [Attribute("plays", .int, default: .int(0))] : []),
                              relationships: [Relationship(back, to: listEntity, inverse: "songs", toMany: manyToMany)])
            return try Schema("Disc", version: version, entities: listing == "Album" ? [list, song] : [song, list])
        }
        let v1 = try schema(1), v2 = try schema(2)
        let order = [Self.id("Song", 3), Self.id("Song", 1), Self.id("Song", 2)]
        var rows = [MusicModel.row(v1, listEntity, 1, ["title": .string("A"), "songs": .objects(order)])]
        if manyToMany {
            rows.append(MusicModel.row(v1, listEntity, 2, ["title": .string("B"), "songs": .objects([Self.id("Song", 1)])]))
        }
        rows += (1...3).map { n in
            let lists: Value = manyToMany
                ? .objects(n == 1 ? [Self.id(listEntity, 2), Self.id(listEntity, 1)] : [Self.id(listEntity, 1)])
                : .object(Self.id(listEntity, 1))
            return MusicModel.row(v1, "Song", UInt64(n), ["title": .string("S\(n)"), back: lists])
        }
        var step = MigrationStep(from: v1, to: v2)
        step.transform("Song") { song, destination in try destination.insert("Song", values: ["title": song["title"]]) }
        if bothTransformed {
            step.transform(listEntity) { list, destination in try destination.insert(listEntity, values: ["title": list["title"]]) }
        }
        let directory = TemporaryDirectory("migration-order")
        defer { directory.remove() }
        for (name, plan) in [("inferred", try MigrationPlan(schemas: [v1, v2])), ("custom", try MigrationPlan(schemas: [v1, v2], steps: [step]))] {
            let path = directory.appending("\(name).strata")
            try await MigrationFixture.makeStore(at: path, v1, rows)
            let store = try await Store.open(at: path, migratingWith: plan)
            let generation = store.currentGeneration
            await store.close()
            let list = v2.entity(named: listEntity)!, song = v2.entity(named: "Song")!
            #expect(generation.object(Self.id(listEntity, 1))?.values[list.propertyIndex(named: "songs")!] == .objects(order), "\(name) step")
            if manyToMany {
                #expect(generation.object(Self.id("Song", 1))?.values[song.propertyIndex(named: back)!]
                            == .objects([Self.id(listEntity, 2), Self.id(listEntity, 1)]), "\(name) step")
            }
            #expect(generation.integrityProblems().isEmpty, "\(name) step: \(generation.integrityProblems())")
        }
    }

    /// A transform may set a made object's relationships to objects carried over (they exist
    /// once their entity's pass ran): Song/1 moves from Album/1 to Album/2, and in the
    /// many-to-many case stays on Playlist/2 only. The carried-over side follows the
    /// transform instead of the source: Album/2 lists its own song, then the one that joined.
    @Test("a transform's relationships to carried-over objects win over the source's", arguments: [false, true])
    func aTransformMovesAnObjectBetweenCarriedOverOnes(manyToMany: Bool) async throws {
        let listEntity = manyToMany ? "Playlist" : "Album", back = manyToMany ? "playlists" : "album"
        func schema(_ version: Int) throws -> Schema {
            try Schema("Disc", version: version, entities: [
                Entity(listEntity, attributes: [Attribute("title", .string)],
                       relationships: [Relationship("songs", to: "Song", inverse: back, toMany: true)]),
                Entity("Song", attributes: [Attribute("title", .string)],
                       relationships: [Relationship(back, to: listEntity, inverse: "songs", toMany: manyToMany)]),
            ])
        }
        let v1 = try schema(1), v2 = try schema(2)
        let song1 = Self.id("Song", 1), song2 = Self.id("Song", 2), list1 = Self.id(listEntity, 1), list2 = Self.id(listEntity, 2)
        let rows = [
            MusicModel.row(v1, listEntity, 1, ["title": .string("A"), "songs": .objects([song1])]),
            MusicModel.row(v1, listEntity, 2, ["title": .string("B"), "songs": .objects(manyToMany ? [song2, song1] : [song2])]),
            MusicModel.row(v1, "Song", 1, ["title": .string("S1"), back: manyToMany ? .objects([list1, list2]) : .object(list1)]),
            MusicModel.row(v1, "Song", 2, ["title": .string("S2"), back: manyToMany ? .objects([list2]) : .object(list2)]),
        ]
        var step = MigrationStep(from: v1, to: v2)
        step.transform("Song") { song, destination in
            try destination.insert("Song", values: ["title": song["title"], back: manyToMany ? .objects([list2]) : .object(list2)])
        }
        let directory = TemporaryDirectory("migration-transform-moves")
        defer { directory.remove() }
        let path = directory.appending("store.strata")
        try await MigrationFixture.makeStore(at: path, v1, rows)
        let plan = try MigrationPlan(schemas: [v1, v2], steps: [step])
        let dryRun = try await plan.dryRun(storeAt: path)
        #expect(dryRun.wouldSucceed, "\(dryRun)")
        let store = try await Store.open(at: path, migratingWith: plan)
        let generation = store.currentGeneration
        await store.close()
        #expect(generation.integrityProblems().isEmpty, "\(generation.integrityProblems())")
        let list = v2.entity(named: listEntity)!.propertyIndex(named: "songs")!, song = v2.entity(named: "Song")!.propertyIndex(named: back)!
        #expect(generation.object(list1)?.values[list] == .objects([]))
        #expect(generation.object(list2)?.values[list] == .objects([song2, song1]))
        #expect(generation.object(song1)?.values[song] == (manyToMany ? .objects([list2]) : .object(list2)))
    }

    /// Artist.albums becomes the to-one Artist.album, and the transform for Artist leaves it
    /// empty: it takes the first of its source's albums when relationships are carried over.
    /// The second album's artist still names the artist, which no longer refers back: that
    /// is no choice of the transform's, so validation refuses the step rather than the album
    /// silently losing its artist.
    @Test("a relationship carried over to a made object is not taken for one its transform set")
    func aCarriedOverRelationshipIsNotTheTransformsChoice() async throws {
        let v1 = try Schema("Shop", version: 1, entities: [
            Entity("Artist", attributes: [Attribute("name", .string)],
                   relationships: [Relationship("albums", to: "Album", inverse: "artist", toMany: true)]),
            Entity("Album", attributes: [Attribute("title", .string)], relationships: [Relationship("artist", to: "Artist", inverse: "albums")]),
        ])
        let v2 = try Schema("Shop", version: 2, entities: [
            Entity("Artist", attributes: [Attribute("name", .string)], relationships: [Relationship("album", to: "Album", inverse: "artist", renamedFrom: "albums")]),
            Entity("Album", attributes: [Attribute("title", .string)], relationships: [Relationship("artist", to: "Artist", inverse: "album")]),
        ])
        let rows = [
            MusicModel.row(v1, "Artist", 1, ["name": .string("A"), "albums": .objects([Self.id("Album", 1), Self.id("Album", 2)])]),
            MusicModel.row(v1, "Album", 1, ["title": .string("X"), "artist": .object(Self.id("Artist", 1))]),
            MusicModel.row(v1, "Album", 2, ["title": .string("Y"), "artist": .object(Self.id("Artist", 1))]),
        ]
        var step = MigrationStep(from: v1, to: v2)
        step.transform("Artist") { artist, destination in try destination.insert("Artist", values: ["name": artist["name"]]) }
        let directory = TemporaryDirectory("migration-carried-not-chosen")
        defer { directory.remove() }
        let path = directory.appending("store.strata")
        try await MigrationFixture.makeStore(at: path, v1, rows)
        let before = try MusicModel.files(path)
        let error = await MigrationFixture.migrate(path, try MigrationPlan(schemas: [v1, v2], steps: [step]))
        #expect(error?.code == .validationFailed)
        #expect(error?.problems.map { "\($0.object).\($0.key)" } == ["Album/2.artist"], "\(String(describing: error))")
        #expect(try MusicModel.files(path) == before)
    }

    // MARK: - Stores and numbers

    /// A store with no transaction at all (checkpoint of transaction 0) migrates, both
    /// inferred and custom, and reopens.
    @Test("an empty store migrates through inferred and custom steps")
    func emptyStoreMigrates() async throws {
        let directory = TemporaryDirectory("migration-empty")
        defer { directory.remove() }
        let path = directory.appending("music.strata")
        await (try Store.create(at: path, schema: MusicModel.v1)).close()
        let store = try await Store.open(at: path, migratingWith: try MusicModel.plan())
        #expect(store.schema.version == 3 && store.currentGeneration.totalCount == 0)
        await store.close()
        let again = try await Store.open(at: path, migratingWith: try MusicModel.plan())
        #expect(again.schema.version == 3)
        await again.close()
    }

    /// A transform for a renamed entity (Genre → Style) that drops one object: the others
    /// keep their numbers, and the dropped one's number is not handed out again.
    @Test("a transform for a renamed entity keeps numbers")
    func renamedTransformedEntityKeepsNumbers() async throws {
        let directory = TemporaryDirectory("migration-renamed-transform")
        defer { directory.remove() }
        let path = directory.appending("music.strata")
        try await MusicModel.createStore(version: 1, at: path)
        var step = MigrationStep(from: MusicModel.v1, to: MusicModel.v2)
        step.transform("Genre") { genre, destination in
            guard try genre["name"] != .string("Jazz") else { return }
            try destination.insert("Style", values: ["name": genre["name"]])
        }
        let plan = try MigrationPlan(schemas: [MusicModel.v1, MusicModel.v2], steps: [step])
        let store = try await Store.open(at: path, migratingWith: plan)
        let g = store.currentGeneration
        #expect(g.objects(of: "Style").map(\.id.number) == [1, 2])
        #expect(g.integrityProblems().isEmpty)
        #expect(store.allocateObjectIDs(for: "Style")[0].number == 4)
        await store.close()
    }

    /// Object numbers are never reused: a deleted object's number stays used after an
    /// in-place migration (inferred and custom) and a legacy migration.
    @Test("numbers of deleted objects are not handed out again after a migration")
    func deletedNumbersStayUsed() async throws {
        let directory = TemporaryDirectory("migration-numbers")
        defer { directory.remove() }
        func fixture(_ path: String) async throws {
            try await MusicModel.createStore(version: 1, at: path)
            let store = try Store.open(at: path)
            try await store.commit(ChangeSet(author: "test", deleted: [ObjectDeletion(id: Self.id("Genre", 3), baseVersion: store.currentGeneration.object(Self.id("Genre", 3))!.version)]))
            await store.close()
        }
        var custom = MigrationStep(from: MusicModel.v1, to: MusicModel.v2)
        custom.transform("Genre") { genre, destination in try destination.insert("Style", values: ["name": genre["name"]]) }
        let plans = [("inferred", try MigrationPlan(schemas: [MusicModel.v1, MusicModel.v2])),
                     ("custom", try MigrationPlan(schemas: [MusicModel.v1, MusicModel.v2], steps: [custom]))]
        for (name, plan) in plans {
            let path = directory.appending("\(name).strata")
            try await fixture(path)
            let store = try await Store.open(at: path, migratingWith: plan)
            #expect(store.allocateObjectIDs(for: "Style")[0].number == 4, "\(name)")
            await store.close()
            let legacy = directory.appending("\(name)-legacy.strata")
            try await fixture(legacy)
            let copy = try await Store.migrate(legacyStoreAt: legacy, to: directory.appending("\(name)-new.strata"), with: plan)
            #expect(copy.allocateObjectIDs(for: "Style")[0].number == 4, "\(name) legacy")
            await copy.close()
        }
    }
}
