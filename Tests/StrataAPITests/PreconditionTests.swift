import Foundation
import Testing
import Strata

/// Documented traps: does each trap, and does its message name the culprit?
@Suite struct PublicAPITrapTests {
    @Test func performAndWaitOnPrivateQueueTraps() async throws {
        let r = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let f = try! Fixture()
            let c = f.context("bg")
            _ = c.performAndWait { _ in 1 }
        }
        let text = trapMessage(r)
        #expect(text.contains("private queue"))
    }

    @Test func findWithoutUniqueAttributeTraps() async throws {
        let r = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let f = try! Fixture()
            await f.context().perform { c in _ = c.find(Book.self, uniqueKey: .string("x")) }
        }
        let text = trapMessage(r)
        #expect(text.contains("Book declares no unique attribute"))
    }

    @Test func findOrCreateWithWrongValueTypeTraps() async throws {
        let r = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let f = try! Fixture()
            await f.context().perform { c in _ = c.findOrCreate(Author.self, uniqueKey: .int(7)) }
        }
        let text = trapMessage(r)
        #expect(text.contains("name"))
    }

    @Test func subscriptWrongTypeTraps() async throws {
        let r = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let f = try! Fixture()
            await f.context().perform { c in c.insert(Book.self)["title"] = .int(3) }
        }
        let text = trapMessage(r)
        #expect(text.contains("title"))
    }

    @Test func typedPredicateOnNonStoredKeyPathTraps() async throws {
        let r = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let f = try! Fixture()
            await f.context().perform { c in
                let p: TypedPredicate<Book> = \.isInserted == true
                _ = try? c.fetch(Book.self, where: p)
            }
        }
        let text = trapMessage(r)
        #expect(text.contains("reads no @Managed"))
    }

    @Test func pinQueryGenerationOnChildTraps() async throws {
        let r = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let f = try! Fixture()
            let child = ObjectContext(parent: f.context(), name: "kid")
            await child.perform { c in _ = c.pinQueryGeneration() }
        }
        let text = trapMessage(r)
        #expect(text.contains("kid"))
    }
}
