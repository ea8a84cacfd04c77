import Foundation

/// Fuzz targets for what reads untrusted bytes: the journal's transaction decoder, opening a
/// store whose files are built from arbitrary bytes, the JSON parser (import files, model
/// files), and the JSON Lines importer.
///
/// Each target takes any bytes and must return normally: a malformed input is refused with a
/// typed error, never a crash, hang or runaway allocation. A target traps (and so reports a
/// crash to the fuzzer) when a promise breaks: a decoded transaction the schema refuses or
/// that does not encode back to itself; an open that changed a file although it refused the
/// store or opened it read-only; a store that opened but does not open again to the same
/// state; JSON whose written text does not parse back to it; an import that leaves the
/// store with an integrity problem, or that failed and changed it. `Tests/Fuzz` runs them under
/// libFuzzer; `swift test` replays their seeds and every input kept from a crash.
///
/// The input of ``openStore(_:)`` describes a store directory (the targets frame and
/// checksum what it gives, so that fuzzing reaches past the checksums):
///
/// ```
/// flags: UInt8           bit 0: a checkpoint file comes first
/// through: UInt16 (LE)   only with a checkpoint: the transaction it is the state of
/// chunks                 type: UInt8, length: UInt16 (LE), that many payload bytes —
///                        one record of that type (any value, known or not) with a valid
///                        frame and checksum; type 0xFE ends the checkpoint's records and
///                        starts the segment's; type 0xFF makes the rest of the input raw
///                        bytes at the end of the current file, unframed
/// ```
///
/// Each file starts with a valid header and schema record; the segment's first transaction
/// is the one after the checkpoint's (or 1).
public enum FuzzTargets {
    /// Decodes `input` as a transaction record's payload. A decoded record must pass the
    /// schema's checks or be refused by them with a typed error, and one that passes must
    /// encode to a payload that decodes to the same record.
    public static func decodeTransaction(_ input: UnsafeRawBufferPointer) {
        let codec = Fixture.shared.codec
        let record: TransactionRecord
        do throws(DecodeFailure) {
            record = try codec.decodeTransaction(input)
        } catch {
            guard (0...input.count).contains(error.offset) else {
                preconditionFailure("a decode failure names offset \(error.offset), outside the \(input.count)-byte payload")
            }
            return
        }
        do throws(StoreError) {
            try codec.validate(record)
        } catch {
            return
        }
        var writer = ByteWriter()
        codec.encodeFrame(record, into: &writer)
        let again = Array(writer.bytes.dropFirst(RecordFormat.frameHeaderSize)).withUnsafeBytes { raw in
            Result { () throws(DecodeFailure) in try codec.decodeTransaction(raw) }
        }
        guard case .success(let decoded) = again, decoded == record || encodesEqually(decoded, record, codec) else {
            preconditionFailure("a decoded transaction does not round-trip: \(record)")
        }
    }

    /// Opens the store `input` describes (see ``FuzzTargets``), read-only and then for
    /// writing, over a file system in memory.
    ///
    /// Read-only, and when opening refuses the store, no file may change. A store that opens
    /// for writing (which cuts a torn tail) must open again with the same state.
    public static func openStore(_ input: UnsafeRawBufferPointer) {
        let files = Fixture.shared.files(for: input)
        let memory = InMemoryFileIO()
        let directory = Fixture.directory
        do throws(FileIOError) {
            try memory.createDirectory(directory)
            for (name, bytes) in files { try memory.setContents(bytes, of: StoreLayout.join(directory, name)) }
        } catch {
            preconditionFailure("the in-memory file system refused the fuzzed store's files: \(error)")
        }
        let before = contents(of: memory, files.map(\.name))

        let readOnly = try? Store.open(at: directory, configuration: .init(fileIO: memory, readOnly: true))
        if let readOnly {
            let generation = readOnly.currentGeneration
            _ = generation.integrityProblems(limit: 10)
            _ = generation.totalCount
        }
        withExtendedLifetime(readOnly) {}
        guard contents(of: memory, files.map(\.name)) == before else {
            preconditionFailure("opening read-only changed the store's files")
        }

        let state: (transaction: UInt64, rows: Int)
        do throws(StoreError) {
            let store = try Store.open(at: directory, configuration: .init(fileIO: memory, preallocation: 0))
            let generation = store.currentGeneration
            state = (generation.transaction, generation.totalCount)
        } catch {
            guard contents(of: memory, files.map(\.name)) == before else {
                preconditionFailure("opening refused the store (\(error.code)) but changed its files")
            }
            guard readOnly == nil || error.code == .locked else {
                preconditionFailure("the store opened read-only but not for writing: \(error)")
            }
            return
        }
        do throws(StoreError) {
            let again = try Store.open(at: directory, configuration: .init(fileIO: memory, readOnly: true))
            let generation = again.currentGeneration
            guard (generation.transaction, generation.totalCount) == state else {
                preconditionFailure("the store reopened at transaction \(generation.transaction) with \(generation.totalCount) objects, not \(state.transaction) with \(state.rows)")
            }
        } catch {
            preconditionFailure("the store opened for writing but not again: \(error)")
        }
    }

    /// Parses `input` as JSON. A document that parses must write text that parses back to an
    /// equal document and is written the same again.
    public static func parseJSON(_ input: UnsafeRawBufferPointer) {
        guard let document = try? JSON.parse(input) else { return }
        let text = document.text
        let again: JSON
        do throws(JSONParseError) {
            again = try JSON.parse(text)
        } catch {
            preconditionFailure("JSON written as \(text) does not parse: \(error)")
        }
        guard again == document, again.text == text else {
            preconditionFailure("JSON written as \(text) parses to \(again.text)")
        }
    }

    /// Imports `input` as JSON Lines into a store in memory holding a few songbook objects:
    /// in one transaction, or — when the input's first line is a single digit from 1 to 9 —
    /// committing every that many lines. Every commit must leave a store with no integrity
    /// problem (inverses, unique keys, required values, references), and an import that
    /// fails must leave the store as its last reported commit left it.
    public static func importLines(_ input: UnsafeRawBufferPointer) {
        var lines = input[...]
        var batchSize: Int?
        if input.count >= 2, (UInt8(ascii: "1")...UInt8(ascii: "9")).contains(input[0]), input[1] == UInt8(ascii: "\n") {
            batchSize = Int(input[0] - UInt8(ascii: "0"))
            lines = input[2...]
        }
        let path = Fixture.importPath
        guard let file = fopen(path, "w") else { preconditionFailure("cannot write the fuzzed import to \(path)") }
        if !lines.isEmpty { _ = UnsafeRawBufferPointer(rebasing: lines).withMemoryRebound(to: UInt8.self) { fwrite($0.baseAddress, 1, $0.count, file) } }
        fclose(file)
        let outcome = Fixture.blocking { [batchSize] () async -> (before: UInt64, reported: Int, after: Generation, failure: JSONLinesImporter.ImportError?) in
            let store: Store
            do throws(StoreError) {
                store = try Store.create(at: Fixture.directory, schema: FuzzTargets.schema,
                                         configuration: .init(durability: .none, fileIO: InMemoryFileIO(), preallocation: 0))
                try await store.commit(Fixture.importBase(store))
            } catch {
                preconditionFailure("the fuzzed import's store could not be made: \(error)")
            }
            let before = store.currentGeneration.transaction
            let reader: JSONLinesReader
            do throws(JSONLinesReader.ReadError) {
                reader = try JSONLinesReader(path: path, chunkSize: 256)
            } catch {
                preconditionFailure("the fuzzed import cannot be read back: \(error)")
            }
            var importer = JSONLinesImporter(store: store, batchSize: batchSize)
            var reported = 0
            do throws(JSONLinesImporter.ImportError) {
                _ = try await importer.run(reader) { event in
                    if case .committed = event { reported += 1 }
                }
                return (before, reported, store.currentGeneration, nil)
            } catch {
                return (before, reported, store.currentGeneration, error)
            }
        }
        // The input is written again for each call: nothing is left behind between calls.
        unlink(path)
        if let failure = outcome.failure, outcome.after.transaction != outcome.before + UInt64(outcome.reported) {
            preconditionFailure("an import that failed (\(failure)) after \(outcome.reported) reported commits left the store at transaction \(outcome.after.transaction), not \(outcome.before + UInt64(outcome.reported))")
        }
        let problems = outcome.after.integrityProblems(limit: 5)
        guard problems.isEmpty else { preconditionFailure("an import left the store with integrity problems: \(problems)") }
    }

    /// The fuzzer's starting points: for ``openStore(_:)``, sound stores (without a
    /// checkpoint, with a torn last record, with a checkpoint); for ``decodeTransaction(_:)``,
    /// payloads of sound transactions; for ``parseJSON(_:)``, import lines and JSON's corners;
    /// for ``importLines(_:)``, imports that succeed.
    public static func seedInputs() -> (open: [[UInt8]], decode: [[UInt8]], json: [[UInt8]], importLines: [[UInt8]]) {
        let fixture = Fixture.shared
        let records = Fixture.seedTransactions()
        let payloads = records.map { record -> [UInt8] in
            var writer = ByteWriter()
            fixture.codec.encodeFrame(record, into: &writer)
            return Array(writer.bytes.dropFirst(RecordFormat.frameHeaderSize))
        }
        func chunk(_ type: UInt8, _ payload: [UInt8]) -> [UInt8] {
            [type, UInt8(payload.count & 0xFF), UInt8(payload.count >> 8)] + payload
        }
        let transactionType = RecordFormat.RecordType.transaction.rawValue
        var open: [[UInt8]] = []
        // The journal alone.
        open.append([0] + payloads.flatMap { chunk(transactionType, $0) })
        // A torn last record: the same, with half of the last one's frame raw at the end.
        open.append([0] + payloads.dropLast().flatMap { chunk(transactionType, $0) } + [0xFF] + Array(payloads.last!.prefix(payloads.last!.count / 2)))
        // A checkpoint of the first transactions, then the journal after it.
        let split = 3
        let checkpoint = fixture.checkpointRecords(of: Array(records.prefix(split)))
        var withCheckpoint: [UInt8] = [1, UInt8(split & 0xFF), UInt8(split >> 8)]
        for (type, payload) in checkpoint { withCheckpoint += chunk(type, payload) }
        withCheckpoint += [0xFE, 0, 0]
        for payload in payloads.dropFirst(split) { withCheckpoint += chunk(transactionType, payload) }
        open.append(withCheckpoint)
        let json = [
            #"{"entity": "Album", "values": {"albumID": 1, "title": "Let There Be Rock", "artist": 1, "rating": 4.5, "explicit": false}}"#,
            #"{"entity":"Song","id":"Song/2","values":{"songID":"01020304-0506-0708-090A-0B0C0D0E0F10","artwork":"AAEC/w==","tags":[1,2.5e-3,-0.0,null,true]}}"#,
            #"["\u00e9\ud83c\udfb8 \"quoted\" \\ \n\t", 12345678901234567890, -9223372036854775808, 1E300, {"": []}]"#,
        ].map { Array($0.utf8) }
        let song = "01020304-0506-0708-090A-0B0C0D0E0F10"
        let importLines = [
            // New objects, a forward reference, an upsert of an object the store holds.
            [#"{"entity": "Album", "values": {"albumID": 20, "title": "Overkill", "artist": 3, "rating": 4.5}}"#,
             #"{"entity": "Artist", "values": {"artistID": 3, "name": "Motörhead", "createdAt": "1975-06-01T00:00:00Z"}}"#,
             #"{"entity": "Artist", "values": {"artistID": 1, "name": "AC/DC"}}"#],
            // A song with every kind of value, into an album the store holds; one by ID.
            ["{\"entity\": \"Song\", \"values\": {\"songID\": \"\(song)\", \"title\": \"Riff Raff\", \"artwork\": \"AAEC/w==\", \"milliseconds\": 312000, \"album\": 10}}",
             #"{"entity": "Album", "id": "Album/1", "values": {"explicit": true, "songs": ["\#(song)"]}}"#],
            // A to-many list naming objects by key, and an artist taking an album from another.
            [#"{"entity": "Artist", "values": {"artistID": 4, "name": null, "albums": [10, 21]}}"#,
             #"{"entity": "Album", "values": {"albumID": 21, "title": "Ace of Spades"}}"#],
            // Committed every two lines; in the second batch a reference waits for its line.
            ["2", #"{"entity": "Artist", "values": {"artistID": 5, "name": "Motörhead"}}"#,
             #"{"entity": "Album", "values": {"albumID": 22, "title": "Bomber", "artist": 5}}"#,
             #"{"entity": "Album", "values": {"albumID": 23, "title": "Iron Fist", "artist": 6}}"#,
             #"{"entity": "Artist", "values": {"artistID": 6, "name": "Girlschool"}}"#],
        ].map { Array($0.joined(separator: "\n").utf8) }
        return (open, payloads, json, importLines)
    }

    private static func contents(of memory: InMemoryFileIO, _ names: [String]) -> [[UInt8]?] {
        names.map { memory.contents(of: StoreLayout.join(Fixture.directory, $0)) }
    }

    /// Whether two records encode to the same bytes (a date decoded from its stored form may
    /// compare unequal to the one encoded while writing the same bytes).
    private static func encodesEqually(_ a: TransactionRecord, _ b: TransactionRecord, _ codec: RecordCodec) -> Bool {
        var first = ByteWriter(), second = ByteWriter()
        codec.encodeFrame(a, into: &first)
        codec.encodeFrame(b, into: &second)
        return first.bytes == second.bytes
    }

    /// The schema fuzzed stores are written with (the songbook: every attribute type, to-one
    /// and to-many relationships, each delete rule, an indexed attribute, unique keys of
    /// three types, defaults, a minimum). The project's own journal tests use it too.
    public static let schema: Schema = {
        do {
            return try Schema("Songbook", version: 1, entities: [
                Entity("Artist",
                       attributes: [Attribute("artistID", .int, unique: true),
                                    Attribute("name", .string, optional: true, indexed: true),
                                    Attribute("createdAt", .date, default: .date(Date(timeIntervalSince1970: 1_577_836_800)))],
                       relationships: [Relationship("albums", to: "Album", inverse: "artist", toMany: true, deleteRule: .cascade)],
                       defaultSort: [SortKey("name")]),
                Entity("Album",
                       attributes: [Attribute("albumID", .int, unique: true), Attribute("title", .string),
                                    Attribute("rating", .double, optional: true), Attribute("explicit", .bool, default: .bool(false))],
                       relationships: [Relationship("artist", to: "Artist", inverse: "albums"),
                                       Relationship("songs", to: "Song", inverse: "album", toMany: true, deleteRule: .deny)]),
                Entity("Song",
                       attributes: [Attribute("songID", .uuid, unique: true), Attribute("title", .string),
                                    Attribute("artwork", .data, optional: true), Attribute("milliseconds", .int, min: .int(0))],
                       relationships: [Relationship("album", to: "Album", inverse: "songs")]),
            ])
        } catch {
            preconditionFailure("the songbook schema is invalid: \(error)")
        }
    }()

    /// The schema, store identity and codec every fuzzed input is read with.
    final class Fixture: Sendable {
        static let shared = Fixture()
        static let directory = "/store"
        /// Where ``importLines(_:)`` writes its input for the reader (shared memory when
        /// the machine has it).
        static let importPath: String = {
            let directory = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : NSTemporaryDirectory()
            return "\(directory)/strata-fuzz-import-\(getpid()).jsonl"
        }()

        /// Runs `body` on the concurrency pool and waits for it (fuzz targets are called
        /// on a thread of their own, never on the pool).
        static func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
            let done = DispatchSemaphore(value: 0)
            let result = Locked<T?>(nil)
            Task {
                let value = await body()
                result.withLock { $0 = value }
                done.signal()
            }
            done.wait()
            guard let value = result.withLock({ $0 }) else { preconditionFailure("the fuzzed work returned nothing") }
            return value
        }

        /// The objects the store holds before a fuzzed import: two artists, an album of the
        /// first, a song of it.
        static func importBase(_ store: Store) -> ChangeSet {
            let artists = store.allocateObjectIDs(for: "Artist", count: 2)
            let album = store.allocateObjectIDs(for: "Album")[0], song = store.allocateObjectIDs(for: "Song")[0]
            let date = Date(timeIntervalSince1970: 1_577_836_800)
            return ChangeSet(author: "fuzz", inserted: [
                RowImage(id: artists[0], values: [.int(1), .string("AC/DC"), .date(date), .objects([album])]),
                RowImage(id: artists[1], values: [.int(2), .null, .date(date), .objects([])]),
                RowImage(id: album, values: [.int(10), .string("Powerage"), .double(4.5), .bool(false), .object(artists[0]), .objects([song])]),
                RowImage(id: song, values: [.uuid(UUID(uuid: (9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9))), .string("Gimme a Bullet"),
                                            .null, .int(201_000), .object(album)]),
            ])
        }

        let schema: Schema
        let storeID = UUID(uuid: (0x5E, 0xED, 0xF0, 0x22, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 1))
        let codec: RecordCodec

        private init() {
            schema = FuzzTargets.schema
            codec = RecordCodec(schema: schema, storeID: storeID)
        }

        /// The files of the store `input` describes, by name.
        func files(for input: UnsafeRawBufferPointer) -> [(name: String, bytes: [UInt8])] {
            var reader = input[...]
            func take(_ count: Int) -> ArraySlice<UInt8>? {
                guard reader.count >= count else { return nil }
                defer { reader = reader.dropFirst(count) }
                return ArraySlice(reader.prefix(count))
            }
            let flags = take(1)?.first ?? 0
            var files: [(name: String, bytes: [UInt8])] = []
            var current: ByteWriter
            var firstTransaction: UInt64 = 1
            var inCheckpoint = false
            if flags & 1 != 0 {
                let bytes = take(2) ?? [0, 0]
                let through = UInt64(bytes[bytes.startIndex]) | UInt64(bytes[bytes.startIndex + 1]) << 8
                firstTransaction = through + 1
                current = start(.checkpoint, transaction: through)
                files.append((StoreLayout.checkpointName(through: through), []))
                inCheckpoint = true
            } else {
                current = start(.segment, transaction: 1)
            }
            func finishCheckpoint() {
                files[files.count - 1].bytes = current.bytes
                current = start(.segment, transaction: firstTransaction)
                inCheckpoint = false
            }
            while let type = take(1)?.first {
                if type == 0xFF {
                    current.write(Array(reader))
                    reader = reader.dropFirst(reader.count)
                    break
                }
                guard let length = take(2) else { break }
                let count = Int(length[length.startIndex]) | Int(length[length.startIndex + 1]) << 8
                if type == 0xFE {
                    if inCheckpoint { finishCheckpoint() }
                    continue
                }
                // A length past the end of the input takes what is left.
                let payload = take(count) ?? take(reader.count) ?? []
                frame(type, Array(payload), into: &current)
            }
            if inCheckpoint { finishCheckpoint() }
            files.append((StoreLayout.segmentName(firstTransaction: firstTransaction), current.bytes))
            files.append((StoreLayout.lockFile, []))
            return files
        }

        /// A file's header and schema record.
        private func start(_ kind: FileHeader.Kind, transaction: UInt64) -> ByteWriter {
            var writer = ByteWriter(capacity: 4096)
            FileHeader(kind: kind, formatVersion: RecordFormat.version, storeID: storeID, fingerprint: schema.fingerprint,
                       transaction: transaction).encode(into: &writer)
            frame(RecordFormat.RecordType.schema.rawValue, Array(schema.modelFileJSON.text.utf8), into: &writer)
            return writer
        }

        /// Appends one record with a valid frame and checksum, whatever its type.
        private func frame(_ type: UInt8, _ payload: [UInt8], into writer: inout ByteWriter) {
            let start = writer.beginFrame(rawType: type)
            writer.write(payload)
            writer.finishFrame(at: start, seed: codec.seed)
        }

        /// The records (type, payload) of a checkpoint of the state `records` leave.
        func checkpointRecords(of records: [TransactionRecord]) -> [(UInt8, [UInt8])] {
            var state = ReplayedState()
            do throws(ReplayError) {
                for record in records { try state.apply(record) }
            } catch {
                preconditionFailure("the fuzzing seed transactions do not replay: \(error)")
            }
            let memory = InMemoryFileIO()
            let written: CheckpointWriter.Written
            do {
                try memory.createDirectory(Self.directory)
                written = try CheckpointWriter(directory: Self.directory, storeID: storeID, schema: schema, codec: codec, io: memory).write(state)
            } catch {
                preconditionFailure("the fuzzing seed checkpoint could not be written: \(error)")
            }
            guard let bytes = memory.contents(of: written.path) else { preconditionFailure("the fuzzing seed checkpoint vanished") }
            // Every record after the magic, the header (checksummed without the store's seed,
            // which it gives) and the schema.
            return bytes.withUnsafeBytes { raw in
                var records: [(UInt8, [UInt8])] = []
                var offset = RecordFormat.magicSize, seed: UInt32 = 0
                while case .success(let frame) = RecordFormat.frame(in: raw, at: offset, seed: seed) {
                    if frame.type != RecordFormat.RecordType.header.rawValue && frame.type != RecordFormat.RecordType.schema.rawValue {
                        records.append((frame.type, Array(frame.payload)))
                    }
                    offset = frame.end
                    seed = codec.seed
                }
                return records
            }
        }

        /// Six sound transactions: inserts of every entity with every value type, an update,
        /// a relationship change, a deletion.
        static func seedTransactions() -> [TransactionRecord] {
            let date = Date(timeIntervalSince1970: 1_700_000_000.125)
            func id(_ entity: String, _ number: UInt64) -> ObjectID { ObjectID(entity: entity, number: number) }
            let song = UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))
            return [
                TransactionRecord(number: 1, timestamp: date, author: "seed", inserted: [
                    RowImage(id: id("Artist", 1), values: [.int(1), .string("AC/DC"), .date(date), .objects([])]),
                    RowImage(id: id("Artist", 2), values: [.int(2), .null, .date(Date(timeIntervalSince1970: 0)), .objects([])]),
                ]),
                TransactionRecord(number: 2, timestamp: date, author: "seed", inserted: [
                    RowImage(id: id("Album", 1), values: [.int(10), .string("Powerage"), .double(4.5), .bool(true), .object(id("Artist", 1)), .objects([])]),
                ], updated: [RowUpdate(id: id("Artist", 1), changes: [PropertyChange(index: 3, value: .objects([id("Album", 1)]))])]),
                TransactionRecord(number: 3, timestamp: date, author: "", inserted: [
                    RowImage(id: id("Song", 1), values: [.uuid(song), .string("Rock ’n’ Roll Damnation 🎸"), .data(Data([0, 1, 2, 255])), .int(217_000),
                                                         .object(id("Album", 1))]),
                ], updated: [RowUpdate(id: id("Album", 1), changes: [PropertyChange(index: 5, value: .objects([id("Song", 1)]))])]),
                TransactionRecord(number: 4, timestamp: date, author: "seed", updated: [
                    RowUpdate(id: id("Artist", 2), changes: [PropertyChange(index: 1, value: .string("Motörhead"))]),
                ]),
                TransactionRecord(number: 5, timestamp: date, author: "seed", updated: [
                    RowUpdate(id: id("Album", 1), changes: [PropertyChange(index: 2, value: .null), PropertyChange(index: 4, value: .object(id("Artist", 2)))]),
                    RowUpdate(id: id("Artist", 1), changes: [PropertyChange(index: 3, value: .objects([]))]),
                    RowUpdate(id: id("Artist", 2), changes: [PropertyChange(index: 3, value: .objects([id("Album", 1)]))]),
                ]),
                TransactionRecord(number: 6, timestamp: date, author: "seed", deleted: [id("Artist", 1)]),
            ]
        }
    }
}
