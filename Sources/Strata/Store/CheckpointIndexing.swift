import Foundation

/// The unique indexes of a checkpoint being loaded into a generation.
///
/// Each entity's unique values are collected as its rows arrive. A checkpoint holds its
/// rows entity by entity, so once the rows move on to another entity, the index of the one
/// before is complete: if it is large, it is built on a thread of its own while the rest
/// of the rows load. ``finish()`` waits for those builds and indexes what remains. On two
/// processors, only the last entity's index (if it has one) adds to the time of an open.
///
/// Rows of an entity that come back after its index was started are indexed on top of it,
/// in order, so the outcome is the same as indexing every row in checkpoint order.
final class CheckpointIndexing: @unchecked Sendable {
    // @unchecked: the mutable state below is used only by the thread loading the
    // checkpoint (a generation is not published before its checkpoint is finished). The
    // build threads share only `built`, under its lock, and `finished`.
    private var pending: [[(key: Value, value: UInt64)]]
    private var started: [Bool]
    private var current = -1
    private var launched = 0
    private let built = Locked<[Int: UniqueIndex]>([:])
    private let finished = DispatchSemaphore(value: 0)

    /// Below this many values, an index is built when the checkpoint ends: starting a
    /// thread would cost more than it saves.
    static let threadedBuildMinimum = 20_000

    init(entities: Int) {
        pending = Array(repeating: [], count: entities)
        started = Array(repeating: false, count: entities)
    }

    /// Records a row of `entity` (every row, so that the end of an entity's rows is seen)
    /// and its unique value, if the entity has a unique attribute and the row a value.
    func loaded(entity: Int, number: UInt64, uniqueValue: Value?) {
        if entity != current {
            if current >= 0 { startBuild(of: current) }
            current = entity
        }
        if let uniqueValue { pending[entity].append((uniqueValue, number)) }
    }

    private func startBuild(of entity: Int) {
        guard !started[entity], pending[entity].count >= Self.threadedBuildMinimum else { return }
        started[entity] = true
        launched += 1
        let entries = pending[entity]
        pending[entity] = []
        let built = built, finished = finished
        let thread = Thread {
            let index = UniqueIndex(bulk: entries)
            built.withLock { $0[entity] = index }
            finished.signal()
        }
        thread.name = "strata.checkpoint-index"
        thread.start()
    }

    /// Waits for the builds started and indexes the remaining values: the unique index of
    /// every entity that had values, by entity.
    func finish() -> [Int: UniqueIndex] {
        for _ in 0..<launched { finished.wait() }
        launched = 0
        var indexes = built.withLock { $0 }
        for (entity, entries) in pending.enumerated() where !entries.isEmpty {
            if var index = indexes[entity] {
                for entry in entries { index[entry.key] = entry.value }
                indexes[entity] = index
            } else {
                indexes[entity] = UniqueIndex(bulk: entries)
            }
        }
        pending = pending.map { _ in [] }
        return indexes
    }
}
