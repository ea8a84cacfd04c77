import Foundation
import Testing

@testable import Strata

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The errno a file operation fails with, `nil` if it succeeds, -1 if it throws anything
/// but a ``FileIOError``.
private func failure<T>(_ body: () throws -> T) -> Int32? {
    error(body)?.errno
}

/// The error a file operation fails with, or `nil` if it succeeds.
private func error<T>(_ body: () throws -> T) -> FileIOError? {
    do {
        _ = try body()
        return nil
    } catch let error as FileIOError {
        return error
    } catch {
        return FileIOError(operation: "unexpected \(error)", path: "", errno: -1)
    }
}

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Creates a file holding `content`, syncs it, and optionally syncs its directory.
private func makeFile(
    _ fs: some FileIO, _ path: String, _ content: [UInt8], sync: Bool = true, syncDirectory directory: String? = nil
) throws {
    let fd = try fs.open(path, access: .readWrite, creation: .createExclusive)
    defer { fs.close(fd) }
    try fs.writeAll(fd, content, at: 0, path: path)
    if sync { try fs.sync(fd) }
    if let directory { try fs.syncDirectory(directory) }
}

/// The whole file at `path`, read through `fs`.
private func read(_ fs: some FileIO, _ path: String) throws -> [UInt8] {
    let fd = try fs.open(path, access: .readOnly, creation: .mustExist)
    defer { fs.close(fd) }
    return try fs.readAll(fd, path: path)
}

/// Whether `fd` gets its `flock` within five seconds. A lock whose last descriptor was just
/// closed is free at once, unless another test of this process is starting a child process
/// at that instant: the child holds a copy of every descriptor until its exec closes them,
/// so the lock is retried until that copy is gone (as `StoreLock` does), with a hard deadline.
private func lockSoon(_ fs: some FileIO, _ fd: FileDescriptor) throws -> Bool {
    let deadline = DispatchTime.now().uptimeNanoseconds + 5_000_000_000
    while true {
        if try fs.tryLock(fd) { return true }
        if DispatchTime.now().uptimeNanoseconds > deadline { return false }
        usleep(1_000)
    }
}

/// The same checks for any file system: errors, reads and writes, descriptors that outlive
/// renames and removes, and `flock` locks. `root` is an existing, empty directory.
private func exerciseBasics(_ fs: some FileIO, root: String) throws {
    let store = root + "/store"
    let journal = store + "/journal-1"

    // Directories.
    try fs.createDirectory(store)
    #expect(failure { try fs.createDirectory(store) } == EEXIST)
    #expect(failure { try fs.createDirectory(root + "/missing/deeper") } == ENOENT)
    #expect(fs.kind(of: store) == .directory)
    #expect(fs.kind(of: journal) == nil)
    #expect(try fs.contentsOfDirectory(store) == [])
    #expect(failure { try fs.contentsOfDirectory(root + "/missing") } == ENOENT)

    // Opening.
    #expect(failure { try fs.open(journal, access: .readWrite, creation: .mustExist) } == ENOENT)
    #expect(failure { try fs.open(root + "/missing/file", access: .readWrite, creation: .createIfMissing) } == ENOENT)
    #expect(failure { try fs.open(store, access: .readWrite, creation: .mustExist) } == EISDIR)
    #expect(failure { try fs.open(store, access: .readWrite, creation: .createExclusive) } == EEXIST)
    let fd = try fs.open(journal, access: .readWrite, creation: .createExclusive)
    #expect(failure { try fs.open(journal, access: .readWrite, creation: .createExclusive) } == EEXIST)
    #expect(fs.kind(of: journal) == .file)
    #expect(failure { try fs.contentsOfDirectory(journal) } == ENOTDIR)
    #expect(failure { try fs.open(journal + "/below", access: .readWrite, creation: .createIfMissing) } == ENOTDIR)

    // Read after write, zero-filled gaps, truncation.
    #expect(try fs.size(of: fd) == 0)
    try fs.writeAll(fd, bytes("hello"), at: 0, path: journal)
    #expect(try fs.size(of: fd) == 5)
    #expect(try fs.readAll(fd, path: journal) == bytes("hello"))
    try fs.writeAll(fd, bytes("XY"), at: 8, path: journal)
    #expect(try fs.readAll(fd, path: journal) == bytes("hello") + [0, 0, 0] + bytes("XY"))
    try fs.writeAll(fd, bytes("J"), at: 0, path: journal)
    var buffer = [UInt8](repeating: 0xEE, count: 4)
    let n = try buffer.withUnsafeMutableBytes { raw in try fs.read(fd, into: raw, at: 8) }
    #expect(n == 2)
    #expect(buffer == bytes("XY") + [0xEE, 0xEE])
    let atEnd = try buffer.withUnsafeMutableBytes { raw in try fs.read(fd, into: raw, at: 100) }
    #expect(atEnd == 0)
    try fs.truncate(fd, to: 3)
    #expect(try fs.readAll(fd, path: journal) == bytes("Jel"))
    try fs.truncate(fd, to: 6)
    #expect(try fs.readAll(fd, path: journal) == bytes("Jel") + [0, 0, 0])
    try fs.sync(fd)
    try fs.syncDirectory(store)
    #expect(failure { try fs.syncDirectory(root + "/missing") } == ENOENT)
    #expect(failure { try fs.syncDirectory(journal) } == ENOTDIR)

    // A read-only descriptor.
    let reader = try fs.open(journal, access: .readOnly, creation: .mustExist)
    #expect(failure { try fs.writeAll(reader, bytes("no"), at: 0, path: journal) } == EBADF)
    #expect(failure { try fs.truncate(reader, to: 0) } == EINVAL)
    #expect(try fs.readAll(reader, path: journal) == bytes("Jel") + [0, 0, 0])

    // flock: the lock belongs to the open file, not the process.
    #expect(try fs.tryLock(fd))
    #expect(try fs.tryLock(fd))
    #expect(try !fs.tryLock(reader))
    fs.close(fd)
    #expect(try lockSoon(fs, reader))

    // Descriptors refer to the file, not its name.
    try fs.rename(journal, to: store + "/renamed")
    #expect(try fs.contentsOfDirectory(store) == ["renamed"])
    #expect(try fs.readAll(reader, path: journal) == bytes("Jel") + [0, 0, 0])
    try fs.remove(store + "/renamed")
    #expect(fs.kind(of: store + "/renamed") == nil)
    #expect(try fs.contentsOfDirectory(store) == [])
    #expect(try fs.readAll(reader, path: journal) == bytes("Jel") + [0, 0, 0])
    fs.close(reader)

    // Rename replaces the destination; the replaced file lives on through its descriptor.
    try makeFile(fs, store + "/a", bytes("new"))
    try makeFile(fs, store + "/b", bytes("old"))
    let old = try fs.open(store + "/b", access: .readOnly, creation: .mustExist)
    try fs.rename(store + "/a", to: store + "/b")
    #expect(try fs.contentsOfDirectory(store) == ["b"])
    #expect(try read(fs, store + "/b") == bytes("new"))
    #expect(try fs.readAll(old, path: store + "/b") == bytes("old"))
    fs.close(old)

    // Missing paths.
    #expect(failure { try fs.rename(store + "/nothing", to: store + "/x") } == ENOENT)
    #expect(failure { try fs.remove(store + "/nothing") } == ENOENT)
    #if os(Linux)
    #expect(failure { try fs.remove(store) } == EISDIR)
    #endif

    // Listings are sorted.
    try makeFile(fs, store + "/c", [])
    try fs.createDirectory(store + "/a-dir")
    #expect(try fs.contentsOfDirectory(store) == ["a-dir", "b", "c"])
}

@Suite struct FileIODoublesTests {

    // MARK: - Both implementations

    @Test func inMemoryBehavesLikePOSIX() throws {
        try exerciseBasics(InMemoryFileIO(), root: "")
    }

    @Test func posixBasics() throws {
        let root = FileManager.default.temporaryDirectory
            .appendingPathComponent("strata-fileio-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: root) }
        try exerciseBasics(POSIXFileIO(), root: root)

        var info = stat()
        #expect(stat(root + "/store/b", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(stat(root + "/store", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
    }

    // MARK: - InMemoryFileIO

    @Test func inMemoryModesAndInspection() throws {
        let fs = InMemoryFileIO()
        #expect(fs.kind(of: "/") == .directory)
        #expect(fs.mode(of: "/") == 0o700)
        try fs.createDirectory("/store")
        try makeFile(fs, "/store/journal-1", bytes("abc"))
        try fs.createDirectory("/store/sub")
        try makeFile(fs, "/store/sub/x", [1, 2])
        #expect(fs.mode(of: "/store") == 0o700)
        #expect(fs.mode(of: "/store/journal-1") == 0o600)
        #expect(fs.mode(of: "/store/missing") == nil)
        #expect(fs.contents(of: "/store/journal-1") == bytes("abc"))
        #expect(fs.contents(of: "/store") == nil)
        #expect(fs.contents(of: "/nothing") == nil)
        #expect(fs.allFiles() == ["/store/journal-1": bytes("abc"), "/store/sub/x": [1, 2]])
        #expect(fs.contents(of: "/store/./sub/../journal-1") == bytes("abc"))
    }

    @Test func inMemoryErrorsForBadDescriptorsAndRoot() throws {
        let fs = InMemoryFileIO()
        let bogus = FileDescriptor(rawValue: 99)
        #expect(failure { try fs.size(of: bogus) } == EBADF)
        #expect(failure { try fs.tryLock(bogus) } == EBADF)
        #expect(failure { try fs.truncate(bogus, to: 0) } == EBADF)
        // The helpers that are given the file's path name it (the descriptor alone knows none).
        let written = error { try fs.writeAll(bogus, [1], at: 0, path: "/x") }
        #expect(written == FileIOError(operation: "write", path: "/x", errno: EBADF))
        #expect(error { try fs.sync(bogus, path: "/x") } == FileIOError(operation: "fsync", path: "/x", errno: EBADF))

        // A closed descriptor is unknown too.
        let fd = try fs.open("/f", access: .readWrite, creation: .createExclusive)
        fs.close(fd)
        #expect(failure { try fs.size(of: fd) } == EBADF)
        #expect(failure { try fs.sync(fd) } == EBADF)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1, alignment: 1)
        defer { buffer.deallocate() }
        #expect(failure { try fs.read(fd, into: buffer, at: 0) } == EBADF)
        #expect(failure { try fs.read(bogus, into: buffer, at: 0) } == EBADF)
        #expect(failure { try fs.open("/", access: .readOnly, creation: .mustExist) } == EISDIR)
        #expect(failure { try fs.open("", access: .readOnly, creation: .mustExist) } == ENOENT)
        #expect(failure { try fs.createDirectory("/") } == EEXIST)
        #expect(failure { try fs.remove("/") } == EISDIR)
        try fs.createDirectory("/a")
        try fs.createDirectory("/a/b")
        #expect(failure { try fs.rename("/a", to: "/a/b/c") } == EINVAL)
        try makeFile(fs, "/a/f", [])
        #expect(failure { try fs.rename("/a/f", to: "/a/b") } == EISDIR)
        #expect(failure { try fs.rename("/a/b", to: "/a/f") } == ENOTDIR)
        #expect(failure { try fs.rename("/a/b", to: "/") } == EBUSY)
    }

    @Test func inMemoryDirectoryRenameMovesItsFiles() throws {
        let fs = InMemoryFileIO()
        try fs.createDirectory("/a")
        try makeFile(fs, "/a/f", bytes("x"))
        try fs.rename("/a", to: "/b")
        #expect(fs.allFiles() == ["/b/f": bytes("x")])
    }

    @Test func inMemoryCountsOperations() throws {
        let fs = InMemoryFileIO()
        try fs.createDirectory("/d")
        let fd = try fs.open("/d/f", access: .readWrite, creation: .createIfMissing)
        try fs.writeAll(fd, [1, 2, 3], at: 0, path: "/d/f")
        _ = fs.kind(of: "/d/f")
        fs.close(fd)
        _ = fs.contents(of: "/d/f")
        #expect(fs.operationCount == 5)
    }

    @Test func setContentsReplacesCurrentAndDurableBytes() throws {
        let fs = InMemoryFileIO()
        try fs.createDirectory("/s")
        try fs.syncDirectory("/")
        try makeFile(fs, "/s/j", bytes("good data"), syncDirectory: "/s")
        try fs.setContents(bytes("bad!"), of: "/s/j")
        try fs.setContents(bytes("fresh"), of: "/s/new")
        #expect(fs.contents(of: "/s/j") == bytes("bad!"))
        for seed in 0..<8 as Range<UInt64> {
            let after = fs.crashed(seed: seed, mode: .powerLoss)
            #expect(after.allFiles() == ["/s/j": bytes("bad!"), "/s/new": bytes("fresh")])
        }
        #expect(failure { try fs.setContents([], of: "/s") } == EISDIR)
        #expect(failure { try fs.setContents([], of: "/missing/x") } == ENOENT)
    }

    @Test func processCrashKeepsEverythingButDescriptorsAndLocks() throws {
        let fs = InMemoryFileIO()
        try fs.createDirectory("/s")
        let fd = try fs.open("/s/j", access: .readWrite, creation: .createExclusive)
        try fs.writeAll(fd, bytes("never synced"), at: 0, path: "/s/j")
        #expect(try fs.tryLock(fd))
        try makeFile(fs, "/s/tmp", bytes("renamed"), sync: false)
        try fs.rename("/s/tmp", to: "/s/final")

        let after = fs.crashed(seed: 1, mode: .processCrash)
        #expect(after.allFiles() == ["/s/j": bytes("never synced"), "/s/final": bytes("renamed")])
        #expect(after.operationCount == 0)
        #expect(failure { try after.size(of: fd) } == EBADF)
        let reopened = try after.open("/s/j", access: .readWrite, creation: .mustExist)
        #expect(try after.tryLock(reopened))
        // The original is untouched and still holds its lock.
        #expect(try fs.size(of: fd) == 12)

        // Nothing became durable: a power loss afterwards can still lose it.
        var lost = false
        for seed in 0..<32 as Range<UInt64> where after.crashed(seed: seed, mode: .powerLoss).allFiles().isEmpty {
            lost = true
        }
        #expect(lost)
    }

    @Test func powerLossNeverLosesSyncedDataInASyncedDirectory() throws {
        let fs = InMemoryFileIO()
        try fs.createDirectory("/s")
        try fs.syncDirectory("/")
        try makeFile(fs, "/s/j", bytes("hello"), syncDirectory: "/s")
        let fd = try fs.open("/s/j", access: .readWrite, creation: .mustExist)
        try fs.writeAll(fd, bytes(" world"), at: 5, path: "/s/j")

        var outcomes: Set<[UInt8]> = []
        for seed in 0..<64 as Range<UInt64> {
            let after = fs.crashed(seed: seed, mode: .powerLoss)
            let content = try #require(after.contents(of: "/s/j"))
            #expect(Array(content.prefix(5)) == bytes("hello"))
            #expect([5, 11].contains(content.count) || (6..<11).contains(content.count))
            outcomes.insert(content)
            // A crash leaves everything durable.
            #expect(after.crashed(seed: seed &+ 1, mode: .powerLoss).allFiles() == after.allFiles())
        }
        #expect(outcomes.contains(bytes("hello world")))  // kept
        #expect(outcomes.contains(bytes("hello")))  // dropped
        #expect(outcomes.contains(bytes("hello") + [0, 0, 0, 0, 0, 0]))  // zero-filled
        #expect(outcomes.contains { $0.count > 5 && $0.count < 11 })  // torn

        try fs.sync(fd)
        for seed in 0..<16 as Range<UInt64> {
            #expect(fs.crashed(seed: seed, mode: .powerLoss).contents(of: "/s/j") == bytes("hello world"))
        }
    }

    @Test func powerLossCanDropACreateWhoseDirectoryWasNotSynced() throws {
        let fs = InMemoryFileIO()
        try fs.createDirectory("/s")
        try fs.syncDirectory("/")
        try makeFile(fs, "/s/j", bytes("synced file"))  // file synced, directory not

        var present = 0
        var absent = 0
        for seed in 0..<32 as Range<UInt64> {
            let after = fs.crashed(seed: seed, mode: .powerLoss)
            if let content = after.contents(of: "/s/j") {
                #expect(content == bytes("synced file"))
                present += 1
            } else {
                #expect(after.allFiles().isEmpty)
                absent += 1
            }
        }
        #expect(present > 0)
        #expect(absent > 0)

        try fs.syncDirectory("/s")
        for seed in 0..<16 as Range<UInt64> {
            #expect(fs.crashed(seed: seed, mode: .powerLoss).allFiles() == ["/s/j": bytes("synced file")])
        }
    }

    @Test func powerLossCanLoseADirectoryWhoseParentWasNotSynced() throws {
        let fs = InMemoryFileIO()
        try fs.createDirectory("/s")
        try makeFile(fs, "/s/j", bytes("x"), syncDirectory: "/s")
        var kinds: Set<FileKind?> = []
        for seed in 0..<32 as Range<UInt64> {
            kinds.insert(fs.crashed(seed: seed, mode: .powerLoss).kind(of: "/s"))
        }
        #expect(kinds == [nil, .directory])
    }

    @Test func powerLossRenameIsAtomicAndRevertsWithoutDirectorySync() throws {
        let fs = InMemoryFileIO()
        try fs.createDirectory("/s")
        try fs.syncDirectory("/")
        try makeFile(fs, "/s/snapshot", bytes("old"), syncDirectory: "/s")
        try makeFile(fs, "/s/snapshot.tmp", bytes("new"), syncDirectory: "/s")
        try fs.rename("/s/snapshot.tmp", to: "/s/snapshot")

        var outcomes: Set<[String: [UInt8]]> = []
        for seed in 0..<32 as Range<UInt64> {
            outcomes.insert(fs.crashed(seed: seed, mode: .powerLoss).allFiles())
        }
        #expect(
            outcomes == [
                ["/s/snapshot": bytes("old"), "/s/snapshot.tmp": bytes("new")],
                ["/s/snapshot": bytes("new")],
            ])

        try fs.syncDirectory("/s")
        for seed in 0..<16 as Range<UInt64> {
            #expect(fs.crashed(seed: seed, mode: .powerLoss).allFiles() == ["/s/snapshot": bytes("new")])
        }
    }

    @Test func powerLossCanUndoARemoveAndATruncate() throws {
        let fs = InMemoryFileIO()
        try fs.createDirectory("/s")
        try fs.syncDirectory("/")
        try makeFile(fs, "/s/gone", bytes("doomed"), syncDirectory: "/s")
        try makeFile(fs, "/s/cut", bytes("0123456789"), syncDirectory: "/s")
        try fs.remove("/s/gone")
        let fd = try fs.open("/s/cut", access: .readWrite, creation: .mustExist)
        try fs.truncate(fd, to: 4)

        var gone: Set<[UInt8]?> = []
        var cut: Set<[UInt8]?> = []
        for seed in 0..<32 as Range<UInt64> {
            let after = fs.crashed(seed: seed, mode: .powerLoss)
            gone.insert(after.contents(of: "/s/gone"))
            cut.insert(after.contents(of: "/s/cut"))
        }
        #expect(gone == [nil, bytes("doomed")])
        #expect(cut == [bytes("0123"), bytes("0123456789")])
    }

    @Test func sameSeedSameCrash() throws {
        let fs = InMemoryFileIO()
        try fs.createDirectory("/s")
        try fs.syncDirectory("/")
        for i in 0..<6 {
            let path = "/s/f\(i)"
            let fd = try fs.open(path, access: .readWrite, creation: .createExclusive)
            for chunk in 0..<5 {
                try fs.writeAll(fd, [UInt8](repeating: UInt8(i * 10 + chunk + 1), count: 7), at: Int64(chunk * 7), path: path)
                if chunk == 2 { try fs.sync(fd) }
            }
            if i == 3 { try fs.syncDirectory("/s") }
            fs.close(fd)
        }
        var distinct: Set<[String: [UInt8]]> = []
        for seed in [0, 1, 2, 99, UInt64.max] as [UInt64] {
            let first = fs.crashed(seed: seed, mode: .powerLoss).allFiles()
            let second = fs.crashed(seed: seed, mode: .powerLoss).allFiles()
            #expect(first == second)
            // Files f0...f3 were created before the directory sync, so they always survive
            // with at least their synced 21 bytes.
            for i in 0..<4 {
                let content = try #require(first["/s/f\(i)"])
                #expect(content.count >= 21)
                let synced: [UInt8] = (0..<3).flatMap { chunk in [UInt8](repeating: UInt8(i * 10 + chunk + 1), count: 7) }
                #expect(Array(content.prefix(21)) == synced)
            }
            distinct.insert(first)
        }
        #expect(distinct.count > 1)
    }

    @Test func lockBelongsToTheDescriptor() throws {
        let fs = InMemoryFileIO()
        try makeFile(fs, "/lock", [])
        let a = try fs.open("/lock", access: .readWrite, creation: .mustExist)
        let b = try fs.open("/lock", access: .readOnly, creation: .mustExist)
        #expect(try fs.tryLock(a))
        #expect(try !fs.tryLock(b))
        try fs.rename("/lock", to: "/moved")
        let c = try fs.open("/moved", access: .readWrite, creation: .mustExist)
        #expect(try !fs.tryLock(c))
        fs.close(b)
        #expect(try !fs.tryLock(c))
        fs.close(a)
        #expect(try fs.tryLock(c))
        // A different file has its own lock.
        try makeFile(fs, "/other", [])
        let d = try fs.open("/other", access: .readWrite, creation: .mustExist)
        #expect(try fs.tryLock(d))
    }

    // MARK: - FaultInjectingFileIO

    @Test func faultCountsCallsExceptCloseAndKind() throws {
        let fs = FaultInjectingFileIO(wrapping: InMemoryFileIO())
        try fs.createDirectory("/d")
        let fd = try fs.open("/d/f", access: .readWrite, creation: .createExclusive)
        _ = fs.kind(of: "/d/f")
        try fs.writeAll(fd, [1, 2, 3], at: 0, path: "/d/f")
        try fs.sync(fd)
        fs.close(fd)
        #expect(fs.callCount == 4)
        #expect(fs.injectedCount == 0)
    }

    @Test func faultOnceFailsOneCallWithoutReachingTheFileSystem() throws {
        let base = InMemoryFileIO()
        let fs = FaultInjectingFileIO(wrapping: base, faults: [.init(callIndex: 1, kind: .error(EIO))])
        try fs.createDirectory("/d")
        let failed = error { try fs.open("/d/f", access: .readWrite, creation: .createExclusive) }
        #expect(failed == FileIOError(operation: "open", path: "/d/f", errno: EIO))
        #expect(base.kind(of: "/d/f") == nil)
        let fd = try fs.open("/d/f", access: .readWrite, creation: .createExclusive)
        try fs.writeAll(fd, [7], at: 0, path: "/d/f")
        #expect(base.contents(of: "/d/f") == [7])
        #expect(fs.callCount == 4)
        #expect(fs.injectedCount == 1)
    }

    @Test func faultForeverFailsEveryLaterCallUntilCleared() throws {
        let base = InMemoryFileIO()
        let fs = FaultInjectingFileIO(wrapping: base)
        try fs.createDirectory("/d")
        let fd = try fs.open("/d/f", access: .readWrite, creation: .createExclusive)
        fs.inject(.init(callIndex: fs.callCount, kind: .error(ENOSPC), persistence: .forever))
        let full = FileIOError(operation: "write", path: "/d/f", errno: ENOSPC)
        #expect(error { try fs.writeAll(fd, [1], at: 0, path: "/d/f") } == full)
        #expect(error { try fs.sync(fd) } == FileIOError(operation: "fsync", path: fd.description, errno: ENOSPC))
        let renamed = FileIOError(operation: "rename", path: "/d/f -> /d/g", errno: ENOSPC)
        #expect(error { try fs.rename("/d/f", to: "/d/g") } == renamed)
        #expect(failure { try fs.createDirectory("/e") } == ENOSPC)
        #expect(fs.kind(of: "/d/f") == .file)  // not counted, never failed
        #expect(fs.injectedCount == 4)
        #expect(base.contents(of: "/d/f") == [])
        fs.clearFaults()
        try fs.writeAll(fd, [1], at: 0, path: "/d/f")
        #expect(base.contents(of: "/d/f") == [1])
        #expect(fs.callCount == 7)
        #expect(fs.injectedCount == 4)
    }

    @Test func faultOperationFilterCountsOnlyThoseOperations() throws {
        let fs = FaultInjectingFileIO(
            wrapping: InMemoryFileIO(),
            faults: [
                .init(callIndex: 0, kind: .error(EIO), operations: [.sync]),
                .init(callIndex: 1, kind: .error(EFBIG), operations: [.write, .truncate]),
            ])
        try fs.createDirectory("/d")
        let fd = try fs.open("/d/f", access: .readWrite, creation: .createExclusive)
        try fs.writeAll(fd, [1], at: 0, path: "/d/f")  // write #0
        #expect(error { try fs.sync(fd) } == FileIOError(operation: "fsync", path: fd.description, errno: EIO))
        try fs.sync(fd)
        #expect(error { try fs.truncate(fd, to: 0) } == FileIOError(operation: "ftruncate", path: fd.description, errno: EFBIG))
        try fs.writeAll(fd, [2], at: 1, path: "/d/f")  // write-or-truncate #2
        #expect(fs.injectedCount == 2)
    }

    @Test func faultForeverWithFilterFailsOnlyThoseOperations() throws {
        let fs = FaultInjectingFileIO(
            wrapping: InMemoryFileIO(),
            faults: [.init(callIndex: 1, kind: .error(EIO), persistence: .forever, operations: [.sync, .syncDirectory])])
        let fd = try fs.open("/f", access: .readWrite, creation: .createExclusive)
        try fs.sync(fd)
        #expect(failure { try fs.syncDirectory("/") } == EIO)
        try fs.writeAll(fd, [1], at: 0, path: "/f")
        #expect(failure { try fs.sync(fd) } == EIO)
        #expect(failure { try fs.sync(fd) } == EIO)
        #expect(try fs.size(of: fd) == 1)
        #expect(fs.injectedCount == 3)
    }

    @Test func shortWriteWritesHalf() throws {
        let base = InMemoryFileIO()
        let fs = FaultInjectingFileIO(
            wrapping: base,
            faults: [
                .init(callIndex: 0, kind: .shortWrite, operations: [.write]),
                .init(callIndex: 1, kind: .shortWrite, operations: [.write]),
                .init(callIndex: 0, kind: .shortWrite),  // the open: no effect
            ])
        let fd = try fs.open("/f", access: .readWrite, creation: .createExclusive)
        let ten = bytes("0123456789")
        let first = try ten.withUnsafeBytes { raw in try fs.write(fd, raw, at: 0) }
        #expect(first == 5)
        #expect(base.contents(of: "/f") == bytes("01234"))
        let second = try [UInt8]([9]).withUnsafeBytes { raw in try fs.write(fd, raw, at: 5) }
        #expect(second == 1)  // one byte cannot be shortened
        #expect(fs.injectedCount == 1)
    }

    @Test func retryingHelpersSurviveInterruptsAndShortWrites() throws {
        let base = InMemoryFileIO()
        let fs = FaultInjectingFileIO(
            wrapping: base,
            faults: [
                .init(callIndex: 0, kind: .error(EINTR), operations: [.write]),
                .init(callIndex: 1, kind: .shortWrite, persistence: .forever, operations: [.write]),
                .init(callIndex: 0, kind: .error(EINTR), operations: [.read]),
                .init(callIndex: 0, kind: .error(EINTR), operations: [.size]),
            ])
        let fd = try fs.open("/f", access: .readWrite, creation: .createExclusive)
        let content = (0..<100).map { UInt8($0) }
        try fs.writeAll(fd, content, at: 0, path: "/f")
        #expect(base.contents(of: "/f") == content)
        // EINTR, then short writes of 50, 25, 12, 6, 3, 2 and 1 byte, then a last single
        // byte that cannot be shortened: nine writes, eight of them injected.
        #expect(fs.callCount == 10)
        #expect(fs.injectedCount == 8)

        #expect(try fs.readAll(fd, path: "/f") == content)
        var buffer = [UInt8](repeating: 0, count: 10)
        let n = try buffer.withUnsafeMutableBytes { raw in try fs.readFully(fd, into: raw, at: 95) }
        #expect(n == 5)
        #expect(Array(buffer.prefix(5)) == [95, 96, 97, 98, 99])
        #expect(fs.injectedCount == 10)

        fs.clearFaults()
        fs.inject(.init(callIndex: 0, kind: .error(EIO), persistence: .forever, operations: [.write]))
        let failed = FileIOError(operation: "write", path: "/f", errno: EIO)
        #expect(error { try fs.writeAll(fd, [1], at: 100, path: "/f") } == failed)
    }

    // MARK: - IOOrderingChecker

    @Test func checkerFlagsANonAppendWrite() throws {
        let checker = IOOrderingChecker(wrapping: InMemoryFileIO())
        let fd = try checker.open("/j", access: .readWrite, creation: .createExclusive)
        try checker.writeAll(fd, bytes("hello"), at: 0, path: "/j")
        try checker.writeAll(fd, bytes("!"), at: 5, path: "/j")
        #expect(checker.isClean)
        try checker.writeAll(fd, bytes("X"), at: 2, path: "/j")
        #expect(checker.violations.count == 1)
        try checker.writeAll(fd, bytes("Y"), at: 10, path: "/j")
        #expect(checker.violations.count == 2)
        let first = try #require(checker.violations.first)
        #expect(first.contains("write /j"))
        #expect(first.contains("offset 2"))
        #expect(first.contains("ends at 6"))

        // Cutting a torn tail and appending after it is fine.
        try checker.truncate(fd, to: 6)
        try checker.writeAll(fd, bytes("more"), at: 6, path: "/j")
        #expect(checker.violations.count == 2)
    }

    @Test func checkerLearnsTheSizeOfAnExistingFile() throws {
        let fs = InMemoryFileIO()
        try fs.setContents(bytes("0123456789"), of: "/j")
        let checker = IOOrderingChecker(wrapping: fs)
        let fd = try checker.open("/j", access: .readWrite, creation: .mustExist)
        try checker.writeAll(fd, bytes("a"), at: 10, path: "/j")
        try checker.sync(fd)
        checker.noteAcknowledged(path: "/j", durableThrough: 11)
        #expect(checker.isClean)
        try checker.writeAll(fd, bytes("b"), at: 0, path: "/j")
        #expect(checker.violations == ["write /j: 1 bytes at offset 0, but the file ends at 11 (not an append, nor a write over zeros)"])
    }

    @Test func checkerAllowsWritesOverZerosOnly() throws {
        let checker = IOOrderingChecker(wrapping: InMemoryFileIO())
        let fd = try checker.open("/j", access: .readWrite, creation: .createExclusive)
        try checker.writeAll(fd, bytes("head"), at: 0, path: "/j")
        try checker.writeAll(fd, [UInt8](repeating: 0, count: 8), at: 4, path: "/j")
        // Records written into zero-filled space, then past its end.
        try checker.writeAll(fd, bytes("abcdef"), at: 4, path: "/j")
        try checker.writeAll(fd, bytes("ghijkl"), at: 10, path: "/j")
        #expect(checker.isClean, "\(checker.violations)")
        // Over bytes that are not zeros: a violation, even where zeros follow.
        try checker.writeAll(fd, [UInt8](repeating: 0, count: 4), at: 16, path: "/j")
        try checker.writeAll(fd, bytes("xy"), at: 15, path: "/j")
        #expect(checker.violations.count == 1)
        #expect(checker.violations.first?.contains("offset 15") == true)
    }

    @Test func checkerFlagsARenameBeforeSync() throws {
        let checker = IOOrderingChecker(wrapping: InMemoryFileIO())
        let fd = try checker.open("/s.tmp", access: .readWrite, creation: .createExclusive)
        try checker.writeAll(fd, bytes("snapshot"), at: 0, path: "/s.tmp")
        try checker.rename("/s.tmp", to: "/s")
        #expect(checker.violations == ["rename /s.tmp -> /s: /s.tmp has writes not yet synced"])
        // The descriptor now belongs to /s.
        try checker.writeAll(fd, bytes("+"), at: 8, path: "/s")
        try checker.sync(fd)
        try checker.syncDirectory("/")
        checker.noteAcknowledged(path: "/s", durableThrough: 9)
        #expect(checker.violations.count == 1)
    }

    @Test func checkerFlagsAnAcknowledgementBeforeSync() throws {
        let checker = IOOrderingChecker(wrapping: InMemoryFileIO())
        let fd = try checker.open("/j", access: .readWrite, creation: .createExclusive)
        try checker.syncDirectory("/")
        try checker.writeAll(fd, bytes("first"), at: 0, path: "/j")
        try checker.sync(fd)
        try checker.writeAll(fd, bytes("second"), at: 5, path: "/j")
        checker.noteAcknowledged(path: "/j", durableThrough: 5)
        #expect(checker.isClean)
        checker.noteAcknowledged(path: "/j", durableThrough: 11)
        #expect(checker.violations == ["acknowledge /j: durable through 11 claimed, but only 5 bytes were synced"])
        try checker.sync(fd)
        checker.noteAcknowledged(path: "/j", durableThrough: 11)
        #expect(checker.violations.count == 1)
    }

    @Test func checkerFlagsAnAcknowledgementBeforeDirectorySync() throws {
        let fs = InMemoryFileIO()
        let checker = IOOrderingChecker(wrapping: fs)
        try checker.createDirectory("/store")
        try checker.syncDirectory("/")
        let fd = try checker.open("/store/j", access: .readWrite, creation: .createExclusive)
        try checker.writeAll(fd, bytes("data"), at: 0, path: "/store/j")
        try checker.sync(fd)
        try checker.syncDirectory("/")  // the wrong directory
        checker.noteAcknowledged(path: "/store/j", durableThrough: 4)
        #expect(checker.violations.count == 1)
        #expect(checker.violations.first?.contains("acknowledge /store/j") == true)
        #expect(checker.violations.first?.contains("/store was not synced") == true)

        // A directory created but not made durable in its parent is flagged too.
        try checker.createDirectory("/other")
        let other = try checker.open("/other/j", access: .readWrite, creation: .createExclusive)
        try checker.sync(other)
        try checker.syncDirectory("/other")
        checker.noteAcknowledged(path: "/other/j", durableThrough: 0)
        #expect(checker.violations.count == 2)
        #expect(checker.violations.last?.contains("directory /other was created") == true)
        checker.noteAcknowledged(path: "/never-opened", durableThrough: 0)
        #expect(checker.violations.count == 3)
    }

    @Test func checkerStaysCleanOnACorrectSequence() throws {
        let fs = InMemoryFileIO()
        let checker = IOOrderingChecker(wrapping: fs)
        try checker.createDirectory("/store")
        try checker.syncDirectory("/")
        // Create, write, sync, sync the directory, acknowledge.
        let journal = "/store/journal-1"
        let fd = try checker.open(journal, access: .readWrite, creation: .createExclusive)
        try checker.writeAll(fd, bytes("record-1"), at: 0, path: journal)
        try checker.sync(fd)
        try checker.syncDirectory("/store")
        checker.noteAcknowledged(path: journal, durableThrough: 8)
        try checker.writeAll(fd, bytes("record-2"), at: 8, path: journal)
        try checker.sync(fd)
        checker.noteAcknowledged(path: journal, durableThrough: 16)
        // Write a temporary file, sync, rename into place, sync the directory.
        let temp = "/store/snapshot.tmp"
        let tfd = try checker.open(temp, access: .readWrite, creation: .createExclusive)
        try checker.writeAll(tfd, bytes("snapshot"), at: 0, path: temp)
        try checker.sync(tfd)
        checker.close(tfd)
        try checker.rename(temp, to: "/store/snapshot")
        try checker.syncDirectory("/store")
        checker.noteAcknowledged(path: "/store/snapshot", durableThrough: 8)
        // Recovery may cut a torn tail.
        try checker.truncate(fd, to: 12)
        try checker.sync(fd)
        checker.close(fd)
        #expect(checker.isClean, "\(checker.violations)")
        #expect(checker.violations == [])
        #expect(fs.allFiles() == ["/store/journal-1": bytes("record-1reco"), "/store/snapshot": bytes("snapshot")])
    }

    @Test func checkerUnderFaultInjectionSeesOnlyWhatHappened() throws {
        let checker = IOOrderingChecker(wrapping: InMemoryFileIO())
        let fs = FaultInjectingFileIO(
            wrapping: checker,
            faults: [.init(callIndex: 0, kind: .shortWrite, persistence: .forever, operations: [.write])])
        let fd = try fs.open("/j", access: .readWrite, creation: .createExclusive)
        try fs.syncDirectory("/")
        try fs.writeAll(fd, bytes("abcdefgh"), at: 0, path: "/j")
        try fs.sync(fd)
        checker.noteAcknowledged(path: "/j", durableThrough: 8)
        #expect(checker.isClean)
        #expect(fs.callCount == 7)  // open, syncDirectory, 4 short writes (4, 2, 1, 1), sync
    }
}
