import Foundation
import StrataCommand

let status = await StrataCommand.run(
    Array(CommandLine.arguments.dropFirst()),
    output: { FileHandle.standardOutput.write(Data($0.utf8)) },
    errors: { FileHandle.standardError.write(Data($0.utf8)) },
    errorsIsTerminal: isatty(2) == 1)
exit(status)
