import Strata

/// The model class of the query benchmarks' `Item` entity (see ``QueryData``).
final class QueryItem: ManagedObject {
    override class var entityName: String { "Item" }

    @Managed("itemID") var itemID: Int
    @Managed("name") var name: String
    @Managed("price") var price: Double
    @Managed("category") var category: Int
    @Managed("tag") var tag: String
}
