import Foundation
import Testing
@testable import Strata

@Suite struct MigrationMappingEdgeTests {
    /// v2 renames Track to Song and adds a new, unrelated entity that reuses the name Track.
    /// The old tracks become songs; the new Track entity starts empty.
    @Test("an entity renamed away from a name that a new entity then takes: the new entity starts empty")
    func renamedEntityWhoseNameIsReused() async throws {
        let v1 = try Schema("Player", version: 1, entities: [
            Entity("Track", attributes: [Attribute("trackID", .int, unique: true), Attribute("title", .string)]),
        ])
        let v2 = try Schema("Player", version: 2, entities: [
            Entity("Song", attributes: [Attribute("trackID", .int, unique: true), Attribute("title", .string)], renamedFrom: "Track"),
            Entity("Track", attributes: [Attribute("code", .string, optional: true)]),
        ])
        let directory = TemporaryDirectory("migration-reused-name")
        defer { directory.remove() }
        let path = directory.appending("store.strata")
        let store = try Store.create(at: path, schema: v1, configuration: Store.Configuration(durability: .none))
        let ids = store.allocateObjectIDs(for: "Track", count: 3)
        try await store.commit(ChangeSet(inserted: ids.enumerated().map { i, id in
            RowImage(id: id, values: [.int(Int64(i + 1)), .string("Track \(i + 1)")])
        }))
        await store.close()

        let plan = try MigrationPlan(schemas: [v1, v2])
        let migrated = try await Store.open(at: path, migratingWith: plan, configuration: Store.Configuration(durability: .none))
        let generation = migrated.currentGeneration
        #expect(generation.objects(of: "Song").count == 3)
        #expect(generation.objects(of: "Track").count == 0, "\(generation.objects(of: "Track").map(\.values))")
        await migrated.close()
    }
}

extension MigrationMappingEdgeTests {
    /// v2 removes Album (and Artist.albums with it) and keeps only some artists. The albums
    /// of a dropped artist go with their entity, so its cascade rule is satisfied.
    @Test("a transform that drops objects whose cascade targets belong to a removed entity passes validation")
    func droppedObjectsWithCascadeIntoRemovedEntity() async throws {
        let v1 = try Schema("Shop", version: 1, entities: [
            Entity("Artist", attributes: [Attribute("artistID", .int, unique: true), Attribute("active", .bool)],
                   relationships: [Relationship("albums", to: "Album", inverse: "artist", toMany: true, deleteRule: .cascade)]),
            Entity("Album", attributes: [Attribute("title", .string)],
                   relationships: [Relationship("artist", to: "Artist", inverse: "albums")]),
        ])
        let v2 = try Schema("Shop", version: 2, entities: [
            Entity("Artist", attributes: [Attribute("artistID", .int, unique: true), Attribute("active", .bool)]),
        ])
        let directory = TemporaryDirectory("migration-removed-cascade")
        defer { directory.remove() }
        let path = directory.appending("store.strata")
        let store = try Store.create(at: path, schema: v1, configuration: Store.Configuration(durability: .none))
        let artists = store.allocateObjectIDs(for: "Artist", count: 2)
        let albums = store.allocateObjectIDs(for: "Album", count: 2)
        try await store.commit(ChangeSet(inserted: [
            RowImage(id: artists[0], values: [.int(1), .bool(true), .objects([albums[0]])]),
            RowImage(id: artists[1], values: [.int(2), .bool(false), .objects([albums[1]])]),
            RowImage(id: albums[0], values: [.string("Kept"), .object(artists[0])]),
            RowImage(id: albums[1], values: [.string("Gone"), .object(artists[1])]),
        ]))
        await store.close()

        var step = MigrationStep(from: v1, to: v2)
        step.transform("Artist") { artist, destination in
            guard try artist.value(forKey: "active") == .bool(true) else { return }  // inactive artists are dropped
            _ = try destination.insert("Artist", values: ["artistID": artist["artistID"], "active": artist["active"]])
        }
        let plan = try MigrationPlan(schemas: [v1, v2], steps: [step])
        do {
            let migrated = try await Store.open(at: path, migratingWith: plan, configuration: Store.Configuration(durability: .none))
            #expect(migrated.currentGeneration.objects(of: "Artist").map(\.values[0]) == [.int(1)])
            await migrated.close()
        } catch {
            Issue.record("the migration was refused: \(error)")
        }
    }
}

extension MigrationMappingEdgeTests {
    /// v2 renames the attribute name to title and adds a new optional attribute called name:
    /// the old names move to title and the new name starts empty.
    @Test("an attribute renamed away from a name that a new attribute then takes: the new attribute starts empty")
    func renamedAttributeWhoseNameIsReused() async throws {
        let v1 = try Schema("Player", version: 1, entities: [
            Entity("Track", attributes: [Attribute("trackID", .int, unique: true), Attribute("name", .string)]),
        ])
        let v2 = try Schema("Player", version: 2, entities: [
            Entity("Track", attributes: [Attribute("trackID", .int, unique: true), Attribute("title", .string, renamedFrom: "name"),
                                         Attribute("name", .string, optional: true)]),
        ])
        let directory = TemporaryDirectory("migration-reused-attribute")
        defer { directory.remove() }
        let path = directory.appending("store.strata")
        let store = try Store.create(at: path, schema: v1, configuration: Store.Configuration(durability: .none))
        let id = store.allocateObjectIDs(for: "Track", count: 1)[0]
        try await store.commit(ChangeSet(inserted: [RowImage(id: id, values: [.int(1), .string("Intro")])]))
        await store.close()

        let plan = try MigrationPlan(schemas: [v1, v2])
        #expect(plan.steps[0].changes.contains { $0.key == "name" && $0.kind == .addedAttribute })
        let migrated = try await Store.open(at: path, migratingWith: plan, configuration: Store.Configuration(durability: .none))
        let values = migrated.currentGeneration.object(id)?.values
        #expect(values == [.int(1), .string("Intro"), .null])
        await migrated.close()
    }
}

extension MigrationMappingEdgeTests {
    /// The staging directory next to the destination is emptied before a legacy store is
    /// copied into it: a legacy store at that very path is refused before anything is touched.
    @Test("a legacy store at the migration's staging path is refused and left as it is")
    func legacyStoreAtTheStagingPathIsRefused() async throws {
        let directory = TemporaryDirectory("migration-staging-clash")
        defer { directory.remove() }
        let destination = directory.appending("songs.strata")
        let legacy = destination + Store.legacyStagingSuffix
        try FileManager.default.createDirectory(atPath: legacy, withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: URL(fileURLWithPath: legacy + "/journal-00000000000000000001.strata"))
        let v1 = try Schema("Player", version: 1, entities: [Entity("Track", attributes: [Attribute("title", .string)])])
        let plan = try MigrationPlan(schemas: [v1])
        let refused = await #expect(throws: MigrationError.self) {
            _ = try await Store.migrate(legacyStoreAt: legacy, to: destination, with: plan)
        }
        #expect(refused?.underlying?.code == .alreadyExists, "\(String(describing: refused))")
        #expect(FileManager.default.fileExists(atPath: legacy + "/journal-00000000000000000001.strata"), "the legacy store's files were removed")
    }
}

extension MigrationMappingEdgeTests {
    /// v2 keeps every relationship's name, type and destination but pairs them with other
    /// inverses. An inferred step keeps each side's contents, so the sides would disagree:
    /// the plan is refused, naming each relationship and asking for a custom step.
    @Test("relationships paired with another inverse are not inferred")
    func rePairedInversesAreNotInferred() async throws {
        let refused = #expect(throws: MigrationError.self) {
            _ = try MigrationPlan(schemas: [MigrationFixture.crossedV1, MigrationFixture.crossedV2])
        }
        #expect(refused?.code == .notInferable)
        #expect(refused?.changes.map { "\($0.entity).\($0.key ?? "")" } == ["Album.songs", "Album.featured", "Song.album", "Song.featuredOn"])
        #expect(refused?.changes.allSatisfy { $0.kind == .shapeChanged } == true)
        #expect(refused?.description.contains(
            "Album.songs: its inverse changed from Song.album to Song.featuredOn, so each side's objects would no longer match the other's; a custom step must set it") == true,
                "\(String(describing: refused))")
    }

    /// What the refusal asks for: a custom step whose link sets the relationships (here from
    /// the songs' old values; setting one side keeps its new inverse in step).
    @Test("a custom step's links set relationships paired with another inverse")
    func linksSetRePairedInverses() async throws {
        let directory = TemporaryDirectory("migration-re-paired-link")
        defer { directory.remove() }
        let path = directory.appending("store.strata")
        try await MigrationFixture.makeStore(at: path, MigrationFixture.crossedV1, MigrationFixture.crossedRows())
        var step = MigrationStep(from: MigrationFixture.crossedV1, to: MigrationFixture.crossedV2)
        step.link("Song") { song, destination in
            guard let old = destination.sourceObject(of: song) else { return }
            try destination.setValue(old["album"], forKey: "album", of: song)
            try destination.setValue(old["featuredOn"], forKey: "featuredOn", of: song)
        }
        step.link("Album") { _, _ in }  // its relationships follow the songs' (inverses are kept in step)
        let store = try await Store.open(at: path, migratingWith: try MigrationPlan(schemas: [MigrationFixture.crossedV1, MigrationFixture.crossedV2], steps: [step]))
        let generation = store.currentGeneration
        await store.close()
        #expect(generation.integrityProblems().isEmpty, "\(generation.integrityProblems())")
        let album = MigrationFixture.crossedV2.entity(named: "Album")!
        #expect(generation.object(MusicModel.id("Album", 1))?.values[album.propertyIndex(named: "featured")!] == .objects([MusicModel.id("Song", 1)]))
        #expect(generation.object(MusicModel.id("Album", 2))?.values[album.propertyIndex(named: "songs")!] == .objects([MusicModel.id("Song", 1)]))
    }

    /// v2 renames Song.album to record (and Album.songs to tracks) and adds new, unrelated
    /// relationships under the old names. The renamed ones keep the data and the new ones
    /// start empty — also for objects a custom step's transform made, whose relationships
    /// are carried over from their source object.
    @Test("a new relationship taking a renamed one's old name starts empty, in inferred and custom steps")
    func transformedObjectsDoNotCopyIntoANameThatWasRenamedAway() async throws {
        let v1 = MusicModel.disc
        let v2 = try Schema("Disc", version: 2, entities: [
            Entity("Album", attributes: [Attribute("title", .string)],
                   relationships: [Relationship("tracks", to: "Song", inverse: "record", toMany: true, renamedFrom: "songs"),
                                   Relationship("songs", to: "Song", inverse: "album", toMany: true)]),
            Entity("Song", attributes: [Attribute("title", .string)],
                   relationships: [Relationship("record", to: "Album", inverse: "tracks", renamedFrom: "album"),
                                   Relationship("album", to: "Album", inverse: "songs")]),
        ])
        let rows = [
            MusicModel.row(v1, "Album", 1, ["title": .string("A"), "songs": .objects([MusicModel.id("Song", 1)])]),
            MusicModel.row(v1, "Song", 1, ["title": .string("S"), "album": .object(MusicModel.id("Album", 1))]),
        ]
        let directory = TemporaryDirectory("migration-reused-relationship")
        defer { directory.remove() }
        var step = MigrationStep(from: v1, to: v2)
        step.transform("Song") { song, destination in
            try destination.insert("Song", values: ["title": song["title"]])
        }
        for (name, plan) in [("inferred", try MigrationPlan(schemas: [v1, v2])), ("custom", try MigrationPlan(schemas: [v1, v2], steps: [step]))] {
            let path = directory.appending("\(name).strata")
            try await MigrationFixture.makeStore(at: path, v1, rows)
            let store = try await Store.open(at: path, migratingWith: plan)
            let song = store.currentGeneration.object(MusicModel.id("Song", 1))!.values
            let album = store.currentGeneration.object(MusicModel.id("Album", 1))!.values
            await store.close()
            let s = v2.entity(named: "Song")!, a = v2.entity(named: "Album")!
            #expect(song[s.propertyIndex(named: "record")!] == .object(MusicModel.id("Album", 1)), "\(name)")
            #expect(album[a.propertyIndex(named: "tracks")!] == .objects([MusicModel.id("Song", 1)]), "\(name)")
            #expect(song[s.propertyIndex(named: "album")!] == .null, "\(name) step: the new Song.album got the renamed relationship's values")
            #expect(album[a.propertyIndex(named: "songs")!] == .objects([]), "\(name) step: the new Album.songs got the renamed relationship's values")
        }
    }

    /// v2 renames Track.name to title and adds a new `name`; v3 is v2 copied forward with an
    /// attribute added, keeping title's `renamedFrom: "name"`. v2 has both names, so in the
    /// v2 → v3 step the hint is a leftover: each attribute keeps its own values. A v1 store
    /// goes through both steps: the rename applies in the first only.
    @Test("a renamedFrom kept in a later version applies only to the step that made the rename")
    func renamedFromCarriedForwardInAMultiStepPlan() async throws {
        let v1 = try Schema("Player", version: 1, entities: [
            Entity("Track", attributes: [Attribute("trackID", .int, unique: true), Attribute("name", .string)]),
        ])
        let v2 = try Schema("Player", version: 2, entities: [
            Entity("Track", attributes: [Attribute("trackID", .int, unique: true), Attribute("title", .string, renamedFrom: "name"),
                                         Attribute("name", .string, default: .string(""))]),
        ])
        let v3 = try Schema("Player", version: 3, entities: [
            Entity("Track", attributes: [Attribute("trackID", .int, unique: true), Attribute("title", .string, renamedFrom: "name"),
                                         Attribute("name", .string, default: .string("")), Attribute("plays", .int, default: .int(0))]),
        ])
        let plan = try MigrationPlan(schemas: [v1, v2, v3])
        #expect(plan.steps[0].changes.map(\.description).contains("Track.title: renamed from \"name\""))
        #expect(plan.steps[1].changes.map(\.description) == ["Track.plays: added (default 0)"])
        let directory = TemporaryDirectory("migration-stale-rename")
        defer { directory.remove() }
        let fromV2 = directory.appending("v2.strata")
        try await MigrationFixture.makeStore(at: fromV2, v2, [
            MusicModel.row(v2, "Track", 1, ["trackID": .int(1), "title": .string("Intro"), "name": .string("intro-v2")]),
        ])
        let fromV1 = directory.appending("v1.strata")
        try await MigrationFixture.makeStore(at: fromV1, v1, [MusicModel.row(v1, "Track", 1, ["trackID": .int(1), "name": .string("Intro")])])
        for (path, expected) in [(fromV2, [Value.int(1), .string("Intro"), .string("intro-v2"), .int(0)]),
                                 (fromV1, [.int(1), .string("Intro"), .string(""), .int(0)])] {
            let store = try await Store.open(at: path, migratingWith: plan)
            let values = store.currentGeneration.object(MusicModel.id("Track", 1))?.values
            await store.close()
            #expect(values == expected, "\(path)")
        }
    }

    /// Two attributes that swap names, and an entity renamed in v2 whose `renamedFrom` v3
    /// keeps while v2's new entity of the old name stays: renames that swap names apply;
    /// the entity's leftover hint does not.
    @Test("swapped names are followed; an entity's leftover renamedFrom is not")
    func swappedNamesAndLeftoverEntityRenames() async throws {
        let v1 = try Schema("Player", version: 1, entities: [
            Entity("Track", attributes: [Attribute("first", .string), Attribute("second", .string)]),
        ])
        let v2 = try Schema("Player", version: 2, entities: [
            Entity("Song", attributes: [Attribute("first", .string, renamedFrom: "second"), Attribute("second", .string, renamedFrom: "first")],
                   renamedFrom: "Track"),
            Entity("Track", attributes: [Attribute("code", .string, optional: true)]),
        ])
        let v3 = try Schema("Player", version: 3, entities: [
            Entity("Song", attributes: [Attribute("first", .string), Attribute("second", .string)], renamedFrom: "Track"),
            Entity("Track", attributes: [Attribute("code", .string, optional: true), Attribute("plays", .int, default: .int(0))]),
        ])
        let directory = TemporaryDirectory("migration-swapped-names")
        defer { directory.remove() }
        let path = directory.appending("store.strata")
        try await MigrationFixture.makeStore(at: path, v1, [MusicModel.row(v1, "Track", 1, ["first": .string("a"), "second": .string("b")])])
        let plan = try MigrationPlan(schemas: [v1, v2])
        let store = try await Store.open(at: path, migratingWith: plan)
        let commit = ChangeSet(inserted: [MusicModel.row(v2, "Track", store.allocateObjectIDs(for: "Track")[0].number, ["code": .string("x")])])
        try await store.commit(commit)
        #expect(store.currentGeneration.object(MusicModel.id("Song", 1))?.values == [.string("b"), .string("a")])
        await store.close()
        let later = try MigrationPlan(schemas: [v2, v3])
        #expect(later.steps[0].changes.map(\.description) == ["Track.plays: added (default 0)"])
        let migrated = try await Store.open(at: path, migratingWith: later)
        #expect(migrated.currentGeneration.objects(of: "Song").map(\.values) == [[.string("b"), .string("a")]])
        #expect(migrated.currentGeneration.objects(of: "Track").map(\.values) == [[.string("x"), .int(0)]])
        await migrated.close()
    }
}

extension MigrationMappingEdgeTests {
    /// Two attributes and two entities that swap names in v2, with v2 copied forward to v3
    /// (hints and all) and given one more attribute: v3 takes v2's values by name. The
    /// copied hints were followed again, and every value moved back under the other name.
    @Test("a swap copied forward with its hints is not made again")
    func aSwapCopiedForwardIsNotMadeAgain() async throws {
        func entities(swapped: Bool, extra: Bool) -> [Entity] {
            let attributes = [Attribute("first", .string, renamedFrom: swapped ? "last" : nil),
                              Attribute("last", .string, renamedFrom: swapped ? "first" : nil)]
                + (extra ? [Attribute("age", .int, default: .int(0))] : [])
            return [Entity("Person", attributes: attributes, renamedFrom: swapped ? "Robot" : nil),
                    Entity("Robot", attributes: [Attribute("first", .string), Attribute("last", .string)], renamedFrom: swapped ? "Person" : nil)]
        }
        let v1 = try Schema("People", version: 1, entities: entities(swapped: false, extra: false))
        let v2 = try Schema("People", version: 2, entities: entities(swapped: true, extra: false))
        let v3 = try Schema("People", version: 3, entities: entities(swapped: true, extra: true))
        #expect(try MigrationPlan(schemas: [v2, v3]).steps[0].changes.map(\.description) == ["Person.age: added (default 0)"])
        let directory = TemporaryDirectory("migration-swap-copied")
        defer { directory.remove() }
        // Progressively in one open, and one version at a time (as `strata migrate` does).
        for oneAtATime in [false, true] {
            let path = directory.appending("store-\(oneAtATime).strata")
            try await MigrationFixture.makeStore(at: path, v1, [
                MusicModel.row(v1, "Person", 1, ["first": .string("Smith"), "last": .string("John")]),
                MusicModel.row(v1, "Robot", 1, ["first": .string("R2"), "last": .string("D2")]),
            ])
            for plan in oneAtATime ? [[v1, v2], [v2, v3]] : [[v1, v2, v3]] {
                let store = try await Store.open(at: path, migratingWith: try MigrationPlan(schemas: plan))
                await store.close()
            }
            let store = try Store.open(at: path, configuration: .init(readOnly: true))
            let g = store.currentGeneration
            #expect(g.schema.version == 3)
            // v2 swapped the names: the person's first and last, and the robot became the person.
            #expect(g.objects(of: "Person").map(\.values) == [[.string("D2"), .string("R2"), .int(0)]], "\(oneAtATime)")
            #expect(g.objects(of: "Robot").map(\.values) == [[.string("Smith"), .string("John")]], "\(oneAtATime)")
            await store.close()
        }
    }

    /// Two entities of v2 rename from the same entity, and two attributes from the same
    /// attribute. Followed, each old object became two (and each old value was copied into
    /// two attributes); an inferred step refuses it instead, naming the second of each.
    @Test("a renamedFrom that two entities or two properties claim is not inferred")
    func aRenameClaimedTwiceIsNotInferred() async throws {
        let v1 = try Schema("Shop", version: 1, entities: [
            Entity("Item", attributes: [Attribute("code", .int, unique: true), Attribute("label", .string)]),
        ])
        let entities = try Schema("Shop", version: 2, entities: [
            Entity("Product", attributes: [Attribute("code", .int, unique: true), Attribute("label", .string)], renamedFrom: "Item"),
            Entity("Article", attributes: [Attribute("code", .int, unique: true), Attribute("label", .string)], renamedFrom: "Item"),
        ])
        let attributes = try Schema("Shop", version: 2, entities: [
            Entity("Item", attributes: [Attribute("code", .int, unique: true), Attribute("title", .string, renamedFrom: "label"),
                                        Attribute("name", .string, renamedFrom: "label")]),
        ])
        for (schema, entity, key) in [(entities, "Article", nil), (attributes, "Item", "name")] as [(Schema, String, String?)] {
            let refused = #expect(throws: MigrationError.self) { _ = try MigrationPlan(schemas: [v1, schema]) }
            #expect(refused?.code == .notInferable)
            #expect(refused?.changes.map { "\($0.entity).\($0.key ?? "")" } == ["\(entity).\(key ?? "")"], "\(String(describing: refused))")
            #expect(refused?.changes.first?.detail.hasPrefix("renamed from \"\(key == nil ? "Item" : "label")\", which ") == true,
                    "\(String(describing: refused?.changes))")
        }
        // The directory is made after the plans are refused: nothing may be migrated.
        let directory = TemporaryDirectory("migration-rename-twice")
        defer { directory.remove() }
        let path = directory.appending("store.strata")
        try await MigrationFixture.makeStore(at: path, v1, [MusicModel.row(v1, "Item", 1, ["code": .int(1), "label": .string("x")])])
        // A custom step may still make both from each item.
        var step = MigrationStep(from: v1, to: entities)
        step.transform("Item") { item, destination in
            try destination.insert("Product", values: ["code": item["code"], "label": item["label"]])
            try destination.insert("Article", values: ["code": item["code"], "label": item["label"]])
        }
        let store = try await Store.open(at: path, migratingWith: try MigrationPlan(schemas: [v1, entities], steps: [step]))
        #expect(store.currentGeneration.objects(of: "Product").map(\.values) == [[.int(1), .string("x")]])
        #expect(store.currentGeneration.objects(of: "Article").map(\.values) == [[.int(1), .string("x")]])
        await store.close()
    }

    /// An attribute renamed and given a limit, and two attributes that swap names, the new
    /// unique one holding a repeated value: the failure's cause is the change validation
    /// checks (the limit, the uniqueness), not the rename listed before it — in the dry run
    /// and in the migration.
    @Test("a validation failure of a renamed attribute names the change that broke it, not the rename")
    func aRenamedAttributesFailureNamesTheChangeBehindIt() async throws {
        let v1 = try Schema("Shop", version: 1, entities: [
            Entity("Item", attributes: [Attribute("size", .int), Attribute("code", .string, unique: true),
                                        Attribute("label", .string)]),
        ])
        let limited = try Schema("Shop", version: 2, entities: [
            Entity("Item", attributes: [Attribute("length", .int, renamedFrom: "size", max: .int(5)), Attribute("code", .string, unique: true),
                                        Attribute("label", .string)]),
        ])
        let swapped = try Schema("Shop", version: 2, entities: [
            Entity("Item", attributes: [Attribute("size", .int), Attribute("code", .string, unique: true, renamedFrom: "label"),
                                        Attribute("label", .string, renamedFrom: "code")]),
        ])
        let rows = [MusicModel.row(v1, "Item", 1, ["size": .int(9), "code": .string("a"), "label": .string("same")]),
                    MusicModel.row(v1, "Item", 2, ["size": .int(1), "code": .string("b"), "label": .string("same")])]
        let directory = TemporaryDirectory("migration-renamed-cause")
        defer { directory.remove() }
        let cases: [(String, Schema, String)] = [("limited", limited, "Item.length: limits changed (checked by validation)"),
                                                 ("swapped", swapped, "Item.code: made unique (checked by validation)")]
        for (name, schema, expected) in cases {
            let path = directory.appending("\(name).strata")
            try await MigrationFixture.makeStore(at: path, v1, rows)
            let plan = try MigrationPlan(schemas: [v1, schema])
            let dryRun = try await plan.dryRun(storeAt: path)
            #expect(dryRun.steps.first?.problems.map { $0.cause?.description } == [expected], "\(name): \(dryRun)")
            let error = await MigrationFixture.migrate(path, plan)
            #expect(error?.code == .validationFailed)
            #expect(error?.cause?.description == expected, "\(name): \(String(describing: error))")
        }
    }
}

extension MigrationMappingEdgeTests {
    /// v2 removes Track.title and renames name to title. Matched by name, title kept its old
    /// values and name's were dropped, silently; the rename applies, as it would with the
    /// old title gone, and the old title is the one removed.
    @Test("a rename onto the name of a property the same step removes is followed")
    func renameOntoARemovedName() async throws {
        let v1 = try Schema("Player", version: 1, entities: [
            Entity("Track", attributes: [Attribute("trackID", .int, unique: true), Attribute("name", .string), Attribute("title", .string)]),
        ])
        let v2 = try Schema("Player", version: 2, entities: [
            Entity("Track", attributes: [Attribute("trackID", .int, unique: true), Attribute("title", .string, renamedFrom: "name")]),
        ])
        let plan = try MigrationPlan(schemas: [v1, v2])
        let changes = plan.steps[0].changes.map(\.description)
        #expect(changes == ["Track.title: renamed from \"name\"", "Track.title: removed: its values are dropped"], "\(changes)")
        let directory = TemporaryDirectory("migration-rename-onto-removed")
        defer { directory.remove() }
        let path = directory.appending("store.strata")
        try await MigrationFixture.makeStore(at: path, v1, [
            MusicModel.row(v1, "Track", 1, ["trackID": .int(1), "name": .string("Intro"), "title": .string("old title")]),
        ])
        let store = try await Store.open(at: path, migratingWith: plan)
        let values = store.currentGeneration.object(MusicModel.id("Track", 1))?.values
        await store.close()
        #expect(values == [.int(1), .string("Intro")])
    }
}

extension MigrationMappingEdgeTests {
    /// v2 renames Track to Song and adds a new Track: the new entity's numbers start above
    /// every number the old Track ever used (they started at 1, so an ID kept outside the
    /// store, `Track/1`, came to name another object).
    @Test("a new entity taking a renamed entity's old name numbers its objects above the old ones")
    func newEntityOfAnOldNameDoesNotReuseItsNumbers() async throws {
        let v1 = try Schema("Player", version: 1, entities: [Entity("Track", attributes: [Attribute("name", .string)])])
        let v2 = try Schema("Player", version: 2, entities: [
            Entity("Song", attributes: [Attribute("name", .string)], renamedFrom: "Track"),
            Entity("Track", attributes: [Attribute("code", .string, optional: true)]),
        ])
        let directory = TemporaryDirectory("migration-old-name-numbers")
        defer { directory.remove() }
        let path = directory.appending("store.strata")
        try await MigrationFixture.makeStore(at: path, v1, (1...3).map { MusicModel.row(v1, "Track", UInt64($0), ["name": .string("t\($0)")]) })
        let store = try await Store.open(at: path, migratingWith: try MigrationPlan(schemas: [v1, v2]))
        #expect(store.currentGeneration.count(of: "Song") == 3)
        #expect(store.allocateObjectIDs(for: "Track")[0].number == 4, "a new Track took a number an old Track had")
        await store.close()
    }
}

extension MigrationMappingEdgeTests {
    /// v2 makes `code` both required (nil becomes 0) and unique: two objects without a code
    /// repeat 0. The failure names the uniqueness as its cause (the requirement, the first
    /// change of the key, was named).
    @Test("a repeated value of a key made both required and unique is blamed on the uniqueness")
    func repeatedValueBlamesUniqueness() async throws {
        let v1 = try Schema("Shop", version: 1, entities: [Entity("Item", attributes: [Attribute("code", .int, optional: true)])])
        let v2 = try Schema("Shop", version: 2, entities: [Entity("Item", attributes: [Attribute("code", .int, default: .int(0), unique: true)])])
        let directory = TemporaryDirectory("migration-required-unique")
        defer { directory.remove() }
        let path = directory.appending("store.strata")
        try await MigrationFixture.makeStore(at: path, v1, [MusicModel.row(v1, "Item", 1, [:]), MusicModel.row(v1, "Item", 2, [:])])
        let plan = try MigrationPlan(schemas: [v1, v2])
        do throws(MigrationError) {
            let store = try await Store.open(at: path, migratingWith: plan)
            await store.close()
            Issue.record("a repeated unique value was migrated")
        } catch {
            #expect(error.code == .validationFailed, "\(error)")
            #expect(error.cause?.kind == .optionsChanged && error.cause?.detail.contains("made unique") == true, "\(error)")
        }
    }
}

extension MigrationMappingEdgeTests {
    /// A `renamedFrom` naming nothing of the older schema (a misspelt old name) cannot be
    /// followed: the property or entity is added empty and the old one removed. The plan's
    /// changes say so, naming the hint, so a dry run shows the typo before values are lost.
    @Test("a renamedFrom that names nothing of the older schema is reported with the added property or entity")
    func renamedFromNamingNothing() throws {
        let v1 = try Schema("Player", version: 1, entities: [
            Entity("Track", attributes: [Attribute("trackID", .int, unique: true), Attribute("name", .string)],
                   relationships: [Relationship("album", to: "Album", inverse: "tracks")]),
            Entity("Album", attributes: [Attribute("title", .string)],
                   relationships: [Relationship("tracks", to: "Track", inverse: "album", toMany: true)]),
        ])
        let v2 = try Schema("Player", version: 2, entities: [
            Entity("Track", attributes: [Attribute("trackID", .int, unique: true), Attribute("title", .string, default: .string(""), renamedFrom: "nmae")],
                   relationships: [Relationship("record", to: "Record", inverse: "tracks", renamedFrom: "albun")]),
            Entity("Record", attributes: [Attribute("title", .string)],
                   relationships: [Relationship("tracks", to: "Track", inverse: "record", toMany: true)], renamedFrom: "Albumm"),
        ])
        let changes = try MigrationPlan(schemas: [v1, v2]).steps[0].changes.map(\.description)
        #expect(changes.contains("Track.title: added (default \"\"); its renamedFrom \"nmae\" names no property of Track in Player version 1, so nothing is carried over (check the old name)"),
                "\(changes)")
        #expect(changes.contains("Track.record: added (empty); its renamedFrom \"albun\" names no property of Track in Player version 1, so nothing is carried over (check the old name)"),
                "\(changes)")
        #expect(changes.contains("Record: added; its renamedFrom \"Albumm\" names no entity in Player version 1, so nothing is carried over (check the old name)"),
                "\(changes)")
        #expect(changes.contains("Track.name: removed: its values are dropped"), "\(changes)")
        // A hint that names something keeps the plain wording.
        let v3 = try Schema("Player", version: 3, entities: [
            Entity("Track", attributes: [Attribute("trackID", .int, unique: true), Attribute("title", .string, renamedFrom: "name"),
                                         Attribute("plays", .int, default: .int(0))],
                   relationships: [Relationship("album", to: "Album", inverse: "tracks")]),
            Entity("Album", attributes: [Attribute("title", .string)],
                   relationships: [Relationship("tracks", to: "Track", inverse: "album", toMany: true)]),
        ])
        #expect(try MigrationPlan(schemas: [v1, v3]).steps[0].changes.map(\.description) == [
            "Track.title: renamed from \"name\"", "Track.plays: added (default 0)",
        ])
    }
}

extension MigrationMappingEdgeTests {
    /// A new type for an attribute, in a step whose only custom code for the entity is a link
    /// (written for something else): the link does not carry the old values, so the plan is
    /// refused naming the attribute. (It was accepted, and every value became nil.)
    @Test("a type change with only a link for its entity is refused: nothing would carry the old values")
    func typeChangeWithOnlyALinkIsRefused() throws {
        let v1 = try Schema("Tally", version: 1, entities: [Entity("Item", attributes: [Attribute("code", .int, optional: true)])])
        let v2 = try Schema("Tally", version: 2, entities: [Entity("Item", attributes: [Attribute("code", .string, optional: true)])])
        var step = MigrationStep(from: v1, to: v2)
        step.link("Item") { _, _ in }
        #expect(step.unhandledChanges.map(\.kind) == [.typeChanged])
        let error = #expect(throws: MigrationError.self) { try MigrationPlan(schemas: [v1, v2], steps: [step]) }
        #expect(error?.code == .notInferable && error?.entity == "Item" && error?.key == "code", "\(String(describing: error))")
        // A transform for the entity carries them: then the plan is accepted.
        step.transform("Item") { item, destination in
            _ = try destination.insert("Item", values: ["code": try item["code"] == .null ? .null : .string("\(try item["code"])")])
        }
        #expect(step.unhandledChanges.isEmpty)
        #expect(throws: Never.self) { try MigrationPlan(schemas: [v1, v2], steps: [step]) }
    }

    /// A transform drops an album whose songs cascade, and the songs' entity has no transform:
    /// the problem says the songs are carried over, not that a transform (there is none) kept them.
    @Test("a cascade from a dropped object to a carried-over one names why it was kept")
    func cascadeIntoCarriedOverEntityNamesWhy() async throws {
        let v1 = try Schema("Discs", version: 1, entities: [
            Entity("Album", attributes: [Attribute("title", .string)],
                   relationships: [Relationship("songs", to: "Song", inverse: "album", toMany: true, deleteRule: .cascade)]),
            Entity("Song", attributes: [Attribute("title", .string)], relationships: [Relationship("album", to: "Album", inverse: "songs")]),
        ])
        let v2 = try Schema("Discs", version: 2, entities: v1.entities)
        let directory = TemporaryDirectory("migration-cascade-carried")
        defer { directory.remove() }
        let path = directory.appending("store.strata")
        let store = try Store.create(at: path, schema: v1, configuration: Store.Configuration(durability: .none))
        let album = store.allocateObjectIDs(for: "Album")[0], song = store.allocateObjectIDs(for: "Song")[0]
        try await store.commit(ChangeSet(inserted: [
            RowImage(id: album, values: [.string("A"), .objects([song])]),
            RowImage(id: song, values: [.string("S"), .object(album)]),
        ]))
        await store.close()
        var step = MigrationStep(from: v1, to: v2)
        step.transform("Album") { _, _ in }  // drops every album
        let plan = try MigrationPlan(schemas: [v1, v2], steps: [step])
        do {
            let migrated = try await Store.open(at: path, migratingWith: plan, configuration: Store.Configuration(durability: .none))
            await migrated.close()
            Issue.record("the migration went through")
        } catch {
            #expect(error.code == .validationFailed)
            #expect(error.description.contains("its cascade delete rule drops \(song) too, but Song has no transform, so its objects are carried over"),
                    "\(error)")
        }
    }
}

extension MigrationMappingEdgeTests {
    static let manyToMany = try! Schema("Pairs", version: 1, entities: [
        Entity("Album", attributes: [Attribute("title", .string)],
               relationships: [Relationship("songs", to: "Song", inverse: "album", toMany: true)]),
        Entity("Song", attributes: [Attribute("title", .string)],
               relationships: [Relationship("album", to: "Album", inverse: "songs", toMany: true)]),
    ])
    static let songHasOneAlbum = try! Schema("Pairs", version: 2, entities: [
        Entity("Album", attributes: [Attribute("title", .string)],
               relationships: [Relationship("songs", to: "Song", inverse: "album", toMany: true)]),
        Entity("Song", attributes: [Attribute("title", .string)],
               relationships: [Relationship("album", to: "Album", inverse: "songs")]),
    ])

    /// Many-to-many turned one-to-many (a song on two albums keeps one): the albums' lists
    /// are not carried (a song listed by two albums would have two owners); the step's code
    /// sets each song's album, which fills them. (They were carried, the song stayed on the
    /// album the link did not choose, and the step failed validation naming that album.)
    @Test("a to-many side whose inverse turned to-one is filled from the other side, not carried")
    func toManyWhoseInverseTurnedToOne() async throws {
        let directory = TemporaryDirectory("migration-many-to-one")
        defer { directory.remove() }
        let path = directory.appending("store.strata")
        let v1 = Self.manyToMany, v2 = Self.songHasOneAlbum
        let a1 = ObjectID(entity: "Album", number: 1), a2 = ObjectID(entity: "Album", number: 2), s1 = ObjectID(entity: "Song", number: 1)
        try await MigrationFixture.makeStore(at: path, v1, [
            MusicModel.row(v1, "Album", 1, ["title": .string("One"), "songs": .objects([s1])]),
            MusicModel.row(v1, "Album", 2, ["title": .string("Two"), "songs": .objects([s1])]),
            MusicModel.row(v1, "Song", 1, ["title": .string("S"), "album": .objects([a1, a2])]),
        ])
        var step = MigrationStep(from: v1, to: v2)
        #expect(step.changes.contains { $0.entity == "Album" && $0.key == "songs" && $0.detail.hasPrefix("emptied: its inverse Song.album") })
        step.transform("Song") { song, destination in _ = try destination.insert("Song", values: ["title": song["title"]]) }
        step.link("Song") { song, destination in
            // The song keeps its first album (the one the step's carrying gives it already:
            // setting it changes nothing, so nothing took the song off the other album).
            guard let source = destination.sourceObject(of: song), let first = try source.related("album").first else { return }
            try destination.setValue(.object(ObjectID(entity: "Album", number: first.id.number)), forKey: "album", of: song)
        }
        let error = await MigrationFixture.migrate(path, try MigrationPlan(schemas: [v1, v2], steps: [step]))
        #expect(error == nil, "\(String(describing: error))")
        let store = try Store.open(at: path, schema: v2)
        let generation = store.currentGeneration
        #expect(generation.integrityProblems().isEmpty, "\(generation.integrityProblems())")
        #expect(generation.object(s1)?.values[1] == .object(a1))
        #expect(generation.object(a1)?.values[1] == .objects([s1]))
        #expect(generation.object(a2)?.values[1] == .objects([]))
        await store.close()
    }
}
