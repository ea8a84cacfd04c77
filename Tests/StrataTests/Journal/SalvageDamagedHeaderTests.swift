import Foundation
import Testing

@testable import Strata

/// Salvage of a store whose oldest segment has a damaged header: the promise is a typed
/// error (or a copy of what can be read), never a crash of the process.
@Suite struct SalvageDamagedHeaderTests {
    /// A store without a checkpoint whose first segment's header has one flipped bit (in the
    /// store ID), alone or followed by later segments.
    static func damagedStore(segments: Int) async throws -> InMemoryFileIO {
        let memory = InMemoryFileIO()
        let history = History(seed: 5, count: 6)
        let size = segments > 1 ? segmentPreambleSize + 600 : 64 << 20
        let journal = try Journal.create(at: storePath, schema: Fixtures.songbook, configuration: .init(segmentSize: size, fileIO: memory))
        for record in history.records { try await journal.append(record) }
        await journal.close()
        precondition(journal.segmentPaths.count >= segments)
        let first = journal.segmentPaths[0]
        var bytes = memory.contents(of: first)!
        bytes[RecordFormat.magicSize + RecordFormat.frameHeaderSize + 3] ^= 0x01
        try memory.setContents(bytes, of: first)
        return memory
    }

    @Test(arguments: [1, 2])
    func salvageOfAStoreWhoseFirstHeaderIsDamagedThrows(_ segments: Int) async throws {
        // In a child process: the failure being tested stops the process.
        await #expect(processExitsWith: .success) { [segments] in
            let memory = try await SalvageDamagedHeaderTests.damagedStore(segments: segments)
            // Strict open reports the damage...
            var state = ReplayedState()
            do throws(StoreError) {
                _ = try Journal.open(at: storePath, configuration: .init(fileIO: memory, readOnly: true), replayingInto: &state)
                preconditionFailure("a damaged header opened")
            } catch {
                precondition(error.code == .corrupted)
            }
            // ...and salvage must throw (or copy a prefix), not stop the process.
            do throws(StoreError) {
                _ = try Journal.salvage(from: storePath, to: "/copy", configuration: .init(fileIO: memory))
            } catch {
                precondition(error.code == .corrupted || error.code == .notAStore)
            }
        }
    }
}
