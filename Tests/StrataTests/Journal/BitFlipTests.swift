import Foundation
import Testing
@testable import Strata

/// Every record is checksummed, so flipped bits anywhere in a store's files are either
/// refused, harmless, or (at the very end) an honestly reported torn tail — never a
/// silently different state.
@Suite struct BitFlipTests {
    static let seed: UInt64 = 0xB17F_11B5
    static let trials = 2_000

    /// What opening a damaged copy gave.
    enum Outcome: Hashable, CustomStringConvertible {
        /// Open failed with one of the errors damage may give.
        case refused(StoreError.Code)
        /// Opened with the whole, undamaged state.
        case full
        /// Opened with the state after an earlier transaction, and said a tail was cut.
        case tornPrefix
        /// Anything else: a state that is not the truth, or not admitted to be short.
        case wrong(String)

        var description: String {
            switch self {
            case .refused(let code): "refused (\(code))"
            case .full: "full state"
            case .tornPrefix: "prefix with torn tail reported"
            case .wrong(let why): "WRONG: \(why)"
            }
        }

        var isAcceptable: Bool { if case .wrong = self { false } else { true } }
    }

    static let damageCodes: Set<StoreError.Code> = [.corrupted, .unsupportedFormatVersion, .notAStore, .schemaMismatch]

    static func classify(_ path: String, readOnly: Bool, history: ModelHistory) async -> Outcome {
        let journal: Journal
        let state: ReplayedState
        do throws(StoreError) {
            (journal, state) = try openStore(path, readOnly: readOnly)
        } catch {
            return damageCodes.contains(error.code) ? .refused(error.code) : .wrong("unexpected error \(error)")
        }
        let outcome = judge(state, tornTail: journal.recovery.tornTail != nil, history: history)
        await journal.close()
        return outcome
    }

    static func judge(_ state: ReplayedState, tornTail: Bool, history: ModelHistory) -> Outcome {
        if state == history.final { return .full }
        let last = Int(state.lastTransaction)
        guard last < history.count, state == history.states[last] else {
            return .wrong("opened with a state that is no prefix of the history (last transaction \(last))")
        }
        guard tornTail else {
            return .wrong("opened with the state after transaction \(last) of \(history.count) without reporting a torn tail")
        }
        return .tornPrefix
    }

    @Test func randomFlipsAndBurstsAreNeverSilent() async throws {
        let directory = TemporaryDirectory.scratch("strata-bitflip")
        defer { directory.remove() }
        let history = try ModelHistory(seed: Self.seed, count: 30, maxChanges: 3)
        // A checkpoint through transaction 10 and three segments after it.
        let store = try await StoreBuilder.build(at: directory.appending("store"), history: history,
                                                 compactAfter: [10], rollAfter: [17, 24])
        #expect(store.snapshot.checkpointNames.count == 1)
        #expect(store.snapshot.segmentNames.count == 3)
        let targets = store.snapshot.dataFileNames
        let sizes = targets.map { store.snapshot[$0]!.count }
        let totalBytes = sizes.reduce(0, +)

        var rng = SeededGenerator(seed: Self.seed)
        var counts: [Outcome: Int] = [:]
        var hits: [String: Int] = [:]
        var singles = 0
        var bursts = 0
        var wrong = 0
        for trial in 0..<Self.trials {
            // A byte anywhere in the data files, then one bit or a burst of up to 32 bits
            // (first and last flipped, the ones between at random) starting in it.
            var position = Int.random(in: 0..<totalBytes, using: &rng)
            var fileIndex = 0
            while position >= sizes[fileIndex] {
                position -= sizes[fileIndex]
                fileIndex += 1
            }
            let name = targets[fileIndex]
            var bytes = store.snapshot[name]!
            let firstBit = position * 8 + Int.random(in: 0..<8, using: &rng)
            let length = trial % 2 == 0 ? 1 : Int.random(in: 2...32, using: &rng)
            let lastBit = min(firstBit + length - 1, bytes.count * 8 - 1)
            for bit in firstBit...lastBit where bit == firstBit || bit == lastBit || Bool.random(using: &rng) {
                bytes[bit / 8] ^= UInt8(1) << UInt8(bit % 8)
            }
            if lastBit == firstBit { singles += 1 } else { bursts += 1 }
            hits[name, default: 0] += 1
            var files = store.snapshot
            files[name] = bytes
            let context = "seed \(Self.seed), trial \(trial): \(name) bits \(firstBit)...\(lastBit)"

            let path = directory.appending("trial-\(trial)")
            try files.write(to: path)
            let outcome = await Self.classify(path, readOnly: true, history: history)
            counts[outcome, default: 0] += 1
            if !outcome.isAcceptable {
                wrong += 1
                Issue.record("\(context): \(outcome)")
            }
            #expect(try StoreSnapshot.read(path) == files, "\(context): a read-only open changed the files")
            // Every tenth trial, a writable open too: it must reach the same verdict.
            if trial % 10 == 0 {
                let writablePath = directory.appending("trial-\(trial)-writable")
                try files.write(to: writablePath)
                let writable = await Self.classify(writablePath, readOnly: false, history: history)
                #expect(writable == outcome, "\(context): read-only open gave \(outcome), writable open \(writable)")
                try? FileManager.default.removeItem(atPath: writablePath)
            }
            try? FileManager.default.removeItem(atPath: path)
        }
        let summary = counts.map { "\($0.key): \($0.value)" }.sorted().joined(separator: ", ")
        print("BitFlipTests seed \(Self.seed): \(singles) single flips, \(bursts) bursts over \(hits); outcomes: \(summary)")
        #expect(wrong == 0, "seed \(Self.seed): \(wrong) silently wrong states; outcomes \(summary)")
        #expect(counts.values.reduce(0, +) == Self.trials)
        #expect(singles >= 1_000 && bursts >= 900, "seed \(Self.seed)")
        #expect(Set(hits.keys) == Set(targets), "seed \(Self.seed): some files were never damaged: \(hits)")
    }
}
