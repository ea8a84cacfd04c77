/// Catches an element seen twice, cheaply when elements arrive in increasing order (as an
/// importer's object numbers and integer keys do): each is then only compared with the
/// highest so far. The first one out of order moves what was seen into a set.
struct RepeatDetector<Element: Hashable> {
    private var highest: UInt64?
    private var inOrder: [Element] = []
    private var set: Set<Element>?

    /// Records `element`, whose place in the order is `order` (`nil`: unordered); returns
    /// `false` if it was recorded before.
    mutating func insert(_ element: Element, order: UInt64?) -> Bool {
        if set == nil {
            if let order, highest.map({ order > $0 }) ?? true {
                highest = order
                inOrder.append(element)
                return true
            }
            set = Set(inOrder)
            inOrder = []
        }
        return set!.insert(element).inserted
    }
}
