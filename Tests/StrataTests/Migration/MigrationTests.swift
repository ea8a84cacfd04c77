import Foundation
import Testing
@testable import Strata

/// A class suite (one instance per test), so that each test's directory is removed when it ends.
@Suite final class MigrationTests: Sendable {
    let directory = TemporaryDirectory("strata-migration")
    deinit { directory.remove() }
    var path: String { directory.appending("music.strata") }

    @Test func inferredChangesAreNamedEntityByEntity() {
        let step = MigrationStep(from: MusicModel.v1, to: MusicModel.v2)
        #expect(!step.isCustom && step.name == "Music 1 → 2 (inferred)")
        let changes = Set(step.changes.map(\.description))
        let expected: Set<String> = [
            "Artist.name: made optional",
            "Artist.styles: added (empty)",
            "Style.artists: added (empty)",
            "Album.year: made required: nil becomes the default 2000",
            "Album.tracks: renamed from \"songs\"",
            "Song.title: renamed from \"name\"",
            "Song.rating: added (default 0)",
            "Song.length: removed: its values are dropped",
            "Style: renamed from \"Genre\"",
            "Label: removed: its objects are dropped",
        ]
        #expect(changes == expected, "\(changes.symmetricDifference(expected))")
        #expect(step.unhandledChanges.isEmpty)
    }

    @Test func changesThatCannotBeInferredAreRefusedByEntityAndKey() throws {
        let changed = try Schema("Music", version: 2, entities: [
            Entity("Genre", attributes: [Attribute("name", .int), Attribute("code", .string)]),
        ])
        let genre = try Schema("Music", version: 1, entities: [Entity("Genre", attributes: [Attribute("name", .string)])])
        #expect {
            try MigrationPlan(schemas: [genre, changed])
        } throws: { error in
            guard let error = error as? MigrationError else { return false }
            return error.code == .notInferable && error.step == "Music 1 → 2 (inferred)" && error.entity == "Genre"
                && error.key == "name" && error.changes.map(\.description) == [
                    "Genre.name: type changed from string to int (not inferable; write a custom transform for Genre)",
                    "Genre.code: added as required without a default, so existing objects have no value for it; give it a default or make it optional (not inferable; write a custom transform for Genre)",
                ]
        }
        // A custom transform for the entity makes the plan acceptable.
        var step = MigrationStep(from: genre, to: changed)
        step.transform("Genre") { genre, destination in
            let name = try genre["name"]
            guard case .string(let text) = name else { return }
            try destination.insert("Genre", values: ["name": .int(Int64(text.count)), "code": .string(text.uppercased())])
        }
        #expect(try MigrationPlan(schemas: [genre, changed], steps: [step]).steps[0].isCustom)
    }

    @Test func plansRefuseVersionsOutOfOrderAndStraySteps() {
        #expect(throws: MigrationError.self) { try MigrationPlan(schemas: [MusicModel.v2, MusicModel.v1]) }
        #expect(throws: MigrationError.self) {
            try MigrationPlan(schemas: [MusicModel.v1, MusicModel.v2], steps: [MusicModel.split])
        }
    }

    @Test(arguments: [1, 2]) func everyHistoricalVersionMigratesToTheNewest(version: Int) async throws {
        defer { directory.remove() }
        try await MusicModel.createStore(version: version, at: path)
        let store = try await Store.open(at: path, migratingWith: try MusicModel.plan())
        MusicModel.checkMigrated(store.currentGeneration, sourceVersion: version)
        #expect(store.schema == MusicModel.v3)
        // The migrated store takes commits and reopens without migrating again.
        let song = store.allocateObjectIDs(for: "Song")[0], data = store.allocateObjectIDs(for: "SongData")[0]
        #expect(song.number == 7 && data.number == 7)
        try await store.commit(ChangeSet(author: "test", inserted: [
            MusicModel.row(MusicModel.v3, "Song", 7, ["songID": .int(200), "title": .string("New"), "data": .object(data)]),
            MusicModel.row(MusicModel.v3, "SongData", 7, ["songID": .int(200), "source": .string("app"), "song": .object(song)]),
        ]))
        await store.close()
        let files = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        #expect(files.filter { $0.hasPrefix("checkpoint-") }.count == 1 && files.filter { $0.hasPrefix("journal-") }.count == 1, "\(files)")
        let reopened = try await Store.open(at: path, migratingWith: try MusicModel.plan())
        #expect(reopened.currentGeneration.count(of: "Song") == 7)
        #expect(reopened.currentGeneration.integrityProblems().isEmpty)
        await reopened.close()
        let plain = try Store.open(at: path, schema: MusicModel.v3)
        #expect(plain.recovery.replayedTransactions == 1)
        await plain.close()
    }

    @Test func noOtherWriterGetsInDuringAMigration() async throws {
        defer { directory.remove() }
        try await MusicModel.createStore(version: 1, at: path)
        let path = self.path
        let attempts = Locked<[String]>([])
        let store = try await Store.open(at: path, migratingWith: try MusicModel.plan()) { progress in
            guard progress.phase == .finished || progress.phase == .linking else { return }
            let outcome: String
            do throws(StoreError) {
                let other = try Store.open(at: path)
                outcome = "opened at version \(other.schema.version)"
            } catch {
                outcome = "\(error.code)"
            }
            attempts.withLock { $0.append("\(progress.stepNumber) \(progress.phase.rawValue): \(outcome)") }
        }
        await store.close()
        #expect(attempts.withLock { $0 } == ["1 finished: locked", "2 linking: locked", "2 finished: locked"])
    }

    @Test func aStoreNewerThanTheCodeIsRefusedButOpensReadOnly() async throws {
        defer { directory.remove() }
        try await MusicModel.createStore(version: 2, at: path)
        let old = try MigrationPlan(schemas: [MusicModel.v1])
        await #expect {
            try await Store.open(at: path, migratingWith: old)
        } throws: { error in
            let error = error as! MigrationError
            return error.code == .newerStore && error.description.contains("version 2, newer than this code's newest version 1")
        }
        let readOnly = try await Store.open(at: path, migratingWith: old, configuration: .init(readOnly: true))
        #expect(readOnly.schema.version == 2 && readOnly.currentGeneration.count(of: "Song") == 6)
        await readOnly.close()
        // An older store opened read-only is not migrated.
        let files = try MusicModel.files(path)
        await #expect {
            try await Store.open(at: path, migratingWith: try MusicModel.plan(), configuration: .init(readOnly: true))
        } throws: { ($0 as! MigrationError).code == .needsMigration }
        #expect(try MusicModel.files(path) == files)
    }

    @Test func aValidationFailureNamesTheObjectKeyAndCauseAndChangesNothing() async throws {
        defer { directory.remove() }
        try await MusicModel.createStore(version: 2, at: path)
        var entities = MusicModel.v2.entities
        entities[1].attributes[2].minimum = .int(1990)
        let capped = try Schema("Music", version: 3, entities: entities)
        let before = try MusicModel.files(path)
        await #expect {
            try await Store.open(at: path, migratingWith: try MigrationPlan(schemas: [MusicModel.v2, capped]))
        } throws: { error in
            let error = error as! MigrationError
            return error.code == .validationFailed && error.object == MusicModel.id("Album", 1) && error.key == "year"
                && error.step == "Music 2 → 3 (inferred)" && error.cause?.kind == .optionsChanged
                && error.description == "validationFailed: step Music 2 → 3 (inferred): Album/1.year: 1977 is less than the minimum 1990; the store was not changed (caused by Album.year: limits changed (checked by validation))"
        }
        #expect(try MusicModel.files(path) == before)
        let store = try Store.open(at: path)
        #expect(store.schema.version == 2)
        await store.close()
    }

    @Test func transformFailuresNameTheStepObjectAndKey() async throws {
        defer { directory.remove() }
        try await MusicModel.createStore(version: 2, at: path)
        var step = MigrationStep(from: MusicModel.v2, to: MusicModel.v3)
        step.transform("Song") { song, destination in
            try destination.insert("Song", values: ["songID": song["songID"], "title": song["name"]])
        }
        let before = try MusicModel.files(path)
        await #expect {
            try await Store.open(at: path, migratingWith: try MigrationPlan(schemas: [MusicModel.v2, MusicModel.v3], steps: [step]))
        } throws: { error in
            let error = error as! MigrationError
            return error.code == .transformFailed && error.step == "Music 2 → 3 (custom)" && error.object == MusicModel.id("Song", 1)
                && error.key == "name" && error.message.contains("its keys are [\"songID\", \"title\", \"lyrics\", \"rating\", \"album\"]")
        }
        #expect(try MusicModel.files(path) == before)
    }

    @Test func transformsFollowTheOldRelationshipsAndReadEveryOldKey() async throws {
        defer { directory.remove() }
        try await MusicModel.createStore(version: 2, at: path)
        var step = MusicModel.split
        step.transform("Song") { song, destination in
            #expect(song.keys == ["songID", "title", "lyrics", "rating", "album"])
            let album = try #require(try song.related("album").first)
            let title = "\(try album["title"]) / \(try song["title"])"
            try destination.insert("Song", values: ["songID": song["songID"], "title": .string(title)])
            try destination.insert("SongData", values: ["songID": song["songID"], "lyrics": song["lyrics"]])
            _ = try song.related("title")
        }
        await #expect {
            try await Store.open(at: path, migratingWith: try MigrationPlan(schemas: [MusicModel.v2, MusicModel.v3], steps: [step],
                                                                            modelClasses: [SongDataModel.self]))
        } throws: { error in
            let error = error as! MigrationError
            return error.object == MusicModel.id("Song", 1) && error.key == "title"
                && error.message == "\"title\" is an attribute of the old entity Song, not a relationship"
        }
        step.transform("Song") { song, destination in
            let album = try song.related("album")[0]
            let title = "\(try album["title"]) / \(try song["title"])"
            try destination.insert("Song", values: ["songID": song["songID"], "title": .string(title)])
            try destination.insert("SongData", values: ["songID": song["songID"], "lyrics": song["lyrics"]])
        }
        let store = try await Store.open(at: path, migratingWith: try MigrationPlan(schemas: [MusicModel.v2, MusicModel.v3], steps: [step],
                                                                                    modelClasses: [SongDataModel.self]))
        let title = MusicModel.v3.entity(named: "Song")!.propertyIndex(named: "title")!
        #expect(store.currentGeneration.object(MusicModel.id("Song", 3))?.values[title] == .string(#""Powerage" / "Song 3""#))  // values print quoted
        #expect(store.currentGeneration.integrityProblems().isEmpty)
        await store.close()
    }

    @Test func droppedObjectsObeyDeleteRules() async throws {
        defer { directory.remove() }
        try await MusicModel.createStore(version: 2, at: path)
        var step = MusicModel.split
        // Drop the albums without a year: their cascade rule needs their songs dropped too.
        step.transform("Album") { album, destination in
            guard try album["year"] != .int(2000) else { return }
            try destination.insert("Album", values: ["albumID": album["albumID"], "title": album["title"], "year": album["year"]])
        }
        await #expect {
            try await Store.open(at: path, migratingWith: try MigrationPlan(schemas: [MusicModel.v2, MusicModel.v3], steps: [step],
                                                                            modelClasses: [SongDataModel.self]))
        } throws: { error in
            let error = error as! MigrationError
            return error.code == .validationFailed && error.object == MusicModel.id("Album", 2) && error.key == "tracks"
                && error.message.hasPrefix("the transform dropped the object, so its cascade delete rule drops Song/3 too")
        }
    }

    @Test func aLegacyStoreMigratesIntoANewLocationAndStaysUntouched() async throws {
        defer { directory.remove() }
        let legacy = directory.appending("legacy.strata")
        try await MusicModel.createStore(version: 1, at: legacy)
        let before = try MusicModel.files(legacy)
        let progress = Locked<[MigrationProgress]>([])
        let store = try await Store.migrate(legacyStoreAt: legacy, to: path, with: try MusicModel.plan()) { p in
            progress.withLock { $0.append(p) }
        }
        MusicModel.checkMigrated(store.currentGeneration, sourceVersion: 1)
        #expect(store.journal.storeID != (try Store.open(at: legacy, configuration: .init(readOnly: true))).journal.storeID)
        await store.close()
        #expect(try MusicModel.files(legacy) == before)
        let reports = progress.withLock { $0 }
        #expect(reports.filter { $0.phase == .finished }.map(\.stepNumber) == [1, 2])
        #expect(reports.contains { $0.phase == .linking && $0.entity == "Song" && $0.completed == 6 })
        #expect(reports.last?.description == "Music 2 → 3 (custom), step 2 of 2: finished 20/20")
        // A destination that holds a store is refused.
        await #expect {
            try await Store.migrate(legacyStoreAt: legacy, to: path, with: try MusicModel.plan())
        } throws: { ($0 as! MigrationError).underlying?.code == .alreadyExists }
    }

    @Test func aDryRunReportsThePlanCountsAndFailuresWithoutWriting() async throws {
        defer { directory.remove() }
        try await MusicModel.createStore(version: 1, at: path)
        let before = try MusicModel.files(path)
        let dryRun = try await MusicModel.plan().dryRun(storeAt: path)
        #expect(dryRun.wouldSucceed)
        #expect(try MusicModel.files(path) == before)
        let text = dryRun.description
        #expect(text.hasPrefix("dry run of \(path): schema version 1 → 3 in 2 step(s); nothing was written\n"))
        #expect(text.contains("objects: Artist 2, Album 3, Song 6, Genre 3, Label 1\n"))
        #expect(text.contains("step 1: Music 1 → 2 (inferred)\n"))
        #expect(text.contains("  Song.title: renamed from \"name\"\n"))
        #expect(text.contains("  objects after: Artist 2, Album 3, Song 6, Style 3\n"))
        #expect(text.contains("step 2: Music 2 → 3 (custom): transforms Song; links Song\n"))
        #expect(text.contains("  objects after: Artist 2, Album 3, Song 6, SongData 6, Style 3\n"))
        #expect(text.hasSuffix("  validation: ok\nresult: the migration would succeed\n"))

        // Without the link, every Song's required `data` would be empty.
        var unlinked = MigrationStep(from: MusicModel.v2, to: MusicModel.v3)
        unlinked.transform("Song") { song, destination in
            try destination.insert("Song", values: ["songID": song["songID"], "title": song["title"]])
        }
        let failing = try await MigrationPlan(schemas: [MusicModel.v1, MusicModel.v2, MusicModel.v3], steps: [unlinked]).dryRun(storeAt: path)
        #expect(!failing.wouldSucceed)
        #expect(failing.steps[1].problems.count == 6)
        #expect(failing.description.contains("  validation: 6 problem(s)\n    Song/1.data: the relationship is required but empty (caused by Song.data: added as required, but nothing says which SongData each object refers to (not inferable; write a custom transform for Song))\n"))
        #expect(try MusicModel.files(path) == before)
    }

    /// A dry run's scratch files — its steps' spills and indexes — are gone when it returns,
    /// whether it would succeed, would fail validation, or a transform throws.
    @Test func aDryRunLeavesNoScratchFiles() async throws {
        defer { directory.remove() }
        try await MusicModel.createStore(version: 1, at: path)
        let scratch = directory.appending("scratch")
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false)
        var throwing = MigrationStep(from: MusicModel.v2, to: MusicModel.v3)
        throwing.transform("Song") { song, _ in throw MigrationError(.transformFailed, "no lyrics for \(song.id)") }
        var unlinked = MigrationStep(from: MusicModel.v2, to: MusicModel.v3)
        unlinked.transform("Song") { song, destination in
            try destination.insert("Song", values: ["songID": song["songID"], "title": song["title"]])
        }
        var seen: [Bool] = []
        for step in [MusicModel.split, unlinked, throwing] {
            let plan = try MigrationPlan(schemas: [MusicModel.v1, MusicModel.v2, MusicModel.v3], steps: [step],
                                         modelClasses: [SongDataModel.self])
            // Progress reports while the custom step runs find its files in a scratch directory.
            let during = Locked<[String]>([])
            let dryRun = try await plan.dryRun(storeAt: path, fileIO: POSIXFileIO(), scratchParent: scratch) { progress in
                guard progress.stepNumber == 2, during.withLock({ $0.isEmpty }) else { return }
                let inside = (try? FileManager.default.contentsOfDirectory(atPath: scratch)).flatMap(\.first).map {
                    (try? FileManager.default.contentsOfDirectory(atPath: scratch + "/" + $0)) ?? []
                } ?? []
                during.withLock { $0 = inside.sorted() }
            }
            seen.append(dryRun.wouldSucceed)
            #expect(during.withLock { $0 } == [StoreLayout.migrationIndexName, StoreLayout.migrationSpillName].sorted())
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch).isEmpty)
        }
        #expect(seen == [true, false, false])
    }

    @Test func awakeFromInsertSetsTheDefaultsOfCreatedObjectsAndTransformsWin() async throws {
        defer { directory.remove() }
        try await MusicModel.createStore(version: 2, at: path)
        var step = MusicModel.split
        step.transform("Song") { song, destination in
            try destination.insert("Song", values: ["songID": song["songID"], "title": song["title"]])
            let data = try destination.insert("SongData", values: ["songID": song["songID"]])
            if try song["songID"] == .int(101) { try destination.setValue(.string("kept"), forKey: "source", of: data) }
        }
        let plan = try MigrationPlan(schemas: [MusicModel.v2, MusicModel.v3], steps: [step], modelClasses: [SongDataModel.self])
        let store = try await Store.open(at: path, migratingWith: plan)
        let generation = store.currentGeneration
        let source = MusicModel.v3.entity(named: "SongData")!.propertyIndex(named: "source")!
        #expect(generation.objects(of: "SongData").map { $0.values[source] } == [.string("kept")] + Array(repeating: .string("migrated"), count: 5))
        await store.close()
        // Without the model class, the required `source` has no value: validation says so.
        try await MusicModel.createStore(version: 2, at: directory.appending("other.strata"))
        await #expect {
            try await Store.open(at: directory.appending("other.strata"),
                                 migratingWith: try MigrationPlan(schemas: [MusicModel.v2, MusicModel.v3], steps: [MusicModel.split]))
        } throws: { error in
            let error = error as! MigrationError
            return error.object == MusicModel.id("SongData", 1) && error.key == "source"
        }
    }
}
