// strata-journal-writer: a child process for Strata's process-level tests.
//
// Usage:
//   strata-journal-writer write STORE --seed N --count N [--durability full|relaxed]
//                         [--compact-every N] [--window N] [--create] [--lead]
//       Opens the store for writing (creates it with the workload's schema first with
//       --create) and appends the next --count transactions of ProcessWorkload for --seed,
//       keeping up to --window (default 1) enqueued but not yet acknowledged; with --lead,
//       one at a time through append(_:callerMayBlock: true), so that each append writes
//       and syncs its own transaction. Prints
//         open S          once the store is open at transaction S
//         issue N        before transaction N is enqueued
//         ack N          after transaction N is durable (waitUntilDurable returned)
//         compacting N / compacted N   around compact(from:) every --compact-every transactions
//         done           after a clean close
//
//   strata-journal-writer hold-lock STORE
//       Opens the store for writing, prints `locked`, then reads standard input until end of
//       file (the test closes it, or dies), closes the store and prints `released`.
//
//   strata-journal-writer fsize-limit STORE --bytes N [--seed N] [--durability full|relaxed]
//                         [--compact-every N]
//       Sets RLIMIT_FSIZE to N bytes and ignores SIGXFSZ, opens the store and appends
//       workload transactions one at a time (compacting every --compact-every) until one
//       throws. Prints `ack N` per acknowledged save, `error CODE` for the failure (a
//       StoreError code: io, poisoned, ...), then tries one more append and prints `ack N`
//       or `after CODE` for the error it gets, and exits 0.
//
//   strata-journal-writer stray-output STORE --seed N --count N --report PATH
//       Meant to be started with descriptors 0, 1 and 2 closed. Opens the store, appends
//       --count transactions and after each one writes a line to descriptors 1 and 2, as a
//       program printing or logging would. Writes its report to PATH (created): `fd N PATH`
//       for each of its descriptors that refers to a file in the store (Linux), `ack N` per
//       save, then `done`.
//
// Every line is written with one write(2) to the output descriptor, unbuffered, so a line
// the test has read describes something that happened before the process was killed.
// Exit status: 0 success, 2 bad usage, 3 an unexpected error (described on a `fatal` line).

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Strata

/// Writes whole lines to a descriptor, one `write` each.
struct Output: Sendable {
    var descriptor: Int32 = STDOUT_FILENO

    func line(_ text: String) {
        let bytes = Array((text + "\n").utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            done += n
        }
    }
}

/// Command-line options after the mode and the store path.
struct Options {
    var values: [String: String] = [:]
    var flags: Set<String> = []

    init(_ arguments: ArraySlice<String>) {
        var rest = arguments
        while let argument = rest.popFirst() {
            if argument == "--create" || argument == "--lead" {
                flags.insert(argument)
            } else if argument.hasPrefix("--"), let value = rest.popFirst() {
                values[argument] = value
            } else {
                usage("unexpected argument \(argument)")
            }
        }
    }

    func number(_ name: String, default value: UInt64? = nil) -> UInt64 {
        guard let text = values[name] else {
            guard let value else { usage("\(name) is required") }
            return value
        }
        guard let number = UInt64(text) else { usage("\(name) needs a number, not \(text)") }
        return number
    }

    var durability: Durability {
        guard let text = values["--durability"] else { return .full }
        guard let durability = Durability(rawValue: text), durability != .none else {
            usage("--durability is full or relaxed, not \(text)")
        }
        return durability
    }
}

func usage(_ problem: String) -> Never {
    Output(descriptor: STDERR_FILENO).line("strata-journal-writer: \(problem); see the comment at the top of main.swift")
    exit(2)
}

func fatal(_ error: any Error, output: Output) -> Never {
    output.line("fatal \(error)")
    exit(3)
}

/// Opens a store for writing with the schema it records, replaying it into a model.
func openStore(_ path: String, durability: Durability, create: Bool) throws(StoreError) -> (Journal, ReplayedState) {
    let configuration = Journal.Configuration(durability: durability)
    if create {
        return (try Journal.create(at: path, schema: ProcessWorkload.schema, configuration: configuration), ReplayedState())
    }
    var model = ReplayedState()
    let journal = try Journal.open(at: path, schema: nil, configuration: configuration, replayingInto: &model)
    return (journal, model)
}

func runWrite(store: String, options: Options, output: Output) async {
    let seed = options.number("--seed")
    let count = options.number("--count")
    guard count > 0 else { usage("--count must be at least 1") }
    let compactEvery = options.number("--compact-every", default: 0)
    let window = max(1, Int(options.number("--window", default: 1)))
    do {
        let opened = try openStore(store, durability: options.durability, create: options.flags.contains("--create"))
        let journal = opened.0
        var model = opened.1
        let start = model.lastTransaction
        output.line("open \(start)")
        var inFlight: [UInt64] = []
        func acknowledge(upTo limit: Int) async throws(StoreError) {
            while inFlight.count > limit {
                let number = inFlight.removeFirst()
                try await journal.waitUntilDurable(number)
                output.line("ack \(number)")
            }
        }
        for n in start + 1 ... start + count {
            let record = ProcessWorkload.transaction(n, seed: seed)
            try model.apply(record)
            output.line("issue \(n)")
            if options.flags.contains("--lead") {
                // The appender writes its own batch. (Here on the cooperative pool, which
                // nothing else in this process needs meanwhile; a library caller would be
                // on a private queue.)
                try await journal.append(record, callerMayBlock: true)
                output.line("ack \(n)")
            } else {
                try journal.enqueue(record)
                inFlight.append(n)
                try await acknowledge(upTo: window - 1)
            }
            if compactEvery > 0 && n % compactEvery == 0 {
                try await acknowledge(upTo: 0)
                output.line("compacting \(n)")
                try await journal.compact(from: model)
                output.line("compacted \(n)")
            }
        }
        try await acknowledge(upTo: 0)
        await journal.close()
        output.line("done")
    } catch {
        fatal(error, output: output)
    }
}

func runHoldLock(store: String, output: Output) async {
    do {
        let (journal, _) = try openStore(store, durability: .full, create: false)
        output.line("locked")
        var buffer = [UInt8](repeating: 0, count: 256)
        while true {
            let n = read(STDIN_FILENO, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
        }
        await journal.close()
        output.line("released")
    } catch {
        fatal(error, output: output)
    }
}

func runFileSizeLimit(store: String, options: Options, output: Output) async {
    let bytes = options.number("--bytes")
    let seed = options.number("--seed", default: 1)
    let compactEvery = options.number("--compact-every", default: 0)
    var limit = rlimit(rlim_cur: rlim_t(bytes), rlim_max: rlim_t(bytes))
    #if canImport(Glibc)
    let resource = __rlimit_resource_t(RLIMIT_FSIZE.rawValue)
    #else
    let resource = RLIMIT_FSIZE
    #endif
    guard setrlimit(resource, &limit) == 0 else {
        output.line("fatal setrlimit failed: errno \(errno)")
        exit(3)
    }
    signal(SIGXFSZ, SIG_IGN)
    let journal: Journal
    var model: ReplayedState
    do {
        (journal, model) = try openStore(store, durability: options.durability, create: false)
    } catch {
        output.line("error \(error.code)")
        exit(0)
    }
    // The limit is meant to be reached within a few hundred saves; stop long before forever.
    for n in model.lastTransaction + 1 ... model.lastTransaction + 100_000 {
        let record = ProcessWorkload.transaction(n, seed: seed)
        do throws(StoreError) {
            try await journal.append(record)
            output.line("ack \(n)")
            do throws(ReplayError) { try model.apply(record) } catch { fatal(error, output: output) }
            if compactEvery > 0 && n % compactEvery == 0 { try await journal.compact(from: model) }
        } catch {
            output.line("error \(error.code)")
            do throws(StoreError) {
                let next = journal.lastTransaction + 1
                try await journal.append(ProcessWorkload.transaction(next, seed: seed))
                output.line("ack \(next)")
            } catch {
                output.line("after \(error.code)")
            }
            exit(0)
        }
    }
    output.line("fatal the file-size limit was never reached")
    exit(3)
}

/// Opens the store before anything else in the process has opened a file, so that with the
/// standard descriptors closed its files get the lowest free numbers unless the library
/// avoids them; then appends, writing to descriptors 1 and 2 after every save.
func startStrayOutput(store: String, options: Options) -> @Sendable () async -> Void {
    let seed = options.number("--seed")
    let count = options.number("--count")
    guard count > 0 else { usage("--count must be at least 1") }
    guard let reportPath = options.values["--report"] else { usage("--report is required") }
    let opened: Result<(Journal, ReplayedState), StoreError> = Result { () throws(StoreError) in
        try openStore(store, durability: .full, create: false)
    }
    let report = open(reportPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard report >= 0 else { exit(3) }
    let output = Output(descriptor: report)
    return {
        do {
            let (journal, model) = try opened.get()
            #if os(Linux)
            let storePath = URL(fileURLWithPath: store).resolvingSymlinksInPath().path
            for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
                if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name),
                    target.hasPrefix(storePath + "/")
                {
                    output.line("fd \(name) \(target)")
                }
            }
            #endif
            let stray = Array("stray output a program printed\n".utf8)
            for n in model.lastTransaction + 1 ... model.lastTransaction + count {
                try await journal.append(ProcessWorkload.transaction(n, seed: seed))
                output.line("ack \(n)")
                _ = write(STDOUT_FILENO, stray, stray.count)
                _ = write(STDERR_FILENO, stray, stray.count)
            }
            await journal.close()
            output.line("done")
        } catch {
            fatal(error, output: output)
        }
    }
}

/// Runs `body` on the main actor and exits when it returns. The entry point stays
/// synchronous so that a mode can open files before the concurrency runtime starts.
func run(_ body: @escaping @Sendable () async -> Void) -> Never {
    Task {
        await body()
        exit(0)
    }
    dispatchMain()
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { usage("give a mode and a store path") }
let store = arguments[2]
let options = Options(arguments.dropFirst(3))
switch arguments[1] {
case "write": run { await runWrite(store: store, options: options, output: Output()) }
case "hold-lock": run { await runHoldLock(store: store, output: Output()) }
case "fsize-limit": run { await runFileSizeLimit(store: store, options: options, output: Output()) }
case "stray-output": run(startStrayOutput(store: store, options: options))
default: usage("unknown mode \(arguments[1])")
}
