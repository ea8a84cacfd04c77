#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
@testable import Strata

/// Hostile surroundings: the path is a file, permissions are missing, the directory goes
/// away while the store is open, the process starts without standard descriptors. Each
/// gets a typed error or keeps working; none gets a success that a reopen contradicts.
@Suite("Hostile environments") struct EnvironmentTests {
    static let seed: UInt64 = 21

    /// A store holding the workload's first `count` transactions, closed.
    static func makeStore(at store: String, count: UInt64 = 3) async throws {
        let journal = try Journal.create(at: store, schema: Fixtures.songbook)
        for n in 1...count { try await journal.append(ProcessWorkload.transaction(n, seed: seed)) }
        await journal.close()
    }

    static func expectError(_ code: StoreError.Code, _ body: () throws(StoreError) -> Journal) -> StoreError? {
        do {
            let journal = try body()
            Issue.record("expected \(code), but the store opened at \(journal.path)")
            return nil
        } catch {
            #expect(error.code == code, "\(error)")
            return error
        }
    }

    static func state(of store: String) throws -> ReplayedState {
        var state = ReplayedState()
        _ = try Journal.open(at: store, schema: Fixtures.songbook, configuration: .init(readOnly: true), replayingInto: &state)
        return state
    }

    @Test func storePathIsAFile() throws {
        let directory = TemporaryDirectory("strata-env")
        defer { directory.remove() }
        let path = directory.appending("songs.strata")
        let contents = Data("not a store".utf8)
        try contents.write(to: URL(fileURLWithPath: path))

        let created = Self.expectError(.alreadyExists) { () throws(StoreError) in try Journal.create(at: path, schema: Fixtures.songbook) }
        #expect(created?.path == path)
        var state = ReplayedState()
        let opened = Self.expectError(.notAStore) { () throws(StoreError) in
            try Journal.open(at: path, schema: Fixtures.songbook, replayingInto: &state)
        }
        #expect(opened?.path == path)
        _ = Self.expectError(.notAStore) { () throws(StoreError) in try Journal.read(at: path).0 }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == contents, "the file was changed")

        // A store path below a file.
        let below = path + "/songs.strata"
        let failed = Self.expectError(.io) { () throws(StoreError) in try Journal.create(at: below, schema: Fixtures.songbook) }
        #expect(failed?.underlying?.errno == ENOTDIR)
        _ = Self.expectError(.notFound) { () throws(StoreError) in
            try Journal.open(at: below, schema: Fixtures.songbook, replayingInto: &state)
        }
    }

    @Test(.disabled(if: runningAsRoot, "root bypasses file permissions"))
    func directoryWithoutPermission() async throws {
        let directory = TemporaryDirectory("strata-env")
        defer {
            chmod(directory.path, 0o700)
            chmod(directory.appending("songs.strata"), 0o700)
            directory.remove()
        }
        // Creating in a directory this process may not write.
        let locked = directory.appending("locked")
        try FileManager.default.createDirectory(atPath: locked, withIntermediateDirectories: false)
        chmod(locked, 0o500)
        defer { chmod(locked, 0o700) }
        let target = locked + "/songs.strata"
        let created = Self.expectError(.io) { () throws(StoreError) in try Journal.create(at: target, schema: Fixtures.songbook) }
        #expect(created?.underlying?.errno == EACCES)
        #expect(created?.description.contains(target) == true)
        #expect(FileManager.default.fileExists(atPath: target) == false)

        // A store whose directory this process may not enter or list.
        let store = directory.appending("songs.strata")
        try await Self.makeStore(at: store)
        chmod(store, 0o000)
        var state = ReplayedState()
        let opened = Self.expectError(.io) { () throws(StoreError) in
            try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &state)
        }
        #expect(opened?.underlying?.errno == EACCES)
        _ = Self.expectError(.io) { () throws(StoreError) in try Journal.read(at: store).0 }

        chmod(store, 0o700)
        var model = WorkloadModel(seed: Self.seed)
        #expect(try Self.state(of: store) == (try model.state(through: 3)))
    }

    @Test(.disabled(if: runningAsRoot, "root bypasses file permissions"))
    func readOnlyDirectory() async throws {
        let directory = TemporaryDirectory("strata-env")
        let store = directory.appending("songs.strata")
        defer {
            chmod(store, 0o700)
            directory.remove()
        }
        try await Self.makeStore(at: store)
        chmod(store, 0o500)
        var model = WorkloadModel(seed: Self.seed)

        // Reading works.
        let (reader, read) = try Journal.read(at: store)
        #expect(read == (try model.state(through: 3)))
        await reader.close()

        // Writing works as long as no file must be created: the files themselves are writable.
        var state = ReplayedState()
        let journal = try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &state)
        var acked: UInt64 = 3
        for n in 4...5 as ClosedRange<UInt64> {
            try await journal.append(ProcessWorkload.transaction(n, seed: Self.seed))
            acked = n
        }
        // Compaction must create files: it fails with a typed error.
        var current = try model.state(through: 5)
        await #expect(throws: StoreError.self) { try await journal.compact(from: current) }
        // Whatever an append does now, a success must survive a reopen.
        if (try? await journal.append(ProcessWorkload.transaction(6, seed: Self.seed))) != nil { acked = 6 }
        await journal.close()

        chmod(store, 0o700)
        let reopened = try Self.state(of: store)
        current = try model.state(through: reopened.lastTransaction)
        #expect(reopened.lastTransaction >= acked)
        #expect(reopened == current)

        // Creating a store inside a read-only directory fails.
        chmod(store, 0o500)
        let inner = store + "/nested.strata"
        _ = Self.expectError(.io) { () throws(StoreError) in try Journal.create(at: inner, schema: Fixtures.songbook) }
    }

    /// POSIX keeps an unlinked file alive while it is open, so appends after the store
    /// directory is removed still succeed — into files no path reaches any more. A reopen
    /// then finds no store (`notFound`); it never opens a store that lacks them. Compaction,
    /// which must create files in the directory, fails with a typed error.
    @Test func storeDirectoryRemovedWhileOpen() async throws {
        let directory = TemporaryDirectory("strata-env")
        defer { directory.remove() }
        let store = directory.appending("songs.strata")
        try await Self.makeStore(at: store)
        var state = ReplayedState()
        let journal = try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &state)
        try FileManager.default.removeItem(atPath: store)

        for n in 4...6 as ClosedRange<UInt64> {
            try await journal.append(ProcessWorkload.transaction(n, seed: Self.seed))
        }
        var model = WorkloadModel(seed: Self.seed)
        let current = try model.state(through: 6)
        await #expect(throws: StoreError.self) { try await journal.compact(from: current) }
        await journal.close()

        var reopened = ReplayedState()
        _ = Self.expectError(.notFound) { () throws(StoreError) in
            try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &reopened)
        }
        #expect(FileManager.default.fileExists(atPath: store) == false, "something recreated the store directory")
    }

    /// A store directory renamed while open: appends follow the open files into the new
    /// place, and a reopen there holds them. Compaction creates its next segment under the
    /// old path, fails, and poisons the handle; nothing acknowledged is lost.
    @Test func storeDirectoryRenamedWhileOpen() async throws {
        let directory = TemporaryDirectory("strata-env")
        defer { directory.remove() }
        let store = directory.appending("songs.strata")
        let moved = directory.appending("moved.strata")
        try await Self.makeStore(at: store)
        var state = ReplayedState()
        let journal = try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &state)
        try FileManager.default.moveItem(atPath: store, toPath: moved)

        var acked: UInt64 = 3
        for n in 4...6 as ClosedRange<UInt64> {
            try await journal.append(ProcessWorkload.transaction(n, seed: Self.seed))
            acked = n
        }
        var model = WorkloadModel(seed: Self.seed)
        let current = try model.state(through: 6)
        await #expect(throws: StoreError.self) { try await journal.compact(from: current) }
        if (try? await journal.append(ProcessWorkload.transaction(7, seed: Self.seed))) != nil { acked = 7 }
        await journal.close()

        var reopened = ReplayedState()
        _ = Self.expectError(.notFound) { () throws(StoreError) in
            try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &reopened)
        }
        let there = try Self.state(of: moved)
        #expect(there.lastTransaction >= acked)
        #expect(there == (try model.state(through: there.lastTransaction)))
    }

    /// A process started with descriptors 0, 1 and 2 closed: the files the store opens
    /// would get those numbers, and the program's ordinary output — a `print`, a log line
    /// to standard error — would land in the journal. The writer is started through
    /// `/bin/sh` with the three closed, appends while writing to descriptors 1 and 2 after
    /// every save, and reports which descriptors refer to the store's files.
    @Test(.enabled(if: WriterExecutable.isAvailable, "strata-journal-writer was not built"))
    func closedStandardDescriptors() async throws {
        let directory = TemporaryDirectory("strata-env")
        defer { directory.remove() }
        let store = directory.appending("songs.strata")
        let journal = try Journal.create(at: store, schema: Fixtures.songbook)
        await journal.close()
        let reportPath = directory.appending("report.txt")
        let writer = try #require(WriterExecutable.url)

        let exit = try await onOwnThread {
            let child = try ChildProcess(
                ["-c", "exec \"$0\" \"$@\" <&- >&- 2>&-", writer.path,
                 "stray-output", store, "--seed", String(Self.seed), "--count", "20", "--report", reportPath],
                executable: URL(fileURLWithPath: "/bin/sh"), standardStreams: false)
            return try child.waitForExit(within: .seconds(60))
        }
        // Descriptor 2 may be the report itself when the library leaves it free: drop the
        // stray lines that then land there.
        let report = try String(contentsOfFile: reportPath, encoding: .utf8).split(separator: "\n").map(String.init)
            .filter { !$0.hasPrefix("stray output") }
        #expect(exit.reason == .exit && exit.status == 0, "the writer ended with \(exit): \(report)")
        #expect(report.last == "done", "\(report)")
        #expect(report.filter { $0.hasPrefix("ack ") }.count == 20)
        let descriptors = report.filter { $0.hasPrefix("fd ") }.compactMap { Int32($0.split(separator: " ")[1]) }
        #if os(Linux)
        #expect(descriptors.count >= 2, "the lock file and the segment should be open: \(report)")
        #endif
        #expect(descriptors.allSatisfy { $0 > STDERR_FILENO }, "store files opened as a standard descriptor: \(report)")

        var state = ReplayedState()
        let reopened = try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &state)
        var model = WorkloadModel(seed: Self.seed)
        #expect(state == (try model.state(through: 20)))
        await reopened.close()
    }
}
