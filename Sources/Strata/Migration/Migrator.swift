import Dispatch

/// Runs a plan's steps over a store's objects, one after the other, off Swift's cooperative
/// thread pool (a migration is long, CPU-bound work with blocking I/O between steps).
enum Migrator {
    private static let queue = DispatchQueue(label: "strata.migration", attributes: .concurrent)

    /// Runs `body` on the migration queue.
    static func onQueue<T: Sendable>(_ body: @escaping @Sendable () throws(MigrationError) -> T) async throws(MigrationError) -> T {
        let result: Result<T, MigrationError> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: Result { () throws(MigrationError) -> T in try body() }) }
        }
        return try result.get()
    }

    /// Runs one step of a dry run on the migration queue, checking it exactly as
    /// ``migrate(_:_:number:of:plan:progress:)`` does — a custom step through
    /// ``StepExecution``, an inferred one through ``InferredContents`` — so that a dry run
    /// reports the problems, messages and progress of the real run (but for writing). When the
    /// step is valid it reports `.finished`, and when `keepingContents`, its objects are left
    /// in a spill in `scratch` (a directory outside the store) for the next step; the caller
    /// removes it.
    static func execute(
        _ step: MigrationStep, on source: Generation, number: Int, of count: Int, plan: MigrationPlan,
        scratch: String, scratchIO: any FileIO, keepingContents: Bool, progress: (@Sendable (MigrationProgress) -> Void)?
    ) async throws(MigrationError) -> StepOutcome {
        @Sendable func report(_ phase: MigrationProgress.Phase, _ entity: String?, _ completed: Int, _ total: Int) {
            progress?(MigrationProgress(step: step.name, stepNumber: number, stepCount: count, phase: phase, entity: entity,
                                        completed: completed, total: total))
        }
        return try await CancellationFlag.watching { (cancellation) throws(MigrationError) -> StepOutcome in
            try await onQueue { () throws(MigrationError) -> StepOutcome in
                var outcome: StepOutcome
                if step.isCustom {
                    let execution = StepExecution(step: step, source: source, stepNumber: number, stepCount: count,
                                                  progress: progress, awakening: plan.awakening, spillDirectory: scratch, spillIO: scratchIO,
                                                  cachedIndexPages: plan.cachedIndexPages, cancellation: cancellation)
                    let result = try execution.run()
                    outcome = StepOutcome(contents: result.contents,
                                          objectCounts: step.destination.entities.indices.map { result.contents.spill.count(of: $0) },
                                          problems: result.problems.map { ValidationProblem(problem: $0.problem, cause: $0.cause) },
                                          dropped: result.dropped)
                    if !keepingContents || !outcome.problems.isEmpty {
                        result.contents.spill.remove()
                        outcome.contents = nil
                    }
                } else {
                    let inferred = InferredContents(source: source, step: step)
                    let problems = inferred.problems(cancellation: cancellation) { entity, done, total in report(.validating, entity, done, total) }
                    if cancellation.isCancelled { throw MigrationError.cancelled(step: step.name) }
                    let contents = problems.isEmpty && keepingContents
                        ? try spill(inferred, to: scratch, io: scratchIO, cachedPages: plan.cachedIndexPages) : nil
                    outcome = StepOutcome(contents: contents, objectCounts: inferred.objectCounts, problems: problems, dropped: 0)
                }
                if outcome.problems.isEmpty {
                    let total = outcome.objectCounts.reduce(0, +)
                    report(.finished, nil, total, total)
                }
                return outcome
            }
        }
    }

    /// An inferred step's result, written to a spill in `directory`: a dry run reads it back
    /// for the next step only once the source is released, as a custom step's.
    private static func spill(
        _ inferred: InferredContents, to directory: String, io: any FileIO, cachedPages: Int
    ) throws(MigrationError) -> StepContents {
        let step = inferred.step
        let spill: MigrationSpill
        do throws(StoreError) {
            spill = try MigrationSpill(directory: directory, schema: step.destination, io: io, cachedPages: cachedPages)
        } catch {
            throw MigrationError.store(error, step: step.name, "starting the step")
        }
        var failure: StoreError?
        inferred.forEachRow { row in
            guard failure == nil else { return }
            do throws(StoreError) { try spill.write(step.destination.entityIndex(of: row.id)!, row.id.number, row.values) } catch {
                failure = error
            }
        }
        do throws(StoreError) {
            if let failure = failure ?? spill.failure { throw failure }
            try spill.flush()
        } catch {
            spill.remove()
            throw MigrationError.store(error, step: step.name, "writing the step's new objects")
        }
        return StepContents(spill: spill, schema: step.destination, lastTransaction: inferred.lastTransaction,
                            highestObjectNumbers: inferred.highestObjectNumbers)
    }

    /// Runs one step of a store being migrated in place and writes its checkpoint.
    ///
    /// An inferred step is validated in one pass over the source and then written row by row
    /// (``InferredContents``): it never holds a second copy of the store. A custom step
    /// writes its destination objects to a temporary file in the store directory as it makes
    /// them (``MigrationSpill``), is validated in one pass over that file, and is written
    /// from it; the file is removed when the step ends, and at the next open if a crash left it.
    static func migrate(
        _ store: Store, _ step: MigrationStep, number: Int, of count: Int, plan: MigrationPlan,
        progress: (@Sendable (MigrationProgress) -> Void)?
    ) async throws(MigrationError) {
        try await CancellationFlag.watching { (cancellation) throws(MigrationError) in
            try await migrate(store, step, number: number, of: count, plan: plan, progress: progress, cancellation: cancellation)
        }
    }

    /// ``migrate(_:_:number:of:plan:progress:)``, stopping with `cancelled` once
    /// `cancellation` is set: the step's work looks at it where it reports progress, and the
    /// checkpoint writer after each chunk, until the checkpoint is in place.
    private static func migrate(
        _ store: Store, _ step: MigrationStep, number: Int, of count: Int, plan: MigrationPlan,
        progress: (@Sendable (MigrationProgress) -> Void)?, cancellation: CancellationFlag
    ) async throws(MigrationError) {
        if cancellation.isCancelled { throw MigrationError.cancelled(step: step.name) }
        let source = store.currentGeneration
        @Sendable func report(_ phase: MigrationProgress.Phase, _ entity: String?, _ completed: Int, _ total: Int) {
            progress?(MigrationProgress(step: step.name, stepNumber: number, stepCount: count, phase: phase, entity: entity,
                                        completed: completed, total: total))
        }
        let journal = store.journal
        let contents: any CheckpointSource
        let total: Int
        var spill: MigrationSpill?
        defer { spill?.remove() }
        if step.isCustom {
            let (stepContents, problems) = try await onQueue { () throws(MigrationError) -> (StepContents, [ValidationProblem]) in
                let execution = StepExecution(step: step, source: source, stepNumber: number, stepCount: count, progress: progress,
                                              awakening: plan.awakening, spillDirectory: journal.path, spillIO: journal.io,
                                              cachedIndexPages: plan.cachedIndexPages, cancellation: cancellation)
                let outcome = try execution.run()
                return (outcome.contents, outcome.problems.map { ValidationProblem(problem: $0.problem, cause: $0.cause) })
            }
            spill = stepContents.spill
            if let error = StepOutcome.validationError(problems, step: step, number: number) { throw error }
            contents = stepContents
            total = stepContents.objectCount
        } else {
            let inferred = InferredContents(source: source, step: step)
            let problems = try await onQueue { () throws(MigrationError) -> [ValidationProblem] in
                inferred.problems(cancellation: cancellation) { entity, done, total in report(.validating, entity, done, total) }
            }
            if cancellation.isCancelled { throw MigrationError.cancelled(step: step.name) }
            if let error = StepOutcome.validationError(problems, step: step, number: number) { throw error }
            contents = inferred
            total = inferred.objectCount
        }
        // The objects written: a removed entity's are not.
        report(.writing, nil, 0, total)
        if cancellation.isCancelled { throw MigrationError.cancelled(step: step.name) }
        do throws(StoreError) {
            try await journal.writeMigrationCheckpoint(contents, schema: step.destination, cancellation: cancellation)
        } catch where error.code == .cancelled {
            throw MigrationError.cancelled(step: step.name)
        } catch {
            throw MigrationError.store(error, step: step.name, "writing the step's checkpoint")
        }
        report(.writing, nil, total, total)
    }
}

/// What one step of a dry run produced: its objects (in its spill, when kept for the next
/// step), how many of each entity, what would fail validation, and how many source objects
/// its transforms dropped.
struct StepOutcome: Sendable {
    var contents: StepContents?
    /// Objects per destination entity, in schema order.
    var objectCounts: [Int]
    var problems: [ValidationProblem]
    var dropped: Int

    /// The error for the first validation problem, if any. `number` is the step's position
    /// in the run: only the first step's failure leaves the store as it was (the steps before
    /// a later one were written).
    static func validationError(_ problems: [ValidationProblem], step: MigrationStep, number: Int) -> MigrationError? {
        guard let first = problems.first else { return nil }
        let more = problems.count > 1 ? " (and \(problems.count - 1) more problem\(problems.count == 2 ? "" : "s"))" : ""
        let outcome = number == 1 ? "the store was not changed" : "the step was not written"
        var error = MigrationError(.validationFailed, "\(first.problem.message)\(more); \(outcome)",
                                   step: step.name, entity: first.problem.object.entity, object: first.problem.object,
                                   key: first.problem.key, cause: first.cause)
        error.problems = problems.map(\.problem)
        return error
    }
}
