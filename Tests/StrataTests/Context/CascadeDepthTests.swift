import Foundation
import Testing
@testable import Strata

/// Cascades follow long chains of objects without running out of stack.
@Suite struct CascadeDepthTests {
    static let schema = try! Schema("Chain", entities: [
        Entity("Node",
               attributes: [Attribute("n", .int)],
               relationships: [Relationship("next", to: "Node", inverse: "previous", deleteRule: .cascade),
                               Relationship("previous", to: "Node", inverse: "next")]),
    ])

    @Test("deleting the head of a long cascade chain deletes every node")
    func longChain() async throws {
        let directory = TemporaryDirectory("strata-cascade-depth")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, schema: Self.schema)
        let context = ObjectContext(coordinator: Coordinator(store: store), name: "chain")
        let count = 10_000
        let deleted = try await context.perform { c throws -> Int in
            var previous: ManagedObject?
            var head: ManagedObject?
            for n in 0..<count {
                let node = c.insert(entity: "Node")
                node["n"] = .int(Int64(n))
                if let previous { try previous.setRelatedObject(node, forKey: "next") }
                if head == nil { head = node }
                previous = node
            }
            c.delete(head!)
            return c.insertedObjects.count
        }
        #expect(deleted == 0, "every node of the chain is deleted with its head")
        await store.close()
    }
}
