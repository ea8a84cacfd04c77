import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// Cancelling the task that runs an import stops it before its next commit: the commits it
/// reported stay, nothing after them is committed, and the error says so.
extension ImportCommandTests {
    @Test func cancellingAnImportKeepsExactlyTheReportedCommits() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        // The import's task is cancelled once its first commit is reported.
        let error = try #require(await importArtists(1...9, into: catalog, batchSize: 2, cancelling: .afterFirstCommit))
        #expect(error.storeError?.code == .cancelled)
        #expect(error.description == "the import was cancelled after line 4: lines 1–2 are committed (1 transaction through 1) and nothing after them")
        let generation = try await catalog.generation()
        #expect(generation.transaction == 1)
        #expect(generation.count(of: "Artist") == 2)
    }

    @Test func anImportCancelledBeforeItStartsCommitsNothing() async throws {
        let catalog = CatalogStore()
        defer { catalog.remove() }
        try await catalog.create()
        let error = try #require(await importArtists(1...3, into: catalog, batchSize: nil, cancelling: .beforeStart))
        #expect(error.storeError?.code == .cancelled)
        #expect(error.message == "the import was cancelled after line 0: nothing was committed")
        let generation = try await catalog.generation()
        #expect(generation.transaction == 0)
        #expect(generation.count(of: "Artist") == 0)
    }

    enum CancellationMoment { case beforeStart, afterFirstCommit }

    /// Imports artists with the given keys in a task of its own, cancelled at `moment`;
    /// returns the import's error (`nil` if it finished).
    private func importArtists(_ keys: ClosedRange<Int>, into catalog: CatalogStore, batchSize: Int?,
                               cancelling moment: CancellationMoment) async -> JSONLinesImporter.ImportError? {
        let file = try! catalog.file("artists.jsonl", keys.map { #"{"entity": "Artist", "values": {"artistID": \#($0)}}"# })
        let task = Task { () async -> JSONLinesImporter.ImportError? in
            if moment == .beforeStart { withUnsafeCurrentTask { $0?.cancel() } }
            let store = try! Store.open(at: catalog.path)
            var importer = JSONLinesImporter(store: store, batchSize: batchSize)
            do {
                _ = try await importer.run(try JSONLinesReader(path: file)) { event in
                    if moment == .afterFirstCommit, case .committed = event { withUnsafeCurrentTask { $0?.cancel() } }
                }
                await store.close()
                return nil
            } catch {
                await store.close()
                return error as? JSONLinesImporter.ImportError
            }
        }
        return await task.value
    }
}

/// An import reading a pipe whose writer is quiet waits without holding a thread of Swift's
/// cooperative pool, and stops when its task is cancelled. (It blocked its thread until the
/// next 2,048 lines or the end of the input: a cancelled import went on waiting, and two of
/// them stopped every task of the process on two processors.) One at a time: each holds
/// threads of the pool if that comes back.
@Suite(.serialized) struct ImportPipeTests {
    /// A pipe whose writing end the test keeps open, holding `lines` (each followed by a line
    /// break): the writing end, and the pipe's path.
    private static func quietPipe(in directory: TemporaryDirectory, _ name: String, lines: [String]) throws -> (writer: Int32, path: String) {
        let fifo = directory.appending(name)
        try #require(mkfifo(fifo, 0o600) == 0)
        let writer = open(fifo, O_RDWR)  // a writer that keeps its end open
        try #require(writer >= 0)
        for line in lines { _ = (line + "\n").withCString { write(writer, $0, strlen($0)) } }
        return (writer, fifo)
    }

    @Test func aCancelledImportWaitingOnAQuietPipeStops() async throws {
        let directory = TemporaryDirectory("strata-import-pipe")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let (writer, path) = try Self.quietPipe(in: directory, "lines.fifo", lines: [#"{"entity": "Artist", "values": {"artistID": 1}}"#])
        // The error's code (nil when the import ends without one).
        let importing = Task.detached { () -> StoreError.Code? in
            guard let reader = try? JSONLinesReader(path: path) else { return .io }
            var importer = JSONLinesImporter(store: store, batchSize: 1)
            do throws(JSONLinesImporter.ImportError) {
                _ = try await importer.run(reader)
                return nil
            } catch {
                return error.storeError?.code ?? .invalidValue
            }
        }
        // The import has read the line and waits for more (the pipe is empty). Given a minute:
        // the read runs on a Dispatch worker, which the rest of the suite, starting at the same
        // moment on two processors, kept busy for over 20 s once.
        #expect(await eventually(within: 60) {
            var unread: Int32 = 1
            return ioctl(writer, UInt(FIONREAD), &unread) == 0 && unread == 0
        })
        importing.cancel()
        // The input ends after 30 s whatever happens (from a Dispatch thread: an import
        // holding a thread of the pool must not keep the test from ending), unless the test
        // has closed it first.
        let open = Locked<Int32?>(writer)
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(30 * TestTiming.slowdown)) { open.withLock { if let fd = $0 { close(fd); $0 = nil } } }
        let code = await importing.value
        let stillOpen = open.withLock { open -> Bool in
            guard let fd = open else { return false }
            close(fd)
            open = nil
            return true
        }
        #expect(stillOpen, "the import's task was cancelled, and the import went on waiting until its input ended")
        #expect(code == .cancelled)
        await store.close()
    }

    /// A batch is committed once its lines have come, while the producer stays quiet (it was
    /// committed once 2,048 lines had come or the input ended).
    @Test func aBatchFromAQuietPipeIsCommittedOnceItsLinesHaveCome() async throws {
        let directory = TemporaryDirectory("strata-import-pipe")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let (writer, path) = try Self.quietPipe(in: directory, "lines.fifo", lines: (1...3).map {
            #"{"entity": "Artist", "values": {"artistID": \#($0), "name": "A\#($0)"}}"#
        })
        let committed = Locked<[JSONLinesImporter.Event]>([])
        let ended = Locked(false)
        // Signalled once the import has its pipe open, or has failed to open it.
        let ready = DispatchSemaphore(value: 0)
        let importing = Task.detached { () -> Result<JSONLinesImporter.Summary, any Error> in
            defer { ended.withLock { $0 = true } }
            do {
                var importer = JSONLinesImporter(store: store, batchSize: 2)
                let reader: JSONLinesReader
                do {
                    reader = try JSONLinesReader(path: path)
                    ready.signal()
                } catch {
                    ready.signal()
                    throw error
                }
                return .success(try await importer.run(reader) { event in
                    if case .committed = event { committed.withLock { $0.append(event) } }
                })
            } catch {
                return .failure(error)
            }
        }
        // The input ends after 30 s whatever happens, unless the test has closed it first —
        // once the import has the pipe open (one opening it after the last writer closed would
        // wait in `open` forever: see `importsWaitingOnQuietPipesLeaveThePoolToOtherTasks`).
        let open = Locked<Int32?>(writer)
        @Sendable func closeInput() -> Bool {
            open.withLock { open -> Bool in
                guard let fd = open else { return false }
                close(fd)
                open = nil
                return true
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(30 * TestTiming.slowdown)) {
            ready.wait()
            _ = closeInput()
        }
        let firstBatch = await eventually(within: 60) { !committed.withLock(\.isEmpty) || ended.withLock { $0 } }
        let stillOpen = closeInput()
        #expect(firstBatch && stillOpen, "the first batch of two lines was committed only when the input ended")
        #expect(committed.withLock { $0.first } == .committed(transaction: 1, lines: 2))
        #expect(try await importing.value.get().lines == 3)
        #expect(store.currentGeneration.count(of: "Artist") == 3)
        await store.close()
    }

    @Test func importsWaitingOnQuietPipesLeaveThePoolToOtherTasks() async throws {
        let directory = TemporaryDirectory("strata-import-pipes")
        defer { directory.remove() }
        var writers: [Int32] = []
        var imports: [Task<Void, Never>] = []
        var stores: [Store] = []
        let count = max(ProcessInfo.processInfo.activeProcessorCount, 2)
        // Signalled by each import once it has its pipe open, or once it has failed to open it.
        let ready = (0..<count).map { _ in DispatchSemaphore(value: 0) }
        for k in 0..<count {
            let store = try Store.create(at: directory.appending("s\(k).strata"), schema: Fixtures.songbook, configuration: .init(durability: .none))
            stores.append(store)
            let (writer, path) = try Self.quietPipe(in: directory, "lines\(k).fifo", lines: [])
            writers.append(writer)
            imports.append(Task.detached {
                var importer = JSONLinesImporter(store: store, batchSize: 1)
                guard let reader = try? JSONLinesReader(path: path) else {
                    ready[k].signal()
                    return
                }
                ready[k].signal()
                _ = try? await importer.run(reader)
            })
        }
        // The writers end their input after 3 s, from a Dispatch thread, whatever the pool does
        // — each only once its import has opened the pipe (or failed to), however long that takes:
        // an import that opens it after its last writer closed would wait in `open` for a
        // writer forever (a slow build, under ThreadSanitizer beside other work, hung the whole
        // run so three times). The import says so itself: the test's own end is open for
        // reading too (`O_RDWR`), so no probe of the pipe can tell whether the import has it.
        let toClose = writers
        DispatchQueue.global().asyncAfter(deadline: .now() + 3) {
            for (k, writer) in toClose.enumerated() {
                ready[k].wait()
                close(writer)
            }
        }
        let start = ContinuousClock.now
        try await Task.sleep(for: .milliseconds(100))
        let took = ContinuousClock.now - start
        #expect(took < .seconds(2) * TestTiming.slowdown, "a 100 ms sleep took \(took) while \(imports.count) imports waited for input")
        for task in imports { await task.value }
        for store in stores { await store.close() }
    }
}
