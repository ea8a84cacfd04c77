import Strata

/// The `strata` command-line tool, as a library so that tests drive it in-process.
///
/// `run` takes the arguments after the program name and returns the exit status:
/// `0` success, `1` a runtime error (store, data, predicate), `2` a usage error. Errors go
/// to standard error, the first line naming the culprit.
public enum StrataCommand {
    /// The tool's version.
    public static let version = "0.2.0"

    /// One subcommand.
    struct Command: Sendable {
        var name: String
        var usage: String
        var summary: String
        var help: String
        var options: Set<String> = []
        /// The options that may be given more than once.
        var repeatable: Set<String> = []
        var flags: Set<String> = []
        var run: @Sendable (Arguments, Output) async throws -> Int32
    }

    static let commands: [Command] = [
        StoreCommands.create, ImportCommand.command, QueryCommands.query, QueryCommands.aggregate, QueryCommands.update,
        QueryCommands.delete, DumpCommand.command, StoreCommands.info, StoreCommands.verify, StoreCommands.compact,
        SchemaCommand.command, HistoryCommand.command, MigrateCommand.command,
    ]

    /// What an interrupted run of `arguments` stops cleanly — the import after its last
    /// acknowledged commit, the compaction or migration before its checkpoint is in place —
    /// when its task is cancelled (it then reports what it kept, and exits with 1); `nil`
    /// for commands the executable ends at once instead.
    public static func stopsCleanlyWhenInterrupted(_ arguments: [String]) -> String? {
        switch arguments.first {
        case "import": "the import after its last acknowledged commit"
        case "compact": "the compaction (nothing changes)"
        case "migrate": "the migration before its current step is written"
        default: nil
        }
    }

    /// Runs the tool.
    /// - Parameters:
    ///   - arguments: the arguments after the program name.
    ///   - output: receives standard output.
    ///   - errors: receives standard error.
    ///   - errorsIsTerminal: whether standard error is a terminal (progress bars are drawn only then).
    /// - Returns: the exit status.
    public static func run(
        _ arguments: [String], output: @escaping @Sendable (String) -> Void, errors: @escaping @Sendable (String) -> Void,
        errorsIsTerminal: Bool = false
    ) async -> Int32 {
        var out = Output(standard: output, error: errors)
        out.errorIsTerminal = errorsIsTerminal
        guard let name = arguments.first else {
            // No command is a usage error (`strata help` prints the same to standard output).
            out.error(usage)
            return 2
        }
        switch name {
        case "help", "--help", "-h":
            guard arguments.count > 1 else {
                out.standard(usage)
                return 0
            }
            if let command = commands.first(where: { $0.name == arguments[1] }) {
                out.standard("usage: \(command.usage)\n\n\(command.help)\n")
                return 0
            }
            // The two commands the list shows beside the others.
            switch arguments[1] {
            case "help":
                out.standard("usage: strata help [COMMAND]\n\nWithout COMMAND, lists the commands; with one, explains it (as `strata COMMAND --help`).\n")
                return 0
            case "version":
                out.standard("usage: strata version\n\nPrints the tool's version (as `strata --version`).\n")
                return 0
            default: break
            }
            out.errorLine("strata help: unknown command '\(arguments[1])'; run `strata help` for the commands")
            return 2
        case "version", "--version":
            out.line("strata \(version)")
            return 0
        default:
            break
        }
        guard let command = commands.first(where: { $0.name == name }) else {
            out.errorLine("strata: unknown command '\(name)'; run `strata help` for the commands")
            return 2
        }
        // `strata COMMAND --help` as `strata help COMMAND` (no command takes a value `--help`).
        // (Not after `--`: what follows it is operands, a store named "-h" among them.)
        if arguments.dropFirst().prefix(while: { $0 != "--" }).contains(where: { $0 == "--help" || $0 == "-h" }) {
            out.standard("usage: \(command.usage)\n\n\(command.help)\n")
            return 0
        }
        do {
            let parsed = try Arguments(Array(arguments.dropFirst()), options: command.options, repeatable: command.repeatable, flags: command.flags)
            return try await command.run(parsed, out)
        } catch let error as Arguments.UsageError {
            out.errorLine("strata \(name): \(error.message)")
            out.errorLine("usage: \(command.usage)")
            return 2
        } catch let error as StoreError {
            out.errorLine("strata \(name): \(error)")
            return 1
        } catch let error as SchemaError {
            out.errorLine("strata \(name): \(error)")
            return 1
        } catch let error as PredicateSyntaxError {
            out.errorLine("strata \(name): --where: \(error)")
            return 1
        } catch {
            out.errorLine("strata \(name): \(error)")
            return 1
        }
    }

    static var usage: String {
        var text = "usage: strata COMMAND [ARGUMENTS]\n\nCommands:\n"
        let rows = commands.map { ["  " + $0.name, $0.summary] } + [["  help", "explain a command: strata help COMMAND"], ["  version", "print the tool's version"]]
        text += columns(rows).joined(separator: "\n") + "\n"
        return text
    }
}

extension StrataCommand {
    /// Opens a store for writing, for `command`. Opening cuts a torn tail — the record an
    /// interrupted write left incomplete, or one damaged at the very end, which cannot be
    /// told apart — and the transactions in it are gone from the store: that is said on
    /// standard error, as the read-only commands say what they skip.
    static func openForWriting(_ path: String, command: String, _ output: Output) throws(StoreError) -> Store {
        let store = try Store.open(at: path)
        if let torn = store.recovery.tornTail { output.errorLine(tornTailNote(torn, command: command, lastTransaction: store.recovery.lastTransaction)) }
        return store
    }

    /// Opens a store read-only, for `command`, saying on standard error when it reads past a
    /// torn tail (which a read-only open does not cut): what it prints leaves out the
    /// transactions in it, as the next writer will.
    static func openForReading(_ path: String, command: String, _ output: Output) throws(StoreError) -> Store {
        let store = try Store.open(at: path, configuration: .init(readOnly: true))
        if let torn = store.recovery.tornTail {
            output.errorLine("strata \(command): note: skipped \(torn.discardedBytes) bytes at offset \(torn.offset) of \(torn.path) (\(torn.reason)), "
                + "an interrupted write or damage at the journal's end, which the next writer cuts; the store holds transactions 1–\(store.recovery.lastTransaction)")
        }
        return store
    }

    /// The note for a torn tail a writer cuts.
    static func tornTailNote(_ torn: RecoveryReport.TornTail, command: String, lastTransaction: UInt64) -> String {
        "strata \(command): note: cut \(torn.discardedBytes) bytes at offset \(torn.offset) of \(torn.path) (\(torn.reason)), "
            + "an interrupted write or damage at the journal's end; the store holds transactions 1–\(lastTransaction), "
            + "and the next commit is \(lastTransaction + 1)"
    }
}
