import Foundation
import Testing
import Strata

/// Documented traps: does each trap, and does its message name the culprit?
@Suite struct PublicAPITrapTests {
    @Test func performAndWaitOnPrivateQueueTraps() async throws {
        // The child traps before it can remove its store: the test does.
        let directory = Fixture.newDirectoryPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let r = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [directory = directory as String] in
            let f = try! Fixture(directory: directory)
            let c = f.context("bg")
            _ = c.performAndWait { _ in 1 }
        }
        let text = trapMessage(r)
        #expect(text.contains("private queue"))
    }

    @Test func findWithoutUniqueAttributeTraps() async throws {
        // The child traps before it can remove its store: the test does.
        let directory = Fixture.newDirectoryPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let r = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [directory = directory as String] in
            let f = try! Fixture(directory: directory)
            await f.context().perform { c in _ = c.find(Book.self, uniqueKey: .string("x")) }
        }
        let text = trapMessage(r)
        #expect(text.contains("Book declares no unique attribute"))
    }

    @Test func findOrCreateWithWrongValueTypeTraps() async throws {
        // The child traps before it can remove its store: the test does.
        let directory = Fixture.newDirectoryPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let r = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [directory = directory as String] in
            let f = try! Fixture(directory: directory)
            await f.context().perform { c in _ = c.findOrCreate(Author.self, uniqueKey: .int(7)) }
        }
        let text = trapMessage(r)
        #expect(text.contains("name"))
    }

    @Test func subscriptWrongTypeTraps() async throws {
        // The child traps before it can remove its store: the test does.
        let directory = Fixture.newDirectoryPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let r = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [directory = directory as String] in
            let f = try! Fixture(directory: directory)
            await f.context().perform { c in c.insert(Book.self)["title"] = .int(3) }
        }
        let text = trapMessage(r)
        #expect(text.contains("title"))
    }

    @Test func typedPredicateOnNonStoredKeyPathTraps() async throws {
        // The child traps before it can remove its store: the test does.
        let directory = Fixture.newDirectoryPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let r = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [directory = directory as String] in
            let f = try! Fixture(directory: directory)
            await f.context().perform { c in
                let p: TypedPredicate<Book> = \.isInserted == true
                _ = try? c.fetch(Book.self, where: p)
            }
        }
        let text = trapMessage(r)
        #expect(text.contains("reads no @Managed"))
    }

    @Test func pinQueryGenerationOnChildTraps() async throws {
        // The child traps before it can remove its store: the test does.
        let directory = Fixture.newDirectoryPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let r = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [directory = directory as String] in
            let f = try! Fixture(directory: directory)
            let child = ObjectContext(parent: f.context(), name: "kid")
            await child.perform { c in _ = c.pinQueryGeneration() }
        }
        let text = trapMessage(r)
        #expect(text.contains("kid"))
    }
}
