import Foundation
import Strata

/// `create`, `info`, `verify` and `compact`: the commands that work on a store as a whole.
enum StoreCommands {
    static let create = StrataCommand.Command(
        name: "create", usage: "strata create STORE --model MODEL.json",
        summary: "create an empty store with a model file's schema",
        help: """
            Creates the store directory STORE (it must not exist, or be empty) with the schema
            read from MODEL.json (a schema as JSON; docs/FORMATS.md lists its keys). The store
            records its schema, so no other command needs the model file.

            example:
              strata create songs.strata --model Songbook.json
            """,
        options: ["model"]
    ) { arguments, output in
        let path = try arguments.positional(0, "STORE")
        try arguments.expectPositionals(1)
        let schema = try Schema(contentsOfModelFile: try arguments.requireOption("model"))
        let store = try Store.create(at: path, schema: schema)
        await store.close()
        output.line("created \(path): schema \"\(schema.name)\" version \(schema.version), \(schema.entities.count) entities, fingerprint \(schema.fingerprint)")
        return 0
    }

    static let info = StrataCommand.Command(
        name: "info", usage: "strata info STORE [--format text|json]",
        summary: "describe a store: schema, objects per entity, transactions, files",
        help: """
            Prints the store's schema (name, version, fingerprint), the number of objects of
            each entity, the last transaction and checkpoint, every file with its size, and
            the durability the tool's commits have (full: fsynced before acknowledged).
            Reads without taking the write lock, so it works while another process writes.

            example:
              strata info songs.strata --format json
            """,
        options: ["format"]
    ) { arguments, output in
        let path = try arguments.positional(0, "STORE")
        try arguments.expectPositionals(1)
        let format = try arguments.choice("format", of: ["text", "json"], default: "text")
        let store = try Store.open(at: path, configuration: .init(readOnly: true))
        let generation = store.currentGeneration
        let schema = store.schema
        let files = (try? FileManager.default.contentsOfDirectory(atPath: path).sorted()) ?? []
        let sizes = files.map { name in
            ((try? FileManager.default.attributesOfItem(atPath: path + "/" + name)[.size] as? NSNumber)?.int64Value ?? 0)
        }
        let counts = schema.entities.map { ($0.name, generation.count(of: $0.name)) }
        let checkpoint = store.recovery.checkpoint
        if format == "json" {
            let json = JSON.object([
                ("path", .string(path)),
                ("storeID", .string(store.journal.storeID.uuidString.lowercased())),
                ("schema", .object([("name", .string(schema.name)), ("version", .int(Int64(schema.version))),
                                    ("fingerprint", .string(schema.fingerprint.description))])),
                ("lastTransaction", .int(Int64(generation.transaction))),
                ("checkpoint", checkpoint.map { .int(Int64($0)) } ?? .null),
                ("objects", .object(counts.map { ($0.0, .int(Int64($0.1))) })),
                ("totalObjects", .int(Int64(generation.totalCount))),
                ("durability", .string(Store.Configuration().durability.rawValue)),
                ("totalBytes", .int(sizes.reduce(0, +))),
                ("files", .array(zip(files, sizes).map { .object([("name", .string($0)), ("bytes", .int($1))]) })),
                ("tornTail", store.recovery.tornTail.map { .object([("path", .string($0.path)), ("offset", .int($0.offset)),
                                                                    ("bytes", .int($0.discardedBytes))]) } ?? .null),
            ])
            output.standard(json.prettyText)
        } else {
            output.line("store:        \(path)")
            output.line("schema:       \(schema.name) version \(schema.version)")
            output.line("fingerprint:  \(schema.fingerprint)")
            output.line("store ID:     \(store.journal.storeID.uuidString.lowercased())")
            output.line("transactions: \(generation.transaction)" + (checkpoint.map { " (checkpoint through \($0))" } ?? ""))
            output.line("objects:      \(generation.totalCount)")
            for line in columns(counts.map { ["  " + $0.0, String($0.1)] }) { output.line(line) }
            output.line("durability:   \(Store.Configuration().durability.rawValue) (commits are fsynced before they are acknowledged)")
            output.line("files:        \(sizes.reduce(0, +)) bytes")
            for line in columns(zip(files, sizes).map { ["  " + $0, "\($1) bytes"] }) { output.line(line) }
            if let torn = store.recovery.tornTail {
                output.line("note:         an interrupted write left \(torn.discardedBytes) bytes at offset \(torn.offset) of \(torn.path); the next writer cuts them")
            }
        }
        await store.close()
        return 0
    }

    static let verify = StrataCommand.Command(
        name: "verify", usage: "strata verify STORE",
        summary: "check checksums, replay, inverses, unique keys and required values",
        help: """
            Reads every record of the store's checkpoint and journal segments (checking each
            checksum), replays the whole store, then checks that every relationship and its
            inverse agree, every unique value is used once, every required value is present
            and every reference points at an existing object. Exit 0 with a summary when the
            store is sound; exit 1 naming the first problem (file, offset and transaction, or
            object and key) when not. Reads without taking the write lock.

            Bytes at the journal's end that are no transaction — what a crash leaves of a
            write it interrupted, which the next writer cuts — do not make a store unsound:
            the summary then says through which transaction the checks hold, and a note names
            the bytes. Damage to the very last record looks the same and is reported the same.

            example:
              strata verify songs.strata
            """
    ) { arguments, output in
        let path = try arguments.positional(0, "STORE")
        try arguments.expectPositionals(1)
        let store = try Store.open(at: path, configuration: .init(readOnly: true))
        let generation = store.currentGeneration
        let problems = generation.integrityProblems(limit: 1)
        let recovery = store.recovery
        await store.close()
        if let problem = problems.first {
            output.errorLine("strata verify: \(problem.object).\(problem.key): \(problem.message) [store \(path), transaction \(generation.transaction)]")
            return 1
        }
        output.line("ok: \(path): \(generation.transaction) transactions, \(generation.totalCount) objects; "
                    + "\(recovery.checkpoint.map { "checkpoint through \($0) (\(recovery.checkpointRows) rows), " } ?? "")"
                    + "\(recovery.replayedTransactions) transactions replayed from \(recovery.replayedBytes) bytes; "
                    + "checksums, inverses, unique keys and required values hold"
                    + (recovery.tornTail == nil ? "" : " through transaction \(generation.transaction)"))
        if let torn = recovery.tornTail {
            // An interrupted write and damage to the last record look the same (a crash may
            // leave zeros, garbage or a stale record there): the store is sound without it.
            output.line("note: \(torn.discardedBytes) bytes at offset \(torn.offset) of \(torn.path) are no transaction (\(torn.reason)): "
                        + "an interrupted write, which the next writer cuts — or, if transaction \(generation.transaction + 1) was ever acknowledged, "
                        + "damage to it (the two cannot be told apart: keep a copy of the store before writing to it)")
        }
        return 0
    }

    static let compact = StrataCommand.Command(
        name: "compact", usage: "strata compact STORE",
        summary: "fold the journal into a new checkpoint and remove covered segments",
        help: """
            Writes a checkpoint of the store's current contents (to a temporary file, synced,
            then renamed into place) and removes the journal segments and older checkpoint it
            covers. Takes the write lock: fails with "locked" while another process writes.

            example:
              strata compact songs.strata
            """
    ) { arguments, output in
        let path = try arguments.positional(0, "STORE")
        try arguments.expectPositionals(1)
        let store = try StrataCommand.openForWriting(path, command: "compact", output)
        do {
            let report = try await store.compact()
            await store.close()
            if report.wroteCheckpoint {
                output.line("compacted \(path): checkpoint through transaction \(report.checkpoint), \(report.rows) objects, \(report.bytes) bytes; removed \(report.removedFiles.count) file(s)")
            } else {
                output.line("\(path): nothing to compact; its checkpoint through transaction \(report.checkpoint) already covers every transaction")
            }
            return 0
        } catch {
            await store.close()
            throw error
        }
    }
}
