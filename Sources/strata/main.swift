import Dispatch
import Foundation
import StrataCommand

let arguments = Array(CommandLine.arguments.dropFirst())
let command = Task {
    await StrataCommand.run(
        arguments,
        output: { FileHandle.standardOutput.write(Data($0.utf8)) },
        errors: { FileHandle.standardError.write(Data($0.utf8)) },
        errorsIsTerminal: isatty(2) == 1)
}

// Ctrl-C (or SIGTERM) stops a command that can stop cleanly — an import after its last
// acknowledged commit, a compaction or a migration before its checkpoint is in place — by
// cancelling it: it reports what it kept and exits with 1. A second signal, or the first
// during any other command, ends the process at once (the store survives that too).
let interruptions = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: .main)  // the main actor's, as this code's
    source.setEventHandler {
        for other in [SIGINT, SIGTERM] { signal(other, SIG_DFL) }
        guard let what = StrataCommand.stopsCleanlyWhenInterrupted(arguments) else {
            raise(number)
            return
        }
        FileHandle.standardError.write(Data("\nstrata: stopping \(what) (interrupt again to stop at once)\n".utf8))
        command.cancel()
    }
    source.resume()
    return source
}

let status = await command.value
interruptions.forEach { $0.cancel() }
exit(status)
