import Foundation

/// Imports JSON Lines (one `{"entity": ..., "values": {...}}` object per line) into a store,
/// committing ``ChangeSet``s directly: no contexts, no managed objects.
///
/// - Relationships name their destination by its unique attribute (or by `Entity/N` where
///   the destination has none; `{"id": "Entity/N"}` names any object by ID); a reference to
///   an object that appears later is resolved when it does, and one still unresolved when
///   the input ends is an error.
/// - A line whose entity has a unique attribute and names an existing key (in the store or
///   earlier in the input) updates that object: only the keys given change. A line may also
///   name its object by `"id": "Entity/N"`; a new object then keeps that number when the
///   store has not handed it out yet (so a dump imported into a fresh store keeps its IDs).
///   A line's `"id"` and key must not name two objects: a key held by an object other than
///   the one its `"id"` names (or by any object, when that `"id"` names none) is an error.
///   A reference by ID to an object not seen yet waits for the line that gives that `"id"`.
/// - Every relationship's inverse is kept in step, as a context would.
/// - Without a batch size the whole input is one transaction; with one, a transaction is
///   committed every `batchSize` lines, or later while a line of the batch still waits for
///   an object further on: every line a commit counts is applied in full. Each commit is
///   durable when reported.
/// - Bad input throws ``ImportError`` naming the line; nothing after the last reported
///   commit is committed, and the line named is never in a reported commit.
/// - Cancelling the task that runs the import stops it at the next chunk of lines or
///   commit: it throws ``ImportError`` with a ``StoreError/Code/cancelled`` store error, and
///   again only the reported commits are in the store.
///
/// ```swift
/// let reader = try JSONLinesReader(path: "songs.jsonl")
/// var importer = JSONLinesImporter(store: store, batchSize: 5000)
/// let summary = try await importer.run(reader) { event in print(event) }
/// ```
public struct JSONLinesImporter {
    /// What an import reports while it runs.
    public enum Event: Sendable, Hashable {
        /// A transaction is durable; `lines` is the running total of lines applied.
        case committed(transaction: UInt64, lines: Int)
        /// Lines read so far (every few thousand lines), for progress bars.
        case read(lines: Int, bytes: Int64)
    }

    /// What a finished import did.
    public struct Summary: Sendable, Hashable {
        /// Lines read (blank lines included).
        public var lines: Int
        /// Objects created.
        public var inserted: Int
        /// Existing objects changed.
        public var updated: Int
        /// Transactions committed.
        public var transactions: Int
        /// The last transaction committed (the store's last if none was).
        public var lastTransaction: UInt64
    }

    /// A line that cannot be imported, or input that cannot be read.
    public struct ImportError: Error, Sendable, CustomStringConvertible {
        /// The 1-based input line at fault (0 when no line is).
        public var line: Int
        /// What is wrong, naming the entity, key or value.
        public var message: String
        /// The store's error, when the store refused a commit.
        public var storeError: StoreError?

        public var description: String { line > 0 ? "line \(line): \(message)" : message }
    }

    /// The store written.
    public let store: Store
    /// Lines per transaction; `nil` for one transaction.
    public let batchSize: Int?
    /// The author recorded in the transactions.
    public let author: String

    private let schema: Schema
    private let info: [EntityInfo]
    private var head: Generation
    private var staged: [Staged] = []
    /// Staged objects by ID, for those not in `dense`.
    private var stagedIndex: [ObjectID: Int] = [:]
    /// Staged objects by object number, per entity, for the dense run of numbers new objects
    /// get (slot `number - denseBase[entity]`; -1 when none): an array read, not a hash.
    private var dense: [[Int32]]
    private var denseBase: [UInt64]
    /// New objects of the current batch by unique value, per entity.
    private var keyIndex: [[Value: ObjectID]]
    /// References waiting for their destination, per destination entity (stale ones too).
    private var pending: [[Reference: [PendingReference]]]
    private var pendingCount = 0
    /// For each relationship of an object that has had a reference wait: how often a line
    /// has set it since (directly, or a to-one through its inverse), and how many of its
    /// references still stand. A waiting reference made before the latest setting is stale
    /// (a later line replaced the value) and is dropped instead of linked.
    private var settings: [SourceKey: Setting] = [:]
    /// The waiting references that still stand: while any does, its line is not complete
    /// and the batch is not committed.
    private var standingCount = 0
    /// Per entity, numbers handed out but kept for the line that names them by `"id"`: a
    /// reference waited for the ID when an object without one was created.
    private var held: [Set<UInt64>]
    /// The numbers handed out to lines not committed yet, in order: taken back if the
    /// import fails (see ``Store/takeBack(_:)``).
    private var handedOut = Store.HandedOutNumbers()
    /// The members of long to-many lists of the current batch (see `contains`).
    private var members: [SourceKey: Set<ObjectID>] = [:]
    /// For to-many lists whose line named members not seen yet: each member's place in the
    /// line, so that one arriving later goes where the line put it (objects the line did
    /// not name, joining through their inverse, go last).
    private var ranks: [SourceKey: [ObjectID: Int]] = [:]
    /// With a batch size: the line count at which a batch held back for a missing required
    /// relationship (which a later line may give through its inverse) is looked at again.
    private var recheckAt = 0
    private var summary = Summary(lines: 0, inserted: 0, updated: 0, transactions: 0, lastTransaction: 0)
    private var linesInBatch = 0
    /// The line being applied.
    private var currentLine = 0
    /// The lines the reported commits hold (every line up to this one).
    private var committedLines = 0

    /// Creates an importer writing to `store` (open for writing).
    public init(store: Store, batchSize: Int? = nil, author: String = "import") {
        precondition(batchSize.map { $0 > 0 } ?? true, "JSONLinesImporter: batchSize must be positive")
        self.store = store
        self.batchSize = batchSize
        self.author = author
        schema = store.schema
        info = schema.entities.map { EntityInfo($0, schema: store.schema) }
        head = store.currentGeneration
        keyIndex = schema.entities.map { _ in [:] }
        held = schema.entities.map { _ in [] }
        pending = schema.entities.map { _ in [:] }
        dense = schema.entities.map { _ in [] }
        denseBase = store.numbers.withLock { $0.allocated.map { $0 + 1 } }
        summary.lastTransaction = head.transaction
    }

    /// Reads every line of `reader`, committing as it goes.
    ///
    /// An import that fails gives back to the store the object numbers its uncommitted
    /// lines took where nothing was handed out after them, so that the lines imported again
    /// through the same store (once fixed) keep the `"id"`s they give.
    /// The import takes the reader for good (`sending`): it reads ahead on another thread,
    /// and a read it started when the import stopped early — a cancelled import waiting on a
    /// quiet pipe — goes on until its input gives it lines or ends.
    /// - Parameter report: called after every durable commit and every few thousand lines.
    public mutating func run(_ reader: sending JSONLinesReader, report: (Event) -> Void = { _ in }) async throws(ImportError) -> Summary {
        do {
            return try await runLines(reader, report: report)
        } catch {
            store.takeBack(handedOut)
            handedOut = Store.HandedOutNumbers()
            throw error
        }
    }

    private mutating func runLines(_ reader: JSONLinesReader, report: (Event) -> Void) async throws(ImportError) -> Summary {
        // Room for a batch (or, for one transaction, for a file of ~100-byte lines) up front,
        // rather than growing the tables by rehashing.
        let expected = min(batchSize ?? Int(min(reader.size ?? 0, 1 << 32) / 100), 1 << 22)
        stagedIndex.reserveCapacity(expected)
        staged.reserveCapacity(expected)
        for entity in keyIndex.indices where info[entity].unique != nil { keyIndex[entity].reserveCapacity(expected / keyIndex.count) }
        // The next lines are read and parsed on another thread while these are applied.
        let ahead = LinesAhead(reader)
        ahead.start()
        var bytesRead: Int64 = 0
        while true {
            try checkCancellation()
            guard let chunk = await ahead.take() else {
                try checkCancellation()
                preconditionFailure("a chunk is missing only when the import's task is cancelled")
            }
            if let failure = chunk.failure { throw ImportError(line: 0, message: "cannot read \(failure)") }
            if !chunk.finished { ahead.start() }
            bytesRead = chunk.bytesRead
            for line in chunk.lines {
                if let parsed = line.json { try apply(parsed, line: line.number) }
                summary.lines = line.number
                linesInBatch += 1
                if summary.lines & 4095 == 0 { report(.read(lines: summary.lines, bytes: bytesRead)) }
                if let batchSize, linesInBatch >= batchSize, linesInBatch >= recheckAt {
                    if try readyToCommit(final: false) {
                        try checkCancellation()
                        try await commit(report: report)
                    } else if standingCount == 0 {
                        // A required relationship is missing; a later line may still give it
                        // through its inverse: look again a batch later, not at every line.
                        recheckAt = linesInBatch + batchSize
                    }
                }
            }
            if chunk.finished { break }
        }
        report(.read(lines: summary.lines, bytes: bytesRead))
        // The first line's first: its relationships in storage order, a list's members in
        // the line's order (not the pending table's hash order, which changes from run to run).
        if let first = standingReferences.min(by: { ($0.line, $0.property, $0.rank ?? 0) < ($1.line, $1.property, $1.rank ?? 0) }) {
            let source = schema.entities[first.source.entityIndex(in: schema)]
            let relationship = source.property(at: first.property).name
            let destination = info[first.destination]
            var advice = ""
            if case .id(let id) = first.reference {
                let highest = store.numbers.withLock { $0.allocated[first.destination] }
                if canCreate(id, entity: first.destination) {
                    advice = " (give the line that creates it \"id\": \"\(id)\")"
                } else if id.number > highest {
                    advice = " (\(Self.numbersGiven(highest: ObjectID(entityName: schema.layout.entityNames[first.destination], number: highest))), so no line can create it: refer to an existing \(destination.name))"
                } else {
                    advice = " (the store has handed out that number already, so no line can create it: refer to an existing \(destination.name))"
                }
            }
            throw ImportError(line: first.line, message: "\(source.name).\(relationship): no \(destination.name) with \(first.reference.describe(destination)); the reference is still unresolved at the end of the input" + advice)
        }
        _ = try readyToCommit(final: true)
        try checkCancellation()
        try await commit(report: report)
        return summary
    }

    /// Throws a `cancelled` error if the task running the import was cancelled.
    /// A new ID for a line, recorded to be taken back if the import fails.
    private mutating func allocateObjectID(entity: Int) -> ObjectID {
        let id = store.allocateObjectID(entity: entity)
        handedOut.record(entity: entity, number: id.number, previous: id.number - 1)
        return id
    }

    private func checkCancellation() throws(ImportError) {
        guard Task.isCancelled else { return }
        let kept = summary.transactions == 0
            ? "nothing was committed"
            : "lines 1–\(committedLines) are committed (\(summary.transactions) transaction\(summary.transactions == 1 ? "" : "s") through \(summary.lastTransaction)) and nothing after them"
        let message = "the import was cancelled after line \(summary.lines): \(kept)"
        throw ImportError(line: 0, message: message, storeError: StoreError(.cancelled, message))
    }

    // MARK: - Lines

    private mutating func apply(_ parsed: Result<JSON, JSONParseError>, line: Int) throws(ImportError) {
        func fail(_ message: String) -> ImportError { ImportError(line: line, message: message) }
        currentLine = line
        let json: JSON
        switch parsed {
        case .success(let value): json = value
        case .failure(let error): throw fail("not valid JSON: \(error)")
        }
        guard case .object(let pairs) = json else { throw fail("expected an object {\"entity\": ..., \"values\": {...}}, got \(json.kindName)") }
        var entityName: String?, values: [(key: String, value: JSON)]?, idText: String?
        for (key, value) in pairs {
            switch key {
            case "entity":
                guard case .string(let s) = value else { throw fail("\"entity\" must be a string, not \(value.kindName)") }
                entityName = s
            case "values":
                guard case .object(let v) = value else { throw fail("\"values\" must be an object, not \(value.kindName)") }
                values = v
            case "id":
                guard case .string(let s) = value else { throw fail("\"id\" must be a string such as \"Artist/1\", not \(value.kindName)") }
                idText = s
            default:
                throw fail("unknown key \"\(key.excerpt)\" (a line has \"entity\", \"values\" and optionally \"id\")")
            }
        }
        guard let entityName else { throw fail("the line has no \"entity\"") }
        guard let entity = schema.entityIndex(named: entityName) else {
            throw fail("unknown entity \"\(entityName.excerpt)\"; the entities are \(schema.entities.map(\.name).joined(separator: ", "))")
        }
        let e = info[entity]
        let given = values ?? []
        // Resolve every key before changing anything.
        var properties: [(index: Int, value: JSON)] = []
        properties.reserveCapacity(given.count)
        var nonASCII = false
        for (key, value) in given {
            guard let index = e.index(of: key) else {
                throw fail("\(e.name) has no key \"\(key.excerpt)\"; its keys are \(e.entity.propertyNames.joined(separator: ", "))")
            }
            if !nonASCII, key.utf8.contains(where: { $0 >= 0x80 }) { nonASCII = true }
            properties.append((index, value))
        }
        if nonASCII {
            // JSON's duplicate check compares keys by their bytes, names compare by canonical
            // equivalence: two spellings ("é" composed and decomposed) may name one property.
            var seen: [Int: String] = [:]
            for (offset, property) in properties.enumerated() {
                if let first = seen.updateValue(given[offset].key, forKey: property.index) {
                    throw fail("duplicate key: \"\(first.excerpt)\" and \"\(given[offset].key.excerpt)\" both name \(e.name).\(e.propertyNames[property.index])")
                }
            }
        }
        var explicitID: ObjectID?
        if let idText {
            guard let id = ObjectID(parsing: idText, of: schema.layout.entityNames[entity]) else {
                throw fail("\"id\" \"\(idText.excerpt)\" is not an ID of \(e.name) such as \"\(e.name)/1\"")
            }
            explicitID = id
        }
        var key: Value?
        if let u = e.unique, let given = properties.first(where: { $0.index == u }) {
            let converted = try convert(given.value, attribute: u, of: e, line: line)
            if !converted.isNull { key = converted }
        }
        // The object: found by ID, then by unique key, or new.
        var found: ObjectID?
        if let explicitID, stagedObject(explicitID, entity: entity) != nil || head.contains(explicitID) { found = explicitID }
        if let key, let holder = lookup(key, entity: entity) {
            if let found, found != holder {
                throw fail("\(e.name) \"\(e.entity.attributes[e.unique!].name)\" = \(key) belongs to \(holder), not \(found)")
            }
            if let explicitID, found == nil {
                // The line names a new object and an existing one's key: which one it means
                // is not for the importer to guess.
                throw fail("\(e.name) \"\(e.entity.attributes[e.unique!].name)\" = \(key) belongs to \(holder), not \(explicitID), which does not exist: give \(holder)'s \"id\", or leave \"id\" out to update the object holding the key")
            }
            found = holder
        }
        let object: Int
        let isNew: Bool
        if let found {
            object = touch(found)
            isNew = false
        } else {
            var id: ObjectID
            if let explicitID {
                let highest = store.numbers.withLock { $0.allocated[entity] }
                guard held[entity].contains(explicitID.number) || Self.mayGive(explicitID.number, highest: highest) else {
                    throw fail("\"id\" \(explicitID) cannot be given to a new object: \(Self.numbersGiven(highest: ObjectID(entityName: schema.layout.entityNames[entity], number: highest)))")
                }
                if held[entity].remove(explicitID.number) != nil {
                    // Handed out already (and recorded) while a reference waited for it.
                } else if let previous = store.reserveObjectNumber(explicitID.number, entity: entity) {
                    handedOut.record(entity: entity, number: explicitID.number, previous: previous)
                } else {
                    throw fail("\"id\" \(explicitID) cannot be given to a new object: the store has handed out that number already, or numbers after it (they only go up, and a number passed is never given): give new objects increasing numbers, or leave \"id\" out")
                }
                id = explicitID
            } else {
                id = allocateObjectID(entity: entity)
                // An ID a reference waits for is the one a later line gives by "id": an object
                // without one never takes it (it would be linked by the accident of its number).
                while isAwaited(id, entity: entity) {
                    held[entity].insert(id.number)
                    id = allocateObjectID(entity: entity)
                }
            }
            object = staged.count
            register(id, entity: entity, at: object)
            staged.append(Staged(id: id, entity: entity, values: e.initialValues, base: nil, line: line))
            var newKey = key
            if newKey == nil, let u = e.unique, !e.initialValues[u].isNull, !properties.contains(where: { $0.index == u }),
               lookup(e.initialValues[u], entity: entity) == nil {
                // No key given, and the attribute has a default: the object holds that key as
                // if the line gave it, for later lines and for references waiting for it.
                newKey = e.initialValues[u]
            }
            if let newKey {
                keyIndex[entity][newKey] = id
                // Before the references waiting for it are linked: a to-many list waiting for
                // several objects orders them by their keys, this one's included.
                if let u = e.unique { staged[object].values[u] = newKey }
            }
            isNew = true
            if explicitID != nil { try resolvePending(.id(id), entity: entity, target: object) }
            if let newKey { try resolvePending(.key(newKey), entity: entity, target: object) }
        }
        staged[object].line = line
        for (index, value) in properties {
            if index < e.attributeCount {
                if index == e.unique, !isNew {
                    // Found by its key: the key stays. Found by "id": the line may give it a
                    // new key (no other object holds it: checked above).
                    let current = staged[object].values[index]
                    let given = key ?? .null
                    guard given != current else { continue }
                    if given.isNull, !e.entity.attributes[index].isOptional {
                        throw fail("\(e.name).\(e.entity.attributes[index].name): a value is required (the attribute is not optional)")
                    }
                    staged[object].values[index] = given
                    if !current.isNull { keyIndex[entity][current] = Self.releasedKey }
                    if let key {
                        keyIndex[entity][key] = staged[object].id
                        try resolvePending(.key(key), entity: entity, target: object)
                    }
                    continue
                }
                staged[object].values[index] = try convert(value, attribute: index, of: e, line: line)
            } else {
                try setRelationship(object, index, value, line: line)
            }
        }
        if isNew {
            for index in 0..<e.attributeCount where staged[object].values[index].isNull && !e.entity.attributes[index].isOptional {
                throw fail("\(e.name).\(e.entity.attributes[index].name): a value is required (the attribute is not optional and has no default)")
            }
        }
    }

    private func convert(_ json: JSON, attribute index: Int, of e: EntityInfo, line: Int) throws(ImportError) -> Value {
        let attribute = e.entity.attributes[index]
        let value: Value
        switch Value.fromJSON(json, as: attribute.type) {
        case .success(let v): value = v
        case .failure(let error): throw ImportError(line: line, message: "\(e.name).\(attribute.name): \(error.reason)")
        }
        if let problem = AttributeCheck.problem(with: value, for: attribute) {
            throw ImportError(line: line, message: "\(e.name).\(attribute.name): \(problem)")
        }
        return value
    }

    /// The object (existing or new in this import) of an entity with a unique value.
    /// Marks in ``keyIndex`` a key its holder gave up in this batch (a line with its
    /// `"id"` gave it another): no object holds it until a line claims it.
    private static let releasedKey = ObjectID(entity: "", number: 0)

    private func lookup(_ key: Value, entity: Int) -> ObjectID? {
        if let id = keyIndex[entity][key] { return id.number == 0 ? nil : id }
        guard let number = head.uniqueIndexes[entity]?[key] else { return nil }
        return ObjectID(entityName: head.schema.layout.entityNames[entity], number: number)
    }

    /// The largest number a line may give a new object by `"id"` anywhere: a store counts its
    /// numbers in 64 bits, and one taken near the top would leave it no room to number the
    /// objects after it.
    static let largestNumber = UInt64(Int64.max)
    /// How far past its entity's highest number handed out a line may number a new object
    /// above ``largestNumber``.
    static let largestStep: UInt64 = 1 << 32

    /// Whether a line may give a new object `number` by `"id"`, its entity's highest number
    /// handed out being `highest`: up to ``largestNumber``, and above it at most
    /// ``largestStep`` past `highest` — as a dump of a store numbered past ``largestNumber``
    /// does (its numbers were handed out one after another, with gaps only where numbers
    /// went unused), while no input can take the numbers near the end of the count in a few
    /// lines.
    static func mayGive(_ number: UInt64, highest: UInt64) -> Bool {
        number <= largestNumber || number > highest && number - highest <= largestStep && number <= UInt64.max - largestStep
    }

    /// The rule of ``mayGive(_:highest:)``, for messages (`highest` is the entity's highest
    /// number handed out).
    static func numbersGiven(highest: ObjectID) -> String {
        "a line may give a new object a number up to \(largestNumber), and above that at most \(largestStep) past the highest the store has handed out (\(highest))"
    }

    /// The staged copy of an object, loading it from the store the first time.
    private mutating func touch(_ id: ObjectID) -> Int {
        let entity = schema.entityIndex(of: id)!
        if let index = stagedObject(id, entity: entity) { return index }
        let row = head.tables[entity][id.number]!
        let index = staged.count
        staged.append(Staged(id: id, entity: entity, values: row.values, base: row, line: 0))
        register(id, entity: entity, at: index)
        return index
    }

    private func exists(_ id: ObjectID) -> Bool {
        guard let entity = schema.entityIndex(of: id) else { return false }
        return stagedObject(id, entity: entity) != nil || head.contains(id)
    }

    /// Where an object is staged in this batch, if it is.
    @inline(__always)
    private func stagedObject(_ id: ObjectID, entity: Int) -> Int? {
        let number = id.number, base = denseBase[entity]
        // Compared as 64-bit numbers: one far past the table's reach may exceed Int.max.
        if number >= base, number - base < UInt64(dense[entity].count) {
            let index = dense[entity][Int(number - base)]
            if index >= 0 { return Int(index) }
            // An object registered past the table's reach before it grew over the slot.
        }
        return stagedIndex.isEmpty ? nil : stagedIndex[id]
    }

    private mutating func register(_ id: ObjectID, entity: Int, at index: Int) {
        let number = id.number, base = denseBase[entity]
        if number >= base, number - base <= UInt64(dense[entity].count) + 4096 {
            let slot = Int(number - base)
            if slot >= dense[entity].count { dense[entity].append(contentsOf: repeatElement(-1, count: slot + 1 - dense[entity].count)) }
            dense[entity][slot] = Int32(index)
        } else {
            stagedIndex[id] = index
        }
    }

    // MARK: - Relationships

    private mutating func setRelationship(_ object: Int, _ index: Int, _ json: JSON, line: Int) throws(ImportError) {
        replaced(staged[object].id, index)
        let e = info[staged[object].entity]
        let r = e.relationships[index - e.attributeCount]
        // For error messages only: built when one is (a line sets relationships by the thousand).
        var name: String { "\(e.name).\(e.propertyNames[index])" }
        let destination = info[r.destination]
        func reference(_ json: JSON) throws(ImportError) -> Reference {
            // {"id": "Entity/N"} names an object by ID whatever its entity's key: no key reads
            // the same (a dump writes it for an object without a key where the key is a string).
            if case .object(let pairs) = json {
                guard pairs.count == 1, pairs[0].key == "id", case .string(let text) = pairs[0].value,
                      let id = ObjectID(parsing: text, of: schema.layout.entityNames[r.destination]) else {
                    throw ImportError(line: line, message: "\(name): a reference by ID is {\"id\": \"\(destination.name)/1\"}, not \(json.text.excerpt)")
                }
                return .id(id)
            }
            if let u = destination.unique {
                // A dump names an object whose (optional) key is null by its ID, as "Entity/N"
                // where no key reads the same: for a key that is neither text nor data (whose
                // base64 may read "File/123"), that is the ID.
                if ![.string, .data].contains(destination.entity.attributes[u].type), case .string(let text) = json,
                   let id = ObjectID(parsing: text, of: schema.layout.entityNames[r.destination]) {
                    return .id(id)
                }
                switch Value.fromJSON(json, as: destination.entity.attributes[u].type) {
                case .success(let v) where !v.isNull: return .key(v)
                case .success: break
                case .failure(let error):
                    throw ImportError(line: line, message: "\(name): a reference to \(destination.name) by \"\(destination.entity.attributes[u].name)\": \(error.reason)")
                }
            }
            guard case .string(let text) = json, let id = ObjectID(parsing: text, of: schema.layout.entityNames[r.destination]) else {
                throw ImportError(line: line, message: destination.unique == nil
                    ? "\(name): \(destination.name) has no unique attribute, so a reference is an ID such as \"\(destination.name)/1\", not \(json.text.excerpt)"
                    : "\(name): \(json.text.excerpt) does not name a \(destination.name)")
            }
            return .id(id)
        }
        func resolve(_ reference: Reference) -> ObjectID? {
            switch reference {
            case .key(let key): lookup(key, entity: r.destination)
            case .id(let id): exists(id) ? id : nil
            }
        }
        if !r.toMany {
            if case .null = json {
                setToOne(object, index, nil)
                return
            }
            if case .array = json { throw ImportError(line: line, message: "\(name) is a to-one relationship: give one key or null, not an array") }
            let ref = try reference(json)
            if let target = resolve(ref) {
                setToOne(object, index, target)
            } else {
                setToOne(object, index, nil)
                addPending(ref, destination: r.destination, source: staged[object].id, property: index, line: line, rank: nil)
            }
            return
        }
        guard case .array(let items) = json else {
            if case .null = json {
                setToMany(object, index, [])
                return
            }
            throw ImportError(line: line, message: "\(name) is a to-many relationship: give an array of keys, not \(json.kindName)")
        }
        var references: [Reference] = []
        references.reserveCapacity(items.count)
        var seen = Set<Reference>()
        for item in items {
            let ref = try reference(item)
            guard seen.insert(ref).inserted else { throw ImportError(line: line, message: "\(name) lists \(item.text.excerpt) twice") }
            references.append(ref)
        }
        let resolved = references.map(resolve)
        let waits = resolved.contains(nil)
        // Keys and IDs in one list may name one object twice (distinct references cannot
        // otherwise): a list holds it once, so that is refused like a key given twice.
        let mixed = references.contains { if case .key = $0 { true } else { false } }
            && references.contains { if case .id = $0 { true } else { false } }
        var named = Set<ObjectID>()
        var targets: [ObjectID] = []
        targets.reserveCapacity(references.count)
        var lineRanks: [ObjectID: Int] = [:]
        for (rank, ref) in references.enumerated() {
            if let target = resolved[rank] {
                if mixed, !named.insert(target).inserted {
                    throw ImportError(line: line, message: "\(name) lists \(target) twice (\(items[rank].text.excerpt) names it again)")
                }
                targets.append(target)
                if waits { lineRanks[target] = rank }
            } else {
                addPending(ref, destination: r.destination, source: staged[object].id, property: index, line: line, rank: rank)
            }
        }
        setToMany(object, index, targets)
        let key = SourceKey(object: staged[object].id, property: index)
        if waits { ranks[key] = lineRanks } else if !ranks.isEmpty { ranks.removeValue(forKey: key) }
    }

    private mutating func addPending(_ reference: Reference, destination: Int, source: ObjectID, property: Int, line: Int, rank: Int?) {
        let key = SourceKey(object: source, property: property)
        var setting = settings[key] ?? Setting()
        setting.standing += 1
        settings[key] = setting
        pending[destination][reference, default: []].append(
            PendingReference(source: source, property: property, line: line, destination: destination, reference: reference, rank: rank,
                             setting: setting.count))
        pendingCount += 1
        standingCount += 1
    }

    /// Counts a setting of a relationship: references it had waiting go stale.
    private mutating func replaced(_ object: ObjectID, _ property: Int) {
        // With no reference waiting, none can go stale: no need to count.
        guard pendingCount > 0 else { return }
        let key = SourceKey(object: object, property: property)
        guard var setting = settings[key] else { return }
        standingCount -= setting.standing
        setting.count += 1
        setting.standing = 0
        settings[key] = setting
    }

    /// Whether a waiting reference still stands (no later line set its relationship).
    private func isCurrent(_ reference: PendingReference) -> Bool {
        settings[SourceKey(object: reference.source, property: reference.property)]?.count == reference.setting
    }

    /// Whether a reference that still stands waits for this ID.
    private func isAwaited(_ id: ObjectID, entity: Int) -> Bool {
        guard standingCount > 0, let waiting = pending[entity][.id(id)] else { return false }
        return waiting.contains(where: isCurrent)
    }

    /// Whether a line may still create an object with this ID (by `"id"`).
    private func canCreate(_ id: ObjectID, entity: Int) -> Bool {
        held[entity].contains(id.number) || store.numbers.withLock { Self.mayGive(id.number, highest: $0.allocated[entity]) && id.number > $0.allocated[entity] }
    }

    /// The waiting references that still stand.
    private var standingReferences: [PendingReference] {
        pending.flatMap { $0.values.joined() }.filter(isCurrent)
    }

    /// Links the references that waited for a new object (or a key an object takes). A list
    /// that already holds the object by another of its line's references named it twice
    /// (by key and by ID): refused, as when the object was there at the line.
    private mutating func resolvePending(_ reference: Reference, entity: Int, target: Int) throws(ImportError) {
        guard pendingCount > 0, let waiting = pending[entity].removeValue(forKey: reference) else { return }
        pendingCount -= waiting.count
        defer {
            if pendingCount == 0 {
                settings.removeAll()
                ranks.removeAll()
            }
        }
        let targetID = staged[target].id
        for reference in waiting where isCurrent(reference) {
            if reference.rank != nil, ranks[SourceKey(object: reference.source, property: reference.property)]?[targetID] != nil {
                let source = schema.entities[reference.source.entityIndex(in: schema)]
                throw ImportError(line: reference.line, message: "\(source.name).\(source.property(at: reference.property).name) lists \(targetID) twice "
                                  + "(\(reference.reference.describe(info[entity])) names it again)")
            }
            settings[SourceKey(object: reference.source, property: reference.property)]?.standing -= 1
            standingCount -= 1
            let source = touch(reference.source)
            link(source, reference.property, targetID)
            if let rank = reference.rank { place(targetID, in: source, reference.property, rank: rank) }
        }
    }

    /// Moves a member that joined a to-many list after its line (it was appended) to the
    /// place the line gave it: the list is in the order of the members' places, members the
    /// line did not name last. A binary search, and usually no move at all (a dump lists a
    /// relationship's members in the order their lines come).
    private mutating func place(_ member: ObjectID, in object: Int, _ index: Int, rank: Int) {
        let key = SourceKey(object: staged[object].id, property: index)
        ranks[key, default: [:]][member] = rank
        guard case .objects(var ids) = staged[object].values[index], ids.count > 1, let places = ranks[key],
              let at = ids.last == member ? ids.count - 1 : ids.lastIndex(of: member)  // already there through its inverse
        else { return }
        staged[object].values[index] = .null
        ids.remove(at: at)
        func place(_ i: Int) -> Int { places[ids[i]] ?? Int.max }
        var low = 0, high = ids.count
        while low < high {
            let mid = (low + high) / 2
            if place(mid) <= rank { low = mid + 1 } else { high = mid }
        }
        ids.insert(member, at: low)
        staged[object].values[index] = .objects(ids)
    }

    private mutating func setToOne(_ object: Int, _ index: Int, _ target: ObjectID?) {
        let old = staged[object].values[index].referencedObjects.first
        if old == target { return }
        if let old { unlink(object, index, old) }
        if let target { link(object, index, target) }
    }

    private mutating func setToMany(_ object: Int, _ index: Int, _ targets: [ObjectID]) {
        let old = staged[object].values[index].referencedObjects
        if old == targets { return }
        let keep = Set(targets)
        for target in old where !keep.contains(target) { unlink(object, index, target) }
        for target in targets { link(object, index, target) }
        // In the line's order (references still to come are added when their objects are).
        staged[object].values[index] = .objects(targets)
        if !members.isEmpty { members.removeValue(forKey: SourceKey(object: staged[object].id, property: index)) }
    }

    /// Makes `object`'s relationship include `target`, and `target`'s inverse include `object`.
    private mutating func link(_ object: Int, _ index: Int, _ target: ObjectID) {
        let e = info[staged[object].entity]
        let r = e.relationships[index - e.attributeCount]
        let id = staged[object].id
        if r.toMany {
            guard !contains(target, in: object, index) else { return }
            append(target, to: object, index)
        } else {
            if case .object(let old) = staged[object].values[index] {
                if old == target { return }
                remove(id, from: touch(old), r.inverse)
            }
            staged[object].values[index] = .object(target)
        }
        let other = touch(target)
        if r.inverseToMany {
            if !contains(id, in: other, r.inverse) { append(id, to: other, r.inverse) }
        } else {
            if case .object(let previous) = staged[other].values[r.inverse], previous != id {
                remove(target, from: touch(previous), index)
            }
            staged[other].values[r.inverse] = .object(id)
            // Set through its inverse: a reference the relationship had waiting is replaced,
            // as by a line that sets it (a to-many one only gains a member).
            replaced(target, r.inverse)
        }
    }

    private mutating func unlink(_ object: Int, _ index: Int, _ target: ObjectID) {
        let e = info[staged[object].entity]
        let r = e.relationships[index - e.attributeCount]
        remove(target, from: object, index)
        remove(staged[object].id, from: touch(target), r.inverse)
    }

    /// Appends to a to-many list in place (the slot is emptied first, so the list is not copied).
    private mutating func append(_ id: ObjectID, to object: Int, _ index: Int) {
        guard case .objects(var ids) = staged[object].values[index] else { return }
        staged[object].values[index] = .null
        ids.append(id)
        staged[object].values[index] = .objects(ids)
        if !members.isEmpty { members[SourceKey(object: staged[object].id, property: index)]?.insert(id) }
    }

    /// Whether a to-many list holds `id`: long lists keep a set of their members, so that
    /// many objects joining one list (20,000 tracks of an album) do not scan it each time.
    private mutating func contains(_ id: ObjectID, in object: Int, _ index: Int) -> Bool {
        guard case .objects(let ids) = staged[object].values[index], ids.count > 32 else {
            return staged[object].values[index].refers(to: id)
        }
        let key = SourceKey(object: staged[object].id, property: index)
        if let set = members[key] { return set.contains(id) }
        let set = Set(ids)
        members[key] = set
        return set.contains(id)
    }

    /// Takes `id` out of one side of a relationship.
    private mutating func remove(_ id: ObjectID, from object: Int, _ index: Int) {
        staged[object].emptied[index] = currentLine
        switch staged[object].values[index] {
        case .object(let current) where current == id: staged[object].values[index] = .null
        case .objects(var ids):
            if let at = ids.firstIndex(of: id) {
                staged[object].values[index] = .null
                ids.remove(at: at)
                staged[object].values[index] = .objects(ids)
                if !members.isEmpty { members[SourceKey(object: staged[object].id, property: index)]?.remove(id) }
            }
        default: break
        }
    }

    // MARK: - Commits

    /// Whether the staged objects can be committed now: no line of the batch waits for an
    /// object further on (then not yet: a commit would hold that line in part, with the
    /// relationship empty, whether or not the object ever appears), and every object has its
    /// required relationships.
    /// Before the end of the input (`final` false) a missing required relationship holds
    /// the batch instead of failing: a later line may give it through its inverse.
    private func readyToCommit(final: Bool) throws(ImportError) -> Bool {
        guard standingCount == 0 else { return false }
        // Every staged object: a line may have taken the only target of an existing
        // object's required relationship (moving it to another owner).
        for object in staged {
            let e = info[object.entity]
            for (offset, r) in e.relationships.enumerated() where !r.optional {
                let index = e.attributeCount + offset
                guard object.values[index].referencedObjects.isEmpty else { continue }
                guard final else { return false }
                throw ImportError(line: max(object.line, object.emptied[index] ?? 0),
                                  message: "\(e.name).\(e.propertyNames[index]): the relationship is required (give a \(info[r.destination].name) key)"
                                  + (object.base == nil ? "" : "; this line leaves \(object.id) without one"))
            }
        }
        return true
    }

    private mutating func commit(report: (Event) -> Void) async throws(ImportError) {
        defer {
            linesInBatch = 0
            recheckAt = 0
        }
        var changes = ChangeSet(author: author)
        // Staging checked every constraint of the store's final pass (see `constraintsChecked`).
        changes.constraintsChecked = true
        var inserted = 0, updated = 0
        for object in staged {
            if let base = object.base {
                var changed: [PropertyChange] = []
                for i in object.values.indices where object.values[i] != base.values[i] {
                    changed.append(PropertyChange(index: i, value: object.values[i]))
                }
                guard !changed.isEmpty else { continue }
                changes.updated.append(ObjectUpdate(id: object.id, baseVersion: base.version, baseValues: base.values, changes: changed))
                if object.line > 0 { updated += 1 }
            } else {
                changes.inserted.append(RowImage(id: object.id, values: object.values))
                inserted += 1
            }
        }
        if !changes.isEmpty {
            let result: Result<CommitResult, StoreError>
            do throws(StoreError) {
                result = .success(try await store.commit(changes))
            } catch {
                result = .failure(error)
            }
            switch result {
            case .success(let committed):
                handedOut = Store.HandedOutNumbers()
                head = committed.generation
                summary.transactions += 1
                summary.lastTransaction = committed.transaction
                summary.inserted += inserted
                summary.updated += updated
                committedLines = summary.lines
                report(.committed(transaction: committed.transaction, lines: summary.lines))
            case .failure(let error):
                let line = error.object.flatMap { id in schema.entityIndex(of: id).flatMap { stagedObject(id, entity: $0) } }
                    .map { staged[$0].line } ?? 0
                throw ImportError(line: line, message: error.message, storeError: error)
            }
        }
        // Only stale references still wait (none stands when a batch is committed).
        if pendingCount > 0 {
            for entity in pending.indices { pending[entity].removeAll() }
            pendingCount = 0
            settings.removeAll()
        }
        staged.removeAll(keepingCapacity: true)
        stagedIndex.removeAll(keepingCapacity: true)
        for entity in dense.indices { dense[entity].removeAll(keepingCapacity: true) }
        members.removeAll()
        ranks.removeAll()
        denseBase = store.numbers.withLock { $0.allocated.map { $0 + 1 } }
        for entity in keyIndex.indices { keyIndex[entity].removeAll(keepingCapacity: true) }
    }
}

// MARK: - Supporting types

extension JSONLinesImporter {
    /// How a line names an object: by its entity's unique attribute, or by ID.
    enum Reference: Hashable {
        case key(Value)
        case id(ObjectID)

        func describe(_ destination: EntityInfo) -> String {
            switch self {
            case .key(let value): "\(destination.entity.attributes[destination.unique!].name) \(value)"
            case .id(let id): "ID \(id)"
            }
        }
    }

    /// A relationship value that names an object not seen yet.
    struct PendingReference {
        var source: ObjectID
        var property: Int
        var line: Int
        var destination: Int
        var reference: Reference
        /// For a to-many relationship, the reference's place in the line's list.
        var rank: Int?
        /// How often the relationship had been set when the reference was made.
        var setting: Int
    }

    /// One relationship of one object.
    struct SourceKey: Hashable {
        var object: ObjectID
        var property: Int
    }

    /// How often a relationship with references waiting has been set since the first, and
    /// how many of the references made since the latest setting still wait.
    struct Setting {
        var count = 0
        var standing = 0
    }

    /// An object the current batch creates or changes.
    struct Staged {
        var id: ObjectID
        var entity: Int
        var values: [Value]
        /// The stored row it changes; `nil` for a new object.
        var base: StoredRow?
        /// The last line that changed it (0 when only an inverse did).
        var line: Int
        /// Per relationship (storage index): the last line that took something out of it.
        var emptied: [Int: Int] = [:]
    }

    /// What the importer needs of an entity, looked up once (a class: one retain per use,
    /// not one per array inside).
    final class EntityInfo {
        struct RelationshipInfo {
            var toMany: Bool
            var optional: Bool
            var destination: Int
            var inverse: Int
            var inverseToMany: Bool
        }

        let entity: Entity
        let name: String
        let attributeCount: Int
        let unique: Int?
        let propertyIndex: [String: Int]
        let propertyNames: [String]
        let relationships: [RelationshipInfo]
        let initialValues: [Value]

        /// The storage index of a property. A few names are compared in turn (small strings
        /// compare in a few instructions, faster than hashing); many are hashed.
        @inline(__always)
        func index(of name: String) -> Int? {
            if propertyNames.count <= 16 {
                for i in propertyNames.indices where propertyNames[i] == name { return i }
                return nil
            }
            return propertyIndex[name]
        }

        init(_ entity: Entity, schema: Schema) {
            self.entity = entity
            propertyNames = entity.propertyNames
            name = entity.name
            attributeCount = entity.attributes.count
            unique = entity.attributes.firstIndex(where: \.isUnique)
            var index: [String: Int] = [:]
            for (i, name) in entity.propertyNames.enumerated() { index[name] = i }
            propertyIndex = index
            let entityIndex = schema.entityIndex(named: entity.name)!
            relationships = entity.relationships.enumerated().map { offset, r in
                let link = schema.layout.relationship(entity: entityIndex, property: entity.attributes.count + offset)!
                return RelationshipInfo(toMany: link.isToMany, optional: r.isOptional, destination: link.destination,
                                        inverse: link.inverse, inverseToMany: link.inverseIsToMany)
            }
            initialValues = entity.newObjectValues
        }
    }
}

extension ObjectID {
    func entityIndex(in schema: Schema) -> Int { schema.entityIndex(named: entity)! }
}
