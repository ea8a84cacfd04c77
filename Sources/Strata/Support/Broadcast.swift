import Foundation

/// Fans values out to any number of `AsyncStream` subscribers, in the order they are
/// yielded. Subscribing after ``finish()`` gives a stream that ends at once.
final class Broadcast<Element: Sendable>: Sendable {
    private struct State: Sendable {
        var streams: [UUID: AsyncStream<Element>.Continuation] = [:]
        var isFinished = false
    }

    private let state = Locked(State())

    init() {}

    /// A new stream of everything yielded from now on.
    func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self)
        let id = UUID()
        let added = state.withLock { s in
            if !s.isFinished { s.streams[id] = continuation }
            return !s.isFinished
        }
        guard added else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    /// Whether anyone is listening (to skip building values no one reads).
    var hasSubscribers: Bool { state.withLock { !$0.streams.isEmpty } }

    /// How many streams are listening (for tests: a subscriber that went away is gone).
    var subscriberCount: Int { state.withLock { $0.streams.count } }

    func yield(_ element: Element) {
        for stream in state.withLock({ Array($0.streams.values) }) { stream.yield(element) }
    }

    func yield(contentsOf elements: [Element]) {
        let streams = state.withLock { Array($0.streams.values) }
        for element in elements {
            for stream in streams { stream.yield(element) }
        }
    }

    /// Ends every stream; later subscribers get streams that end at once.
    func finish() {
        let streams = state.withLock { s in
            defer { s = State(isFinished: true) }
            return Array(s.streams.values)
        }
        for stream in streams { stream.finish() }
    }
}
