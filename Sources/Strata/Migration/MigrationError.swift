/// A migration that cannot be carried out, naming the step, the entity, the object, the key
/// and the schema difference that caused it — never just "the models do not match".
///
/// ```
/// validationFailed: step Songbook 2 → 3 (custom): Song/7.isrc: unique value "GBAYE0601498" is also used by Song/3;
/// the store was not changed (caused by Song.isrc: made unique (checked by validation))
/// ```
public struct MigrationError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. New codes may be added; match the ones you handle.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The plan itself is wrong: versions out of order, a step that does not join two
        /// consecutive schemas, a transform for an entity the source schema lacks.
        public static let invalidPlan = Code("invalidPlan")
        /// A step would need changes an inferred step cannot make (see ``MigrationError/changes``).
        public static let notInferable = Code("notInferable")
        /// The store's schema version is not one the plan knows, or differs from the plan's schema of that version.
        public static let unknownVersion = Code("unknownVersion")
        /// The store was written by a newer schema than the code's; open it read-only, or use newer code.
        public static let newerStore = Code("newerStore")
        /// The store needs a migration but was opened read-only.
        public static let needsMigration = Code("needsMigration")
        /// A custom transform or link threw, or used a key or entity that does not exist.
        public static let transformFailed = Code("transformFailed")
        /// The migrated objects break the new schema's rules (required values, limits,
        /// unique values, inverse relationships, delete rules).
        public static let validationFailed = Code("validationFailed")
        /// Reading or writing a store failed (see ``MigrationError/underlying``).
        public static let store = Code("store")
        /// The task running the migration was cancelled. The step under way was not written
        /// (the steps before it were: the message says which version the store is at);
        /// opening the store with the plan again runs the rest.
        public static let cancelled = Code("cancelled")
    }

    /// The kind of failure.
    public var code: Code
    /// What happened and what to do.
    public var message: String
    /// The step, as `Name n → m (inferred|custom)`.
    public var step: String?
    /// The entity concerned.
    public var entity: String?
    /// The object concerned.
    public var object: ObjectID?
    /// The attribute or relationship concerned.
    public var key: String?
    /// The schema difference that caused the failure, when one did.
    public var cause: SchemaChange?
    /// Every difference that cannot be inferred, for ``Code/notInferable``.
    public var changes: [SchemaChange] = []
    /// Every validation problem found (at most 100), for ``Code/validationFailed``.
    public var problems: [Generation.IntegrityProblem] = []
    /// The store error underneath, for ``Code/store``.
    public var underlying: StoreError?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, step: String? = nil, entity: String? = nil, object: ObjectID? = nil,
        key: String? = nil, cause: SchemaChange? = nil, underlying: StoreError? = nil
    ) {
        self.code = code
        self.message = message
        self.step = step
        self.entity = entity
        self.object = object
        self.key = key
        self.cause = cause
        self.underlying = underlying
    }

    /// The error for a migration whose task was cancelled during `step`.
    static func cancelled(step: String?) -> MigrationError {
        MigrationError(.cancelled, "the task was cancelled; this step was not written (open the store with the plan again to run it)",
                       step: step)
    }

    /// Wraps a store error.
    static func store(_ error: StoreError, step: String? = nil, _ doing: String) -> MigrationError {
        MigrationError(.store, "\(doing): \(error)", step: step, object: error.object, key: error.key, underlying: error)
    }

    public var description: String {
        var text = "\(code): "
        if let step { text += "step \(step): " }
        if let object {
            text += key.map { "\(object).\($0): " } ?? "\(object): "
        } else if let entity {
            text += key.map { "\(entity).\($0): " } ?? "\(entity): "
        }
        text += message
        // Not when the message already gives the change (as a `notInferable` one does).
        if let cause, !message.contains(cause.detail) { text += " (caused by \(cause))" }
        return text
    }
}

extension MigrationError {
    /// The error, naming the object a transform or link was running for (and its entity)
    /// where whoever threw it left them out — as an error of any other type is named.
    func naming(_ object: ObjectID, entity: String) -> MigrationError {
        var error = self
        if error.object == nil { error.object = object }
        if error.entity == nil { error.entity = entity }
        return error
    }
}
