import Foundation

/// Runs a Python script with `/usr/bin/env python3`: `input` goes to its standard input as
/// JSON (snake_case keys), and what it prints on standard output is decoded as its result.
func runPythonScript<Input: Encodable, Output: Decodable>(_ script: String, input: Input) throws -> Output {
    guard FileManager.default.fileExists(atPath: script) else {
        throw BenchmarkError("the script \(script) is missing (it is found next to the benchmark's sources)")
    }
    let encoder = JSONEncoder()
    encoder.keyEncodingStrategy = .convertToSnakeCase
    let data = try encoder.encode(input)

    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", script]
    let stdin = Pipe(), stdout = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    try process.run()
    stdin.fileHandleForWriting.write(data)
    try stdin.fileHandleForWriting.close()
    let output = stdout.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationReason == .exit, process.terminationStatus == 0 else {
        if process.terminationReason == .exit && process.terminationStatus == 127 {
            throw BenchmarkError("python3 was not found (/usr/bin/env python3 exited with status 127)")
        }
        throw BenchmarkError("python3 \(script) failed (status \(process.terminationStatus))")
    }
    let decoder = JSONDecoder()
    decoder.keyDecodingStrategy = .convertFromSnakeCase
    do {
        return try decoder.decode(Output.self, from: output)
    } catch {
        throw BenchmarkError("python3 \(script) printed something that is not its result: \(error)")
    }
}
