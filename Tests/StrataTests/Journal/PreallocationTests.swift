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
            #expect(RecordFormat.isZero(bytes.withUnsafeBytes { $0 }, from: end), "after \(number): not zeros past the records")
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
        let full = ZeroFaults(wrapping: memory, failing: .write)
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: Self.configuration(full))
        for number in 1...12 as ClosedRange<UInt64> { try await journal.append(Self.history.record(number)) }
        await journal.flush()
        #expect(full.failures == 1, "the writer kept trying after the first failure")
        #expect(journal.failure == nil)
        #expect(journal.statistics.bytesPreallocated == 0)
        await journal.close()
        let (_, state) = try Self.reopen(memory)
        #expect(state == Self.history.model(12))
    }

    /// A sync of zeros that fails poisons the journal, as any failed sync does; what was
    /// acknowledged before it is intact.
    @Test func aFailedSyncOfZerosPoisons() async throws {
        let memory = InMemoryFileIO()
        let faulty = ZeroFaults(wrapping: memory, failing: .sync)
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: Self.configuration(faulty))
        try await journal.append(Self.history.record(1))
        await journal.flush()
        #expect(faulty.failures == 1)
        let refused = await #expect(throws: StoreError.self) { try await journal.append(Self.history.record(2)) }
        #expect(refused?.code == .poisoned)
        #expect(refused?.message.contains("zero-filled") == true, "\(refused?.message ?? "")")
        await journal.close()
        let (_, state) = try Self.reopen(memory)
        #expect(state == Self.history.model(1))
    }
}

/// A file system that fails, with `ENOSPC` or `EIO`, the writes of zeros or the sync right
/// after one.
final class ZeroFaults: FileIO {
    enum Target { case write, sync }
    private let base: any FileIO
    private let target: Target
    private let state = Locked((afterZeros: false, failures: 0))

    init(wrapping base: any FileIO, failing target: Target) {
        self.base = base
        self.target = target
    }

    var failures: Int { state.withLock { $0.failures } }

    func write(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int {
        let zeros = bytes.count > 0 && bytes.allSatisfy { $0 == 0 }
        if zeros && target == .write {
            state.withLock { $0.failures += 1 }
            throw FileIOError(operation: "write", path: "", errno: ENOSPC)
        }
        state.withLock { $0.afterZeros = zeros }
        return try base.write(fd, bytes, at: offset)
    }

    func sync(_ fd: FileDescriptor) throws(FileIOError) {
        let fail = state.withLock { s in
            defer { s.afterZeros = false }
            guard target == .sync, s.afterZeros else { return false }
            s.failures += 1
            return true
        }
        if fail { throw FileIOError(operation: "fsync", path: "", errno: EIO) }
        try base.sync(fd)
    }

    func open(_ path: String, access: FileAccess, creation: FileCreation) throws(FileIOError) -> FileDescriptor {
        try base.open(path, access: access, creation: creation)
    }
    func close(_ fd: FileDescriptor) { base.close(fd) }
    func read(_ fd: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(FileIOError) -> Int {
        try base.read(fd, into: buffer, at: offset)
    }
    func size(of fd: FileDescriptor) throws(FileIOError) -> Int64 { try base.size(of: fd) }
    func truncate(_ fd: FileDescriptor, to size: Int64) throws(FileIOError) { try base.truncate(fd, to: size) }
    func rename(_ source: String, to destination: String) throws(FileIOError) { try base.rename(source, to: destination) }
    func remove(_ path: String) throws(FileIOError) { try base.remove(path) }
    func removeDirectory(_ path: String) throws(FileIOError) { try base.removeDirectory(path) }
    func syncDirectory(_ path: String) throws(FileIOError) { try base.syncDirectory(path) }
    func createDirectory(_ path: String) throws(FileIOError) { try base.createDirectory(path) }
    func contentsOfDirectory(_ path: String) throws(FileIOError) -> [String] { try base.contentsOfDirectory(path) }
    func kind(of path: String) -> FileKind? { base.kind(of: path) }
    func tryLock(_ fd: FileDescriptor) throws(FileIOError) -> Bool { try base.tryLock(fd) }
}
