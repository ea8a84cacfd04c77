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

/// One writer at a time: a second writer — in another process or in this one — gets
/// `locked` at once, naming the lock file and the holder's PID; a killed holder leaves no
/// stale lock; a failed attempt never releases the holder's lock.
@Suite("Single-writer lock across processes", .enabled(if: WriterExecutable.isAvailable, "strata-journal-writer was not built"))
struct LockTests {
    /// A store holding the workload's first `count` transactions, closed.
    static func makeStore(in directory: TemporaryDirectory, count: UInt64 = 5) async throws -> String {
        let store = directory.appending("songs.strata")
        let journal = try Journal.create(at: store, schema: Fixtures.songbook)
        for n in 1...count { try await journal.append(ProcessWorkload.transaction(n, seed: 3)) }
        await journal.close()
        return store
    }

    /// Starts `hold-lock` on `store` and waits until the child holds the lock.
    static func holdLock(_ store: String) async throws -> ChildProcess {
        try await onOwnThread {
            let child = try ChildProcess(["hold-lock", store])
            let line = try child.expectLine()
            guard line == "locked" else { throw ChildProcessFailure(description: "hold-lock said \(line ?? "nothing")") }
            return child
        }
    }

    /// Opens `store` for writing, expecting `locked`; returns the error and how long it took.
    static func expectLocked(_ store: String) throws -> (error: StoreError, elapsed: Duration) {
        let clock = ContinuousClock()
        var state = ReplayedState()
        var caught: StoreError?
        let elapsed = clock.measure {
            do throws(StoreError) {
                let journal = try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &state)
                Issue.record("a second writer opened \(store), held by another; its lock holds \(journal.path)")
            } catch {
                caught = error
            }
        }
        let error = try #require(caught)
        #expect(error.code == .locked, "\(error)")
        return (error, elapsed)
    }

    @Test func secondWriterInAnotherProcessIsRefusedAtOnce() async throws {
        let directory = TemporaryDirectory("strata-lock")
        defer { directory.remove() }
        let store = try await Self.makeStore(in: directory)
        let child = try await Self.holdLock(store)
        defer { child.sendKill() }

        let (error, elapsed) = try Self.expectLocked(store)
        let lockFile = StoreLayout.join(store, StoreLayout.lockFile)
        #expect(error.path == lockFile)
        #expect(error.description.contains(lockFile), "\(error)")
        #expect(error.message.contains("process \(child.pid)"), "the message does not name the holder \(child.pid): \(error.message)")
        #expect(elapsed < .seconds(2), "refusing took \(elapsed); it must not wait for the lock")

        // Reading needs no lock.
        let (reader, state) = try Journal.read(at: store)
        #expect(state.lastTransaction == 5)
        await reader.close()

        // The holder still holds it after the failed attempt and the read.
        _ = try Self.expectLocked(store)
        child.closeInput()
        #expect(try await onOwnThread { try child.remainingLines() } == ["released"])
        #expect(try await onOwnThread { try child.waitForExit() }.status == 0)
        var reopened = ReplayedState()
        let journal = try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &reopened)
        #expect(reopened.lastTransaction == 5)
        await journal.close()
    }

    @Test func writerInAnotherProcessIsRefusedWhileThisOneHolds() async throws {
        let directory = TemporaryDirectory("strata-lock")
        defer { directory.remove() }
        let store = try await Self.makeStore(in: directory)
        var state = ReplayedState()
        let journal = try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &state)

        let (lines, exit) = try await onOwnThread {
            let child = try ChildProcess(["write", store, "--seed", "3", "--count", "1"])
            return (try child.remainingLines(), try child.waitForExit())
        }
        #expect(exit.reason == .exit && exit.status == 3, "\(lines)")
        let fatal = try #require(lines.first, "the writer said nothing")
        #expect(fatal.hasPrefix("fatal locked: "), "\(lines)")
        #expect(fatal.contains("process \(getpid())"), "\(fatal)")
        #expect(fatal.contains(StoreLayout.join(store, StoreLayout.lockFile)), "\(fatal)")
        #expect(lines.count == 1, "the refused writer wrote: \(lines)")

        try await journal.append(ProcessWorkload.transaction(6, seed: 3))
        await journal.close()
        let (reader, after) = try Journal.read(at: store)
        #expect(after.lastTransaction == 6)
        await reader.close()
    }

    @Test func killedHolderLeavesNoStaleLock() async throws {
        let directory = TemporaryDirectory("strata-lock")
        defer { directory.remove() }
        let store = try await Self.makeStore(in: directory)
        let child = try await Self.holdLock(store)
        _ = try Self.expectLocked(store)

        child.sendKill()
        let exit = try await onOwnThread { try child.waitForExit() }
        #expect(exit.reason == .uncaughtSignal && exit.status == SIGKILL)
        // The lock file still names the dead holder, but the lock died with it.
        var state = ReplayedState()
        let journal = try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &state)
        #expect(state.lastTransaction == 5)
        try await journal.append(ProcessWorkload.transaction(6, seed: 3))
        let holder = try String(contentsOfFile: StoreLayout.join(store, StoreLayout.lockFile), encoding: .utf8)
        #expect(holder == "\(getpid())\n")
        await journal.close()
    }

    @Test func sameStoreOpenedTwiceInOneProcess() async throws {
        let directory = TemporaryDirectory("strata-lock")
        defer { directory.remove() }
        let store = try await Self.makeStore(in: directory)
        var state = ReplayedState()
        let first = try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &state)

        let (error, elapsed) = try Self.expectLocked(store)
        #expect(error.message.contains("process \(getpid())"), "\(error.message)")
        #expect(elapsed < .seconds(2))
        // The failed attempt closed its own descriptor of the lock file; with flock that
        // must not release the first handle's lock (with fcntl locks it would).
        _ = try Self.expectLocked(store)
        try await first.append(ProcessWorkload.transaction(6, seed: 3))

        await first.close()
        var reopened = ReplayedState()
        let second = try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &reopened)
        #expect(reopened.lastTransaction == 6)
        await second.close()
    }

    /// The lock descriptor is close-on-exec: a child process started while this process
    /// holds the lock does not keep the store locked after the handle closes.
    @Test func childProcessesDoNotInheritTheLock() async throws {
        let directory = TemporaryDirectory("strata-lock")
        defer { directory.remove() }
        let store = try await Self.makeStore(in: directory)
        let otherDirectory = TemporaryDirectory("strata-lock-other")
        defer { otherDirectory.remove() }
        let otherStore = try await Self.makeStore(in: otherDirectory)

        var state = ReplayedState()
        let journal = try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &state)
        let child = try await Self.holdLock(otherStore)
        defer { child.sendKill() }
        await journal.close()

        var reopened = ReplayedState()
        let again = try Journal.open(at: store, schema: Fixtures.songbook, replayingInto: &reopened)
        #expect(reopened.lastTransaction == 5)
        await again.close()
    }
}
