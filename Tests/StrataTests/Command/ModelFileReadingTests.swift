import Foundation
import Testing
@testable import Strata

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A model file is read to its end, not by its size, and an unreadable one is refused with
/// the system's reason, naming the file.
@Suite struct ModelFileReadingTests {
    /// A model file given through a pipe (`strata create s --model <(generate-model)`) was
    /// refused as "You don't have permission".
    @Test func aModelFileThroughAPipeIsRead() async throws {
        let directory = TemporaryDirectory("strata-model-pipe")
        defer { directory.remove() }
        let fifo = directory.appending("model.json")
        #expect(mkfifo(fifo, 0o600) == 0)
        let text = Fixtures.songbook.modelFileJSON.prettyText
        // The writer blocks in open until the reader opens: on a thread of its own.
        let written = Locked(false)
        let writer = Thread {
            let fd = open(fifo, O_WRONLY)
            guard fd >= 0 else { return }
            let bytes = Array(text.utf8)
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
                if n <= 0 { break }
                sent += n
            }
            close(fd)
            written.withLock { $0 = sent == bytes.count }
        }
        writer.start()
        let result = await runTool(["create", directory.appending("store.strata"), "--model", fifo])
        #expect(result.status == 0, "\(result.errors)")
        #expect(written.withLock { $0 })
        let store = try Store.open(at: directory.appending("store.strata"), configuration: .init(readOnly: true))
        #expect(store.schema == Fixtures.songbook)
        await store.close()
    }

    @Test func anUnreadableModelFileIsRefusedWithTheReason() async throws {
        let directory = TemporaryDirectory("strata-model-pipe")
        defer { directory.remove() }
        let missing = await runTool(["create", directory.appending("a.strata"), "--model", directory.appending("none.json")])
        #expect(missing.status == 1 && missing.errors.contains("none.json: cannot read the model file: No such file or directory"), "\(missing.errors)")
        let folder = await runTool(["create", directory.appending("b.strata"), "--model", directory.path])
        #expect(folder.status == 1 && folder.errors.contains("cannot read the model file: Is a directory"), "\(folder.errors)")
        #expect(!FileManager.default.fileExists(atPath: directory.appending("a.strata")))
        #expect(!FileManager.default.fileExists(atPath: directory.appending("b.strata")))
    }
}
