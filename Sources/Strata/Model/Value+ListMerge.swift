extension Value {
    /// A to-many list both sides changed since `base`, merged element by element (contexts'
    /// merges and child saves, and the store under `contextWins`): their list, less what
    /// ours removed from the base, plus what ours added (in our order) — unless ours
    /// reordered the list and theirs did not: then our order stands, less what theirs
    /// removed, plus what theirs added (in their order). (Their order always won, so a merge
    /// undid a reorder this side had pending.)
    static func mergedList(base: Value, ours: Value, theirs: Value) -> Value {
        let base = base.referencedObjects, ours = ours.referencedObjects, theirs = theirs.referencedObjects
        let before = Set(base), ourSet = Set(ours), theirSet = Set(theirs)
        func reordered(_ list: [ObjectID], _ kept: Set<ObjectID>) -> Bool {
            !list.filter { before.contains($0) }.elementsEqual(base.filter { kept.contains($0) })
        }
        if reordered(ours, ourSet), !reordered(theirs, theirSet) {
            let removedByThem = before.subtracting(theirSet)
            var merged = ours.filter { !removedByThem.contains($0) }
            for id in theirs where !before.contains(id) && !ourSet.contains(id) { merged.append(id) }
            return .objects(merged)
        }
        let removedByUs = before.subtracting(ourSet)
        var merged = theirs.filter { !removedByUs.contains($0) }
        for id in ours where !before.contains(id) && !merged.contains(id) { merged.append(id) }
        return .objects(merged)
    }
}
