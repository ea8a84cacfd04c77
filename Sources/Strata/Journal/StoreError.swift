/// A failure of a store operation: what went wrong, where (file, offset, transaction),
/// what to do about it, and the underlying cause.
///
/// ```
/// corrupted: checksum mismatch in /data/songs.strata/journal-00000000000000000001.strata at offset 4107
/// (transaction 17); later records are intact, so this is damage, not an interrupted write.
/// Restore the store from a backup, or copy its readable prefix with Journal.salvage(...).
/// ```
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. New codes may be added; match the ones you handle.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// Another process (or another handle in this process) holds the store's write lock.
        public static let locked = Code("locked")
        /// A file is damaged before its tail: a checksum, framing or decoding failure that is
        /// not an interrupted write.
        public static let corrupted = Code("corrupted")
        /// An earlier write or sync failed; the handle refuses to acknowledge anything more.
        public static let poisoned = Code("poisoned")
        /// A file operation failed (see ``StoreError/underlying``).
        public static let io = Code("io")
        /// No store exists at the path.
        public static let notFound = Code("notFound")
        /// Something already exists where a store was to be created.
        public static let alreadyExists = Code("alreadyExists")
        /// The path is not a Strata store (or not a directory).
        public static let notAStore = Code("notAStore")
        /// The files were written by a newer format version than this library reads.
        public static let unsupportedFormatVersion = Code("unsupportedFormatVersion")
        /// The store was written with a different schema than the one given.
        public static let schemaMismatch = Code("schemaMismatch")
        /// A transaction handed to the journal does not fit the schema.
        public static let invalidTransaction = Code("invalidTransaction")
        /// The handle was closed.
        public static let closed = Code("closed")
        /// The store was opened read-only.
        public static let readOnly = Code("readOnly")
        /// Objects the save changed were changed by other transactions (see ``StoreError/conflicts``).
        public static let conflict = Code("conflict")
        /// A unique attribute's value is already used by another object.
        public static let uniqueViolation = Code("uniqueViolation")
        /// A relationship and its inverse disagree.
        public static let inverseViolation = Code("inverseViolation")
        /// A required value or relationship is missing.
        public static let missingValue = Code("missingValue")
        /// A value breaks its attribute's limits (min, max, length).
        public static let invalidValue = Code("invalidValue")
        /// A relationship refers to an object that does not exist.
        public static let danglingReference = Code("danglingReference")
        /// A delete rule forbids the deletion (`deny`) or requires more of it (`cascade`).
        public static let deleteRule = Code("deleteRule")
        /// The object does not exist.
        public static let objectNotFound = Code("objectNotFound")
        /// The object was deleted by another context; its last snapshot is all that is left.
        public static let objectDeleted = Code("objectDeleted")
        /// A predicate, sort or fetch request does not fit the schema (unknown key, a value of
        /// the wrong type, an operator the key cannot take).
        public static let invalidQuery = Code("invalidQuery")
        /// An object of one context was used in another (pass its ``ObjectID`` instead).
        public static let wrongContext = Code("wrongContext")
        /// A custom validation rule refused the object.
        public static let validationFailed = Code("validationFailed")
        /// The task running a long operation (an import, a compaction) was cancelled; what
        /// it reported committed stays committed, and nothing after that was.
        public static let cancelled = Code("cancelled")
    }

    /// The kind of failure.
    public var code: Code
    /// What happened and what to do.
    public var message: String
    /// The file or directory concerned.
    public var path: String?
    /// The byte offset in ``path`` where the problem was found.
    public var offset: Int64?
    /// The transaction concerned.
    public var transaction: UInt64?
    /// The file-system error underneath, if any.
    public var underlying: FileIOError?
    /// The object concerned.
    public var object: ObjectID?
    /// The property concerned.
    public var key: String?
    /// Every conflict found, for ``Code/conflict``.
    public var conflicts: [Conflict] = []
    /// Every problem a context's save found when it checked its changes, this one first,
    /// when it found more than one (`missingValue`, `invalidValue`, `validationFailed`,
    /// `uniqueViolation`, `deleteRule`, `danglingReference`); empty otherwise.
    public var validationProblems: [StoreError] = []
    /// Where in Strata the error was raised (`file:line`), for bug reports.
    public var location: String

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, path: String? = nil, offset: Int64? = nil, transaction: UInt64? = nil,
        underlying: FileIOError? = nil, object: ObjectID? = nil, key: String? = nil,
        fileID: StaticString = #fileID, line: UInt = #line
    ) {
        self.object = object
        self.key = key
        self.code = code
        self.message = message
        self.path = path
        self.offset = offset
        self.transaction = transaction
        self.underlying = underlying
        self.location = "\(fileID):\(line)"
    }

    public var description: String {
        var text = "\(code): \(message)"
        var place: [String] = []
        if let object { place.append(key.map { "\(object).\($0)" } ?? object.description) }
        if let path { place.append(path) }
        if let offset { place.append("offset \(offset)") }
        if let transaction { place.append("transaction \(transaction)") }
        if !place.isEmpty { text += " [" + place.joined(separator: ", ") + "]" }
        if let underlying { text += " (\(underlying))" }
        return text
    }

    /// Wraps a file-system error.
    static func io(_ error: FileIOError, _ doing: String, fileID: StaticString = #fileID, line: UInt = #line) -> StoreError {
        StoreError(.io, "\(doing) failed: \(error)", path: error.path, underlying: error, fileID: fileID, line: line)
    }
}
