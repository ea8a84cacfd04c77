/// How far a migration has got, reported while it runs.
///
/// ```swift
/// let store = try await Store.open(at: path, migratingWith: plan) { progress in
///     print(progress)   // Songbook 2 → 3 (custom), step 2 of 3: transforming Song 40000/120000
/// }
/// ```
public struct MigrationProgress: Sendable, Hashable, CustomStringConvertible {
    /// What the step is doing.
    public enum Phase: String, Sendable, Hashable {
        /// Reading the store to migrate.
        case reading
        /// Creating destination objects (inferred copies and custom transforms).
        case transforming
        /// Establishing relationships (the second pass).
        case linking
        /// Checking the result against the new schema.
        case validating
        /// Writing the step's checkpoint.
        case writing
        /// The step is done: its checkpoint is in place (or, in a dry run, checked).
        case finished
    }

    /// The step, as `Name n → m (inferred|custom)`.
    public var step: String
    /// The step's position, from 1.
    public var stepNumber: Int
    /// How many steps the migration runs.
    public var stepCount: Int
    /// What the step is doing.
    public var phase: Phase
    /// The entity being worked on, if any.
    public var entity: String?
    /// Objects of the phase done so far.
    public var completed: Int
    /// Objects the phase works on in all.
    public var total: Int

    public var description: String {
        var text = "\(step), step \(stepNumber) of \(stepCount): \(phase.rawValue)"
        if let entity { text += " \(entity)" }
        if total > 0 { text += " \(completed)/\(total)" }
        return text
    }
}
