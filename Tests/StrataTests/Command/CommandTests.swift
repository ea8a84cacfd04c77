import Testing
@testable import StrataCommand

@Suite struct CommandTests {
    func run(_ arguments: [String]) -> (status: Int32, output: String, errors: String) {
        var output = "", errors = ""
        let status = StrataCommand.run(arguments, output: { output += $0 }, errors: { errors += $0 })
        return (status, output, errors)
    }

    @Test func helpListsOnlyWhatExists() {
        let result = run(["help"])
        #expect(result.status == 0)
        #expect(result.output.contains("Commands available in this build:\n  help"))
        #expect(result.output.contains("Not available yet: create"))
    }

    @Test func plannedCommandsSayTheyAreMissing() {
        let result = run(["query", "/tmp/x", "--entity", "Artist"])
        #expect(result.status == 2)
        #expect(result.errors.hasPrefix("strata: 'query' is not available in this build"))
    }

    @Test func unknownCommandIsAUsageError() {
        let result = run(["frobnicate"])
        #expect(result.status == 2)
        #expect(result.errors.contains("unknown command 'frobnicate'"))
    }

    @Test func version() {
        #expect(run(["--version"]).output == "strata \(StrataCommand.version)\n")
    }
}
