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
    ///   unchanged by a step that fails.
    public static func open(
        at path: String, migratingWith plan: MigrationPlan, configuration: Configuration = Configuration(),
        progress: (@Sendable (MigrationProgress) -> Void)? = nil
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
            let lock = try await migrateStep(current!, step, number: k + 1, of: steps.count, plan: plan, progress: progress)
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
    /// - Throws: ``MigrationError``; nothing is created when a step fails.
    public static func migrate(
        legacyStoreAt legacyPath: String, to destinationPath: String, with plan: MigrationPlan,
        legacyFileIO: any FileIO = POSIXFileIO(), configuration: Configuration = Configuration(),
        progress: (@Sendable (MigrationProgress) -> Void)? = nil
    ) async throws(MigrationError) -> Store {
        let legacy: Store
        do { legacy = try Store.open(at: legacyPath, configuration: Configuration(fileIO: legacyFileIO, readOnly: true)) } catch {
            throw MigrationError.store(error, "opening the legacy store")
        }
        let generation = legacy.currentGeneration
        let stored = legacy.schema
        await legacy.close()
        let steps = try plan.steps(from: stored, path: legacyPath)
        let migrated = try await Migrator.run(steps, from: generation, plan: plan, progress: progress) { _, _ throws(MigrationError) in }
        let io = configuration.fileIO
        if io.kind(of: destinationPath) == .directory, let names = try? io.contentsOfDirectory(destinationPath),
            !names.isEmpty, names.allSatisfy({ $0 == StoreLayout.lockFile || StoreLayout.isTemporary($0) })
        {
            // What an interrupted creation leaves before its checkpoint is in place.
            for name in names { try? io.remove(StoreLayout.join(destinationPath, name)) }
        }
        do {
            let journal = try Journal.create(at: destinationPath, schema: plan.latest, configuration: configuration, initialContents: migrated)
            await journal.close()
            return try Store.open(at: destinationPath, schema: plan.latest, configuration: configuration)
        } catch {
            throw MigrationError.store(error, step: steps.last?.name, "creating the new store")
        }
    }
}
