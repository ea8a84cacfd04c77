import Strata

/// The objects the context benchmarks work with: items, each in one of a few categories
/// (one category per 100 items), so that inserting an item also maintains the inverse
/// to-many of its category.
enum ContextModel {
    static let schema: Schema = {
        do {
            return try Schema("ContextBenchmark", version: 1, entities: [
                Entity("Item",
                       attributes: [Attribute("itemID", .int, unique: true), Attribute("name", .string), Attribute("value", .double)],
                       relationships: [Relationship("category", to: "Category", inverse: "items")]),
                Entity("Category",
                       attributes: [Attribute("name", .string)],
                       relationships: [Relationship("items", to: "Item", inverse: "category", toMany: true)]),
            ])
        } catch {
            fatalError("the context benchmark schema is invalid: \(error)")
        }
    }()

    static let classes: [ManagedObject.Type] = [Item.self, Category.self]

    /// Items per category.
    static let itemsPerCategory = 100

    /// A new store and a coordinator on it.
    static func open(_ path: String, durability: Durability, observer: ContextObserver? = nil) throws -> Coordinator {
        let store = try Store.create(at: path, schema: schema, configuration: configuration(durability))
        return Coordinator(store: store, modelClasses: classes, observer: observer)
    }

    /// Inserts `count` items and their categories (deterministic values).
    static func insert(_ count: Int, into context: isolated ObjectContext) {
        let categories = (0..<max(1, (count + itemsPerCategory - 1) / itemsPerCategory)).map { k in
            let category = context.insert(Category.self)
            category.name = "category \(k)"
            return category
        }
        for k in 0..<count {
            let item = context.insert(Item.self)
            item.itemID = k
            item.name = "item \(k)"
            item.value = Double(k) * 0.5
            item.category = categories[k / itemsPerCategory]
        }
    }

    /// Commits `count` items through a context of its own and returns their IDs in order.
    static func seed(_ coordinator: Coordinator, count: Int) async throws -> [ObjectID] {
        let seeder = ObjectContext(coordinator: coordinator, executor: .privateQueue("benchmark.seed"), name: "seed")
        await seeder.perform { c in insert(count, into: c) }
        try await seeder.save()
        let ids = coordinator.currentGeneration.objects(of: "Item").map(\.id)
        guard ids.count == count else { throw BenchmarkError("seeding: \(ids.count) items in the store, expected \(count)") }
        return ids
    }

    /// Checks that the store holds `count` items.
    static func expectItems(_ coordinator: Coordinator, _ count: Int, _ what: String) throws {
        let found = coordinator.currentGeneration.count(of: "Item")
        guard found == count else { throw BenchmarkError("\(what): \(found) items in the store, expected \(count)") }
    }
}

final class Item: ManagedObject {
    @Managed("itemID") var itemID: Int
    @Managed("name") var name: String
    @Managed("value") var value: Double
    @ToOne("category") var category: Category?
}

final class Category: ManagedObject {
    @Managed("name") var name: String
    @ToMany("items") var items: [Item]
}
