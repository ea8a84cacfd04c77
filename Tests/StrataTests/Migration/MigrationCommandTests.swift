import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// `strata migrate`, run in-process.
/// A class suite (one instance per test), so that each test's directory is removed when it ends.
@Suite final class MigrationCommandTests: Sendable {
    let directory = TemporaryDirectory("strata-migrate-cli")
    deinit { directory.remove() }
    var store: String { directory.appending("music.strata") }

    func writeModel(_ schema: Schema, _ name: String) throws -> String {
        let path = directory.appending(name)
        try schema.modelFileJSON.prettyText.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Another writer's lock is found by the first open, before the store is read (the
    /// migration once read the whole store read-only first, then met the lock), while a dry
    /// run, which only reads, still runs.
    @Test func aLockedStoreIsRefusedBeforeItIsRead() async throws {
        try await MusicModel.createStore(version: 1, at: store)
        let v2 = try writeModel(MusicModel.v2, "music-v2.json")
        let holder = try Store.open(at: store)
        let refused = await runTool(["migrate", store, "--model", v2])
        #expect(refused.status == 1)
        #expect(refused.errors.hasPrefix("strata migrate: ") && refused.errors.contains("locked"), "\(refused.errors)")
        #expect(!refused.errors.contains("opening the store to migrate"), "\(refused.errors)")
        let dryRun = await runTool(["migrate", store, "--model", v2, "--dry-run"])
        #expect(dryRun.status == 0, "\(dryRun.errors)")
        await holder.close()
        #expect(await runTool(["migrate", store, "--model", v2]).status == 0)
    }

    /// An interrupted migration (Ctrl-C cancels its task) says what a command-line user can
    /// do — the store is as it was, run the command again — not what the library's caller
    /// would (open the store with the plan again).
    @Test func anInterruptedMigrationSaysToRunTheCommandAgain() async throws {
        try await MusicModel.createStore(version: 1, at: store)
        let v2 = try writeModel(MusicModel.v2, "music-v2.json")
        let before = try MusicModel.files(store)
        let store = self.store
        let interrupted = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await runTool(["migrate", store, "--model", v2])
        }.value
        #expect(interrupted.status == 1)
        #expect(interrupted.errors == "strata migrate: interrupted before the migrated store was in place: \(store) is as it was; run the same command again to migrate it\n",
                "\(interrupted.errors)")
        #expect(try MusicModel.files(store) == before)
        #expect(await runTool(["migrate", store, "--model", v2]).status == 0)
    }

    @Test func dryRunThenMigrateThenNothingToDo() async throws {
        defer { directory.remove() }
        try await MusicModel.createStore(version: 1, at: store)
        let v2 = try writeModel(MusicModel.v2, "music-v2.json")
        let before = try MusicModel.files(store)

        let dryRun = await runTool(["migrate", store, "--model", v2, "--dry-run"])
        #expect(dryRun.status == 0, "\(dryRun.errors)")
        #expect(dryRun.output.hasPrefix("dry run of \(store): schema version 1 → 2 in 1 step(s); nothing was written\n"))
        #expect(dryRun.output.contains("step 1: Music 1 → 2 (inferred)\n  "))
        #expect(dryRun.output.contains("  Style: renamed from \"Genre\"\n"))
        #expect(dryRun.output.contains("  objects after: Artist 2, Album 3, Song 6, Style 3\n  validation: ok\n"))
        #expect(try MusicModel.files(store) == before)

        let migrated = await runTool(["migrate", store, "--model", v2])
        #expect(migrated.status == 0, "\(migrated.errors)")
        #expect(migrated.output == "migrated \(store): schema \"Music\" version 1 → 2, 14 objects, fingerprint \(MusicModel.v2.fingerprint)\n")
        let info = await runTool(["info", store])
        #expect(info.output.contains("schema:       Music version 2\n"))
        #expect(await runTool(["verify", store]).status == 0)

        let again = await runTool(["migrate", store, "--model", v2])
        #expect(again.status == 0 && again.output == "\(store) is already at schema \"Music\" version 2; nothing to do\n")
    }

    @Test func changesThatCannotBeInferredExitOneNamingEntityAndKey() async throws {
        defer { directory.remove() }
        try await MusicModel.createStore(version: 2, at: store)
        let v3 = try writeModel(MusicModel.v3, "music-v3.json")
        let before = try MusicModel.files(store)
        let result = await runTool(["migrate", store, "--model", v3])
        #expect(result.status == 1)
        let lines = result.errors.split(separator: "\n").map(String.init)
        #expect(lines.first == "strata migrate: notInferable: step Music 2 → 3 (inferred): Song.data: added as required, but nothing says which SongData each object refers to; it cannot be inferred: write a custom transform for Song", "\(lines)")
        #expect(try MusicModel.files(store) == before)
    }

    @Test func validationFailuresExitOneNamingTheObjectAndNothingChanges() async throws {
        defer { directory.remove() }
        try await MusicModel.createStore(version: 2, at: store)
        var entities = MusicModel.v2.entities
        entities[1].attributes[1].maxLength = 9   // Album.title: "Let There Be Rock" is longer
        let strict = try writeModel(try Schema("Music", version: 3, entities: entities), "strict.json")
        let before = try MusicModel.files(store)
        let dryRun = await runTool(["migrate", store, "--model", strict, "--dry-run"])
        #expect(dryRun.status == 1)
        #expect(dryRun.output.contains("  validation: 1 problem(s)\n    Album/1.title: 17 characters is longer than the maximum length 9 (caused by Album.title: limits changed (checked by validation))\n"))
        #expect(dryRun.errors == "strata migrate: the migration would fail: validationFailed: step Music 2 → 3 (inferred): Album/1.title: 17 characters is longer than the maximum length 9 (caused by Album.title: limits changed (checked by validation)); nothing was written\n")
        let result = await runTool(["migrate", store, "--model", strict])
        #expect(result.status == 1)
        #expect(result.errors.hasPrefix("strata migrate: validationFailed: step Music 2 → 3 (inferred): Album/1.title: 17 characters is longer than the maximum length 9; the store was not changed"))
        #expect(try MusicModel.files(store) == before)
    }

    /// A model that pairs relationships with other inverses: the dry run and the migration
    /// both exit 1 naming the relationship, and the store is unchanged.
    @Test func rePairedInversesExitOneInTheDryRunAndTheMigration() async throws {
        defer { directory.remove() }
        try await MigrationFixture.makeStore(at: store, MigrationFixture.crossedV1, MigrationFixture.crossedRows())
        let model = try writeModel(MigrationFixture.crossedV2, "disco-v2.json")
        let before = try MusicModel.files(store)
        let dryRun = await runTool(["migrate", store, "--model", model, "--dry-run"])
        let migrate = await runTool(["migrate", store, "--model", model])
        for result in [dryRun, migrate] {
            #expect(result.status == 1)
            #expect(result.errors.hasPrefix("strata migrate: notInferable: step Disco 1 → 2 (inferred): Album.songs: its inverse changed from Song.album to Song.featuredOn"),
                    "\(result.errors)")
        }
        #expect(try MusicModel.files(store) == before)
        #expect(await runTool(["verify", store]).status == 0)
    }

    /// A model file of another model (its name is not the store's) is refused before
    /// anything is written: inferred from the store's schema, every entity would be removed
    /// and every object dropped.
    @Test func aModelOfAnotherNameIsRefusedAndNothingChanges() async throws {
        defer { directory.remove() }
        try await MusicModel.createStore(version: 1, at: store)
        let other = try Schema("Inventory", version: 2, entities: [Entity("Item", attributes: [Attribute("name", .string)])])
        let model = try writeModel(other, "inventory-v2.json")
        let before = try MusicModel.files(store)
        let dryRun = await runTool(["migrate", store, "--model", model, "--dry-run"])
        let migrate = await runTool(["migrate", store, "--model", model])
        for result in [dryRun, migrate] {
            #expect(result.status == 1)
            #expect(result.errors.hasPrefix("strata migrate: \(model): the model is \"Inventory\", but the store holds \"Music\""), "\(result.errors)")
        }
        #expect(try MusicModel.files(store) == before)
        let same = try writeModel(try Schema("Inventory", version: 1, entities: MusicModel.v1.entities), "inventory-v1.json")
        let sameShape = await runTool(["migrate", store, "--model", same])
        #expect(sameShape.status == 1 && sameShape.output.isEmpty, "\(sameShape)")
        #expect(try MusicModel.files(store) == before)
    }

    @Test func usageAndVersionErrors() async throws {
        defer { directory.remove() }
        let missing = await runTool(["migrate", store])
        #expect(missing.status == 2)
        #expect(missing.errors == "strata migrate: --model is required\nusage: strata migrate STORE --model NEW-MODEL.json [--dry-run]\n")
        try await MusicModel.createStore(version: 2, at: store)
        let older = try writeModel(MusicModel.v1, "music-v1.json")
        let result = await runTool(["migrate", store, "--model", older])
        #expect(result.status == 1)
        #expect(result.errors.hasPrefix("strata migrate: \(older): the model's version 1 is not newer than the store's (\"Music\" version 2)"))
        let help = await runTool(["help", "migrate"])
        #expect(help.output.hasPrefix("usage: strata migrate STORE --model NEW-MODEL.json [--dry-run]"))
        #expect(StrataCommand.commands.contains { $0.name == "migrate" })
    }
}
