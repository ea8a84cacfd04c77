import Foundation
import Testing
import Strata

@Suite struct PublicAPIMoreBehaviourTests {
    @Test func uniqueLookupsAfterRollbackAndRefresh() async throws {
        let f = try Fixture()
        let setup = f.context("setup")
        let aid = await setup.perform { c in let a = c.insert(Author.self); a.name = "A"; return a.objectID }
        try await setup.save()
        let c = f.context()
        let r = await c.perform { c in
            _ = c.findOrCreate(Author.self, uniqueKey: .string("X"))
            c.rollback()
            let xAfterRollback = c.find(Author.self, uniqueKey: .string("X")) == nil
            let a = c.object(with: aid, as: Author.self)
            a.name = "renamed"
            c.refresh(a, mergeChanges: false)
            let renamedGone = c.find(Author.self, uniqueKey: .string("renamed")) == nil
            let aBack = c.find(Author.self, uniqueKey: .string("A"))?.objectID == aid
            return (xAfterRollback, renamedGone, aBack)
        }
        #expect(r.0); #expect(r.1); #expect(r.2)
        await f.close()
    }

    @Test func toManyOrderSurvivesSave() async throws {
        let f = try Fixture()
        let c = f.context()
        let aid = await c.perform { c in
            let a = c.insert(Author.self); a.name = "A"
            for t in ["one", "two", "three"] { let b = c.insert(Book.self); b.title = t; b.author = a }
            let last = a.books.last!
            a.books.removeLast()
            a.books.insert(last, at: 0)
            return a.objectID
        }
        try await c.save()
        let titles = await f.context("other").perform { c in c.object(with: aid, as: Author.self).books.map(\.title) }
        #expect(titles == ["three", "one", "two"])
        await f.close()
    }

    @Test func findFirstSeesPendingUpdateThatMovesToFront() async throws {
        let f = try Fixture()
        let ids = try await f.seedBooks(2000...2009)
        let c = f.context()
        let r = try await c.perform { c in
            c.object(with: ids[5], as: Book.self).year = 1900
            c.object(with: ids[0], as: Book.self).year = 2100
            let first = try c.findFirst(Book.self, sortedBy: [SortKey("year")])?.title
            let page = try c.fetch(FetchRequest(entity: "Book", sortBy: [SortKey("year", ascending: false)], offset: 0, limit: 2))
                .map { ($0 as! Book).title }
            let none = try c.fetch(FetchRequest(entity: "Book", limit: 0)).count
            return (first, page, none)
        }
        #expect(r.0 == "B2005")
        #expect(r.1 == ["B2000", "B2009"])
        await f.close()
    }

    /// A relationship set to an object that does not exist: documented `objectNotFound`.
    @Test func relationshipToMissingObjectIsObjectNotFound() async throws {
        let f = try Fixture()
        let c = f.context()
        let code = await c.perform { c -> StoreError.Code? in
            let b = c.insert(Book.self); b.title = "t"
            do throws(StoreError) { try b.setValue(.object(ObjectID(entity: "Author", number: 999)), forKey: "author"); return nil }
            catch { return error.code }
        }
        #expect(code == .objectNotFound)
        await f.close()
    }
}

/// What a view controller does with the view context: keep live results and objects on the
/// main actor, and read them there.
@MainActor final class BookListModel {
    let results: FetchedResults<Book>
    let first: Book?

    init(view: ObjectContext) throws {
        results = try view.performAndWait { context in
            try context.fetchedResults(Book.self, request: FetchRequest(entity: "Book", sortBy: [SortKey("title")]))
        }
        first = try view.performAndWait { context in try context.findFirst(Book.self, sortedBy: [SortKey("title")]) }
    }

    var titles: [String] { results.objects.map(\.title) }
}

@Suite struct MainActorUseTests {
    @Test @MainActor func mainActorCodeKeepsLiveResultsAndObjects() async throws {
        let f = try Fixture()
        _ = try await f.seedBooks(2000...2002)
        let view = ObjectContext(coordinator: f.coordinator, executor: .main, name: "view")
        let model = try BookListModel(view: view)
        #expect(model.titles == ["B2000", "B2001", "B2002"])
        #expect(model.first?.title == "B2000")
        view.performAndWait { context in
            let book = context.insert(Book.self)
            book.title = "A new one"
        }
        #expect(model.titles == ["A new one", "B2000", "B2001", "B2002"], "the live results follow the view context")
        await f.close()
    }
}
