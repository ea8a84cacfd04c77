import Foundation
import Testing
@testable import Strata
@testable import StrataCommand

/// Forward references take effect in the input's order: a later line that sets the
/// relationship through its inverse wins over a reference still waiting, as it would if the
/// object had been there all along.
extension ImportCommandTests {
    @Test func aLaterLineSettingTheInverseWinsOverAReferenceStillWaiting() async throws {
        let album = #"{"entity": "Album", "values": {"albumID": 1, "title": "x", "artist": 5}}"#
        let otherArtist = #"{"entity": "Artist", "values": {"artistID": 6, "albums": [1]}}"#  // moves the album
        let artist = #"{"entity": "Artist", "values": {"artistID": 5}}"#
        // The album's artist comes later (a reference waits) or first (it is linked at once).
        for lines in [[album, otherArtist, artist], [artist, album, otherArtist]] {
            let catalog = CatalogStore()
            defer { catalog.remove() }
            try await catalog.create()
            try await catalog.load(lines)
            let generation = try await catalog.generation()
            let six = try #require(generation.object(of: "Artist", uniqueValue: .int(6)))
            let five = try #require(generation.object(of: "Artist", uniqueValue: .int(5)))
            let first = try #require(generation.object(of: "Album", uniqueValue: .int(1)))
            #expect(first.values[4] == .object(six.id), "\(lines)")
            #expect(six.values[3] == .objects([first.id]), "\(lines)")
            #expect(five.values[3] == .objects([]), "\(lines)")
            #expect(generation.integrityProblems().isEmpty)
        }
    }
}
