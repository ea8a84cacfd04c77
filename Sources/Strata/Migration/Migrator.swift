import Dispatch

/// Runs a plan's steps over a store's objects, one after the other, off Swift's cooperative
/// thread pool (a migration is long, CPU-bound work with blocking I/O between steps).
enum Migrator {
    private static let queue = DispatchQueue(label: "strata.migration", attributes: .concurrent)

    /// Runs one step on the migration queue and returns its outcome.
    static func execute(
        _ step: MigrationStep, on source: Generation, number: Int, of count: Int, plan: MigrationPlan,
        progress: (@Sendable (MigrationProgress) -> Void)?
    ) async throws(MigrationError) -> StepOutcome {
        let result: Result<StepOutcome, MigrationError> = await withCheckedContinuation { continuation in
            queue.async {
                let execution = StepExecution(step: step, source: source, stepNumber: number, stepCount: count,
                                              progress: progress, awakening: plan.awakening)
                continuation.resume(returning: Result { () throws(MigrationError) -> StepOutcome in
                    let outcome = try execution.run()
                    return StepOutcome(generation: outcome.generation,
                                       problems: outcome.problems.map { ValidationProblem(problem: $0.problem, cause: $0.cause) },
                                       dropped: outcome.dropped)
                })
            }
        }
        return try result.get()
    }

    /// Runs `steps` from `generation`, calling `afterStep` with each valid result; throws the
    /// first validation failure, naming its step, object, key and cause.
    static func run(
        _ steps: ArraySlice<MigrationStep>, from generation: Generation, plan: MigrationPlan,
        progress: (@Sendable (MigrationProgress) -> Void)?,
        afterStep: (MigrationStep, Generation) async throws(MigrationError) -> Void
    ) async throws(MigrationError) -> Generation {
        var current = generation
        for (k, step) in steps.enumerated() {
            let outcome = try await execute(step, on: current, number: k + 1, of: steps.count, plan: plan, progress: progress)
            if let error = outcome.validationError(step: step) { throw error }
            try await afterStep(step, outcome.generation)
            progress?(MigrationProgress(step: step.name, stepNumber: k + 1, stepCount: steps.count, phase: .finished,
                                        entity: nil, completed: outcome.generation.totalCount, total: outcome.generation.totalCount))
            current = outcome.generation
        }
        return current
    }
}

/// What one step produced.
struct StepOutcome: Sendable {
    var generation: Generation
    var problems: [ValidationProblem]
    var dropped: Int

    /// The error for the first validation problem, if any.
    func validationError(step: MigrationStep) -> MigrationError? {
        guard let first = problems.first else { return nil }
        let more = problems.count > 1 ? " (\(problems.count - 1) more problem(s) listed in `problems`)" : ""
        var error = MigrationError(.validationFailed, "\(first.problem.message)\(more); the store was not changed",
                                   step: step.name, entity: first.problem.object.entity, object: first.problem.object,
                                   key: first.problem.key, cause: first.cause)
        error.problems = problems.map(\.problem)
        return error
    }
}

/// A migrated object that breaks the new schema's rules, and the schema change behind it.
public struct ValidationProblem: Sendable, Hashable, CustomStringConvertible {
    /// The object and key at fault, and what is wrong.
    public var problem: Generation.IntegrityProblem
    /// The schema difference that concerns the key, if any.
    public var cause: SchemaChange?

    public var description: String { problem.description + (cause.map { " (caused by \($0))" } ?? "") }
}
