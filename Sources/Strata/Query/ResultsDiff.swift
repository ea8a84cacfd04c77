/// A position in sectioned results.
public struct ResultsIndexPath: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The section's index.
    public var section: Int
    /// The row's index within its section.
    public var row: Int

    /// The position of a row in a section.
    public init(section: Int, row: Int) {
        self.section = section
        self.row = row
    }

    /// Section first, then row.
    public static func < (a: ResultsIndexPath, b: ResultsIndexPath) -> Bool {
        (a.section, a.row) < (b.section, b.row)
    }

    public var description: String { "[\(section), \(row)]" }
}

/// Sectioned results as object IDs: what a ``ResultsDiff`` turns into the next snapshot.
public struct ResultsSnapshot: Sendable, Hashable {
    /// One section: its key and its objects.
    public struct Section: Sendable, Hashable {
        /// The section key's value.
        public var key: Value
        /// The objects, in order.
        public var ids: [ObjectID]
    }

    /// The sections, in order (one section with key `.null` for unsectioned results).
    public var sections: [Section]

    /// A snapshot of these sections.
    public init(sections: [Section]) { self.sections = sections }

    /// Applies a diff the way a table view applies a batch update: deletions and moves'
    /// sources at old positions (rows, then sections, highest first), then section and row
    /// insertions and moves' destinations at new positions (lowest first).
    public func applying(_ diff: ResultsDiff) -> ResultsSnapshot {
        var sections = self.sections.map { (key: $0.key, ids: $0.ids.map(Optional.some)) }
        for path in diff.deletedRows { sections[path.section].ids[path.row] = nil }
        for move in diff.movedRows { sections[move.from.section].ids[move.from.row] = nil }
        for index in diff.deletedSections.sorted(by: >) { sections.remove(at: index) }
        var result = sections.map { Section(key: $0.key, ids: $0.ids.compactMap { $0 }) }
        for inserted in diff.insertedSections.sorted(by: { $0.index < $1.index }) {
            result.insert(Section(key: inserted.key, ids: inserted.ids), at: inserted.index)
        }
        let insertions = diff.insertedRows.map { ($0.path, $0.id) } + diff.movedRows.map { ($0.to, $0.id) }
        for (path, id) in insertions.sorted(by: { $0.0 < $1.0 }) {
            result[path.section].ids.insert(id, at: path.row)
        }
        return ResultsSnapshot(sections: result)
    }
}

/// What changed between two snapshots of a ``FetchedResults``, in table-view batch-update
/// terms: deletions and moves' sources at old positions, insertions and moves' destinations
/// at new positions, updates (objects whose values changed and stayed in place) at old
/// positions. Rows of deleted and inserted sections are not listed separately.
public struct ResultsDiff: Sendable, Hashable {
    /// A section added, with its objects.
    public struct InsertedSection: Sendable, Hashable {
        /// Its index in the new snapshot.
        public var index: Int
        /// The section key's value.
        public var key: Value
        /// Its objects, in order.
        public var ids: [ObjectID]
    }

    /// A row added to a section that existed before.
    public struct Insertion: Sendable, Hashable {
        /// Its position in the new snapshot.
        public var path: ResultsIndexPath
        /// The object shown there.
        public var id: ObjectID
    }

    /// A row that moved (within its section or to another one).
    public struct Move: Sendable, Hashable {
        /// Its position in the old snapshot.
        public var from: ResultsIndexPath
        /// Its position in the new snapshot.
        public var to: ResultsIndexPath
        /// The object moved.
        public var id: ObjectID
    }

    /// The results' version after this diff (1 for the first).
    public var version = 0
    /// Sections removed (old indexes).
    public var deletedSections: [Int] = []
    /// Sections added (new indexes), with their objects.
    public var insertedSections: [InsertedSection] = []
    /// Rows removed (old positions).
    public var deletedRows: [ResultsIndexPath] = []
    /// Rows added (new positions).
    public var insertedRows: [Insertion] = []
    /// Rows that moved (old position → new position).
    public var movedRows: [Move] = []
    /// Rows whose objects changed in place (old positions).
    public var updatedRows: [ResultsIndexPath] = []

    /// Whether nothing changed.
    public var isEmpty: Bool {
        deletedSections.isEmpty && insertedSections.isEmpty && deletedRows.isEmpty && insertedRows.isEmpty
            && movedRows.isEmpty && updatedRows.isEmpty
    }

    /// The diff from `old` to `new`; `updated` are objects whose values changed. Sections
    /// are told apart by their keys, which must be distinct in each snapshot; a section both
    /// hold that changed places relative to the others goes and comes back with its rows.
    public init(from old: ResultsSnapshot, to new: ResultsSnapshot, updated: Set<ObjectID> = []) {
        var oldIndex: [Value: Int] = [:]
        for (index, section) in old.sections.enumerated() {
            precondition(oldIndex.updateValue(index, forKey: section.key) == nil,
                         "ResultsDiff: the old snapshot holds two sections with key \(section.key); sections need distinct keys")
        }
        var newKeySet = Set<Value>()
        for section in new.sections {
            precondition(newKeySet.insert(section.key).inserted,
                         "ResultsDiff: the new snapshot holds two sections with key \(section.key); sections need distinct keys")
        }
        // Sections both hold stay if they keep their order among themselves (the longest run
        // of their old indexes in new order); the others go and come back.
        let kept = new.sections.indices.compactMap { index in oldIndex[new.sections[index].key].map { (new: index, old: $0) } }
        let orderKept = Self.longestIncreasing(kept.map(\.old))
        let stayingOld = Set(orderKept.map { kept[$0].old })
        let stayingNew = Set(orderKept.map { kept[$0].new })
        deletedSections = old.sections.indices.filter { !stayingOld.contains($0) }
        let deletedSectionSet = Set(deletedSections)
        var insertedSectionSet = Set<Int>()
        for (index, section) in new.sections.enumerated() where !stayingNew.contains(index) {
            insertedSections.append(InsertedSection(index: index, key: section.key, ids: section.ids))
            insertedSectionSet.insert(index)
        }
        var oldPaths: [ObjectID: ResultsIndexPath] = [:]
        for (s, section) in old.sections.enumerated() {
            for (r, id) in section.ids.enumerated() { oldPaths[id] = ResultsIndexPath(section: s, row: r) }
        }
        var newPaths: [ObjectID: ResultsIndexPath] = [:]
        for (s, section) in new.sections.enumerated() {
            for (r, id) in section.ids.enumerated() { newPaths[id] = ResultsIndexPath(section: s, row: r) }
        }
        // Rows leaving: gone, or in a section that goes (implied), or moving to an inserted section.
        for (id, path) in oldPaths where !deletedSectionSet.contains(path.section) {
            guard let to = newPaths[id] else {
                deletedRows.append(path)
                continue
            }
            if insertedSectionSet.contains(to.section) { deletedRows.append(path) }
        }
        // Rows arriving in kept sections: new, or from a deleted section.
        for (id, path) in newPaths where !insertedSectionSet.contains(path.section) {
            guard let from = oldPaths[id], !deletedSectionSet.contains(from.section) else {
                insertedRows.append(Insertion(path: path, id: id))
                continue
            }
        }
        // Rows in kept sections on both sides: those that keep their relative order (the
        // longest increasing run of old positions, taken in new order) stay; others move.
        var both: [(id: ObjectID, from: ResultsIndexPath, to: ResultsIndexPath)] = []
        for section in new.sections.indices where !insertedSectionSet.contains(section) {
            for id in new.sections[section].ids {
                if let from = oldPaths[id], !deletedSectionSet.contains(from.section) {
                    both.append((id, from, newPaths[id]!))
                }
            }
        }
        // A row that changes section always moves; among the others, the longest run that
        // keeps its order stays.
        let eligible = both.indices.filter { old.sections[both[$0].from.section].key == new.sections[both[$0].to.section].key }
        let staying = Set(Self.longestIncreasing(eligible.map { both[$0].from }).map { eligible[$0] })
        for (i, row) in both.enumerated() {
            if staying.contains(i) {
                if updated.contains(row.id) { updatedRows.append(row.from) }
            } else {
                movedRows.append(Move(from: row.from, to: row.to, id: row.id))
            }
        }
        deletedRows.sort()
        insertedRows.sort { $0.path < $1.path }
        movedRows.sort { $0.to < $1.to }
        updatedRows.sort()
    }

    /// Indexes of a longest strictly increasing subsequence (O(n log n)).
    static func longestIncreasing<T: Comparable>(_ values: [T]) -> Set<Int> {
        var tails: [Int] = []  // indexes into values
        var previous = [Int](repeating: -1, count: values.count)
        for i in values.indices {
            var low = 0
            var high = tails.count
            while low < high {
                let mid = (low + high) / 2
                if values[tails[mid]] < values[i] { low = mid + 1 } else { high = mid }
            }
            if low > 0 { previous[i] = tails[low - 1] }
            if low == tails.count { tails.append(i) } else { tails[low] = i }
        }
        var result = Set<Int>()
        var k = tails.last ?? -1
        while k >= 0 {
            result.insert(k)
            k = previous[k]
        }
        return result
    }
}
