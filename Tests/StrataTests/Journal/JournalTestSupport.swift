import Foundation
@testable import Strata

/// Every file of a store directory, by name: a byte-exact picture of a store that can be
/// compared, changed in memory and written out to a fresh directory.
struct StoreSnapshot: Equatable, Sendable, CustomStringConvertible {
    var files: [String: [UInt8]]

    init(files: [String: [UInt8]]) { self.files = files }

    /// Reads every regular file of `directory`.
    static func read(_ directory: String) throws -> StoreSnapshot {
        var files: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))
            files[name] = [UInt8](data)
        }
        return StoreSnapshot(files: files)
    }

    /// Writes the files into `directory`, creating it if needed. Nothing is synced: these are
    /// scratch copies, and `Data.write` would sync every file.
    func write(to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let io = POSIXFileIO()
        for (name, bytes) in files {
            let path = directory + "/" + name
            let fd = try io.open(path, access: .readWrite, creation: .createIfMissing)
            defer { io.close(fd) }
            try io.truncate(fd, to: 0)
            try io.writeAll(fd, bytes, at: 0, path: path)
        }
    }

    subscript(name: String) -> [UInt8]? {
        get { files[name] }
        set { files[name] = newValue }
    }

    var names: [String] { files.keys.sorted() }

    /// The segment file names, oldest first.
    var segmentNames: [String] {
        files.keys.filter { StoreLayout.segmentTransaction($0) != nil }.sorted()
    }

    /// The checkpoint file names, oldest first.
    var checkpointNames: [String] {
        files.keys.filter { StoreLayout.checkpointTransaction($0) != nil }.sorted()
    }

    /// The names of the files that hold store data (everything but the lock file).
    var dataFileNames: [String] { names.filter { $0 != StoreLayout.lockFile } }

    /// Names and sizes only: failure messages stay readable.
    var description: String {
        "StoreSnapshot(" + names.map { "\($0): \(files[$0]!.count) bytes" }.joined(separator: ", ") + ")"
    }

    /// The first name (in sorted order) whose bytes differ from `other`'s, if any.
    func firstDifference(from other: StoreSnapshot) -> String? {
        Set(files.keys).union(other.files.keys).sorted().first { files[$0] != other.files[$0] }
    }
}

extension TemporaryDirectory {
    /// A temporary directory in memory-backed storage when the system has it (`/dev/shm` on
    /// Linux), for tests that write thousands of scratch copies of a store: they then do not
    /// wait on a disk that other work keeps busy. Elsewhere, an ordinary temporary directory.
    static func scratch(_ label: String) -> TemporaryDirectory {
        let shm = "/dev/shm"
        guard FileManager.default.isWritableFile(atPath: shm) else { return TemporaryDirectory(label) }
        let path = shm + "/\(label)-\(UUID().uuidString)"
        guard (try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)) != nil else {
            return TemporaryDirectory(label)
        }
        return TemporaryDirectory(path: path)
    }

    private init(path: String) { self.path = path }
}

/// The extent of one framed record in a file.
struct FrameSpan: Equatable {
    /// Where the frame starts.
    var offset: Int
    /// The offset just past it.
    var end: Int
    var type: UInt8
    var length: Int { end - offset }
}

extension FrameSpan {
    /// Walks the frames of a segment or checkpoint file by their length fields (checksums
    /// are not checked), starting after the magic; stops at the first incomplete frame.
    static func all(in bytes: [UInt8]) -> [FrameSpan] {
        var spans: [FrameSpan] = []
        var offset = RecordFormat.magicSize
        while offset + RecordFormat.frameHeaderSize <= bytes.count {
            let length = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
            let end = offset + RecordFormat.frameHeaderSize + length
            // (No record is empty: a zero length is the zero-filled space past the records.)
            guard length > 0, end <= bytes.count else { break }
            spans.append(FrameSpan(offset: offset, end: end, type: bytes[offset + 8]))
            offset = end
        }
        return spans
    }

    /// The transaction frames of a segment file.
    static func transactions(in bytes: [UInt8]) -> [FrameSpan] {
        all(in: bytes).filter { $0.type == RecordFormat.RecordType.transaction.rawValue }
    }
}

/// A sequence of valid transactions and the model state after each of them.
struct ModelHistory: Sendable {
    /// `records[i]` is transaction `i + 1`.
    var records: [TransactionRecord]
    /// `states[i]` is the state after the first `i` transactions (`states[0]` is empty).
    var states: [ReplayedState]

    init() {
        records = []
        states = [ReplayedState()]
    }

    /// `count` random transactions from `TransactionGenerator` with `seed`.
    init(seed: UInt64, count: Int, maxChanges: Int = 6) throws {
        self.init()
        var generator = TransactionGenerator(seed: seed)
        for _ in 0..<count { try append(generator.next(after: final, maxChanges: maxChanges)) }
    }

    var final: ReplayedState { states[states.count - 1] }
    var count: Int { records.count }

    mutating func append(_ record: TransactionRecord) throws {
        var next = final
        try next.apply(record)
        records.append(record)
        states.append(next)
    }
}

/// A store written to disk from a `ModelHistory`.
struct BuiltStore {
    let directory: String
    let storeID: UUID
    let history: ModelHistory
    /// The store's files once the journal was closed.
    let snapshot: StoreSnapshot
    /// Snapshots taken after the transactions asked for, before any compaction or roll there.
    let snapshots: [Int: StoreSnapshot]

    var full: ReplayedState { history.final }
    func path(_ name: String) -> String { StoreLayout.join(directory, name) }
}

enum StoreBuilder {
    /// Creates a store at `directory` and appends `history`'s transactions, compacting after
    /// the transactions in `compactAfter` and starting a new segment after those in
    /// `rollAfter`; closes it.
    static func build(
        at directory: String, history: ModelHistory, compactAfter: Set<Int> = [], rollAfter: Set<Int> = [],
        snapshotAfter: Set<Int> = [], schema: Schema = Fixtures.songbook
    ) async throws -> BuiltStore {
        let journal = try Journal.create(at: directory, schema: schema, configuration: .init(durability: .relaxed))
        var snapshots: [Int: StoreSnapshot] = [:]
        for (i, record) in history.records.enumerated() {
            let n = i + 1
            try await journal.append(record)
            if snapshotAfter.contains(n) { snapshots[n] = try StoreSnapshot.read(directory) }
            if compactAfter.contains(n) { try await journal.compact(from: history.states[n]) }
            if rollAfter.contains(n) { try await journal.rollSegment() }
        }
        await journal.close()
        return BuiltStore(directory: directory, storeID: journal.storeID, history: history,
                          snapshot: try StoreSnapshot.read(directory), snapshots: snapshots)
    }
}

/// Opens the store at `path` and returns the journal and the replayed state.
func openStore(
    _ path: String, readOnly: Bool = false, schema: Schema? = Fixtures.songbook, durability: Durability = .full
) throws(StoreError) -> (Journal, ReplayedState) {
    var state = ReplayedState()
    let journal = try Journal.open(at: path, schema: schema,
                                   configuration: .init(durability: durability, readOnly: readOnly), replayingInto: &state)
    return (journal, state)
}

/// The size of the file at `path`.
func fileSize(_ path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.size] as? NSNumber)?.intValue ?? -1
}

/// A frame holding `payload`, checksummed with `seed`.
func framed(_ type: UInt8, _ payload: [UInt8], seed: UInt32) -> [UInt8] {
    var writer = ByteWriter()
    writer.writeUInt32(UInt32(payload.count))
    writer.writeUInt32(0)
    writer.write(type)
    writer.write(payload)
    let crc = payload.withUnsafeBytes { raw in
        RecordFormat.checksum(length: UInt32(payload.count), type: type, payload: raw, seed: seed)
    }
    writer.patchUInt32(crc, at: 4)
    return writer.bytes
}

/// Flips the bits of `mask` in byte `offset` of `bytes`.
func flip(_ bytes: inout [UInt8], at offset: Int, mask: UInt8 = 0x10) {
    bytes[offset] ^= mask
}

/// A schema with the songbook's shape plus one attribute, so its fingerprint differs.
let alteredSongbook: Schema = {
    var entities = Fixtures.songbook.entities
    entities[2].attributes.append(Attribute("plays", .int, optional: true))
    return try! Schema("Songbook", version: 2, entities: entities)
}()
