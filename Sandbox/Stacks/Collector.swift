import Synchronization

/// Values appended from any task, read at the end.
final class Collector<Element: Sendable>: Sendable {
    private let storage = Mutex<[Element]>([])
    func append(_ element: Element) { storage.withLock { $0.append(element) } }
    var values: [Element] { storage.withLock { $0 } }
    var count: Int { storage.withLock { $0.count } }
}
