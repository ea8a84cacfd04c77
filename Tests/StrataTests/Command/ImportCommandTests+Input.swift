import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// What editors and other tools leave in a file: a UTF-8 byte order mark at its start and a
/// last line ending in a lone carriage return are read past; an integer too large for 64
/// bits is named as such.
extension ImportCommandTests {
    @Test func aByteOrderMarkAndALoneFinalCarriageReturnAreReadPast() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let path = catalog.directory.appending("edited.jsonl")
        var bytes = Data([0xEF, 0xBB, 0xBF])
        bytes.append(Data((#"{"entity": "Artist", "values": {"artistID": 1, "name": "One"}}"# + "\r\n"
            + #"{"entity": "Artist", "values": {"artistID": 2, "name": "Two"}}"# + "\r").utf8))
        try bytes.write(to: URL(fileURLWithPath: path))
        let result = await runTool(["import", catalog.path, path])
        #expect(result.status == 0, "\(result.errors)")
        let generation = try await catalog.generation()
        #expect(generation.object(of: "Artist", uniqueValue: .int(1))?.values[1] == .string("One"))
        #expect(generation.object(of: "Artist", uniqueValue: .int(2))?.values[1] == .string("Two"))
    }

    @Test func anIntegerTooLargeForSixtyFourBitsIsNamedSo() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let file = try catalog.file("large.jsonl", [#"{"entity": "Artist", "values": {"artistID": 9223372036854775808, "name": "Big"}}"#])
        let result = await runTool(["import", catalog.path, file])
        #expect(result.status == 1)
        #expect(result.errors.contains("large.jsonl:1"), "\(result.errors)")
        #expect(result.errors.contains("outside the range of a 64-bit integer"), "\(result.errors)")
    }
}
