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

    /// Runs one step of a dry run on the migration queue, its spill in `scratch` (a
    /// directory outside the store). The caller reads the outcome and removes its spill.
    static func execute(
        _ step: MigrationStep, on source: Generation, number: Int, of count: Int, plan: MigrationPlan,
        scratch: String, scratchIO: any FileIO, progress: (@Sendable (MigrationProgress) -> Void)?
    ) async throws(MigrationError) -> StepOutcome {
        try await onQueue { () throws(MigrationError) -> StepOutcome in
            let execution = StepExecution(step: step, source: source, stepNumber: number, stepCount: count,
                                          progress: progress, awakening: plan.awakening, spillDirectory: scratch, spillIO: scratchIO,
                                          cachedIndexPages: plan.cachedIndexPages)
            let outcome = try execution.run()
            return StepOutcome(contents: outcome.contents,
                               problems: outcome.problems.map { ValidationProblem(problem: $0.problem, cause: $0.cause) },
                               dropped: outcome.dropped)
        }
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
        let source = store.currentGeneration
        @Sendable func report(_ phase: MigrationProgress.Phase, _ entity: String?, _ completed: Int, _ total: Int) {
            progress?(MigrationProgress(step: step.name, stepNumber: number, stepCount: count, phase: phase, entity: entity,
                                        completed: completed, total: total))
        }
        let journal = store.journal
        let contents: any CheckpointSource
        var spill: MigrationSpill?
        defer { spill?.remove() }
        if step.isCustom {
            let (stepContents, problems) = try await onQueue { () throws(MigrationError) -> (StepContents, [ValidationProblem]) in
                let execution = StepExecution(step: step, source: source, stepNumber: number, stepCount: count, progress: progress,
                                              awakening: plan.awakening, spillDirectory: journal.path, spillIO: journal.io,
                                              cachedIndexPages: plan.cachedIndexPages)
                let outcome = try execution.run()
                return (outcome.contents, outcome.problems.map { ValidationProblem(problem: $0.problem, cause: $0.cause) })
            }
            spill = stepContents.spill
            if let error = StepOutcome.validationError(problems, step: step) { throw error }
            contents = stepContents
        } else {
            let inferred = InferredContents(source: source, step: step)
            let problems = try await onQueue { () throws(MigrationError) -> [ValidationProblem] in
                inferred.problems { entity, done, total in report(.validating, entity, done, total) }
            }
            if let error = StepOutcome.validationError(problems, step: step) { throw error }
            contents = inferred
        }
        report(.writing, nil, 0, source.totalCount)
        do throws(StoreError) {
            try await journal.writeMigrationCheckpoint(contents, schema: step.destination)
        } catch {
            throw MigrationError.store(error, step: step.name, "writing the step's checkpoint")
        }
    }
}

/// What one step of a dry run produced: its objects (in its spill), what would fail
/// validation, and how many source objects its transforms dropped.
struct StepOutcome: Sendable {
    var contents: StepContents
    var problems: [ValidationProblem]
    var dropped: Int

    /// The error for the first validation problem, if any.
    static func validationError(_ problems: [ValidationProblem], step: MigrationStep) -> MigrationError? {
        guard let first = problems.first else { return nil }
        let more = problems.count > 1 ? " (\(problems.count - 1) more problem(s) listed in `problems`)" : ""
        var error = MigrationError(.validationFailed, "\(first.problem.message)\(more); the store was not changed",
                                   step: step.name, entity: first.problem.object.entity, object: first.problem.object,
                                   key: first.problem.key, cause: first.cause)
        error.problems = problems.map(\.problem)
        return error
    }
}
