import Foundation
import Testing
@testable import Strata

/// A store file whose size is larger than the machine's memory — here a sparse file, which
/// costs the disk nothing — is refused with a typed error naming it, before anything is
/// allocated to its size (opening read it whole: a hostile file claiming terabytes made the
/// process allocate them and die), and the files are left as they were.
@Suite struct OversizedFileTests {
    @Test("a segment file larger than the machine's memory is refused, naming it, read-only or not")
    func oversizedSegmentRefused() async throws {
        let directory = TemporaryDirectory("strata-oversized-file")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let id = store.allocateObjectIDs(for: "Artist")[0]
        try await store.commit(ChangeSet(author: "seed", inserted: [
            RowImage(id: id, values: [.int(1), .string("A1"), .date(Date(timeIntervalSince1970: 0)), .objects([])]),
        ]))
        await store.close()
        let path = directory.appending("store.strata")
        let segment = try #require(try FileManager.default.contentsOfDirectory(atPath: path)
            .filter { StoreLayout.segmentTransaction($0) != nil }.sorted().last)
        let segmentPath = StoreLayout.join(path, segment)
        let huge = POSIXFileIO.largestWholeRead + (1 << 20)  // the reader's bound: the machine's memory
        #expect(truncate(segmentPath, off_t(huge)) == 0, "a sparse file of \(huge) bytes")
        let before = try FileManager.default.contentsOfDirectory(atPath: path).sorted()

        for readOnly in [true, false] {
            do {
                let opened = try Store.open(at: path, configuration: .init(readOnly: readOnly))
                await opened.close()
                Issue.record("an open (read-only \(readOnly)) of a store with a \(huge)-byte segment succeeded")
            } catch {
                #expect(error.code == .io)
                #expect(error.path == segmentPath || error.message.contains(segmentPath), "\(error)")
                #expect(error.message.contains("more than this machine's"), "\(error)")
            }
        }
        let attributes = try FileManager.default.attributesOfItem(atPath: segmentPath)
        #expect((attributes[.size] as? NSNumber)?.int64Value == huge, "the file is left as it was")
        #expect(try FileManager.default.contentsOfDirectory(atPath: path).sorted() == before)
    }
}
