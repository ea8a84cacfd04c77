import Foundation
import Testing
@testable import Strata

/// Object number 0 is never allocated (`ObjectID.number`: "never 0"): an ID with it names no object.
@Suite struct ObjectNumberZeroTests {
    @Test("an ID numbered 0 is not an existing object and cannot be referred to")
    func numberZeroIsNoObject() async throws {
        let f = try ContextFixture(.root)
        let o = try await seedSongbook(f.store)
        let zero = ObjectID(entity: "Album", number: 0)
        let (found, setCode) = await f.context.perform { c -> (Bool, StoreError.Code?) in
            let found = (try? c.existingObject(with: zero)) != nil
            do {
                try c.object(with: o.a2).setValue(.objects([zero]), forKey: "albums")
                return (found, nil)
            } catch {
                return (found, (error as? StoreError)?.code)
            }
        }
        #expect(!found, "existingObject(with: \(zero)) returned an object")
        #expect(setCode == .objectNotFound, "Artist/2.albums accepted \(zero), as it refuses Album/999")
        await f.close()
    }

    @Test("a relationship refuses an ID numbered 0, and the context still saves")
    func saveAfterReferenceToNumberZero() async throws {
        let f = try ContextFixture(.root)
        let o = try await seedSongbook(f.store)
        let accepted = await f.context.perform { c in
            (try? c.object(with: o.a2).setValue(.objects([ObjectID(entity: "Album", number: 0)]), forKey: "albums")) != nil
        }
        #expect(!accepted, "a reference to an ID numbered 0 is refused when set")
        try await f.context.save()  // nothing half-set is left to trap on
        await f.close()
    }
}
