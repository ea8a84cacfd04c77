/// The destination rows of a custom migration step, kept in a temporary file instead of in
/// memory: an append-only log of row records, and per entity an index from object number to
/// the newest record of that object.
///
/// Writing a row appends a record; the record it replaces stays in the file, unreferenced.
/// Records are buffered and written in batches of ``batchSize`` bytes, so a row read soon
/// after it was written (the common case: a link reads what it set) comes from the buffer.
/// The index is a second temporary file of 16-byte slots, one per object number, behind a
/// page cache of fixed size (``PagedSlots``), which the step's other bookkeeping shares.
/// Memory is the write buffer, a read-ahead window of 256 KiB for scans, and that cache —
/// none of it grows with the number of objects.
///
/// Records use the store's value encoding (`ByteWriter.writeValue`): the entity index, the
/// object number, the value count, then each value with its tag. Object IDs are written by
/// entity index; an entity the destination schema lacks (a transform's mistake, which
/// validation reports) gets an index past the schema's, so that any value can be held until
/// it is validated.
///
/// The file is named like a temporary file (see ``StoreLayout/migrationSpillName``), so that
/// one left by a crash is removed when the store is next opened for writing; it is never
/// synced, and is removed when the step ends. Every access goes through the store's
/// ``FileIO``.
///
/// `@unchecked Sendable`: it is used by one thread at a time — built on the migration queue,
/// then read by the journal's queue while the checkpoint is written, a hand-off ordered by the
/// `await` between them. For the same reason its state is exempt from the runtime's
/// exclusivity checks (as ``PagedSlots``'s is): they took about a fifth of the time of writing a row.
final class MigrationSpill: @unchecked Sendable {
    /// Where a row's newest record is.
    struct Location {
        var offset: Int64
        var length: UInt32
    }

    /// Records are written to the file when the buffer reaches this size.
    static let batchSize = 1 << 20

    let io: any FileIO
    let path: String
    private let fd: FileDescriptor
    /// The index, and the step's other bookkeeping.
    let slots: PagedSlots
    /// Entity names by encoded index: the schema's, then any other name a value referred to.
    @exclusivity(unchecked) private var names: [EntityName]
    @exclusivity(unchecked) private var entityIndexes: [String: Int]
    /// Per destination entity: its area of `slots` (object number → its newest record:
    /// offset, length; an empty slot is a missing object), its object count, its highest number.
    @exclusivity(unchecked) private var areas: [Int]
    @exclusivity(unchecked) private var counts: [Int]
    @exclusivity(unchecked) private var highest: [UInt64]
    /// Records not yet written to the file; they start at `flushedSize`.
    @exclusivity(unchecked) private var buffer = ByteWriter(capacity: MigrationSpill.batchSize + 64 * 1024)
    @exclusivity(unchecked) private var flushedSize: Int64 = 0
    @exclusivity(unchecked) private var readBuffer: [UInt8] = []
    /// Bytes of the file from `windowStart`, read ahead by scans in number order (whose newest
    /// records are mostly in the order they were written) and by reads landing just past it;
    /// other reads use it when it holds their record, and otherwise read just the record.
    @exclusivity(unchecked) private var window: [UInt8] = []
    @exclusivity(unchecked) private var windowStart: Int64 = 0
    /// How much a scan reads ahead.
    static let windowSize = 256 << 10
    private var isClosed = false
    /// The first failure of a read that could not throw: while the rows were handed to the
    /// checkpoint writer, or while a unique value was confirmed (see ``recordFailure(_:)``).
    @exclusivity(unchecked) private var stickyFailure: StoreError?
    /// The first failure of the file or the index that no caller has seen thrown yet.
    var failure: StoreError? { stickyFailure ?? slots.failure }

    /// Records the failure of a read whose caller cannot throw; the step reports it (see
    /// ``failure``) before it writes anything.
    func recordFailure(_ error: StoreError) {
        if stickyFailure == nil { stickyFailure = error }
    }

    /// Creates the spill file in `directory` (replacing one an interrupted run left).
    /// - Throws: ``StoreError`` (`io`) when the file cannot be created.
    init(directory: String, schema: Schema, io: any FileIO, cachedPages: Int = PagedSlots.defaultCachedPages) throws(StoreError) {
        self.io = io
        path = StoreLayout.join(directory, StoreLayout.migrationSpillName)
        fd = try io.createMigrationFile(path, describedAs: "temporary file")
        let slots: PagedSlots
        do throws(StoreError) {
            slots = try PagedSlots(path: StoreLayout.join(directory, StoreLayout.migrationIndexName), io: io, cachedPages: cachedPages)
        } catch {
            io.close(fd)
            try? io.remove(path)
            throw error
        }
        self.slots = slots
        names = schema.layout.entityNames
        entityIndexes = Dictionary(uniqueKeysWithValues: schema.entities.enumerated().map { ($1.name, $0) })
        areas = schema.entities.map { _ in slots.makeArea() }
        counts = schema.entities.map { _ in 0 }
        highest = schema.entities.map { _ in 0 }
    }

    /// The number of objects of an entity.
    func count(of entity: Int) -> Int { counts[entity] }

    /// Whether the object exists.
    func contains(_ entity: Int, _ number: UInt64) -> Bool { location(entity, number) != nil }

    private func location(_ entity: Int, _ number: UInt64) -> Location? {
        let slot = slots.slot(areas[entity], number)
        return slot.second == 0 ? nil : Location(offset: Int64(slot.first), length: UInt32(slot.second))
    }

    /// The numbers of an entity's objects, in order: those that exist when the sequence is
    /// made, read from the index as it is iterated (objects are never removed, and objects
    /// made later get higher numbers).
    func numbers(of entity: Int) -> Numbers {
        Numbers(slots: slots, area: areas[entity], from: 0, last: highest[entity], done: counts[entity] == 0)
    }

    /// An entity's object numbers, in order, read from the index a page at a time.
    struct Numbers: Sequence, IteratorProtocol {
        let slots: PagedSlots
        let area: Int
        var from: UInt64
        let last: UInt64
        var done: Bool

        mutating func next() -> UInt64? {
            guard !done, let number = slots.nextOccupied(area, from: from, through: last) else {
                done = true
                return nil
            }
            if number == last { done = true } else { from = number + 1 }
            return number
        }
    }

    /// Writes an object's values (a new object, or a new version of one).
    func write(_ entity: Int, _ number: UInt64, _ values: [Value]) throws(StoreError) {
        for value in values {
            switch value {
            case .object(let id): register(id.entity)
            case .objects(let ids): for id in ids { register(id.entity) }
            default: break
            }
        }
        let start = buffer.count
        buffer.writeVarint(entity)
        buffer.writeVarint(number)
        buffer.writeVarint(values.count)
        for value in values { buffer.writeValue(value, entityIndexes: entityIndexes) }
        let length = buffer.count - start
        guard length <= Int(UInt32.max) else {
            buffer.truncate(to: start)
            throw StoreError(.io, "a row of \(names[entity].string)/\(number) takes \(length) bytes, more than a migration can hold (4 GiB)",
                             path: path)
        }
        let area = areas[entity]
        if slots.slot(area, number).second == 0 {
            counts[entity] += 1
            if number > highest[entity] { highest[entity] = number }
        }
        slots.setSlot(area, number, PagedSlots.Slot(first: UInt64(flushedSize) + UInt64(start), second: UInt64(length)))
        if buffer.count >= Self.batchSize { try flush() }
    }

    private func register(_ name: String) {
        if entityIndexes[name] == nil {
            entityIndexes[name] = names.count
            names.append(EntityName.interned(name))
        }
    }

    /// Writes the buffered records to the file.
    func flush() throws(StoreError) {
        guard buffer.count > 0 else { return }
        do throws(FileIOError) {
            let result: Result<Void, FileIOError> = buffer.withUnsafeBytes { raw in
                Result { () throws(FileIOError) in try io.writeAll(fd, raw, at: flushedSize, path: path) }
            }
            try result.get()
        } catch {
            throw StoreError.io(error, "writing the migration's temporary file")
        }
        flushedSize += Int64(buffer.count)
        buffer.removeAll()
    }

    /// An object's values, or `nil` when it does not exist. A `scanning` read (objects visited
    /// in number order) reads ahead of the record.
    func values(_ entity: Int, _ number: UInt64, scanning: Bool = false) throws(StoreError) -> [Value]? {
        guard let location = location(entity, number) else { return nil }
        return try read(location, of: entity, number, scanning: scanning)
    }

    private func read(_ location: Location, of entity: Int, _ number: UInt64, scanning: Bool = false) throws(StoreError) -> [Value] {
        let decoded: Result<[Value], DecodeFailure>
        if location.offset >= flushedSize {
            let start = Int(location.offset - flushedSize)
            decoded = buffer.withUnsafeBytes { raw in
                decode(UnsafeRawBufferPointer(rebasing: raw[start..<start + Int(location.length)]))
            }
        } else if location.offset >= windowStart && location.offset + Int64(location.length) <= windowStart + Int64(window.count) {
            let start = Int(location.offset - windowStart)
            decoded = window.withUnsafeBytes { raw in decode(UnsafeRawBufferPointer(rebasing: raw[start..<start + Int(location.length)])) }
        } else if scanning || location.offset >= windowStart && location.offset - windowStart <= Int64(window.count + Self.windowSize) {
            // A scan, or a read just past the window (reads following the order the records
            // were written in, as links visiting objects in number order do): read ahead.
            let length = Int(min(flushedSize - location.offset, Int64(max(Self.windowSize, Int(location.length)))))
            if window.count != length { window = [UInt8](repeating: 0, count: length) }
            let read: Result<Int, FileIOError> = window.withUnsafeMutableBytes { raw in
                Result { () throws(FileIOError) -> Int in try io.readFully(fd, into: raw, at: location.offset) }
            }
            let count: Int
            do throws(FileIOError) { count = try read.get() } catch {
                window = []
                throw StoreError.io(error, "reading the migration's temporary file")
            }
            windowStart = location.offset
            guard count >= Int(location.length) else {
                window = []
                throw StoreError(.corrupted, "the migration's temporary file ends inside the record of \(names[entity].string)/\(number)",
                                 path: path, offset: location.offset)
            }
            if count < window.count { window.removeLast(window.count - count) }
            decoded = window.withUnsafeBytes { raw in decode(UnsafeRawBufferPointer(rebasing: raw[0..<Int(location.length)])) }
        } else {
            let length = Int(location.length)
            if readBuffer.count < length { readBuffer = [UInt8](repeating: 0, count: max(length, 4096)) }
            let read: Result<Int, FileIOError> = readBuffer.withUnsafeMutableBytes { raw in
                Result { () throws(FileIOError) -> Int in
                    try io.readFully(fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<length]), at: location.offset)
                }
            }
            let count: Int
            do throws(FileIOError) { count = try read.get() } catch {
                throw StoreError.io(error, "reading the migration's temporary file")
            }
            guard count == length else {
                throw StoreError(.corrupted, "the migration's temporary file ends inside the record of \(names[entity].string)/\(number)",
                                 path: path, offset: location.offset)
            }
            decoded = readBuffer.withUnsafeBytes { raw in decode(UnsafeRawBufferPointer(rebasing: raw[0..<length])) }
        }
        do throws(DecodeFailure) {
            return try decoded.get()
        } catch {
            throw StoreError(.corrupted, "the migration's temporary file holds an unreadable record of \(names[entity].string)/\(number): \(error)",
                             path: path, offset: location.offset)
        }
    }

    private func decode(_ bytes: UnsafeRawBufferPointer) -> Result<[Value], DecodeFailure> {
        Result { () throws(DecodeFailure) -> [Value] in
            var reader = ByteReader(bytes)
            _ = try reader.readVarint()
            _ = try reader.readVarint()
            let count = try reader.readCount("a value count", limit: bytes.count)
            var values: [Value] = []
            values.reserveCapacity(count)
            for _ in 0..<count { values.append(try reader.readValue(names: names)) }
            return values
        }
    }

    /// Calls `body` with every object of an entity, in number order, until it returns `false`.
    func forEach(of entity: Int, _ body: (UInt64, [Value]) throws(StoreError) -> Bool) throws(StoreError) {
        for number in numbers(of: entity) {
            guard let location = location(entity, number) else { continue }
            guard try body(number, try read(location, of: entity, number, scanning: true)) else { return }
        }
    }

    /// Closes and removes the file (best effort: a file left behind is removed when the
    /// store is next opened for writing).
    func remove() {
        guard !isClosed else { return }
        isClosed = true
        io.close(fd)
        try? io.remove(path)
        slots.remove()
        buffer = ByteWriter(capacity: 0)
        readBuffer = []
        window = []
    }

    deinit { remove() }
}
