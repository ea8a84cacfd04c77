import Foundation
import Testing
@testable import Strata

/// NaN equals no value, itself included, so it cannot identify an object: a unique double
/// refuses it (a second NaN would otherwise pass the duplicate checks, and the index entry
/// could never be found again to remove), while a plain double keeps it.
extension ConstraintTests {
    static let points = try! Schema("Points", version: 1, entities: [
        Entity("Point", attributes: [Attribute("x", .double, unique: true), Attribute("y", .double, optional: true)]),
    ])

    @Test("a unique double refuses NaN, at commit and when a context saves; a plain double keeps it")
    func nanIsNotAUniqueValue() async throws {
        let directory = TemporaryDirectory("constraint-nan")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, schema: Self.points)
        let ids = store.allocateObjectIDs(for: "Point", count: 2)
        try await store.commit(ChangeSet(inserted: [RowImage(id: ids[0], values: [.double(1), .double(.nan)])]))
        let refused = await #expect(throws: StoreError.self) {
            try await store.commit(ChangeSet(inserted: [RowImage(id: ids[1], values: [.double(.nan), .null])]))
        }
        #expect(refused?.code == .invalidValue)
        #expect(refused?.key == "x")
        #expect(refused?.message.contains("NaN") == true, "\(refused?.message ?? "")")
        let generation = store.currentGeneration
        #expect(generation.objects(of: "Point").count == 1)
        #expect(generation.uniqueIndexes[0]?.count == 1)
        let refusedUpdate = await #expect(throws: StoreError.self) {
            try await store.commit(ChangeSet(updated: [generation.update(ids[0], ["x": .double(.nan)])]))
        }
        #expect(refusedUpdate?.code == .invalidValue)

        let coordinator = Coordinator(store: store, name: "nan")
        let context = ObjectContext(coordinator: coordinator, executor: .privateQueue("nan"), name: "editor")
        let saved = await context.perform { context -> StoreError? in
            let point = context.insert(entity: "Point")
            do {
                try point.setValue(.double(.nan), forKey: "x")
                try await context.save()
                return nil
            } catch let error as StoreError {
                return error
            } catch {
                return StoreError(.io, "unexpected error \(error)")
            }
        }
        #expect(saved?.code == .invalidValue, "\(String(describing: saved))")
        #expect(store.currentGeneration.objects(of: "Point").count == 1)
        await store.close()
    }

    static let ranged = try! Schema("Ranged", version: 1, entities: [
        Entity("Reading", attributes: [Attribute("level", .double, min: .double(0), max: .double(10))]),
    ])

    @Test("NaN is outside a double's declared range")
    func nanIsOutsideEveryRange() async throws {
        let directory = TemporaryDirectory("constraint-nan-range")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, schema: Self.ranged)
        let id = store.allocateObjectIDs(for: "Reading")[0]
        let refused = await #expect(throws: StoreError.self) {
            try await store.commit(ChangeSet(inserted: [RowImage(id: id, values: [.double(.nan)])]))
        }
        #expect(refused?.code == .invalidValue)
        #expect(refused?.message.contains("NaN") == true, "\(refused?.message ?? "")")
        #expect(store.currentGeneration.objects(of: "Reading").isEmpty)
        await store.close()
    }
}