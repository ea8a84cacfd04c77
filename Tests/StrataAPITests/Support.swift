import Foundation
import Testing
import Strata   // plain import: only what a user of the library sees

final class Author: ManagedObject {
    @Managed("name") var name: String
    @Managed("born") var born: Int?
    @ToMany("books") var books: [Book]
}

final class Book: ManagedObject {
    @Managed("title") var title: String
    @Managed("year") var year: Int?
    @Managed("pages") var pages: Int
    @ToOne("author") var author: Author?
    @ToOne("shelf") var shelf: Shelf?
    /// A computed property: not a stored key.
    var shoutedTitle: String { title.uppercased() }
    /// Computed properties that give back some values as they are (a lower-case title, a
    /// year of 0 or less, a title without spaces around it, a year or 0).
    var quietTitle: String { title.lowercased() }
    var yearOrZero: Int { year ?? 0 }
    var trimmedTitle: String { title.trimmingCharacters(in: .whitespaces) }
    var pagesAtMostZero: Int { min(pages, 0) }

    override func validateForSave() throws(StoreError) {
        if title == "forbidden" { throw validationError("this title is not allowed", key: "title") }
    }
}

final class Shelf: ManagedObject {
    @Managed("label") var label: String
    @ToMany("books") var books: [Book]
}

/// The same entity as `Book`, with `year` declared as the wrong Swift type.
final class MistypedBook: ManagedObject {
    override class var entityName: String { "Book" }
    @Managed("year") var year: Double?
}

func librarySchema() throws -> Schema {
    try Schema("Library", entities: [
        Entity("Author",
               attributes: [Attribute("name", .string, unique: true), Attribute("born", .int, optional: true)],
               relationships: [Relationship("books", to: "Book", inverse: "author", toMany: true, deleteRule: .cascade)]),
        Entity("Book",
               attributes: [Attribute("title", .string, maxLength: 40), Attribute("year", .int, optional: true, indexed: true),
                            Attribute("pages", .int, default: .int(100), min: .int(1))],
               relationships: [Relationship("author", to: "Author", inverse: "books"),
                               Relationship("shelf", to: "Shelf", inverse: "books")],
               defaultSort: [SortKey("title")]),
        Entity("Shelf",
               attributes: [Attribute("label", .string)],
               relationships: [Relationship("books", to: "Book", inverse: "shelf", toMany: true, deleteRule: .deny)]),
    ])
}

final class Fixture: Sendable {
    let directory: String
    let store: Store
    let coordinator: Coordinator

    /// A path for a fixture's directory (not created).
    static func newDirectoryPath() -> String { NSTemporaryDirectory() + "strata-api-" + UUID().uuidString }

    /// A fixture in a new directory at `directory` (by default a new temporary one), which
    /// ``close()`` removes.
    init(directory: String = Fixture.newDirectoryPath(), modelClasses: [ManagedObject.Type] = [Author.self, Book.self, Shelf.self]) throws {
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        store = try Store.create(at: directory + "/library.strata", schema: try librarySchema(),
                                 configuration: Store.Configuration(durability: .none))
        coordinator = Coordinator(store: store, modelClasses: modelClasses)
    }

    func context(_ name: String = "context") -> ObjectContext { ObjectContext(coordinator: coordinator, name: name) }

    /// Saves books with titles "B2000" ... and years 2000 ..., returns their IDs.
    func seedBooks(_ years: ClosedRange<Int> = 2000...2009) async throws -> [ObjectID] {
        let c = context("seed")
        let ids = await c.perform { c in
            years.map { year -> ObjectID in
                let b = c.insert(Book.self)
                b.title = "B\(year)"
                b.year = year
                return b.objectID
            }
        }
        try await c.save()
        return ids
    }

    func close() async {
        await store.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// The fatal-error lines an exit test's child process wrote.
func trapMessage(_ result: ExitTest.Result?) -> String {
    String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        .split(separator: "\n").filter { $0.contains("Fatal error") || $0.contains("failed:") }.joined(separator: "\n")
}

/// Whether `stream` gives an element matching `condition` within `seconds` (a hard timeout:
/// the wait is cancelled then).
func firstElement<Element: Sendable>(of stream: AsyncStream<Element>, within seconds: Double,
                                     where condition: @escaping @Sendable (Element) -> Bool) async -> Bool {
    let waiter = Task {
        for await element in stream where condition(element) { return true }
        return false
    }
    let watchdog = Task {
        try? await Task.sleep(for: .seconds(seconds))
        waiter.cancel()
    }
    defer { watchdog.cancel() }
    return await waiter.value
}
