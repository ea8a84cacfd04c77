import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// An import that fails commits nothing after its reported commits, and gives back the
/// object numbers its uncommitted lines took: the same lines, fixed, imported again through
/// the same store keep the `"id"`s they give.
extension ImportCommandTests {
    @Test(arguments: [nil, 1] as [Int?])
    func aFailedImportCanBeRetriedThroughTheSameStore(batchSize: Int?) async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let good = [
            #"{"entity": "Artist", "id": "Artist/1", "values": {"artistID": 1}}"#,
            #"{"entity": "Artist", "values": {"artistID": 2}}"#,
            #"{"entity": "Artist", "id": "Artist/5", "values": {"artistID": 5}}"#,
        ]
        let bad = try catalog.file("bad.jsonl", good + [#"{"entity": "Artist", "values": {"artistID": "three"}}"#])
        let fixed = try catalog.file("fixed.jsonl", good)
        let store = try Store.open(at: catalog.path)
        var first = JSONLinesImporter(store: store, batchSize: batchSize.map { $0 + 3 })
        await #expect(throws: JSONLinesImporter.ImportError.self) { _ = try await first.run(try JSONLinesReader(path: bad)) }
        #expect(store.currentGeneration.count(of: "Artist") == 0)
        var again = JSONLinesImporter(store: store, batchSize: batchSize)
        let summary = try await again.run(try JSONLinesReader(path: fixed))
        #expect(summary.inserted == 3)
        let generation = store.currentGeneration
        #expect(generation.object(ObjectID(entity: "Artist", number: 1))?.values[0] == .int(1))
        #expect(generation.object(ObjectID(entity: "Artist", number: 5))?.values[0] == .int(5))
        await store.close()
    }

    /// Only numbers still their entity's highest are taken back: one handed out after them
    /// (to another importer, or a context) keeps them handed out.
    @Test func numbersHandedOutAfterAreNotTakenBack() async throws {
        let directory = TemporaryDirectory("strata-take-back")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let artist = store.schema.entityIndex(named: "Artist")!
        let previous = try #require(store.reserveObjectNumber(5, entity: artist))
        let six = store.allocateObjectID(entity: artist)
        var handedOut = Store.HandedOutNumbers()
        handedOut.record(entity: artist, number: 5, previous: previous)
        handedOut.record(entity: artist, number: 6, previous: 5)
        let seven = store.allocateObjectIDs(for: "Artist")[0]
        store.takeBack(handedOut)
        #expect(store.reserveObjectNumber(5, entity: artist) == nil, "5 stays handed out: 7 was handed out after it")
        #expect(store.allocateObjectIDs(for: "Artist")[0].number == 8)
        _ = (six, seven)
        var last = Store.HandedOutNumbers()
        last.record(entity: artist, number: 8, previous: 7)
        store.takeBack(last)
        #expect(store.allocateObjectIDs(for: "Artist")[0].number == 8, "8 was the highest: taken back")
        await store.close()
    }
}
