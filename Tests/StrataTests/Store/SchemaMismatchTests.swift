import Foundation
import Testing
@testable import Strata

/// Opening a store with another schema than the one it records is refused, and the advice
/// follows which of the two is newer: migrate the store to a newer schema; open a newer
/// store with its own; give a changed schema that kept its version a higher one. (The
/// advice was always to migrate the store, also when the store was the newer one.)
@Suite struct SchemaMismatchTests {
    static func songbook(version: Int, renamingTitle: Bool = false) throws -> Schema {
        let entities = Fixtures.songbook.entities.map { entity in
            var entity = entity
            if renamingTitle, entity.name == "Album", let i = entity.attributes.firstIndex(where: { $0.name == "title" }) {
                entity.attributes[i].name = "name"
            }
            return entity
        }
        return try Schema(Fixtures.songbook.name, version: version, entities: entities)
    }

    @Test("the advice follows which schema is newer", arguments: [(2, 1, "the store is newer"), (1, 2, "migrate the store"), (1, 1, "give the changed schema a higher version")])
    func adviceFollowsTheVersions(stored: Int, given: Int, advice: String) async throws {
        let directory = TemporaryDirectory("strata-schema-mismatch")
        defer { directory.remove() }
        let path = directory.appending("store.strata")
        let store = try Store.create(at: path, schema: try Self.songbook(version: stored))
        await store.close()
        let error = #expect(throws: StoreError.self) {
            _ = try Store.open(at: path, schema: try Self.songbook(version: given, renamingTitle: true))
        }
        #expect(error?.code == .schemaMismatch)
        #expect(error?.message.contains(advice) == true, "\(error?.message ?? "")")
    }
}
