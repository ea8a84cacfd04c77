import Foundation
import Testing
@testable import Strata

/// A writing command opens a store whose journal ends in a torn record (an interrupted write,
/// or damage at the very end, which look the same): opening cuts it, and the command says so
/// on standard error — the transactions in it are gone, and the next commit takes the first
/// number after those kept.
extension ImportCommandTests {
    @Test func writingCommandsNameTheTornTailTheyCut() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let artists = (1...30).map { #"{"entity": "Artist", "values": {"artistID": \#($0)}}"# }
        try await catalog.load(artists, batchSize: 10)  // transactions 1–3
        let segments = try FileManager.default.contentsOfDirectory(atPath: catalog.path).filter { $0.hasPrefix("journal-") }.sorted()
        let last = StoreLayout.join(catalog.path, try #require(segments.last))
        let size = try #require(try FileManager.default.attributesOfItem(atPath: last)[.size] as? Int)
        #expect(truncate(last, off_t(size - 10)) == 0)

        let file = try catalog.file("one.jsonl", [#"{"entity": "Artist", "values": {"artistID": 31}}"#])
        let imported = await runTool(["import", catalog.path, file])
        #expect(imported.status == 0, "\(imported.errors)")
        #expect(imported.errors.hasPrefix("strata import: note: cut "), "\(imported.errors)")
        #expect(imported.errors.contains(" of \(last) ("), "\(imported.errors)")
        #expect(imported.errors.contains("the store holds transactions 1–2, and the next commit is 3"), "\(imported.errors)")
        #expect(imported.output.contains("last 3"), "\(imported.output)")
        // Nothing was cut this time: no note.
        let again = await runTool(["import", catalog.path, try catalog.file("two.jsonl", [#"{"entity": "Artist", "values": {"artistID": 32}}"#])])
        #expect(again.status == 0 && again.errors.isEmpty, "\(again.errors)")
    }
}
