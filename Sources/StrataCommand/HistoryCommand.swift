import Foundation
import Strata

/// `history`: the transactions still in the journal, with author, time and changes.
enum HistoryCommand {
    static let command = StrataCommand.Command(
        name: "history", usage: "strata history STORE [--since TRANSACTION] [--format jsonl|text]",
        summary: "list transactions with author, time and changes",
        help: """
            Lists the transactions after TRANSACTION (all by default) that are still in the
            journal — compact and migrate fold older ones into a checkpoint, and the listing
            says which of those asked for are gone (JSON Lines on standard error) — oldest
            first: number, time, author and what changed, as one JSON object per transaction
            (the default, --format jsonl):
            {"transaction":3,"time":"2026-01-01T10:00:00Z","author":"import",
             "inserted":["Artist/1"],"updated":{"Album/2":{"title":"New"}},"deleted":[]}
            with the new values of every changed key; --format text is for people. Reads
            without taking the write lock.

            example:
              strata history songs.strata --since 40 --format text
            """,
        options: ["since", "format"]
    ) { arguments, output in
        let path = try arguments.positional(0, "STORE")
        try arguments.expectPositionals(1)
        var since: UInt64 = 0
        if let text = arguments.option("since") {
            guard let n = UInt64(text) else { throw Arguments.UsageError(message: "--since must be a transaction number, not '\(text)'") }
            since = n
        }
        let format = try arguments.choice("format", of: ["text", "jsonl"], default: "jsonl")
        let store = try StrataCommand.openForReading(path, command: "history", output)
        let records: [TransactionRecord]
        do {
            records = try store.journal.transactions(after: since)
        } catch {
            await store.close()
            throw error
        }
        let schema = store.schema
        let checkpoint = store.recovery.checkpoint
        await store.close()
        let out = BufferedLines(output)
        if let checkpoint, since < checkpoint {
            if format == "text" {
                out.line("(transactions 1–\(checkpoint) were folded into a checkpoint, by a compaction or a migration)")
            } else {
                // Standard output keeps one transaction per line; a script reading from a
                // transaction before the checkpoint is told, there, what it cannot have.
                let folded = since + 1 == checkpoint ? "transaction \(checkpoint) was" : "transactions \(since + 1)–\(checkpoint) were"
                output.errorLine("strata history: note: \(folded) folded into a checkpoint, by a compaction or a migration; the history starts at \(checkpoint + 1)")
            }
        }
        for record in records {
            let time = Self.time(record.timestamp)
            if format == "jsonl" {
                let updated: [(key: String, value: JSON)] = record.updated.map { update in
                    let entity = schema.entity(named: update.id.entity)!
                    return (update.id.description, .object(update.changes.map { (entity.property(at: $0.index).name, $0.value.json) }))
                }
                out.line(JSON.object([
                    ("transaction", .int(Int64(record.number))),
                    ("time", .string(time)),
                    ("author", .string(record.author)),
                    ("inserted", .array(record.inserted.map { .string($0.id.description) })),
                    ("updated", .object(updated)),
                    ("deleted", .array(record.deleted.map { .string($0.description) })),
                ]).text)
            } else {
                out.line("transaction \(record.number)  \(time)  \(record.author.isEmpty ? "(no author)" : record.author)  "
                         + "\(record.inserted.count) inserted, \(record.updated.count) updated, \(record.deleted.count) deleted")
                for row in record.inserted.prefix(5) { out.line("  + \(row.id)") }
                for update in record.updated.prefix(5) {
                    let entity = schema.entity(named: update.id.entity)!
                    out.line("  ~ \(update.id): " + update.changes.map { "\(entity.property(at: $0.index).name) = \($0.value)" }.joined(separator: ", "))
                }
                for id in record.deleted.prefix(5) { out.line("  - \(id)") }
                let more = max(0, record.inserted.count - 5) + max(0, record.updated.count - 5) + max(0, record.deleted.count - 5)
                if more > 0 { out.line("  ... and \(more) more") }
            }
        }
        out.flush()
        return 0
    }

    /// A transaction's time as ISO-8601 text.
    static func time(_ date: Date) -> String {
        if case .string(let text) = Value.date(date).json { return text }
        return ""
    }
}
