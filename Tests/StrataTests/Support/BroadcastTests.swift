import Foundation
import Testing
@testable import Strata

/// A broadcast's streams: every subscriber gets every element once, in order, and what the
/// yielding thread wrote is visible to the reader (which ThreadSanitizer checks when this
/// runs under `--sanitize=thread`); a stream let go of stops listening.
@Suite("Broadcast")
struct BroadcastTests {
    /// An element whose contents are written by the yielding thread as it is made.
    final class Payload: Sendable {
        let number: Int
        let squares: [Int]

        init(_ number: Int) {
            self.number = number
            squares = (0..<8).map { ($0 + number) * ($0 + number) }
        }
    }

    @Test("every subscriber reads every element, in order, yielded on another thread")
    func handOverFromAnotherThread() async {
        let broadcast = Broadcast<Payload>()
        let count = 2_000
        let streams = [broadcast.subscribe(), broadcast.subscribe()]
        // A plain thread, so that nothing but the streams orders the yields before the reads.
        let producer = Thread {
            // Alternately one at a time and a hundred in one call.
            for start in stride(from: 0, to: count, by: 100) {
                let chunk = (start..<start + 100).map(Payload.init)
                if start % 200 == 0 {
                    for payload in chunk { broadcast.yield(payload) }
                } else {
                    broadcast.yield(contentsOf: chunk)
                }
            }
            broadcast.finish()
        }
        producer.start()
        let finished = await returns(within: .seconds(60)) {
            await withTaskGroup(of: Bool.self) { group in
                for stream in streams {
                    group.addTask {
                        var expected = 0
                        for await payload in stream {
                            guard payload.number == expected,
                                payload.squares == (0..<8).map({ ($0 + expected) * ($0 + expected) })
                            else { return false }
                            expected += 1
                        }
                        return expected == count
                    }
                }
                return await group.allSatisfy { $0 }
            }
        }
        #expect(finished, "a subscriber missed an element, read one out of order or saw it unwritten")
    }

    @Test("elements yielded in one call reach each subscriber in order")
    func yieldContentsOf() async {
        let broadcast = Broadcast<Payload>()
        let stream = broadcast.subscribe()
        broadcast.yield(contentsOf: (0..<50).map(Payload.init))
        broadcast.finish()
        var numbers: [Int] = []
        for await payload in stream { numbers.append(payload.number) }
        #expect(numbers == Array(0..<50))
    }

    @Test("a stream dropped or whose reader is cancelled stops listening")
    func unsubscribes() async {
        let broadcast = Broadcast<Payload>()
        do {
            let dropped = broadcast.subscribe()
            #expect(broadcast.subscriberCount == 1)
            withExtendedLifetime(dropped) {}
        }
        #expect(await eventually { broadcast.subscriberCount == 0 }, "a dropped stream still listens")

        let stream = broadcast.subscribe()
        let reader = Task {
            for await _ in stream {}
        }
        broadcast.yield(Payload(0))
        reader.cancel()
        _ = await reader.value
        #expect(await eventually { broadcast.subscriberCount == 0 }, "the stream of a cancelled reader still listens")
    }

    @Test("a stream subscribed after finish ends at once")
    func subscribeAfterFinish() async {
        let broadcast = Broadcast<Payload>()
        broadcast.finish()
        var received = 0
        for await _ in broadcast.subscribe() { received += 1 }
        #expect(received == 0)
        #expect(broadcast.subscriberCount == 0)
    }
}
