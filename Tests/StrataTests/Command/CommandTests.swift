import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// The dump round trip of FORMATS §3: two stores made from `model`, `input` imported into
/// the first, its dump imported into the second. Returns both dumps (equal when it holds).
func dumpRoundTrip(model: String, input: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws -> (first: String, second: String) {
    let directory = TemporaryDirectory("strata-round-trip")
    defer { directory.remove() }
    let modelFile = directory.appending("model.json")
    try model.write(toFile: modelFile, atomically: true, encoding: .utf8)
    let first = directory.appending("first"), second = directory.appending("second")
    for store in [first, second] {
        let created = await runTool(["create", store, "--model", modelFile])
        #expect(created.status == 0, "\(created.errors)", sourceLocation: sourceLocation)
    }
    let inputFile = directory.appending("input.jsonl")
    try input.joined(separator: "\n").appending("\n").write(toFile: inputFile, atomically: true, encoding: .utf8)
    let imported = await runTool(["import", first, inputFile])
    #expect(imported.status == 0, "\(imported.errors)", sourceLocation: sourceLocation)
    let dump = await runTool(["dump", first])
    let dumpFile = directory.appending("dump.jsonl")
    try dump.output.write(toFile: dumpFile, atomically: true, encoding: .utf8)
    let reimported = await runTool(["import", second, dumpFile])
    #expect(reimported.status == 0, "\(reimported.errors)", sourceLocation: sourceLocation)
    return (dump.output, await runTool(["dump", second]).output)
}

/// Runs the tool in-process and captures what it prints.
func runTool(_ arguments: [String]) async -> (status: Int32, output: String, errors: String) {
    let output = Locked(""), errors = Locked("")
    let status = await StrataCommand.run(arguments, output: { text in output.withLock { $0 += text } },
                                         errors: { text in errors.withLock { $0 += text } })
    return (status, output.withLock { $0 }, errors.withLock { $0 })
}

@Suite struct CommandTests {
    @Test func helpListsEveryCommand() async {
        let result = await runTool(["help"])
        #expect(result.status == 0)
        #expect(result.output.contains("  create     create an empty store"))
        for name in ["create", "import", "query", "aggregate", "update", "delete", "dump", "info", "verify", "compact", "migrate", "schema", "history"] {
            #expect(result.output.contains("\n  \(name) "), "strata help lists \(name)")
        }
        for command in StrataCommand.commands {
            let help = await runTool(["help", command.name])
            #expect(help.status == 0)
            // `strata COMMAND --help` (or `-h`), anywhere among its arguments, says the same.
            for asked in [[command.name, "--help"], [command.name, "store.strata", "-h"]] {
                let same = await runTool(asked)
                #expect(same.status == 0 && same.output == help.output && same.errors.isEmpty, "\(asked): \(same.errors)")
            }
            #expect(help.output.hasPrefix("usage: \(command.usage)"))
            #expect(help.output.contains("example:\n  strata \(command.name) "), "\(command.name)")
        }
        let create = await runTool(["help", "create"])
        #expect(create.output.hasPrefix("usage: strata create STORE --model MODEL.json"))
        #expect(create.output.contains("example:"))
        // The two commands the list shows beside the others are explained too.
        for listed in ["help", "version"] {
            let help = await runTool(["help", listed])
            #expect(help.status == 0 && help.output.hasPrefix("usage: strata \(listed)") && help.errors.isEmpty, "\(listed): \(help.errors)")
        }
    }

    @Test func usageErrorsExitTwoWithTheUsageLine() async {
        let unknown = await runTool(["frobnicate"])
        #expect(unknown.status == 2 && unknown.errors.contains("unknown command 'frobnicate'"))
        let missing = await runTool(["create", "/tmp/nowhere"])
        #expect(missing.status == 2)
        #expect(missing.errors == "strata create: --model is required\nusage: strata create STORE --model MODEL.json\n")
        let option = await runTool(["info", "/tmp/x", "--colour", "red"])
        #expect(option.status == 2 && option.errors.hasPrefix("strata info: unknown option --colour"))
        let format = await runTool(["info", "/tmp/x", "--format", "xml"])
        #expect(format.status == 2 && format.errors.hasPrefix("strata info: --format must be one of text, json, not 'xml'"))
        // An option given twice is refused (one of the two would otherwise be ignored)…
        let twice = await runTool(["query", "/tmp/x", "--entity", "Artist", "--where", "artistID == 1", "--where=artistID == 2"])
        #expect(twice.status == 2 && twice.errors.hasPrefix("strata query: --where is given more than once; give it once\nusage: strata query"),
                "\(twice.errors)")
        // …but for `--set`, which takes one assignment each time (the store does not exist: a runtime error).
        let sets = await runTool(["update", "/tmp/strata-no-such-store", "--entity", "Artist", "--where", "artistID == 1", "--set", "name=A", "--set", "artistID=2"])
        #expect(sets.status == 1, "\(sets.errors)")
        // No command at all: the usage, on standard error.
        let bare = await runTool([])
        #expect(bare.status == 2 && bare.output.isEmpty && bare.errors.hasPrefix("usage: strata COMMAND"), "\(bare.errors)")
    }

    @Test("a lone -- ends the options: what follows is a store or file, even named like an option")
    func endOfOptions() async {
        for name in ["--colour", "--help", "-h"] {
            let result = await runTool(["info", "--", name])
            #expect(result.status == 1, "\(name): \(result.errors)")
            #expect(result.errors.contains(name) && !result.errors.contains("usage:"), "\(name): \(result.errors)")
        }
        let extra = await runTool(["info", "--", "a.strata", "b.strata"])
        #expect(extra.status == 2 && extra.errors.hasPrefix("strata info: unexpected argument 'b.strata'"), "\(extra.errors)")
    }

    @Test func version() async {
        #expect(await runTool(["--version"]).output == "strata \(StrataCommand.version)\n")
    }
}

@Suite struct StoreCommandTests {
    let directory = TemporaryDirectory("strata-cli")
    var store: String { directory.appending("songs.strata") }

    func writeModel() throws -> String {
        let path = directory.appending("model.json")
        try Fixtures.songbook.modelFileJSON.prettyText.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func populate() async throws {
        let store = try Store.open(at: self.store)
        let artists = store.allocateObjectIDs(for: "Artist", count: 3)
        for (i, id) in artists.enumerated() {
            try await store.commit(ChangeSet(author: "test", inserted: [
                RowImage(id: id, values: [.int(Int64(i + 1)), .string("A\(i)"), .date(Date(timeIntervalSince1970: 0)), .objects([])]),
            ]))
        }
        await store.close()
    }

    @Test func createInfoVerifyCompact() async throws {
        defer { directory.remove() }
        let model = try writeModel()
        let created = await runTool(["create", store, "--model", model])
        #expect(created.status == 0, "\(created.errors)")
        #expect(created.output.hasPrefix("created \(store): schema \"Songbook\" version 1, 3 entities, fingerprint \(Fixtures.songbook.fingerprint)"))
        try await populate()

        let info = await runTool(["info", store])
        #expect(info.status == 0)
        #expect(info.output.contains("transactions: 3\n"))
        #expect(info.output.contains("objects:      3\n"))
        #expect(info.output.contains("  Artist  3\n"))
        let json = try JSON.parse(await runTool(["info", store, "--format", "json"]).output)
        #expect(json["totalObjects"] == .int(3))
        #expect(json["objects"]?["Artist"] == .int(3))
        #expect(json["schema"]?["fingerprint"] == .string(Fixtures.songbook.fingerprint.description))

        let verified = await runTool(["verify", store])
        #expect(verified.status == 0, "\(verified.errors)")
        #expect(verified.output.hasPrefix("ok: \(store): 3 transactions, 3 objects;"))

        let compacted = await runTool(["compact", store])
        #expect(compacted.status == 0, "\(compacted.errors)")
        #expect(compacted.output.contains("checkpoint through transaction 3, 3 objects"))
        // Again, with nothing new: nothing is written, and it says so.
        let again = await runTool(["compact", store])
        #expect(again.status == 0 && again.output == "\(store): nothing to compact; its checkpoint through transaction 3 already covers every transaction\n",
                "\(again.output)")
        let after = await runTool(["info", store, "--format", "json"])
        #expect(try JSON.parse(after.output)["checkpoint"] == .int(3))
        #expect(await runTool(["verify", store]).status == 0)
    }

    @Test func createRefusesAnExistingStoreAndABadModel() async throws {
        defer { directory.remove() }
        let model = try writeModel()
        #expect(await runTool(["create", store, "--model", model]).status == 0)
        let again = await runTool(["create", store, "--model", model])
        #expect(again.status == 1)
        #expect(again.errors.hasPrefix("strata create: alreadyExists: \(store) is not empty"))
        let bad = directory.appending("bad.json")
        try #"{"name":"S","entities":[{"name":"A","attributes":[{"name":"x","type":"integer"}]}]}"#
            .write(toFile: bad, atomically: true, encoding: .utf8)
        let refused = await runTool(["create", directory.appending("other.strata"), "--model", bad])
        #expect(refused.status == 1)
        #expect(refused.errors.contains("entity \"A\", property \"x\": unknown type \"integer\""))
    }

    @Test func verifyNamesDamageByFileAndOffset() async throws {
        defer { directory.remove() }
        #expect(await runTool(["create", store, "--model", try writeModel()]).status == 0)
        try await populate()
        // Flip a byte inside the first transaction record: later records are intact.
        let segment = try #require(try FileManager.default.contentsOfDirectory(atPath: store).first { $0.hasPrefix("journal-") })
        let path = store + "/" + segment
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let firstRecord = try #require(Self.offsetOfTransaction(1, in: bytes))
        bytes[firstRecord + 12] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let result = await runTool(["verify", store])
        #expect(result.status == 1)
        #expect(result.errors.hasPrefix("strata verify: corrupted: checksum mismatch"))
        #expect(result.errors.contains("[\(path), offset \(firstRecord), transaction 1]"))
    }

    @Test func verifyNamesABrokenInverseByObjectAndKey() async throws {
        defer { directory.remove() }
        #expect(await runTool(["create", store, "--model", try writeModel()]).status == 0)
        // The journal stores what it is given; the store would refuse this transaction.
        var state = ReplayedState()
        let journal = try Journal.open(at: store, replayingInto: &state)
        try await journal.append(TransactionRecord(number: 1, inserted: [
            RowImage(id: ObjectID(entity: "Album", number: 1),
                     values: [.int(1), .string("x"), .null, .bool(false), .object(ObjectID(entity: "Artist", number: 9)), .objects([])]),
        ]))
        await journal.close()
        let result = await runTool(["verify", store])
        #expect(result.status == 1)
        #expect(result.errors.hasPrefix("strata verify: Album/1.artist: refers to Artist/9, which does not exist"))
    }

    /// The offset of the frame of transaction `number` in a segment's bytes.
    static func offsetOfTransaction(_ number: UInt64, in bytes: [UInt8]) -> Int? {
        var offset = 8
        var seen = 0
        while offset + 9 <= bytes.count {
            let length = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
            if bytes[offset + 8] == 3 {
                seen += 1
                if seen == Int(number) { return offset }
            }
            offset += 9 + length
        }
        return nil
    }
}
