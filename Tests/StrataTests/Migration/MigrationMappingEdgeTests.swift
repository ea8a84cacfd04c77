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
