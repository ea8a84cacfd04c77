import Foundation
import Testing

@testable import Strata

/// Zero-filled space written ahead of appends (`Journal.Configuration.preallocation`): the
/// appends overwrite it, reading stops at it without calling it damage, closing and rolling
/// cut it off, and a failure to write it costs only the writing ahead.
@Suite struct PreallocationTests {
    static let history = History(seed: 9191, count: 24)
    static let chunk = 4096
    static var firstSegment: String { StoreLayout.join(storePath, StoreLayout.segmentName(firstTransaction: 1)) }

    /// Where the records of a segment file end (zeros may follow).
    static func recordsEnd(_ bytes: [UInt8]) -> Int { FrameSpan.all(in: bytes).last?.end ?? 0 }

    static func configuration(
        _ io: any FileIO, durability: Durability = .full, segmentSize: Int = 64 << 20, checker: IOOrderingChecker? = nil
    ) -> Journal.Configuration {
        .init(durability: durability, segmentSize: segmentSize, fileIO: io, preallocation: chunk) { path, end in
            checker?.noteAcknowledged(path: path, durableThrough: end)
        }
    }

    static func reopen(_ memory: InMemoryFileIO, readOnly: Bool = true) throws -> (Journal, ReplayedState) {
        var state = ReplayedState()
        let journal = try Journal.open(at: storePath, schema: Fixtures.songbook,
                                       configuration: .init(fileIO: memory, readOnly: readOnly), replayingInto: &state)
        return (journal, state)
    }

    /// Where the first write of zeros comes when one transaction is appended: its number
    /// among the journal's writes, and the number of the sync after it among its syncs (the
    /// call numbers a ``FaultInjectingFileIO`` limited to that operation counts).
    static func firstWriteOfZeros() async throws -> (write: Int, sync: Int) {
        let memory = InMemoryFileIO()
        let recorder = CrashRecorder(wrapping: memory, memory: memory, progress: Progress(), takesImages: false)
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: configuration(recorder))
        try await journal.append(history.record(1))
        await journal.flush()
        await journal.close()
        let calls = recorder.points.filter { $0.phase == .before }
        let first = try #require(calls.firstIndex { $0.operation == .write && $0.zeros }, "no zeros were written")
        let before = calls[..<first]
        // The sync of the zeros is the first sync after them.
        return (before.count { $0.operation == .write }, before.count { $0.operation == .sync })
    }

    @Test func appendsOverwriteZerosWrittenAheadAndClosingCutsThem() async throws {
        let memory = InMemoryFileIO()
        let checker = IOOrderingChecker(wrapping: memory)
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: Self.configuration(checker, checker: checker))
        var sawZeros = false
        for number in 1...Self.history.records.count {
            try await journal.append(Self.history.record(UInt64(number)))
            await journal.flush()  // the writer is done with whatever it writes ahead
            let bytes = try #require(memory.contents(of: Self.firstSegment))
            let end = Self.recordsEnd(bytes)
            #expect(FrameSpan.transactions(in: bytes).count == number)
            #expect(bytes[end...].allSatisfy { $0 == 0 }, "after \(number): not zeros past the records")
            if bytes.count > end { sawZeros = true }
            #expect(bytes.count - end <= 2 * Self.chunk, "after \(number): \(bytes.count - end) bytes written ahead")
        }
        #expect(sawZeros)
        #expect(journal.statistics.bytesPreallocated > 0)
        #expect(checker.isClean, "\(checker.violations)")
        await journal.close()
        let closed = try #require(memory.contents(of: Self.firstSegment))
        #expect(closed.count == Self.recordsEnd(closed), "closing left zeros past the records")
        let (reader, state) = try Self.reopen(memory)
        #expect(state == Self.history.model(UInt64(Self.history.count)))
        #expect(reader.recovery.tornTail == nil)
    }

    /// A crash leaves the zeros in place: the next open reads them as the clean end, reports
    /// nothing, and appends where the records end.
    @Test(arguments: [InMemoryFileIO.CrashMode.processCrash, .powerLoss])
    func aCrashLeavesZerosThatReadAsTheCleanEnd(_ mode: InMemoryFileIO.CrashMode) async throws {
        let memory = InMemoryFileIO()
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: Self.configuration(memory))
        for number in 1...12 as ClosedRange<UInt64> { try await journal.append(Self.history.record(number)) }
        await journal.flush()
        for seed in 0..<8 as Range<UInt64> {
            let image = memory.crashed(seed: seed, mode: mode)
            let before = try #require(image.contents(of: Self.firstSegment))
            #expect(before.count > Self.recordsEnd(before), "seed \(seed): no zeros survived to test with")
            var state = ReplayedState()
            let reopened = try Journal.open(at: storePath, schema: Fixtures.songbook, configuration: Self.configuration(image),
                                            replayingInto: &state)
            #expect(state == Self.history.model(12), "seed \(seed)")
            #expect(reopened.recovery.tornTail == nil, "seed \(seed)")
            #expect(image.contents(of: Self.firstSegment) == before, "seed \(seed): opening changed the segment")
            try await reopened.append(Self.history.record(13))
            await reopened.close()
            let (_, after) = try Self.reopen(image)
            #expect(after == Self.history.model(13), "seed \(seed)")
        }
        await journal.close()
    }

    @Test func zerosStopAtTheSegmentSizeAndARollCutsThem() async throws {
        let memory = InMemoryFileIO()
        let segmentSize = 1_800  // less than a chunk, a few transactions past the preamble
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook,
                                         configuration: Self.configuration(memory, segmentSize: segmentSize))
        var sawZeros = false
        for number in 1...Self.history.records.count {
            try await journal.append(Self.history.record(UInt64(number)))
            await journal.flush()
            for path in journal.segmentPaths {
                let bytes = try #require(memory.contents(of: path))
                if bytes.count > Self.recordsEnd(bytes) {
                    sawZeros = true
                    #expect(path == journal.segmentPaths.last, "\(path): a finished segment kept its zeros")
                    #expect(bytes.count <= segmentSize, "\(path): zeros past the segment size")
                }
            }
        }
        #expect(journal.segmentPaths.count > 1)
        #expect(sawZeros)
        await journal.close()
        let (_, state) = try Self.reopen(memory)
        #expect(state == Self.history.model(UInt64(Self.history.count)))
    }

    @Test(arguments: [Durability.relaxed, .none])
    func onlyFullDurabilityWritesAhead(_ durability: Durability) async throws {
        let memory = InMemoryFileIO()
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook,
                                         configuration: Self.configuration(memory, durability: durability))
        for number in 1...6 as ClosedRange<UInt64> { try await journal.append(Self.history.record(number)) }
        await journal.flush()
        let bytes = try #require(memory.contents(of: Self.firstSegment))
        #expect(bytes.count == Self.recordsEnd(bytes))
        #expect(journal.statistics.bytesPreallocated == 0)
        await journal.close()
    }

    /// A write of zeros that fails (the disk is full, say) stops the writing ahead for the
    /// segment, and nothing else: appends go on and are acknowledged.
    @Test func aFailedWriteOfZerosOnlyStopsTheWritingAhead() async throws {
        let memory = InMemoryFileIO()
        let zeros = try await Self.firstWriteOfZeros()
        let full = FaultInjectingFileIO(wrapping: memory, faults: [.init(callIndex: zeros.write, kind: .error(ENOSPC), operations: [.write])])
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: Self.configuration(full))
        for number in 1...12 as ClosedRange<UInt64> { try await journal.append(Self.history.record(number)) }
        await journal.flush()
        #expect(full.injectedCount == 1)
        #expect(journal.failure == nil)
        // (The fault fails one call only: a writer that tried again would have written zeros.)
        #expect(journal.statistics.bytesPreallocated == 0, "the writer kept trying after the first failure")
        await journal.close()
        let (_, state) = try Self.reopen(memory)
        #expect(state == Self.history.model(12))
    }

    /// A sync of zeros that fails poisons the journal, as any failed sync does; what was
    /// acknowledged before it is intact.
    @Test func aFailedSyncOfZerosPoisons() async throws {
        let memory = InMemoryFileIO()
        let zeros = try await Self.firstWriteOfZeros()
        let faulty = FaultInjectingFileIO(wrapping: memory, faults: [.init(callIndex: zeros.sync, kind: .error(EIO), operations: [.sync])])
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: Self.configuration(faulty))
        try await journal.append(Self.history.record(1))
        await journal.flush()
        #expect(faulty.injectedCount == 1)
        let refused = await #expect(throws: StoreError.self) { try await journal.append(Self.history.record(2)) }
        #expect(refused?.code == .poisoned)
        #expect(refused?.message.contains("zero-filled") == true, "\(refused?.message ?? "")")
        await journal.close()
        let (_, state) = try Self.reopen(memory)
        #expect(state == Self.history.model(1))
    }
}
