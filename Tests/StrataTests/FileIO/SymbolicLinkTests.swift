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

/// Store files on the real file system are readable by their owner alone, and no file is
/// ever opened through a symbolic link: one planted where a store file or a temporary file
/// goes is refused or removed, and whatever it points at is left as it was.
@Suite struct SymbolicLinkTests {
    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return info.st_mode
    }

    static func contents(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { [UInt8]($0) } }

    @Test("opening never follows a symbolic link as the last component, in any mode")
    func openRefusesAFinalSymbolicLink() throws {
        let directory = TemporaryDirectory("strata-symlink")
        defer { directory.remove() }
        let io = POSIXFileIO()
        let victim = directory.appending("victim")
        try Data("keep".utf8).write(to: URL(fileURLWithPath: victim))
        let link = directory.appending("link")
        #expect(symlink(victim, link) == 0)
        let dangling = directory.appending("dangling")
        let missing = directory.appending("missing")
        #expect(symlink(missing, dangling) == 0)

        for (creation, access) in [(FileCreation.mustExist, FileAccess.readOnly), (.mustExist, .readWrite), (.createIfMissing, .readWrite),
                                   (.createExclusive, .readWrite)] {
            for path in [link, dangling] {
                do {
                    let fd = try io.open(path, access: access, creation: creation)
                    io.close(fd)
                    Issue.record("\(path) (\(creation), \(access)) was opened through its link")
                } catch {
                    #expect(error.errno == ELOOP || error.errno == EEXIST, "\(path) (\(creation)): \(error)")
                }
            }
        }
        #expect(Self.contents(victim) == Array("keep".utf8))
        #expect(Self.mode(missing) == nil, "a file was created through a dangling link")
    }

    @Test("store files are created 0600, and a link planted at the temporary checkpoint's name is removed, not written through")
    func storeFilesAndTemporaryCheckpoint() async throws {
        let directory = TemporaryDirectory("strata-symlink")
        defer { directory.remove() }
        let store = directory.appending("songs.strata")
        let history = History(seed: 8, count: 4)
        let journal = try Journal.create(at: store, schema: Fixtures.songbook)
        for number in UInt64(1)...3 { try await journal.append(history.record(number)) }

        let victim = directory.appending("victim")
        try Data("keep".utf8).write(to: URL(fileURLWithPath: victim))
        let temporary = StoreLayout.join(store, StoreLayout.checkpointName(through: 3) + StoreLayout.temporarySuffix)
        #expect(symlink(victim, temporary) == 0)
        try await journal.compact(from: history.model(3))
        try await journal.append(history.record(4))
        await journal.close()

        #expect(Self.contents(victim) == Array("keep".utf8))
        #expect(Self.mode(temporary) == nil)
        #expect(Self.mode(store).map { $0 & 0o7777 } == 0o700)
        let names = try FileManager.default.contentsOfDirectory(atPath: store).sorted()
        #expect(names.contains(StoreLayout.checkpointName(through: 3)) && names.contains(StoreLayout.lockFile), "\(names)")
        for name in names {
            let mode = try #require(Self.mode(StoreLayout.join(store, name)))
            #expect(mode & S_IFMT == S_IFREG && mode & 0o7777 == 0o600, "\(name): mode \(String(mode, radix: 8))")
        }
        let (reader, state) = try Journal.read(at: store)
        #expect(state == history.model(4))
        await reader.close()
    }
}
