import Foundation

// MARK: - Opening with a migration

extension Store {
    /// Opens a store, first migrating it to the plan's newest schema if it was written with
    /// an older version.
    ///
    /// Every step from the store's version to the newest runs in order. Each step is computed
    /// and validated — an inferred step in one pass over the store, a custom step's new objects
    /// kept in a temporary file in the store directory rather than in memory (removed when the
    /// step ends, or at the next open after a crash); only a valid result is written, as a
    /// checkpoint that replaces
    /// the store's contents in one atomic rename (see ``Journal``'s migration checkpoints).
    /// A crash at any moment leaves a store that opens — at its old version or at the last
    /// step completed — and opening it again with the plan finishes the migration.
    /// Cancelling the calling task stops the migration the same way, without the crash: the
    /// step under way is not written (its work looks for the cancellation every 10,000
    /// objects, and its checkpoint writer after every chunk) and ``MigrationError/Code/cancelled``
    /// says which version the store is at.
    ///
    /// ```swift
    /// let store = try await Store.open(at: path, migratingWith: plan) { progress in
    ///     print(progress)
    /// }
    /// ```
    /// - Parameters:
    ///   - plan: the schema versions and steps.
    ///   - configuration: how to open the store. Opened read-only, a store at an older
    ///     version is refused (``MigrationError/Code/needsMigration``) and a store *newer*
    ///     than the plan opens under its own schema.
    ///   - progress: called (on the migration's thread) as the migration advances.
    /// - Returns: the store, open under the newest schema (or, read-only, its own).
    /// - Throws: ``MigrationError`` naming the step, entity, object and key; the store is
    ///   unchanged by a step that fails, but the steps before it stay written (the error then
    ///   says which version the store is at).
    public static func open(
        at path: String, migratingWith plan: MigrationPlan, configuration: Configuration = Configuration(),
        progress: (@Sendable (MigrationProgress) -> Void)? = nil
    ) async throws(MigrationError) -> Store {
        try await open(at: path, migratingWith: plan, configuration: configuration, progress: progress, isStaging: false)
    }

    /// Opens a store with a plan; a failing step after the first says which version the
    /// steps before it left the store at, unless the store is a legacy migration's staging
    /// copy (which is removed on failure).
    private static func open(
        at path: String, migratingWith plan: MigrationPlan, configuration: Configuration,
        progress: (@Sendable (MigrationProgress) -> Void)?, isStaging: Bool
    ) async throws(MigrationError) -> Store {
        // Only `current` ever holds the open store, so each older store is freed before the
        // newer one loads.
        var current: Store?
        do { current = try Store.open(at: path, configuration: configuration) } catch {
            throw MigrationError.store(error, "opening the store to migrate")
        }
        let stored = current!.schema
        let steps: ArraySlice<MigrationStep>
        do throws(MigrationError) {
            steps = try plan.steps(from: stored, path: path)
        } catch {
            if error.code == .newerStore && configuration.readOnly { return current! }
            await current!.close()
            throw error
        }
        if steps.isEmpty { return current! }
        guard !configuration.readOnly else {
            await current!.close()
            throw MigrationError(.needsMigration,
                                 "the store at \(path) is at schema version \(stored.version) and needs migrating to version \(plan.latest.version); open it for writing to migrate it",
                                 step: steps.first?.name)
        }
        // Each step is written as a checkpoint, then the store is reopened under the step's
        // schema (keeping the write lock), so that the next step starts from what is on disk.
        for (k, step) in steps.enumerated() {
            let lock: StoreLock?
            do throws(MigrationError) {
                lock = try await migrateStep(current!, step, number: k + 1, of: steps.count, plan: plan, progress: progress)
            } catch {
                guard k > 0, !isStaging else { throw error }
                var error = error
                error.message += "; the steps before it were written: the store is at schema version \(step.source.version) now, and opening it with the plan runs the remaining steps from there"
                throw error
            }
            current = nil
            do throws(StoreError) {
                current = try Store.open(at: path, schema: step.destination, configuration: configuration, heldLock: lock)
            } catch {
                throw MigrationError.store(error, step: step.name, "opening the store after the step")
            }
            let count = current!.currentGeneration.totalCount
            progress?(MigrationProgress(step: step.name, stepNumber: k + 1, stepCount: steps.count, phase: .finished, entity: nil,
                                        completed: count, total: count))
        }
        return current!
    }

    /// Runs one step on an open store, then closes it, keeping the write lock for the next handle.
    private static func migrateStep(
        _ store: Store, _ step: MigrationStep, number: Int, of count: Int, plan: MigrationPlan,
        progress: (@Sendable (MigrationProgress) -> Void)?
    ) async throws(MigrationError) -> StoreLock? {
        do throws(MigrationError) {
            try await Migrator.migrate(store, step, number: number, of: count, plan: plan, progress: progress)
        } catch {
            await store.close()
            throw error
        }
        return await store.close(releasingLock: false)
    }

    /// Migrates a separate legacy store into a new store at another location, leaving the
    /// legacy store untouched (it is only read, without taking its lock).
    ///
    /// The legacy store's contents are first copied, as one checkpoint, into a *staging*
    /// directory beside the destination (its path with ``legacyStagingSuffix`` added); that
    /// copy is then migrated in place, step by step, exactly as
    /// ``open(at:migratingWith:configuration:progress:)`` migrates a store — a custom step's
    /// objects and bookkeeping in temporary files, so memory does not grow with the store —
    /// and only the finished store is renamed to the destination. A crash at any moment leaves
    /// the destination as it was (absent or empty) and at most a staging directory, which the
    /// next call clears and starts again.
    ///
    /// ```swift
    /// let store = try await Store.migrate(legacyStoreAt: "/old/songs.strata", to: "/data/songs.strata", with: plan)
    /// ```
    /// - Parameters:
    ///   - legacyPath: the legacy store; its schema must be one of the plan's versions.
    ///   - destinationPath: where the new store is created (it must not exist, or be an empty
    ///     directory, or hold only the lock and temporary files of an interrupted earlier run).
    ///   - legacyFileIO: how to read the legacy store.
    ///   - configuration: how to create and open the new store.
    /// - Returns: the new store, open under the plan's newest schema.
    /// - Throws: ``MigrationError``; nothing is created when a step fails (the staging
    ///   directory is removed), and a destination that holds a store is refused before any
    ///   work (``StoreError/Code/alreadyExists``).
    public static func migrate(
        legacyStoreAt legacyPath: String, to destinationPath: String, with plan: MigrationPlan,
        legacyFileIO: any FileIO = POSIXFileIO(), configuration: Configuration = Configuration(),
        progress: (@Sendable (MigrationProgress) -> Void)? = nil
    ) async throws(MigrationError) -> Store {
        let io = configuration.fileIO
        let staging = destinationPath + legacyStagingSuffix
        // The staging directory is emptied before the copy: it must not be the legacy store.
        func location(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.path }
        if [destinationPath, staging].map(location).contains(location(legacyPath)) {
            throw MigrationError.store(
                StoreError(.alreadyExists, "the legacy store at \(legacyPath) is where the new store or its staging directory (\(staging)) goes; choose another destination",
                           path: legacyPath),
                "preparing the new store")
        }
        try clearDestination(destinationPath, io: io)
        try clearDestination(staging, io: io, ownedByMigration: true)
        let last = try await copyLegacyStore(at: legacyPath, legacyFileIO: legacyFileIO, to: staging, plan: plan, configuration: configuration)
        do throws(MigrationError) {
            let store = try await Store.open(at: staging, migratingWith: plan, configuration: configuration, progress: progress,
                                             isStaging: true)
            await store.close()
        } catch {
            removeStaging(staging, io: io)
            throw error
        }
        // Only the finished store takes the destination's name (replacing an empty directory).
        do throws(FileIOError) {
            try io.rename(staging, to: destinationPath)
            try io.syncDirectory(StoreLayout.parent(of: destinationPath))
        } catch {
            removeStaging(staging, io: io)
            throw MigrationError.store(StoreError.io(error, "moving the migrated store into place"), step: last, "creating the new store")
        }
        do {
            return try Store.open(at: destinationPath, schema: plan.latest, configuration: configuration)
        } catch {
            throw MigrationError.store(error, step: last, "opening the new store")
        }
    }

    /// What is added to a legacy migration's destination path to name its staging directory.
    public static let legacyStagingSuffix = ".migrating"

    /// Copies the legacy store into `staging` as a store of its own schema (one checkpoint),
    /// checking first that the plan can migrate it; returns the name of the plan's last step
    /// (for errors). The legacy store's objects are released before this returns.
    private static func copyLegacyStore(
        at legacyPath: String, legacyFileIO: any FileIO, to staging: String, plan: MigrationPlan, configuration: Configuration
    ) async throws(MigrationError) -> String? {
        let legacy: Store
        do { legacy = try Store.open(at: legacyPath, configuration: Configuration(fileIO: legacyFileIO, readOnly: true)) } catch {
            throw MigrationError.store(error, "opening the legacy store")
        }
        let generation = legacy.currentGeneration
        let stored = legacy.schema
        await legacy.close()
        let steps = try plan.steps(from: stored, path: legacyPath)
        do {
            let journal = try Journal.create(at: staging, schema: stored, configuration: configuration, initialContents: generation)
            await journal.close()
        } catch {
            removeStaging(staging, io: configuration.fileIO)
            throw MigrationError.store(error, step: steps.first?.name, "copying the legacy store to \(staging)")
        }
        return steps.last?.name
    }

    /// Makes `path` ready for a new store: refuses one that holds anything but the lock file
    /// and temporary files (unless it is a staging directory the migration owns, which is
    /// emptied whatever it holds) and removes those.
    private static func clearDestination(_ path: String, io: any FileIO, ownedByMigration: Bool = false) throws(MigrationError) {
        switch io.kind(of: path) {
        case nil:
            return
        case .directory:
            let names: [String]
            do throws(FileIOError) { names = try io.contentsOfDirectory(path) } catch {
                throw MigrationError.store(StoreError.io(error, "listing \(path)"), "preparing the new store")
            }
            guard ownedByMigration || names.allSatisfy({ $0 == StoreLayout.lockFile || StoreLayout.isTemporary($0) }) else {
                throw MigrationError.store(
                    StoreError(.alreadyExists, "\(path) is not empty; choose a new path, or open the store that is there", path: path),
                    "preparing the new store")
            }
            // What an interrupted creation or migration leaves.
            do throws(FileIOError) {
                for name in names { try io.remove(StoreLayout.join(path, name)) }
            } catch {
                throw MigrationError.store(StoreError.io(error, "clearing \(path)"), "preparing the new store")
            }
        case .file, .other:
            throw MigrationError.store(StoreError(.alreadyExists, "\(path) exists and is not a directory; choose another path", path: path),
                                       "preparing the new store")
        }
    }

    /// Removes a staging directory and its files (best effort: the next migration to the
    /// same destination clears what is left).
    private static func removeStaging(_ path: String, io: any FileIO) {
        if let names = try? io.contentsOfDirectory(path) {
            for name in names { try? io.remove(StoreLayout.join(path, name)) }
        }
        try? io.removeDirectory(path)
    }
}
