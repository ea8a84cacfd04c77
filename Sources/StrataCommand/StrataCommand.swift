import Strata

/// The `strata` command-line tool, as a library so that tests drive it in-process.
///
/// `run` takes the arguments after the program name and returns the exit status:
/// `0` success, `1` a runtime error, `2` a usage error.
public enum StrataCommand {
    /// The tool's version.
    public static let version = "0.1.0"

    /// The subcommands this build provides.
    static let available: [(name: String, summary: String)] = [
        ("help", "show this help, or `strata help COMMAND` for one command"),
        ("version", "print the tool's version"),
    ]

    /// The subcommands of the documented interface that this build does not provide yet.
    static let planned = ["create", "import", "query", "aggregate", "update", "delete", "dump", "info", "verify",
                          "compact", "migrate", "schema", "history"]

    /// Runs the tool.
    /// - Parameters:
    ///   - arguments: the arguments after the program name.
    ///   - output: receives standard output.
    ///   - errors: receives standard error.
    /// - Returns: the exit status.
    public static func run(_ arguments: [String], output: (String) -> Void, errors: (String) -> Void) -> Int32 {
        guard let command = arguments.first else {
            output(usage)
            return 0
        }
        switch command {
        case "help", "--help", "-h":
            if arguments.count > 1, planned.contains(arguments[1]) {
                output("strata \(arguments[1]): not available in this build of strata (\(version)).\n")
                return 0
            }
            output(usage)
            return 0
        case "version", "--version":
            output("strata \(version)\n")
            return 0
        case _ where planned.contains(command):
            errors("strata: '\(command)' is not available in this build of strata (\(version)); run `strata help` for what is\n")
            return 2
        default:
            errors("strata: unknown command '\(command)'; run `strata help` for the commands\n")
            return 2
        }
    }

    static var usage: String {
        var text = "usage: strata COMMAND [ARGUMENTS]\n\nCommands available in this build:\n"
        for (name, summary) in available { text += "  \(name.padding(8))  \(summary)\n" }
        text += "\nNot available yet: \(planned.joined(separator: ", ")).\n"
        return text
    }
}

extension String {
    fileprivate func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
