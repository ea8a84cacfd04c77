import Foundation
import Testing

@testable import Strata

/// The fuzz targets' seeds and every input kept from a fuzzer's crash (`Tests/Fuzz/run`,
/// `Fixtures/fuzz/TARGET/`) run through the targets: none may trap. The seeds describe sound
/// stores, which open to the state their transactions leave.
@Suite struct FuzzCorpusTests {
    static func kept(_ target: String) throws -> [(name: String, bytes: [UInt8])] {
        let fixtures = try #require(Bundle.module.url(forResource: "Fixtures", withExtension: nil), "the Fixtures resource is missing")
        let directory = fixtures.appendingPathComponent("fuzz").appendingPathComponent(target)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return try names.sorted().filter { !$0.hasPrefix(".") }.map { name in
            (name, [UInt8](try Data(contentsOf: directory.appendingPathComponent(name))))
        }
    }

    @Test func keptInputsAndSeedsOpenOrAreRefused() throws {
        let inputs = try Self.kept("open").map(\.bytes) + FuzzTargets.seedInputs().open + [[], [1], [0xFF], [1, 0xFF, 0xFF]]
        for input in inputs { input.withUnsafeBytes { FuzzTargets.openStore($0) } }
    }

    @Test func keptInputsAndSeedsDecodeOrAreRefused() throws {
        let inputs = try Self.kept("decode").map(\.bytes) + FuzzTargets.seedInputs().decode + [[], [0], [0xFF]]
        for input in inputs { input.withUnsafeBytes { FuzzTargets.decodeTransaction($0) } }
    }

    @Test func keptInputsAndSeedsParseAsJSONOrAreRefused() throws {
        let inputs = try Self.kept("json").map(\.bytes) + FuzzTargets.seedInputs().json + [[], Array("1e999".utf8), Array("\"\\ud800\"".utf8)]
        for input in inputs { input.withUnsafeBytes { FuzzTargets.parseJSON($0) } }
    }

    /// (The target waits for the import on its calling thread: a thread of its own here,
    /// never one of the concurrency pool's few.)
    @Test func keptInputsAndSeedsImportOrAreRefusedWithTheStoreUnchanged() async throws {
        let inputs = try Self.kept("import").map(\.bytes) + FuzzTargets.seedInputs().importLines + [[], Array("{}".utf8), Array("\n\n".utf8)]
        try await onOwnThread {
            for input in inputs { input.withUnsafeBytes { FuzzTargets.importLines($0) } }
        }
    }

    /// The import seeds are imports that succeed (a seed refused would start the fuzzer on
    /// the error path only).
    @Test func importSeedsSucceed() async throws {
        for seed in FuzzTargets.seedInputs().importLines {
            let directory = TemporaryDirectory("strata-fuzz-seed")
            defer { directory.remove() }
            // A first line of one digit is the batch size (see `FuzzTargets.importLines`).
            let batched = seed.count >= 2 && seed[1] == UInt8(ascii: "\n")
            try Data(batched ? Array(seed.dropFirst(2)) : seed).write(to: URL(fileURLWithPath: directory.appending("seed.jsonl")))
            let store = try Store.create(at: directory.appending("store"), schema: FuzzTargets.schema, configuration: .init(durability: .none))
            try await store.commit(FuzzTargets.Fixture.importBase(store))
            var importer = JSONLinesImporter(store: store, batchSize: batched ? Int(seed[0] - UInt8(ascii: "0")) : nil)
            let summary = try await importer.run(try JSONLinesReader(path: directory.appending("seed.jsonl")))
            #expect(summary.transactions == (batched ? 2 : 1), "\(String(decoding: seed, as: UTF8.self))")
            #expect(store.currentGeneration.integrityProblems().isEmpty)
            await store.close()
        }
    }

    /// The seeds are sound stores: without a checkpoint, with one, and with a torn last
    /// record (which opening cuts).
    @Test func seedsDescribeSoundStores() throws {
        let seeds = FuzzTargets.seedInputs().open
        #expect(seeds.count == 3)
        for (seed, expected) in zip(seeds, [(6, true), (5, true), (6, false)]) {
            let memory = InMemoryFileIO()
            try memory.createDirectory(FuzzTargets.Fixture.directory)
            let files = seed.withUnsafeBytes { FuzzTargets.Fixture.shared.files(for: $0) }
            #expect(files.contains { StoreLayout.checkpointTransaction($0.name) != nil } == !expected.1)
            for (name, bytes) in files { try memory.setContents(bytes, of: StoreLayout.join(FuzzTargets.Fixture.directory, name)) }
            let store = try Store.open(at: FuzzTargets.Fixture.directory, configuration: .init(fileIO: memory, readOnly: true))
            let generation = store.currentGeneration
            #expect(generation.transaction == UInt64(expected.0))
            #expect(generation.integrityProblems().isEmpty, "\(generation.integrityProblems())")
        }
    }
}
