/// The ordered indexes that readers of a store have asked for (see `Generation`).
final class IndexDemand: Sendable {
    private let wanted = Locked<Set<Int>>([])

    static func key(entity: Int, attribute: Int) -> Int { entity << 32 | attribute }

    func insert(entity: Int, attribute: Int) {
        wanted.withLock { _ = $0.insert(Self.key(entity: entity, attribute: attribute)) }
    }

    var current: Set<Int> { wanted.withLock { $0 } }
}
