import Foundation
import Strata

/// `import`: JSON Lines into a store, all at once or in durable batches.
enum ImportCommand {
    static let command = StrataCommand.Command(
        name: "import", usage: "strata import STORE FILE.jsonl|- [--batch-size N] [--progress bar|json|none]",
        summary: "import objects from JSON Lines (upserts by unique key)",
        help: """
            Reads one object per line, {"entity": "Album", "values": {"albumID": 1, "artist": 1}},
            from FILE.jsonl (or standard input for -). Relationships name their destination by
            its unique attribute (or "Entity/N" where it has none); {"id": "Entity/N"} names
            any object by ID (dump writes it for an object whose string key is null).
            References to objects later in the input are resolved when they appear. A line whose unique key exists updates
            that object (only the keys given change). Inverse relationships are kept in step.
            A line may carry "id": "Entity/N" (dump writes it): a new object keeps that number
            when the store has not used it. Infinite and NaN doubles are the strings
            "Infinity", "-Infinity" and "NaN".

            Without --batch-size the import is one transaction: all or nothing. With
            --batch-size N a transaction is committed every N lines, or later while a line of
            the batch waits for an object further on (every line a commit counts is applied
            in full); --progress json then prints
            {"event":"committed","transaction":17,"objects":4500} after each commit is
            durable (objects: lines applied so far). --progress bar (the default on a terminal)
            draws a bar on standard error; none is silent.

            Bad input (not JSON, unknown entity or key, a value of the wrong type, a missing
            required value, a broken limit, a reference never resolved) stops the import with
            exit 1; the first line of standard error names the file, line and culprit. Nothing
            after the last acknowledged commit is committed.

            example:
              strata import songs.strata songs.jsonl --batch-size 5000 --progress json
            """,
        options: ["batch-size", "progress"]
    ) { arguments, output in
        let path = try arguments.positional(0, "STORE")
        let file = try arguments.positional(1, "FILE.jsonl")
        try arguments.expectPositionals(2)
        var batchSize: Int?
        if let text = arguments.option("batch-size") {
            guard let n = Int(text), n > 0 else { throw Arguments.UsageError(message: "--batch-size must be a positive integer, not '\(text)'") }
            batchSize = n
        }
        let progress = try arguments.choice("progress", of: ["bar", "json", "none"], default: output.errorIsTerminal ? "bar" : "none")
        let reader: JSONLinesReader
        do throws(JSONLinesReader.ReadError) {
            reader = try JSONLinesReader(path: file)
        } catch {
            output.errorLine("strata import: cannot read \(error)")
            return 1
        }
        let store = try StrataCommand.openForWriting(path, command: "import", output)
        var importer = JSONLinesImporter(store: store, batchSize: batchSize)
        let bar = progress == "bar" ? ProgressBar(output: output, total: reader.size) : nil
        let outcome: Result<JSONLinesImporter.Summary, JSONLinesImporter.ImportError>
        // The bytes the last read event reported: the reader itself belongs to the thread
        // reading ahead while the importer runs.
        var bytesRead: Int64 = 0
        do throws(JSONLinesImporter.ImportError) {
            outcome = .success(try await importer.run(reader) { event in
                switch event {
                case .committed(let transaction, let lines):
                    if progress == "json" {
                        output.line(#"{"event":"committed","transaction":\#(transaction),"objects":\#(lines)}"#)
                    }
                    bar?.update(lines: lines, bytes: bytesRead, committed: transaction)
                case .read(let lines, let bytes):
                    bytesRead = bytes
                    bar?.update(lines: lines, bytes: bytes, committed: nil)
                }
            })
        } catch {
            outcome = .failure(error)
        }
        bar?.finish()
        await store.close()
        switch outcome {
        case .success(let summary):
            if progress != "json" {
                output.line("imported \(summary.lines) lines from \(file): \(summary.inserted) objects created, \(summary.updated) updated, "
                            + "\(summary.transactions) transaction(s), last \(summary.lastTransaction)")
            }
            return 0
        case .failure(let error):
            let place = error.line > 0 ? "\(file):\(error.line): " : ""
            output.errorLine("strata import: \(place)\(error.message)")
            if let storeError = error.storeError { output.errorLine("detail: \(storeError)") }
            output.errorLine(batchSize == nil
                ? "nothing was imported"
                : "nothing after the last acknowledged commit was imported")
            return 1
        }
    }
}

/// A one-line progress bar on standard error, redrawn in place (at most a few times a second).
final class ProgressBar {
    private let output: Output
    private let total: Int64?
    private var lastDraw = ContinuousClock.now - .seconds(1)
    private var committed: UInt64?

    init(output: Output, total: Int64?) {
        self.output = output
        self.total = total
    }

    func update(lines: Int, bytes: Int64, committed: UInt64?) {
        if let committed { self.committed = committed }
        let now = ContinuousClock.now
        guard now - lastDraw >= .milliseconds(100) else { return }
        lastDraw = now
        var text = "\r"
        if let total, total > 0 {
            let fraction = min(1, Double(bytes) / Double(total))
            let filled = Int(fraction * 30)
            text += "[" + String(repeating: "#", count: filled) + String(repeating: " ", count: 30 - filled) + "] "
            text += String(Int(fraction * 100)) + "% "
        }
        text += "\(lines) lines"
        if let committed = self.committed { text += ", committed through transaction \(committed)" }
        output.error(text)
    }

    func finish() {
        lastDraw = .now - .seconds(1)
        output.error("\r\u{1B}[K")
    }
}
