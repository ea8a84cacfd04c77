import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// Objects whose optional unique key is null are referred to by their IDs in a dump; for a
/// key that is not a string, an import reads such a reference as the ID it is, so the
/// dump imports back identically.
extension ImportCommandTests {
    @Test func aDumpReferringToObjectsWithoutKeysImportsBack() async throws {
        let directory = TemporaryDirectory("strata-null-keys")
        defer { directory.remove() }
        let model = directory.appending("model.json")
        try #"""
        {"name": "Kin", "version": 1, "entities": [
          {"name": "Parent", "attributes": [{"name": "code", "type": "int", "unique": true, "optional": true}],
           "relationships": [{"name": "kids", "destination": "Kid", "inverse": "parent", "toMany": true}]},
          {"name": "Kid", "attributes": [{"name": "n", "type": "int", "unique": true, "optional": true}],
           "relationships": [{"name": "parent", "destination": "Parent", "inverse": "kids"}]}
        ]}
        """#.write(toFile: model, atomically: true, encoding: .utf8)
        let first = directory.appending("first"), second = directory.appending("second")
        for store in [first, second] {
            let created = await runTool(["create", store, "--model", model])
            #expect(created.status == 0, "\(created.errors)")
        }
        let input = directory.appending("input.jsonl")
        try [#"{"entity": "Kid", "values": {"n": 5}}"#, #"{"entity": "Kid", "values": {}}"#,
             #"{"entity": "Parent", "values": {"kids": [5]}}"#, #"{"entity": "Parent", "values": {"code": 7}}"#]
            .joined(separator: "\n").appending("\n").write(toFile: input, atomically: true, encoding: .utf8)
        let imported = await runTool(["import", first, input])
        #expect(imported.status == 0, "\(imported.errors)")
        let dump = await runTool(["dump", first])
        #expect(dump.output.contains(#""parent":"Parent/1""#), "\(dump.output)")
        let dumpFile = directory.appending("dump.jsonl")
        try dump.output.write(toFile: dumpFile, atomically: true, encoding: .utf8)
        let reimported = await runTool(["import", second, dumpFile])
        #expect(reimported.status == 0, "\(reimported.errors)")
        #expect(await runTool(["dump", second]).output == dump.output)
    }
}
