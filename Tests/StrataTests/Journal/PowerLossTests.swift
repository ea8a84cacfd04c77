import Foundation
import Testing

@testable import Strata

/// A crash at every file operation of a workload of 40 appends with two compactions and
/// segments that roll every few transactions: the store always opens, never reports crash
/// damage as corruption, holds the model after some prefix `p` with `acked ≤ p ≤ issued`,
/// leaves no temporary files, and takes the next transaction.
///
/// One run of the workload records an image of the file system before and after each
/// call (calls run one at a time, so each image is exact); each image is then crashed —
/// a power loss with its own seed, or a process crash — and opened.
@Suite struct PowerLossTests {
    static let appends = 40
    static let compactAfter: [UInt64] = [14, 29]
    /// Rolls a segment every two to five transactions.
    static let segmentSize = segmentPreambleSize + 1_000

    static func workload(seed: UInt64, durability: Durability) -> CrashWorkload {
        CrashWorkload(history: History(seed: seed, count: appends), compactAfter: compactAfter,
                      durability: durability, segmentSize: segmentSize)
    }

    @Test(arguments: CrashCase.allCases, [1, 2, 3, 4, 5] as [UInt64])
    func crashAtEveryOperation(_ crash: CrashCase, seed: UInt64) async throws {
        let workload = Self.workload(seed: seed, durability: crash.durability)
        let history = workload.history
        let (points, violations) = try await workload.record()

        // The workload is what the test claims: every call seen, segments rolled, two
        // checkpoints renamed into place, covered segments removed.
        let calls = points.filter { $0.phase == .after }
        #expect(calls.count == points.count / 2)
        #expect(calls.filter { $0.operation == .rename }.count == 2)
        #expect(calls.filter { $0.operation == .open && StoreLayout.segmentTransaction($0.name) != nil }.count >= 6)
        #expect(calls.filter { $0.operation == .remove }.count >= 4)
        #expect(calls.allSatisfy { !$0.failed })
        #expect(violations.isEmpty, "ordering violations: \(violations)")

        var problems: [String] = []
        var opened = 0
        for (index, point) in points.enumerated() {
            let image = point.image!.crashed(seed: crashSeed(seed, index), mode: crash.mode)
            let progress = point.progress
            guard progress.created else {
                // `create` had not returned: no store yet, or an empty one; never corruption.
                do {
                    let recovered = try await recover(image, durability: workload.durability, segmentSize: workload.segmentSize)
                    if recovered.last != 0 || !recovered.untidiness.isEmpty {
                        problems.append("\(point): a store whose creation was interrupted opened at \(recovered.last) \(recovered.untidiness)")
                    }
                    opened += 1
                } catch {
                    if error.code != .notFound && error.code != .notAStore {
                        problems.append("\(point): a store whose creation was interrupted fails with \(error)")
                    }
                }
                continue
            }
            switch await checkOracle(image, history: history, acked: progress.acked, issued: progress.issued,
                                     durability: workload.durability, segmentSize: workload.segmentSize) {
            case .failure(let failure):
                problems.append("\(point): \(failure)")
            case .success(let recovered):
                opened += 1
                // The recovered store takes the next transaction and keeps it.
                let p = recovered.last
                guard p < UInt64(history.count) else { continue }
                do {
                    try await appendOne(history.record(p + 1), to: image, workload: workload)
                    let again = try await recover(image.crashed(seed: 0, mode: .processCrash), durability: workload.durability)
                    if again.state != history.model(p + 1) {
                        problems.append("\(point): after recovery at \(p), appending \(p + 1) and reopening gives \(again.last)")
                    }
                } catch {
                    problems.append("\(point): after recovery at \(p), appending \(p + 1) failed: \(error)")
                }
            }
        }
        expectNoProblems(problems, "crash points break the oracle (of \(points.count), \(crash), seed \(seed))")
        #expect(opened > points.count * 9 / 10)
    }

    /// A crash while creating a store whose schema record alone is several kilobytes: opened
    /// with its schema, the half-made store is reported as not a store (or opens empty),
    /// never as corrupted.
    @Test(arguments: CrashCase.allCases)
    func crashWhileCreatingWithLargeSchema(_ crash: CrashCase) async throws {
        let schema = try Schema("Wide", entities: [
            Entity("Record", attributes: (0..<200).map { Attribute("attribute_with_a_rather_long_name_\($0)", .string, optional: true) })
        ])
        let memory = InMemoryFileIO()
        let recorder = CrashRecorder(wrapping: memory, memory: memory, progress: Progress())
        let journal = try Journal.create(at: storePath, schema: schema,
                                         configuration: .init(durability: crash.durability, fileIO: recorder))
        await journal.close()
        let segment = try #require(memory.contents(of: journal.segmentPaths[0]))
        #expect(segment.count > 8_192)

        var problems: [String] = []
        for (index, point) in recorder.points.enumerated() {
            for seed in crash.mode == .powerLoss ? Array(1...24) as [UInt64] : [0] {
                let image = point.image!.crashed(seed: crashSeed(seed, index), mode: crash.mode)
                var state = ReplayedState()
                do {
                    let reopened = try Journal.open(at: storePath, schema: schema, configuration: .init(fileIO: image), replayingInto: &state)
                    await reopened.close()
                    if state.lastTransaction != 0 { problems.append("\(point), seed \(seed): opened at \(state.lastTransaction)") }
                } catch {
                    if error.code != .notFound && error.code != .notAStore {
                        problems.append("\(point), seed \(seed): \(error)")
                    }
                }
            }
        }
        expectNoProblems(problems, "interrupted creations are misreported (\(crash))")
    }

    /// Opens the store in `image`, appends `record`, closes.
    private func appendOne(_ record: TransactionRecord, to image: InMemoryFileIO, workload: CrashWorkload) async throws {
        var state = ReplayedState()
        let journal = try Journal.open(at: storePath, schema: Fixtures.songbook, configuration: workload.configuration(image),
                                       replayingInto: &state)
        try await journal.append(record)
        await journal.close()
    }
}
