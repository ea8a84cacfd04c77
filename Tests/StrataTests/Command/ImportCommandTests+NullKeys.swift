import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// Objects whose optional unique key is null are referred to by their IDs in a dump: as
/// `"Entity/N"` where the key is not a string (an import reads that as the ID it is), as
/// `{"id": "Entity/N"}` where it is one. Either way the dump imports back identically.
extension ImportCommandTests {
    @Test func aDumpReferringToObjectsWithoutKeysImportsBack() async throws {
        let dump = try await dumpRoundTrip(model: #"""
            {"name": "Kin", "version": 1, "entities": [
              {"name": "Parent", "attributes": [{"name": "code", "type": "int", "unique": true, "optional": true}],
               "relationships": [{"name": "kids", "destination": "Kid", "inverse": "parent", "toMany": true}]},
              {"name": "Kid", "attributes": [{"name": "n", "type": "int", "unique": true, "optional": true}],
               "relationships": [{"name": "parent", "destination": "Parent", "inverse": "kids"}]}
            ]}
            """#, input: [#"{"entity": "Kid", "values": {"n": 5}}"#, #"{"entity": "Kid", "values": {}}"#,
                          #"{"entity": "Parent", "values": {"kids": [5]}}"#, #"{"entity": "Parent", "values": {"code": 7}}"#])
        #expect(dump.first.contains(#""parent":"Parent/1""#), "\(dump.first)")
        #expect(dump.second == dump.first)
    }

    /// For a *string* key "Entity/N" is a key like any other text, so a dump names an object
    /// without a key by `{"id": "Entity/N"}`, which no key can read the same. Here a parent
    /// without a code and another whose code is the text "Parent/1" both import back as they were.
    @Test func aDumpReferringToObjectsWithoutStringKeysImportsBack() async throws {
        let directory = TemporaryDirectory("strata-null-string-keys")
        defer { directory.remove() }
        let model = directory.appending("model.json")
        try #"""
        {"name": "Kin", "version": 1, "entities": [
          {"name": "Parent", "attributes": [{"name": "code", "type": "string", "unique": true, "optional": true}],
           "relationships": [{"name": "kids", "destination": "Kid", "inverse": "parent", "toMany": true}]},
          {"name": "Kid", "attributes": [{"name": "name", "type": "string", "unique": true, "optional": true}],
           "relationships": [{"name": "parent", "destination": "Parent", "inverse": "kids"}]}
        ]}
        """#.write(toFile: model, atomically: true, encoding: .utf8)
        let first = directory.appending("first"), second = directory.appending("second")
        for store in [first, second] {
            let created = await runTool(["create", store, "--model", model])
            #expect(created.status == 0, "\(created.errors)")
        }
        let input = directory.appending("input.jsonl")
        try [#"{"entity": "Parent", "values": {"kids": ["k"]}}"#,  // Parent/1, no code
             #"{"entity": "Parent", "values": {"code": "Parent/1"}}"#,  // Parent/2, whose code reads like an ID
             #"{"entity": "Kid", "values": {"name": "k"}}"#,
             #"{"entity": "Kid", "values": {"parent": "Parent/1"}}"#]  // a key: Parent/2
            .joined(separator: "\n").appending("\n").write(toFile: input, atomically: true, encoding: .utf8)
        let imported = await runTool(["import", first, input])
        #expect(imported.status == 0, "\(imported.errors)")
        let dump = await runTool(["dump", first])
        #expect(dump.output.contains(#""kids":[{"id":"Kid/2"}]"#), "\(dump.output)")
        #expect(dump.output.contains(#""name":"k","parent":{"id":"Parent/1"}"#), "\(dump.output)")
        #expect(dump.output.contains(#""name":null,"parent":"Parent/1""#), "\(dump.output)")
        let dumpFile = directory.appending("dump.jsonl")
        try dump.output.write(toFile: dumpFile, atomically: true, encoding: .utf8)
        let reimported = await runTool(["import", second, dumpFile])
        #expect(reimported.status == 0, "\(reimported.errors)")
        #expect(await runTool(["dump", second]).output == dump.output)

        // A table shows such a reference as the plain ID.
        let table = await runTool(["query", first, "--entity", "Kid", "--format", "table"])
        #expect(table.output.contains("Parent/1"), "\(table.output)")
        #expect(!table.output.contains("{"), "\(table.output)")
    }
}

extension ImportCommandTests {
    /// FORMATS §2: a line whose key an object created earlier in the input holds updates it,
    /// also when that object took the key as its attribute's default: with one transaction
    /// as with a batch per line (where the object is already in the store by then).
    @Test func aKeyAnEarlierObjectTookAsItsDefaultIsUpserted() async throws {
        let model = #"""
            {"name": "Things", "version": 1, "entities": [
              {"name": "Thing", "attributes": [{"name": "code", "type": "int", "unique": true, "default": 0},
                                               {"name": "text", "type": "string", "optional": true}],
               "relationships": [{"name": "parts", "destination": "Part", "inverse": "thing", "toMany": true}]},
              {"name": "Part", "attributes": [{"name": "label", "type": "string"}],
               "relationships": [{"name": "thing", "destination": "Thing", "inverse": "parts"}]}
            ]}
            """#
        for batchSize in [nil, 1] as [Int?] {
            let things = CatalogStore(model: model)
            defer { things.remove() }
            try await things.create()
            let store = things.path
            let file = try things.file("things.jsonl", [
                #"{"entity": "Part", "values": {"label": "waits for code 0", "thing": 0}}"#,
                #"{"entity": "Thing", "values": {"text": "default code"}}"#,
                #"{"entity": "Thing", "values": {"code": 0, "text": "updated"}}"#,
                #"{"entity": "Part", "values": {"label": "refers to code 0", "thing": 0}}"#,
            ])
            let result = await runTool(["import", store, file] + (batchSize.map { ["--batch-size", String($0)] } ?? []))
            #expect(result.status == 0, "\(batchSize as Any): \(result.errors)")
            let dump = await runTool(["dump", store])
            #expect(dump.output == """
                {"entity":"Thing","id":"Thing/1","values":{"code":0,"text":"updated","parts":["Part/1","Part/2"]}}
                {"entity":"Part","id":"Part/1","values":{"label":"waits for code 0","thing":0}}
                {"entity":"Part","id":"Part/2","values":{"label":"refers to code 0","thing":0}}

                """, "\(batchSize as Any)")
        }
    }
}
