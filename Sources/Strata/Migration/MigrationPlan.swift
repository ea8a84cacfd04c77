/// Every schema version of a model, oldest first, and the steps between them.
///
/// A store written with version *n* and opened with a plan whose newest version is *m > n*
/// runs every step from *n* to *m* in order (progressive migration). Each pair of
/// consecutive versions is joined by an inferred step unless a custom ``MigrationStep`` is
/// given for it. A plan whose steps need changes they cannot make is refused when created,
/// naming every such change.
///
/// ```swift
/// var split = MigrationStep(from: v2, to: v3)
/// split.transform("Song") { song, destination in ... }
/// let plan = try MigrationPlan(schemas: [v1, v2, v3], steps: [split])
/// let store = try await Store.open(at: path, migratingWith: plan)   // v1 or v2 stores become v3
/// ```
public struct MigrationPlan: Sendable {
    /// The schema versions, oldest first.
    public let schemas: [Schema]
    /// The steps, one between each pair of consecutive versions.
    public let steps: [MigrationStep]
    let awakening: AwakeFromInsert?
    /// The pages a custom step's bookkeeping keeps in memory (see ``PagedSlots``); tests
    /// make it small, so that every page is written out and read back.
    var cachedIndexPages = PagedSlots.defaultCachedPages

    /// Creates a plan.
    /// - Parameters:
    ///   - schemas: every version of the model, oldest first (versions strictly increasing).
    ///   - steps: custom steps; each must join two consecutive versions of `schemas`. The
    ///     other pairs are joined by inferred steps.
    ///   - modelClasses: model classes of the newest versions' entities; objects that custom
    ///     transforms create for their entities get the values their `awakeFromInsert()` sets
    ///     (see ``MigrationDestination``).
    /// - Throws: ``MigrationError/Code/invalidPlan`` for versions out of order or a step that
    ///   joins no consecutive pair; ``MigrationError/Code/notInferable`` listing every change
    ///   a step cannot make.
    public init(schemas: [Schema], steps custom: [MigrationStep] = [], modelClasses: [ManagedObject.Type] = []) throws(MigrationError) {
        guard !schemas.isEmpty else { throw MigrationError(.invalidPlan, "a plan needs at least one schema") }
        for (older, newer) in zip(schemas, schemas.dropFirst()) where older.version >= newer.version {
            throw MigrationError(.invalidPlan,
                                 "schema versions must increase: version \(newer.version) follows version \(older.version)")
        }
        var steps: [MigrationStep] = []
        var used = Set<Int>()
        for (older, newer) in zip(schemas, schemas.dropFirst()) {
            if let index = custom.firstIndex(where: { $0.source.version == older.version && $0.destination.version == newer.version }) {
                let step = custom[index]
                guard step.source.fingerprint == older.fingerprint, step.destination.fingerprint == newer.fingerprint else {
                    throw MigrationError(.invalidPlan,
                                         "the custom step \(step.name) was built with other schemas than the plan's versions \(older.version) and \(newer.version)",
                                         step: step.name)
                }
                steps.append(step)
                used.insert(index)
            } else {
                steps.append(MigrationStep(from: older, to: newer))
            }
        }
        if let stray = custom.indices.first(where: { !used.contains($0) }) {
            throw MigrationError(.invalidPlan,
                                 "the custom step \(custom[stray].name) does not join two consecutive versions of the plan (\(schemas.map(\.version)))",
                                 step: custom[stray].name)
        }
        for step in steps {
            let unhandled = step.unhandledChanges
            if let first = unhandled.first {
                let others = unhandled.count - 1
                let count = others == 0 ? "it cannot be inferred" : "it and \(others) more change\(others == 1 ? "" : "s") cannot be inferred"
                var error = MigrationError(.notInferable,
                                           "\(first.detail); \(count): write a custom transform for \(first.entity)",
                                           step: step.name, entity: first.entity, key: first.key, cause: first)
                error.changes = unhandled
                throw error
            }
        }
        self.schemas = schemas
        self.steps = steps
        self.awakening = modelClasses.isEmpty ? nil : AwakeFromInsert(modelClasses: modelClasses)
    }

    /// The newest schema: what stores are migrated to.
    public var latest: Schema { schemas[schemas.count - 1] }

    /// The steps that take a store written with `stored` to the newest version.
    /// - Throws: ``MigrationError/Code/newerStore`` when the store is newer than the plan;
    ///   ``MigrationError/Code/unknownVersion`` when the plan has no such version, or its
    ///   schema of that version differs from the store's.
    func steps(from stored: Schema, path: String) throws(MigrationError) -> ArraySlice<MigrationStep> {
        if stored.version > latest.version {
            throw MigrationError(.newerStore,
                                 "the store at \(path) was written with schema \"\(stored.name)\" version \(stored.version), newer than this code's newest version \(latest.version); open it read-only, or use code that knows version \(stored.version)")
        }
        guard let index = schemas.firstIndex(where: { $0.version == stored.version }) else {
            throw MigrationError(.unknownVersion,
                                 "the store at \(path) was written with schema \"\(stored.name)\" version \(stored.version), which the plan does not list (it has versions \(schemas.map(\.version))); add that version's schema to the plan")
        }
        guard schemas[index].fingerprint == stored.fingerprint else {
            let difference = InferredMapping(from: schemas[index], to: stored).changes.first
            throw MigrationError(.unknownVersion,
                                 "the store at \(path) records a different schema for version \(stored.version) than the plan (\(difference.map(\.description) ?? "options differ")); a schema that changes needs a new version number",
                                 entity: difference?.entity, key: difference?.key, cause: difference)
        }
        return steps[index...]
    }
}
