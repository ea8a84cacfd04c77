/// The arguments of one subcommand: positionals and `--option value` pairs, parsed against
/// what the subcommand accepts so that mistakes are usage errors (exit 2). A lone `--` ends
/// the options: every argument after it is a positional (a store or file whose name starts
/// with `--`).
struct Arguments {
    var positionals: [String] = []
    var options: [String: [String]] = [:]
    var flags: Set<String> = []

    /// A usage error: exit status 2 with the message and the command's usage line.
    struct UsageError: Error {
        var message: String
    }

    /// `repeatable`: the options that may be given more than once (each value is kept); any
    /// other option given twice is a usage error rather than one value silently winning.
    init(
        _ arguments: [String], options allowed: Set<String> = [], repeatable: Set<String> = [], flags allowedFlags: Set<String> = []
    ) throws(UsageError) {
        var i = 0
        while i < arguments.count {
            let argument = arguments[i]
            if argument == "--" {
                positionals += arguments[(i + 1)...]
                break
            }
            if argument.hasPrefix("--") && argument.count > 2 {
                var name = String(argument.dropFirst(2))
                var value: String?
                if let equals = name.firstIndex(of: "=") {
                    value = String(name[name.index(after: equals)...])
                    name = String(name[..<equals])
                }
                if allowedFlags.contains(name) {
                    guard value == nil else { throw UsageError(message: "--\(name) takes no value") }
                    flags.insert(name)
                } else if allowed.contains(name) {
                    if value == nil {
                        i += 1
                        guard i < arguments.count else { throw UsageError(message: "--\(name) needs a value") }
                        value = arguments[i]
                    }
                    guard options[name] == nil || repeatable.contains(name) else {
                        throw UsageError(message: "--\(name) is given more than once; give it once")
                    }
                    options[name, default: []].append(value!)
                } else {
                    throw UsageError(message: "unknown option --\(name)")
                }
            } else {
                positionals.append(argument)
            }
            i += 1
        }
    }

    func option(_ name: String) -> String? { options[name]?.last }

    func requireOption(_ name: String) throws(UsageError) -> String {
        guard let value = option(name) else { throw UsageError(message: "--\(name) is required") }
        return value
    }

    func positional(_ index: Int, _ what: String) throws(UsageError) -> String {
        guard index < positionals.count else { throw UsageError(message: "\(what) is required") }
        return positionals[index]
    }

    func expectPositionals(_ count: Int) throws(UsageError) {
        if positionals.count > count { throw UsageError(message: "unexpected argument '\(positionals[count])'") }
    }

    func choice(_ name: String, of choices: [String], default value: String) throws(UsageError) -> String {
        let chosen = option(name) ?? value
        guard choices.contains(chosen) else {
            throw UsageError(message: "--\(name) must be one of \(choices.joined(separator: ", ")), not '\(chosen)'")
        }
        return chosen
    }
}
