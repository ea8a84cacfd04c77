/// A migrated object that breaks the new schema's rules, and the schema change behind it.
public struct ValidationProblem: Sendable, Hashable, CustomStringConvertible {
    /// The object and key at fault, and what is wrong.
    public var problem: Generation.IntegrityProblem
    /// The schema difference that concerns the key, if any.
    public var cause: SchemaChange?

    public var description: String { problem.description + (cause.map { " (caused by \($0))" } ?? "") }
}
