import Foundation
import Testing
@testable import Strata

/// Crashes a progressive migration (v1 → v2 → v3) at every file-system call it makes —
/// before and after each step's checkpoint write, sync, rename and directory sync, and in the
/// open that follows — under simulated power loss: the store always opens, at version 1, 2
/// or 3 with exactly that version's contents, and running the migration again finishes it.
@Suite struct MigrationCrashTests {
    static let path = "/music.strata"

    /// The fixture store (v1, two transactions) in memory.
    static func fixture() async throws -> InMemoryFileIO {
        let io = InMemoryFileIO()
        try await MusicModel.createStore(version: 1, at: path, fileIO: io)
        return io
    }

    static func configuration(_ io: any FileIO) -> Store.Configuration { .init(durability: .full, fileIO: io) }

    /// Checks a store at version 1 or 2 holds the fixture's objects, unchanged.
    static func checkUnmigrated(_ generation: Generation, sourceLocation: SourceLocation = #_sourceLocation) {
        let expected = generation.schema.version == 1 ? MusicModel.v1Rows() : MusicModel.v2Rows()
        for row in expected {
            #expect(generation.object(row.id)?.values == row.values, "\(row.id)", sourceLocation: sourceLocation)
        }
        #expect(generation.totalCount == expected.count + 1, sourceLocation: sourceLocation)
        #expect(generation.integrityProblems().isEmpty, sourceLocation: sourceLocation)
    }

    @Test func aCrashAtEveryCallLeavesAnOpenableStoreAndTheMigrationReruns() async throws {
        let base = try await Self.fixture()
        let plan = try MusicModel.plan()
        // Count the calls of one whole migration.
        let probe = FaultInjectingFileIO(wrapping: base.crashed(seed: 0, mode: .processCrash))
        let migrated = try await Store.open(at: Self.path, migratingWith: plan, configuration: Self.configuration(probe))
        MusicModel.checkMigrated(migrated.currentGeneration, sourceVersion: 1)
        await migrated.close()
        let calls = probe.callCount
        #expect(calls > 20)

        var versions: [Int: Int] = [:]
        for index in 0..<calls {
            let disk = base.crashed(seed: 0, mode: .processCrash)
            let faulty = FaultInjectingFileIO(wrapping: disk, faults: [.init(callIndex: index, kind: .error(EIO), persistence: .forever)])
            if let store = try? await Store.open(at: Self.path, migratingWith: plan, configuration: Self.configuration(faulty)) {
                await store.close()
            }
            for seed in 0..<2 {
                let image = disk.crashed(seed: UInt64(index * 2 + seed), mode: .powerLoss)
                let reader: Store
                do {
                    reader = try Store.open(at: Self.path, configuration: .init(fileIO: image, readOnly: true))
                } catch {
                    Issue.record("crash at call \(index), seed \(seed): the store does not open: \(error)")
                    continue
                }
                let generation = reader.currentGeneration
                await reader.close()
                versions[generation.schema.version, default: 0] += 1
                if generation.schema.version == 3 {
                    MusicModel.checkMigrated(generation, sourceVersion: 1)
                } else {
                    Self.checkUnmigrated(generation)
                }
                do {
                    let store = try await Store.open(at: Self.path, migratingWith: plan, configuration: Self.configuration(image))
                    MusicModel.checkMigrated(store.currentGeneration, sourceVersion: 1)
                    await store.close()
                    let files = try image.contentsOfDirectory(Self.path)
                    #expect(!files.contains { StoreLayout.isTemporary($0) }, "\(files)")
                } catch {
                    Issue.record("crash at call \(index), seed \(seed): the migration does not rerun: \(error)")
                }
            }
        }
        // Crashes landed before the first step's switch, between the steps, and after the last.
        #expect(versions[1] ?? 0 > 0 && versions[2] ?? 0 > 0 && versions[3] ?? 0 > 0, "\(versions)")
    }

    @Test func aStepCrashedAfterItsSwitchLeavesNoSegmentOfTheOlderSchema() async throws {
        let base = try await Self.fixture()
        // Compact first so that a checkpoint of the same transaction is replaced by the step's.
        let store = try Store.open(at: Self.path, configuration: Self.configuration(base))
        try await store.compact()
        await store.close()
        let plan = try MigrationPlan(schemas: [MusicModel.v1, MusicModel.v2])
        let probe = FaultInjectingFileIO(wrapping: base.crashed(seed: 0, mode: .processCrash))
        await (try await Store.open(at: Self.path, migratingWith: plan, configuration: Self.configuration(probe))).close()
        let files = try probe.contentsOfDirectory(Self.path).sorted()
        #expect(files == ["checkpoint-00000000000000000002.strata", "journal-00000000000000000003.strata", "lock"], "\(files)")
    }

    /// A legacy store migrated into a new location, crashed at every call (the legacy store is
    /// on another disk that does not crash): the destination is either absent (or an empty
    /// directory) or the whole migrated store — never a store at an older version — and
    /// running the migration again finishes it and leaves no staging directory.
    @Test func aLegacyMigrationCrashedAtEveryCallLeavesNoPartialStoreAndReruns() async throws {
        let legacy = try await Self.fixture()
        let plan = try MusicModel.plan()
        let destination = "/new/music.strata", staging = destination + Store.legacyStagingSuffix
        let empty = InMemoryFileIO()
        try empty.createDirectory("/new")
        try empty.syncDirectory("/")
        let probe = FaultInjectingFileIO(wrapping: empty.crashed(seed: 0, mode: .processCrash))
        await (try await Store.migrate(legacyStoreAt: Self.path, to: destination, with: plan, legacyFileIO: legacy,
                                       configuration: Self.configuration(probe))).close()
        let calls = probe.callCount
        #expect(calls > 20)
        var outcomes: [String: Int] = [:]
        for index in 0..<calls {
            let disk = empty.crashed(seed: 0, mode: .processCrash)
            let faulty = FaultInjectingFileIO(wrapping: disk, faults: [.init(callIndex: index, kind: .error(EIO), persistence: .forever)])
            if let store = try? await Store.migrate(legacyStoreAt: Self.path, to: destination, with: plan, legacyFileIO: legacy,
                                                    configuration: Self.configuration(faulty)) {
                await store.close()
            }
            for seed in 0..<2 {
                let image = disk.crashed(seed: UInt64(index * 2 + seed), mode: .powerLoss)
                let label = "crash at call \(index), seed \(seed)"
                if image.kind(of: destination) != nil, let names = try? image.contentsOfDirectory(destination), !names.isEmpty {
                    do {
                        let reader = try Store.open(at: destination, configuration: .init(fileIO: image, readOnly: true))
                        #expect(reader.schema.version == 3, "\(label)")
                        MusicModel.checkMigrated(reader.currentGeneration, sourceVersion: 1)
                        await reader.close()
                        outcomes["migrated", default: 0] += 1
                    } catch {
                        Issue.record("\(label): the destination holds \(names), which does not open: \(error)")
                    }
                    continue
                }
                outcomes[image.kind(of: staging) == nil ? "nothing" : "staging left", default: 0] += 1
                do {
                    let store = try await Store.migrate(legacyStoreAt: Self.path, to: destination, with: plan, legacyFileIO: legacy,
                                                        configuration: Self.configuration(image))
                    MusicModel.checkMigrated(store.currentGeneration, sourceVersion: 1)
                    await store.close()
                    #expect(image.kind(of: staging) == nil, "\(label)")
                } catch {
                    Issue.record("\(label): the migration does not rerun: \(error)")
                }
            }
        }
        // Crashes landed before anything was made, with a staging directory, and after the rename.
        #expect(outcomes["nothing"] ?? 0 > 0 && outcomes["staging left"] ?? 0 > 0 && outcomes["migrated"] ?? 0 > 0, "\(outcomes)")
    }

    @Test func aFailedLegacyMigrationCreatesNothing() async throws {
        let legacy = try await Self.fixture()
        let destination = "/new/music.strata", staging = destination + Store.legacyStagingSuffix
        let io = InMemoryFileIO()
        try io.createDirectory("/new")
        // A split whose transform forgets the required SongData: validation fails in step 2.
        var broken = MigrationStep(from: MusicModel.v2, to: MusicModel.v3)
        broken.transform("Song") { song, destination in
            try destination.insert("Song", values: ["songID": song["songID"], "title": song["title"]])
        }
        let plan = try MigrationPlan(schemas: [MusicModel.v1, MusicModel.v2, MusicModel.v3], steps: [broken])
        await #expect {
            try await Store.migrate(legacyStoreAt: Self.path, to: destination, with: plan, legacyFileIO: legacy,
                                    configuration: Self.configuration(io))
        } throws: { error in
            let error = error as! MigrationError
            return error.code == .validationFailed && error.key == "data" && error.step == "Music 2 → 3 (custom)"
        }
        let left = try io.contentsOfDirectory("/new")
        #expect(io.kind(of: destination) == nil && io.kind(of: staging) == nil, "\(left)")
        // A staging directory an earlier run left, whatever it holds, is cleared; a destination
        // holding a store is refused before any work.
        try io.createDirectory(staging)
        let junk = try io.open(staging + "/checkpoint-00000000000000000001.strata", access: .readWrite, creation: .createExclusive)
        try io.writeAll(junk, [UInt8](repeating: 9, count: 64), at: 0, path: staging)
        io.close(junk)
        let store = try await Store.migrate(legacyStoreAt: Self.path, to: destination, with: try MusicModel.plan(), legacyFileIO: legacy,
                                            configuration: Self.configuration(io))
        MusicModel.checkMigrated(store.currentGeneration, sourceVersion: 1)
        await store.close()
        #expect(io.kind(of: staging) == nil)
        let calls = FaultInjectingFileIO(wrapping: io)
        await #expect {
            try await Store.migrate(legacyStoreAt: Self.path, to: destination, with: try MusicModel.plan(), legacyFileIO: legacy,
                                    configuration: Self.configuration(calls))
        } throws: { ($0 as! MigrationError).underlying?.code == .alreadyExists }
        #expect(calls.callCount(of: .write) == 0)
    }
}
