import Foundation
import Testing
@testable import Strata

/// Cancelling the task that migrates a store (v1 → v2 inferred → v3 custom) at any moment it
/// reports progress stops the migration as a crash would, without the crash: the step under
/// way is not written, no temporary file stays, the error says so, the store opens at the
/// version of the last step written with that version's contents, and opening it with the
/// plan again finishes the migration.
@Suite struct MigrationCancellationTests {
    typealias Outcome = Result<Store, MigrationError>

    /// Every progress report of an uncancelled migration of the fixture.
    static func reportsOfAFullRun() async throws -> [MigrationProgress] {
        let io = try await MigrationCrashTests.fixture()
        let reports = Locked<[MigrationProgress]>([])
        let store = try await Store.open(at: MigrationCrashTests.path, migratingWith: try MusicModel.plan(),
                                         configuration: MigrationCrashTests.configuration(io)) { report in
            reports.withLock { $0.append(report) }
        }
        await store.close()
        return reports.withLock { $0 }
    }

    /// Migrates the fixture in a task of its own, cancelled from the progress callback at
    /// report number `moment` (from 1).
    static func migrate(
        _ io: InMemoryFileIO, cancellingAtReport moment: Int, seen reports: Locked<[MigrationProgress]> = Locked([])
    ) async throws -> Outcome {
        let migrating = Locked<Task<Outcome, Never>?>(nil)
        let plan = try MusicModel.plan()
        let (gate, opened) = AsyncStream<Void>.makeStream()
        let task = Task { () async -> Outcome in
            for await _ in gate { break }  // until the test holds the task, so the callback can cancel it
            do throws(MigrationError) {
                return .success(try await Store.open(at: MigrationCrashTests.path, migratingWith: plan,
                                                     configuration: MigrationCrashTests.configuration(io)) { report in
                    let count = reports.withLock { reports in
                        reports.append(report)
                        return reports.count
                    }
                    if count == moment { migrating.withLock { $0?.cancel() } }
                })
            } catch {
                return .failure(error)
            }
        }
        migrating.withLock { $0 = task }
        opened.yield()
        opened.finish()
        return try await withTimeout(60, "the migration") { await task.value }
    }

    @Test("a migration cancelled at any progress report writes no part of the step under way, and reruns")
    func cancelledAtEveryReport() async throws {
        let reports = try await Self.reportsOfAFullRun()
        // The last step's checkpoint is in place once it reports its objects written: a
        // cancellation after that is too late to stop anything.
        let lastWrite = try #require(reports.lastIndex { $0.phase == .writing && $0.stepNumber == $0.stepCount && $0.completed == $0.total })
        #expect(reports.count > 8, "\(reports)")
        for moment in 1...reports.count {
            let io = try await MigrationCrashTests.fixture()
            let outcome = try await Self.migrate(io, cancellingAtReport: moment)
            let names = try io.contentsOfDirectory(MigrationCrashTests.path)
            #expect(!names.contains { $0.hasSuffix(StoreLayout.temporarySuffix) || !($0.hasPrefix("journal-") || $0.hasPrefix("checkpoint-") || $0 == StoreLayout.lockFile) },
                    "after a cancellation at report \(moment) (\(reports[moment - 1])): \(names)")
            switch outcome {
            case .success(let store):
                #expect(moment >= lastWrite + 1, "cancelled at report \(moment) (\(reports[moment - 1])), the migration went on")
                MusicModel.checkMigrated(store.currentGeneration, sourceVersion: 1)
                await store.close()
            case .failure(let error):
                let report = reports[moment - 1]
                #expect(moment < lastWrite + 1, "cancelled at report \(moment) (\(report)) once the last checkpoint was written: \(error)")
                #expect(error.code == .cancelled, "\(error)")
                // The version the store is at: before the step that was under way.
                let store = try Store.open(at: MigrationCrashTests.path, configuration: MigrationCrashTests.configuration(io))
                let version = store.schema.version
                #expect(version < 3)
                #expect(error.step?.hasPrefix("Music \(version) → \(version + 1)") == true, "\(error)")
                if version > 1 { #expect(error.message.contains("the store is at schema version \(version) now"), "\(error.message)") }
                MigrationCrashTests.checkUnmigrated(store.currentGeneration)
                await store.close()
                // Opening with the plan again finishes the migration.
                let finished = try await Store.open(at: MigrationCrashTests.path, migratingWith: try MusicModel.plan(),
                                                    configuration: MigrationCrashTests.configuration(io))
                MusicModel.checkMigrated(finished.currentGeneration, sourceVersion: 1)
                await finished.close()
            }
        }
    }

    /// A v1 store of `songs` songs (no albums), in memory.
    static func largeFixture(songs: Int) async throws -> InMemoryFileIO {
        let io = InMemoryFileIO()
        let store = try Store.create(at: MigrationCrashTests.path, schema: MusicModel.v1, configuration: MigrationCrashTests.configuration(io))
        let ids = store.allocateObjectIDs(for: "Song", count: songs)
        try await store.commit(ChangeSet(author: "fixture", inserted: ids.enumerated().map { n, id in
            MusicModel.row(MusicModel.v1, "Song", id.number, ["songID": .int(Int64(n + 1)), "name": .string("Song \(n + 1)"), "length": .int(180)])
        }))
        await store.close()
        return io
    }

    /// Passes over many objects look for the cancellation every
    /// ``StepExecution/progressInterval`` objects, not only between passes: cancelled at the
    /// report of the first 10,000 of 12,000 songs in each pass, the migration stops before
    /// that pass's next report.
    @Test("a migration cancelled in the middle of a pass over many objects stops there")
    func cancelledInTheMiddleOfAPass() async throws {
        let songs = 12_000
        let reports = Locked<[MigrationProgress]>([])
        do {
            let io = try await Self.largeFixture(songs: songs)
            let store = try await Store.open(at: MigrationCrashTests.path, migratingWith: try MusicModel.plan(),
                                             configuration: MigrationCrashTests.configuration(io)) { report in
                reports.withLock { $0.append(report) }
            }
            await store.close()
        }
        let all = reports.withLock { $0 }
        let middles = all.enumerated().filter { $0.element.completed == StepExecution.progressInterval }
        #expect(Set(middles.map { "\($0.element.stepNumber) \($0.element.phase)" }).count >= 3, "\(middles.map(\.element))")
        for (index, report) in middles {
            let io = try await Self.largeFixture(songs: songs)
            let seen = Locked<[MigrationProgress]>([])
            let outcome = try await Self.migrate(io, cancellingAtReport: index + 1, seen: seen)
            guard case .failure(let error) = outcome else {
                Issue.record("cancelled at \(report), the migration finished")
                continue
            }
            #expect(error.code == .cancelled, "\(error)")
            let after = seen.withLock { $0 }.dropFirst(index + 1)
            #expect(!after.contains { $0.stepNumber == report.stepNumber && $0.phase == report.phase && $0.completed > report.completed },
                    "cancelled at \(report), the pass went on: \(Array(after))")
            let reopened = try Store.open(at: MigrationCrashTests.path, configuration: MigrationCrashTests.configuration(io))
            #expect(reopened.schema.version == report.stepNumber, "cancelled at \(report)")
            #expect(reopened.currentGeneration.count(of: "Song") == songs)
            await reopened.close()
        }
    }

    @Test("a migration asked for by a cancelled task leaves the store as it was")
    func cancelledBeforeItBegins() async throws {
        let io = try await MigrationCrashTests.fixture()
        let plan = try MusicModel.plan()
        let task = Task { () async -> Outcome in
            withUnsafeCurrentTask { $0?.cancel() }
            do throws(MigrationError) {
                return .success(try await Store.open(at: MigrationCrashTests.path, migratingWith: plan,
                                                     configuration: MigrationCrashTests.configuration(io)))
            } catch {
                return .failure(error)
            }
        }
        let result = try await withTimeout(60, "the migration") { await task.value }
        guard case .failure(let error) = result else {
            Issue.record("a cancelled task's migration ran")
            return
        }
        #expect(error.code == .cancelled)
        let store = try Store.open(at: MigrationCrashTests.path, configuration: MigrationCrashTests.configuration(io))
        #expect(store.schema.version == 1)
        MigrationCrashTests.checkUnmigrated(store.currentGeneration)
        await store.close()
    }
}
