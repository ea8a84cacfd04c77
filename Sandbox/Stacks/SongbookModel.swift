import Foundation
import Strata

/// The songbook's song as a model class, for the scenarios that use typed access and live
/// results (the importer uses dynamic access, as a feed-driven importer would).
final class Song: ManagedObject {
    @Managed("songID") var songID: Int
    @Managed("title") var title: String
    @Managed("milliseconds") var milliseconds: Int
    @Managed("rating") var rating: Double?
}

extension StackBench {
    /// Songs `first...last` by key, in the context, in key order.
    static func songs(_ keys: ClosedRange<Int>, in context: isolated ObjectContext) throws(StoreError) -> [Song] {
        try context.fetch(Song.self, where: .written("songID BETWEEN {\(keys.lowerBound), \(keys.upperBound)}"), sortedBy: [SortKey("songID")])
    }
}

extension ObjectPredicate {
    /// A predicate from a format string the sandbox wrote itself (a mistake in it is a bug).
    static func written(_ format: String) -> ObjectPredicate {
        do throws(PredicateSyntaxError) {
            return try ObjectPredicate(format: format)
        } catch {
            preconditionFailure("sandbox predicate \"\(format)\": \(error)")
        }
    }
}
