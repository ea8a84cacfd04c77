import Foundation
import Testing

@testable import Strata

/// Compactions that run while appends continue (a checkpoint older than the last
/// transaction, so a segment holds transactions on both sides of it), two compactions at
/// once, and a compaction racing a close — crashed at every file operation.
@Suite struct CompactionRaceCrashTests {
    static let appends: UInt64 = 30
    static let segmentSize = segmentPreambleSize + 1_000

    /// Appends 1...appends in one task while another compacts from what is acknowledged,
    /// two at a time, then closes while one last compaction runs.
    static func run(on io: any FileIO, history: History, progress: Progress, durability: Durability,
                    observer: (@Sendable (String, Int64) -> Void)?) async throws {
        let journal = try Journal.create(
            at: storePath, schema: Fixtures.songbook,
            configuration: .init(durability: durability, segmentSize: segmentSize, fileIO: io, acknowledgementObserver: observer))
        progress.markCreated()
        func append(_ number: UInt64) async throws {
            progress.issue(number)
            try await journal.append(history.record(number))
            progress.acknowledge(number)
        }
        for number in 1...6 as ClosedRange<UInt64> { try await append(number) }
        let appender = Task {
            for number in 7...appends { try await append(number) }
        }
        for _ in 0..<3 {
            // A checkpoint a few transactions behind the last, and another at once.
            let acked = progress.current.acked
            async let first = journal.compact(from: history.model(acked > 3 ? acked - 3 : acked))
            async let second = journal.compact(from: history.model(acked))
            _ = try await (first, second)
            try await Task.sleep(for: .milliseconds(1))
        }
        try await appender.value
        // A compaction behind the last transaction, racing the close.
        let last = progress.current.acked
        let compaction = Task { try await journal.compact(from: history.model(last - 2)) }
        await Task.yield()
        await journal.close()
        _ = await compaction.result
    }

    @Test(arguments: [CrashCase.fullPowerLoss, .fullProcessCrash], [1, 2, 3] as [UInt64])
    func crashAtEveryOperationWithCompactionsUnderWay(_ crash: CrashCase, seed: UInt64) async throws {
        let history = History(seed: seed, count: Int(Self.appends))
        let memory = InMemoryFileIO()
        let checker = IOOrderingChecker(wrapping: memory)
        let progress = Progress()
        let recorder = CrashRecorder(wrapping: checker, memory: memory, progress: progress)
        try await Self.run(on: recorder, history: history, progress: progress, durability: crash.durability) {
            checker.noteAcknowledged(path: $0, durableThrough: $1)
        }
        #expect(checker.violations.isEmpty, "\(checker.violations)")
        let points = recorder.points
        #expect(points.contains { $0.operation == .rename })

        var problems: [String] = []
        for (index, point) in points.enumerated() where point.progress.created {
            let image = point.image!.crashed(seed: crashSeed(seed, index), mode: crash.mode)
            switch await checkOracle(image, history: history, acked: point.progress.acked, issued: point.progress.issued,
                                     durability: crash.durability, segmentSize: Self.segmentSize) {
            case .failure(let failure):
                problems.append("\(point): \(failure)")
            case .success(let recovered):
                // The recovered store takes the next transaction and keeps it.
                let p = recovered.last
                guard p < Self.appends else { continue }
                do {
                    var state = ReplayedState()
                    let journal = try Journal.open(at: storePath, schema: Fixtures.songbook,
                                                   configuration: .init(segmentSize: Self.segmentSize, fileIO: image), replayingInto: &state)
                    try await journal.append(history.record(p + 1))
                    await journal.close()
                    let again = try await recover(image.crashed(seed: 0, mode: .processCrash))
                    if again.state != history.model(p + 1) { problems.append("\(point): after recovery at \(p) and one append, \(again.last)") }
                } catch {
                    problems.append("\(point): after recovery at \(p), appending failed: \(error)")
                }
            }
        }
        expectNoProblems(problems, "crash points break the oracle (\(points.count) points, \(crash), seed \(seed))")
    }
}
