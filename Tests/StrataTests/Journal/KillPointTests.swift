import Foundation
import Testing

@testable import Strata

/// Crashes just before and just after each named step of appending, rolling and
/// compacting: the store opens to exactly the state before or after the step's
/// transaction or compaction — never anything in between — with the checkpoint generation
/// the step allows, and open tidies up (no temporary files, no older checkpoint, no
/// covered segment).
@Suite struct KillPointTests {
    /// A step of the journal's work where a crash is simulated.
    enum KillPoint: String, CaseIterable, CustomTestStringConvertible {
        /// The write of a transaction to a segment.
        case segmentWrite
        /// The fsync of a segment after a transaction was written to it.
        case segmentSync
        /// A write of zeros past a segment's records, ahead of the appends.
        case segmentPreallocate
        /// The fsync of a segment after zeros were written to it.
        case segmentPreallocateSync
        /// The creation of the next segment when the journal rolls.
        case segmentCreate
        /// The directory fsync after a new segment was written.
        case segmentDirectorySync
        /// A write of the temporary checkpoint file.
        case checkpointWrite
        /// The fsync of the temporary checkpoint file.
        case checkpointSync
        /// The rename of the temporary checkpoint into place.
        case checkpointRename
        /// The directory fsync after the rename.
        case checkpointDirectorySync
        /// The removal of a segment or older checkpoint the new checkpoint covers.
        case segmentDelete

        var testDescription: String { rawValue }
    }

    /// What a recovered store may hold: the last transaction and the checkpoint it loaded.
    struct Outcome: Hashable, CustomStringConvertible {
        var last: UInt64
        var checkpoint: UInt64?
        var description: String { "transaction \(last), checkpoint \(checkpoint.map(String.init) ?? "none")" }
    }

    static let compactAfter: [UInt64] = [5, 11]
    static let workloads: [Durability: CrashWorkload] = Dictionary(uniqueKeysWithValues: [Durability.full, .relaxed].map {
        ($0, CrashWorkload(history: History(seed: 99, count: 16), compactAfter: compactAfter, durability: $0,
                           segmentSize: segmentPreambleSize + 1_000))
    })

    /// A call of the recorded workload that is an occurrence of a kill point, with what a
    /// crash before it and after it may leave.
    struct Occurrence {
        var call: Int
        var before: Set<Outcome>
        var after: Set<Outcome>
    }

    /// Finds every occurrence of `point` in a recorded workload.
    static func occurrences(of point: KillPoint, in points: [CrashPoint], mode: InMemoryFileIO.CrashMode) -> [Occurrence] {
        let calls = points.filter { $0.phase == .after }
        let befores = points.filter { $0.phase == .before }
        let lost = mode == .powerLoss  // whether a step not yet synced may be undone
        var result: [Occurrence] = []
        var written: UInt64 = 0  // the last transaction written to a segment
        var writtenAt: Int?  // the call that wrote it
        var zeroedAt: Int?  // the call that last wrote zeros ahead of the appends
        var compaction: UInt64?  // the checkpoint being written
        func checkpoint(before transaction: UInt64) -> UInt64? { compactAfter.last { $0 < transaction } }
        func checkpointNumber(_ name: String) -> UInt64? {
            StoreLayout.checkpointTransaction(name.hasSuffix(".tmp") ? String(name.dropLast(4)) : name)
        }
        for call in calls {
            let name = call.name
            let isSegment = StoreLayout.segmentTransaction(name) != nil
            let previous = call.call > 0 ? calls[call.call - 1] : nil
            var found: KillPoint?
            var before: Set<Outcome> = []
            var after: Set<Outcome> = []
            switch call.operation {
            case .write where isSegment && call.zeros:
                // After the last transaction's sync: it is durable either way.
                found = .segmentPreallocate
                before = [Outcome(last: written, checkpoint: checkpoint(before: written))]
                after = before
                zeroedAt = call.call
            case .sync where isSegment && zeroedAt == call.call - 1:
                found = .segmentPreallocateSync
                before = [Outcome(last: written, checkpoint: checkpoint(before: written))]
                after = before
            case .write where isSegment && call.offset! > 0:
                // Sequential workload: the transaction being written is the one issued last.
                let n = befores[call.call].progress.issued
                let k = checkpoint(before: n)
                found = .segmentWrite
                before = [Outcome(last: n - 1, checkpoint: k)]
                after = lost ? [Outcome(last: n - 1, checkpoint: k), Outcome(last: n, checkpoint: k)] : [Outcome(last: n, checkpoint: k)]
                written = n
                writtenAt = call.call
            case .sync where isSegment && writtenAt == call.call - 1:
                let k = checkpoint(before: written)
                found = .segmentSync
                before = lost ? [Outcome(last: written - 1, checkpoint: k), Outcome(last: written, checkpoint: k)] : [Outcome(last: written, checkpoint: k)]
                after = [Outcome(last: written, checkpoint: k)]
            case .open where isSegment && befores[call.call].progress.created:
                found = .segmentCreate
                before = [Outcome(last: written, checkpoint: checkpoint(before: written))]
                after = before
            case .syncDirectory where previous?.operation == .sync && StoreLayout.segmentTransaction(previous!.name) != nil
                && befores[call.call].progress.created:
                found = .segmentDirectorySync
                before = [Outcome(last: written, checkpoint: checkpoint(before: written))]
                after = before
            case .write where name.hasSuffix(".tmp"), .sync where name.hasSuffix(".tmp"):
                let c = checkpointNumber(name)!
                found = call.operation == .write ? .checkpointWrite : .checkpointSync
                before = [Outcome(last: c, checkpoint: checkpoint(before: c))]
                after = before
            case .rename:
                let c = checkpointNumber((call.path.components(separatedBy: " -> ")[1] as NSString).lastPathComponent)!
                compaction = c
                found = .checkpointRename
                before = [Outcome(last: c, checkpoint: checkpoint(before: c))]
                after = lost ? before.union([Outcome(last: c, checkpoint: c)]) : [Outcome(last: c, checkpoint: c)]
            case .syncDirectory where previous?.operation == .rename:
                let c = compaction!
                found = .checkpointDirectorySync
                before = lost ? [Outcome(last: c, checkpoint: checkpoint(before: c)), Outcome(last: c, checkpoint: c)] : [Outcome(last: c, checkpoint: c)]
                after = [Outcome(last: c, checkpoint: c)]
            case .remove where !name.hasSuffix(".tmp"):
                let c = compaction!
                found = .segmentDelete
                before = [Outcome(last: c, checkpoint: c)]
                after = before
            default:
                break
            }
            if found == point { result.append(Occurrence(call: call.call, before: before, after: after)) }
        }
        return result
    }

    @Test(arguments: KillPoint.allCases, CrashCase.allCases)
    func crashAtKillPoint(_ point: KillPoint, _ crash: CrashCase) async throws {
        let workload = Self.workloads[crash.durability]!
        let (points, violations) = try await workload.record()
        #expect(violations.isEmpty, "ordering violations: \(violations)")
        let occurrences = Self.occurrences(of: point, in: points, mode: crash.mode)
        if crash.durability == .relaxed && [.segmentDirectorySync, .segmentPreallocate, .segmentPreallocateSync].contains(point) {
            // `.relaxed` syncs neither appends nor new segments (only the last segment, on
            // close), and writes no zeros ahead of its appends.
            #expect(occurrences.isEmpty)
            return
        }
        #expect(!occurrences.isEmpty, "the workload never reaches \(point)")
        let seeds: [UInt64] = crash.mode == .powerLoss ? [1, 2, 3, 4, 5] : [0]

        var problems: [String] = []
        var seen: [String: Set<Outcome>] = [:]
        for occurrence in occurrences {
            for phase in [CrashPoint.Phase.before, .after] {
                let moment = points[occurrence.call * 2 + (phase == .before ? 0 : 1)]
                precondition(moment.call == occurrence.call && moment.phase == phase)
                let allowed = phase == .before ? occurrence.before : occurrence.after
                for seed in seeds {
                    let image = moment.image!.crashed(seed: crashSeed(seed, occurrence.call), mode: crash.mode)
                    let recovered: Recovered
                    do {
                        recovered = try await recover(image, durability: workload.durability, segmentSize: workload.segmentSize)
                    } catch {
                        problems.append("\(moment), seed \(seed): open failed: \(error)")
                        continue
                    }
                    let outcome = Outcome(last: recovered.last, checkpoint: recovered.report.checkpoint)
                    seen["\(phase)", default: []].insert(outcome)
                    if !allowed.contains(outcome) {
                        problems.append("\(moment), seed \(seed): recovered \(outcome), expected one of \(allowed)")
                    } else if recovered.state != workload.history.model(outcome.last) {
                        problems.append("\(moment), seed \(seed): the state at transaction \(outcome.last) differs from the model")
                    }
                    problems += recovered.untidiness.map { "\(moment), seed \(seed): \($0)" }
                    problems += recovered.violations.map { "\(moment), seed \(seed): ordering: \($0)" }
                }
            }
        }
        expectNoProblems(problems, "kill points recover wrongly (\(point), \(crash))")
    }

    /// A crash between the checkpoint's rename and the removal of what it covers leaves
    /// two generations on disk; open takes the newer and removes the older.
    @Test func interruptedCompactionLeavesTwoGenerations() async throws {
        let workload = Self.workloads[.full]!
        let (points, _) = try await workload.record()
        // Just before the second compaction removes its first covered file.
        let removal = try #require(points.first { $0.phase == .before && $0.operation == .remove && $0.progress.acked == 11 })
        let image = removal.image!
        let names = try image.contentsOfDirectory(storePath)
        #expect(names.compactMap(StoreLayout.checkpointTransaction).sorted() == [5, 11])
        let recovered = try await recover(image)
        #expect(recovered.report.checkpoint == 11)
        #expect(recovered.state == workload.history.model(11))
        #expect(recovered.report.removedFiles.contains(StoreLayout.checkpointName(through: 5)))
        #expect(recovered.untidiness.isEmpty)
        #expect(recovered.names.compactMap(StoreLayout.checkpointTransaction) == [11])
    }
}
