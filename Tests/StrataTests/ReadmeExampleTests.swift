import Foundation
import Testing
import Strata

// README-EXAMPLE-BEGIN
final class Author: ManagedObject {
    @Managed("name") var name: String
    @ToMany("books") var books: [Book]
}

final class Book: ManagedObject {
    @Managed("title") var title: String
    @Managed("year") var year: Int?
    @ToOne("author") var author: Author?
}
// README-EXAMPLE-END

/// The code example in README.md, compiled and run here. The test also checks that the
/// README shows exactly this code, so the two cannot drift apart.
@Suite struct ReadmeExampleTests {
    func example(path: String) async throws -> [String] {
        // README-EXAMPLE-BEGIN
        let schema = try Schema("Library", entities: [
            Entity("Author",
                   attributes: [Attribute("name", .string, unique: true)],
                   relationships: [Relationship("books", to: "Book", inverse: "author",
                                                toMany: true, deleteRule: .cascade)]),
            Entity("Book",
                   attributes: [Attribute("title", .string), Attribute("year", .int, optional: true)],
                   relationships: [Relationship("author", to: "Author", inverse: "books")]),
        ])
        let store = try Store.create(at: path, schema: schema)   // a directory: journal + checkpoints
        let coordinator = Coordinator(store: store, modelClasses: [Author.self, Book.self])
        let context = ObjectContext(coordinator: coordinator, name: "importer")

        await context.perform { c in
            let author = c.findOrCreate(Author.self, uniqueKey: .string("Ursula K. Le Guin"))
            let book = c.insert(Book.self)
            book.title = "The Dispossessed"
            book.year = 1974
            book.author = author              // author.books lists the book too
        }
        try await context.save()              // validated, committed, durable

        // An editor is a child context: save it into its parent, or just drop it.
        let editor = ObjectContext(parent: context, name: "editor")
        let titles = await editor.perform { c in
            c.objects(of: Book.self).map(\.title)
        }
        print(titles)   // ["The Dispossessed"]
        await store.close()
        // README-EXAMPLE-END
        return titles
    }

    @Test func exampleRuns() async throws {
        let directory = TemporaryDirectory("strata-readme")
        defer { directory.remove() }
        #expect(try await example(path: directory.appending("library.strata")) == ["The Dispossessed"])
    }

    @Test func readmeShowsThisExample() throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: here, encoding: .utf8)
        let lines = source.components(separatedBy: "\n")
        let begins = lines.indices.filter { lines[$0].hasSuffix("// README-EXAMPLE-BEGIN") }
        let ends = lines.indices.filter { lines[$0].hasSuffix("// README-EXAMPLE-END") }
        #expect(begins.count == 2 && ends.count == 2)
        for (begin, end) in zip(begins, ends) {
            let indent = lines[begin].prefix { $0 == " " }.count
            let code = lines[(begin + 1)..<end].map { String($0.dropFirst(min(indent, $0.prefix { $0 == " " }.count))) }
                .joined(separator: "\n")
            #expect(readme.contains(code), "README.md must contain the example exactly as in ReadmeExampleTests.swift")
        }
    }
}
