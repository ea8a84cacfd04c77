import Foundation

/// What a migration would do to a store, found by running every step and writing nothing to
/// the store: the steps (inferred or custom) and their schema changes, the number of objects
/// of each entity before and after each step, and what would fail validation.
///
/// ```swift
/// let dryRun = try await plan.dryRun(storeAt: path)
/// print(dryRun)
/// // dry run of /data/songs.strata: schema version 1 → 3 in 2 step(s); nothing was written
/// // objects: Artist 3, Album 4, Song 10
/// // step 1: Songbook 1 → 2 (inferred)
/// //   Song.rating: added (default 0)
/// //   ...
/// ```
public struct MigrationDryRun: Sendable, CustomStringConvertible {
    /// How many objects of an entity there are.
    public struct EntityCount: Sendable, Hashable {
        /// The entity's name.
        public var entity: String
        /// How many objects it has.
        public var count: Int
    }

    /// One step of the plan, as the dry run ran it.
    public struct Step: Sendable {
        /// The step, as `Name n → m (inferred|custom)`.
        public var name: String
        /// Whether the step has custom transforms or links.
        public var isCustom: Bool
        /// Every schema difference of the step.
        public var changes: [SchemaChange]
        /// Source entities with a custom transform.
        public var transformedEntities: [String]
        /// Destination entities with a link.
        public var linkedEntities: [String]
        /// Whether the step ran (steps after a failing one do not).
        public var wasRun: Bool
        /// Objects of each entity after the step.
        public var objectCounts: [EntityCount]
        /// Source objects the step's transforms dropped.
        public var dropped: Int
        /// What would fail validation (at most 100).
        public var problems: [ValidationProblem]
        /// A transform or link that failed.
        public var failure: MigrationError?
    }

    /// The store examined.
    public var path: String
    /// The store's schema version.
    public var storedVersion: Int
    /// The version the plan migrates to.
    public var targetVersion: Int
    /// Objects of each entity in the store now.
    public var objectCounts: [EntityCount]
    /// The steps that would run, in order.
    public var steps: [Step]

    /// Whether every step ran and passed validation.
    public var wouldSucceed: Bool { steps.allSatisfy { $0.wasRun && $0.problems.isEmpty && $0.failure == nil } }

    public var description: String {
        func counts(_ list: [EntityCount]) -> String { list.map { "\($0.entity) \($0.count)" }.joined(separator: ", ") }
        var lines = [steps.isEmpty
            ? "dry run of \(path): the store is at schema version \(storedVersion), the newest; nothing to do"
            : "dry run of \(path): schema version \(storedVersion) → \(targetVersion) in \(steps.count) step(s); nothing was written"]
        lines.append("objects: \(counts(objectCounts))")
        for (k, step) in steps.enumerated() {
            var title = "step \(k + 1): \(step.name)"
            var custom: [String] = []
            if !step.transformedEntities.isEmpty { custom.append("transforms \(step.transformedEntities.joined(separator: ", "))") }
            if !step.linkedEntities.isEmpty { custom.append("links \(step.linkedEntities.joined(separator: ", "))") }
            if !custom.isEmpty { title += ": " + custom.joined(separator: "; ") }
            lines.append(title)
            lines += step.changes.map { "  \($0)" }
            if step.changes.isEmpty { lines.append("  no schema changes") }
            guard step.wasRun else {
                lines.append("  not run: an earlier step fails")
                continue
            }
            lines.append("  objects after: \(counts(step.objectCounts))" + (step.dropped > 0 ? " (\(step.dropped) dropped by transforms)" : ""))
            if let failure = step.failure {
                lines.append("  fails: \(failure)")
            } else if step.problems.isEmpty {
                lines.append("  validation: ok")
            } else {
                lines.append("  validation: \(step.problems.count)\(step.problems.count >= 100 ? "+" : "") problem(s)")
                lines += step.problems.map { "    \($0)" }
            }
        }
        if !steps.isEmpty { lines.append(wouldSucceed ? "result: the migration would succeed" : "result: the migration would fail") }
        return lines.joined(separator: "\n") + "\n"
    }
}

// MARK: - Dry run

extension MigrationPlan {
    /// Runs every step a store needs, writing nothing to the store, and reports what would
    /// happen (see ``MigrationDryRun``). The store is read without taking its lock.
    ///
    /// Each step is checked as in a migration — an inferred step in one pass over its source,
    /// a custom step with its new objects and bookkeeping in temporary files — so the dry run
    /// reports the problems (and progress, but for writing) the migration would. Its temporary
    /// files are in a scratch directory of the system's temporary directory (`FileManager`'s
    /// `temporaryDirectory`, removed before this returns); a step's result is read back into
    /// memory only when another step follows, after the previous one is released. So a dry
    /// run needs about the memory of the larger of the store before and after each step.
    /// - Parameters:
    ///   - fileIO: how to read the store (the scratch files always use ``POSIXFileIO``).
    /// - Throws: ``MigrationError`` when the store cannot be read, its version is not in the
    ///   plan, or the scratch directory cannot be made.
    public func dryRun(
        storeAt path: String, fileIO: any FileIO = POSIXFileIO(), progress: (@Sendable (MigrationProgress) -> Void)? = nil
    ) async throws(MigrationError) -> MigrationDryRun {
        try await dryRun(storeAt: path, fileIO: fileIO, scratchParent: FileManager.default.temporaryDirectory.path, progress: progress)
    }

    /// A dry run whose scratch directory is made in `scratchParent`.
    func dryRun(
        storeAt path: String, fileIO: any FileIO, scratchParent: String, progress: (@Sendable (MigrationProgress) -> Void)?
    ) async throws(MigrationError) -> MigrationDryRun {
        let store: Store
        do { store = try Store.open(at: path, configuration: Store.Configuration(fileIO: fileIO, readOnly: true)) } catch {
            throw MigrationError.store(error, "opening the store")
        }
        var generation: Generation? = store.currentGeneration
        let stored = store.schema
        await store.close()
        let steps = try self.steps(from: stored, path: path)
        let counts = stored.entities.map { MigrationDryRun.EntityCount(entity: $0.name, count: generation!.count(of: $0.name)) }
        var result = MigrationDryRun(path: path, storedVersion: stored.version, targetVersion: latest.version,
                                     objectCounts: counts, steps: [])
        guard !steps.isEmpty else { return result }
        let scratchIO = POSIXFileIO()
        let scratch = try Self.makeScratchDirectory(in: scratchParent, io: scratchIO)
        defer { try? scratchIO.removeDirectory(scratch) }
        var failed = false
        for (k, step) in steps.enumerated() {
            var report = MigrationDryRun.Step(
                name: step.name, isCustom: step.isCustom, changes: step.changes, transformedEntities: step.transformedEntities,
                linkedEntities: step.linkedEntities, wasRun: !failed, objectCounts: [], dropped: 0, problems: [], failure: nil)
            if !failed {
                do throws(MigrationError) {
                    // Not bound to a constant: `generation` alone holds the source, so that
                    // releasing it below frees it before the result is read back.
                    let outcome = try await Migrator.execute(step, on: generation!, number: k + 1, of: steps.count, plan: self,
                                                             scratch: scratch, scratchIO: scratchIO, keepingContents: k + 1 < steps.count,
                                                             progress: progress)
                    defer { outcome.contents?.spill.remove() }
                    report.objectCounts = zip(step.destination.entities, outcome.objectCounts).map {
                        MigrationDryRun.EntityCount(entity: $0.name, count: $1)
                    }
                    report.dropped = outcome.dropped
                    report.problems = outcome.problems
                    failed = !outcome.problems.isEmpty
                    // The next step starts from this one's result, read back once the source is released.
                    generation = nil
                    if let contents = outcome.contents, !failed { generation = try contents.generation(step: step.name) }
                } catch {
                    report.failure = error
                    failed = true
                }
            }
            result.steps.append(report)
        }
        return result
    }

    /// A new, empty directory for a dry run's scratch files.
    private static func makeScratchDirectory(in parent: String, io: POSIXFileIO) throws(MigrationError) -> String {
        var base = parent
        while base.count > 1 && base.hasSuffix("/") { base.removeLast() }
        let path = base + "/strata-dry-run-" + UUID().uuidString
        do throws(FileIOError) { try io.createDirectory(path) } catch {
            throw MigrationError.store(StoreError.io(error, "creating the dry run's scratch directory \(path)"), "starting the dry run")
        }
        return path
    }
}
