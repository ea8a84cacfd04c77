import Strata

/// The rows the query benchmarks search, and the store holding them.
///
/// One entity, `Item(itemID int unique, name string, price double, category int indexed,
/// tag string)`. Item `k` (0-based, object number `k + 1`) has `itemID = k`,
/// `name = "item k"`, and from three draws `a`, `b`, `c` of a SplitMix64 generator seeded
/// with ``seed``: `price = (a % 100000) / 100` (0.00 … 999.99), `category = b % 1000` and
/// `tag = "t" + (c % 1000)`. `sqlite_compare.py` builds the same rows the same way.
enum QueryData {
    static let seed: UInt64 = 0x5EED_0F_DA7A
    /// Rows per commit while loading.
    static let batch = 10_000
    /// How many distinct categories and tags there are.
    static let categories = 1_000
    static let tags = 1_000

    static let schema: Schema = {
        do {
            return try Schema("QueryBenchmark", version: 1, entities: [
                Entity("Item", attributes: [
                    Attribute("itemID", .int, unique: true),
                    Attribute("name", .string),
                    Attribute("price", .double),
                    Attribute("category", .int, indexed: true),
                    Attribute("tag", .string),
                ]),
            ])
        } catch {
            fatalError("the query benchmark schema is invalid: \(error)")
        }
    }()

    /// The values of items `0..<count`, in order (storage order: itemID, name, price, category, tag).
    static func values(_ count: Int) -> [[Value]] {
        var random = SplitMix64(seed: seed)
        return (0..<count).map { k in
            let a = random.next(), b = random.next(), c = random.next()
            return [
                .int(Int64(k)),
                .string("item \(k)"),
                .double(Double(a % 100_000) / 100),
                .int(Int64(b % UInt64(categories))),
                .string("t\(c % UInt64(tags))"),
            ]
        }
    }

    /// A new store at `path` (durability `.none`) holding items `0..<count`, committed
    /// ``batch`` rows at a time. Returns the store and the seconds the commits took.
    static func load(_ path: String, count: Int) async throws -> (store: Store, seconds: Double) {
        let store = try Store.create(at: path, schema: schema, configuration: configuration(.none))
        let rows = values(count)
        let start = monotonicNanoseconds()
        var next = 0
        while next < count {
            let end = min(count, next + batch)
            let ids = store.allocateObjectIDs(for: "Item", count: end - next)
            let inserted = zip(ids, rows[next..<end]).map { RowImage(id: $0, values: $1) }
            try await store.commit(ChangeSet(author: "loader", inserted: inserted))
            next = end
        }
        let seconds = secondsSince(start)
        let stored = store.currentGeneration.count(of: "Item")
        guard stored == count else { throw BenchmarkError("loading: \(stored) items in the store, expected \(count)") }
        return (store, seconds)
    }
}
