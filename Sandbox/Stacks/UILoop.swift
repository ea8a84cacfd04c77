import Dispatch
import Strata

/// The simulated user interface: a loop on the main actor that ticks at 60 Hz. Each tick
/// runs the visible-page query in the view context (the first 50 songs by title), reads a
/// few attributes of the objects it shows, and asks for the newest song (to tell when an
/// import's save became visible). Between ticks the main actor runs whatever the stack
/// puts on it: merges, child saves, its own saves.
///
/// Ticks are scheduled on a grid of 16.67 ms by a strict one-shot timer on the main
/// queue; a tick that starts late is measured, and the next one aims at the next grid point.
@MainActor
final class UILoop {
    nonisolated static let period: UInt64 = 16_666_667

    struct Tick: Sendable {
        var scheduled: UInt64
        var started: UInt64
        /// The largest song key the view context's query saw.
        var newestSong: Int64
    }

    let view: ObjectContext
    private(set) var ticks: [Tick] = []
    private var timer: (any DispatchSourceTimer)?
    private var scheduled: UInt64 = 0
    private var waiters: [(song: Int64, continuation: CheckedContinuation<Bool, Never>)] = []
    private var newestSeen: Int64 = 0
    /// The query failure that stopped the loop, if one did.
    private(set) var failure: (any Error)?

    init(view: ObjectContext) { self.view = view }

    func start() {
        let timer = DispatchSource.makeTimerSource(flags: .strict, queue: .main)
        timer.setEventHandler { [weak self] in
            MainActor.assumeIsolated { self?.fire() }
        }
        self.timer = timer
        scheduled = Measure.now() + Self.period
        timer.schedule(deadline: DispatchTime(uptimeNanoseconds: scheduled), leeway: .nanoseconds(0))
        timer.resume()
    }

    func stop() {
        timer?.cancel()
        timer = nil
        for waiter in waiters { waiter.continuation.resume(returning: false) }
        waiters = []
    }

    /// Waits until a tick's query has seen the song with key `song` (or a newer one);
    /// returns `false` if the loop stopped or `timeout` seconds passed first.
    func waitUntilSeen(song: Int64, timeout: Double) async -> Bool {
        if newestSeen >= song { return true }
        let deadline = Measure.now() + UInt64(timeout * 1e9)
        return await withCheckedContinuation { continuation in
            waiters.append((song, continuation))
            DispatchQueue.main.asyncAfter(deadline: DispatchTime(uptimeNanoseconds: deadline)) { [weak self] in
                MainActor.assumeIsolated { self?.expire(song: song) }
            }
        }
    }

    /// Waits for `count` more ticks (used to let the loop settle before measuring).
    func waitForTicks(_ count: Int, timeout: Double) async -> Bool {
        let target = ticks.count + count
        let deadline = Measure.now() + UInt64(timeout * 1e9)
        while ticks.count < target {
            guard Measure.now() < deadline, timer != nil else { return false }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(5)) { continuation.resume() }
            }
        }
        return true
    }

    private func expire(song: Int64) {
        waiters.removeAll { waiter in
            guard waiter.song == song else { return false }
            waiter.continuation.resume(returning: newestSeen >= song)
            return true
        }
    }

    private func fire() {
        guard let timer else { return }
        let started = Measure.now()
        do {
            let newest = try view.performAndWait { context throws(StoreError) -> Int64 in
                let page = try context.fetch(FetchRequest(entity: "Song", sortBy: [SortKey("title")], limit: 50))
                var shown = 0
                for song in page.prefix(8) {
                    if case .string(let title) = song["title"] { shown += title.utf8.count }
                    if case .int(let length) = song["milliseconds"] { shown += Int(length % 2) }
                }
                let newest = try context.fetch(FetchRequest(entity: "Song", sortBy: [SortKey("songID", ascending: false)], limit: 1))
                guard let song = newest.first, case .int(let key) = song["songID"] else { return 0 }
                return key
            }
            newestSeen = max(newestSeen, newest)
            ticks.append(Tick(scheduled: scheduled, started: started, newestSong: newest))
        } catch {
            failure = error
            stop()
            return
        }
        waiters.removeAll { waiter in
            guard newestSeen >= waiter.song else { return false }
            waiter.continuation.resume(returning: true)
            return true
        }
        let after = Measure.now()
        scheduled += Self.period
        if scheduled <= after { scheduled += ((after - scheduled) / Self.period + 1) * Self.period }
        timer.schedule(deadline: DispatchTime(uptimeNanoseconds: scheduled), leeway: .nanoseconds(0))
    }
}
