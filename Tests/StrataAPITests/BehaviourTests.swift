import Foundation
import Testing
import Strata

@Suite struct PublicAPIBehaviourTests {

    // MARK: - Identity map: an object asked for before it is saved

    /// Asked for before a sibling's save, an object does not exist (`existingObject` throws);
    /// asked again after the save, it does, and fetches give the live instance with its values.
    @Test func anObjectAskedForBeforeItsSaveIsFoundAfter() async throws {
        let f = try Fixture()
        let a = f.context("a"), b = f.context("b")
        let id = await b.perform { c in
            let x = c.insert(Author.self)
            x.name = "Le Guin"
            return x.objectID
        }
        let early = await a.perform { c in (try? c.existingObject(with: id)) == nil }
        #expect(early)
        try await b.save()
        let later = await a.perform { c -> (found: Bool, count: Int, deleted: Bool, name: String) in
            let found = (try? c.existingObject(with: id)) != nil
            let all = try! c.findAll(Author.self)
            return (found, all.count, all.first?.isDeleted ?? true, all.first?.name ?? "-")
        }
        #expect(later.found, "existingObject still throws for an object that exists now")
        #expect(later.count == 1)
        #expect(!later.deleted, "fetch returned an instance that says it is deleted")
        #expect(later.name == "Le Guin")
        await f.close()
    }

    /// A fault of an object not saved yet reads as missing; the merge of the save that
    /// inserts it brings the same instance back with the saved values.
    @Test func aMergeBringsBackAnObjectAskedForBeforeItsSave() async throws {
        let f = try Fixture()
        let a = f.context("a"), b = f.context("b")
        await a.perform { c in c.automaticallyMergesChanges = true }
        let id = await b.perform { c in
            let x = c.insert(Author.self)
            x.name = "Le Guin"
            return x.objectID
        }
        _ = await a.perform { c in c.object(with: id, as: Author.self).name }   // fault fires: missing
        let changes = a.objectsDidChange()
        try await b.save()
        let heard = await firstElement(of: changes, within: 10) { $0.refreshed.contains(id) }
        #expect(heard, "the merge did not name the object")
        let state = await a.perform { c in
            // The instance held since the fault fired, as the merge left it (asking for the
            // object again would bring it back by itself).
            let x = c.registeredObject(for: id)
            return (x?.isDeleted, try? x?.value(forKey: "name"))
        }
        #expect(state.0 == false)
        #expect(state.1 == .string("Le Guin"))
        await f.close()
    }

    // MARK: - Typed predicates

    /// A key path to a computed property is refused, not turned into a predicate on the
    /// stored property it reads (`\.shoutedTitle == "DUNE"` would silently mean
    /// `title == "DUNE"` and match nothing).
    @Test func aTypedPredicateOnAComputedPropertyTraps() async throws {
        // The child traps before it can remove its store: the test does.
        let directory = Fixture.newDirectoryPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [directory = directory as String] in
            let f = try! Fixture(directory: directory)
            await f.context().perform { c in
                let p: TypedPredicate<Book> = \.shoutedTitle == "DUNE"
                _ = c.resolve(p)
            }
        }
        #expect(trapMessage(result).contains("computes its value from title"), "\(trapMessage(result))")
    }

    /// Computed properties that give back the one distinctive value a probe once held (a
    /// lower-case string, a negative number, a value or a default for nil) are refused too:
    /// each once silently became a predicate on the stored property.
    @Test(arguments: ["quietTitle", "yearOrZero", "trimmedTitle", "pagesAtMostZero"])
    func aTypedPredicateOnAComputationGivingSomeValuesBackTraps(property: String) async throws {
        // The child traps before it can remove its store: the test does.
        let directory = Fixture.newDirectoryPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [property, directory = directory as String] in
            let f = try! Fixture(directory: directory)
            await f.context().perform { c in
                switch property {
                case "quietTitle": _ = c.resolve(\Book.quietTitle == "dune")
                case "yearOrZero": _ = c.resolve(\Book.yearOrZero == 0)
                case "trimmedTitle": _ = c.resolve(\Book.trimmedTitle == "Dune")
                default: _ = c.resolve(\Book.pagesAtMostZero == 0)
                }
            }
        }
        #expect(trapMessage(result).contains("computes its value from"), "\(trapMessage(result))")
    }

    /// Typed predicates and format strings give the same results.
    @Test func typedAndFormatPredicatesAgree() async throws {
        let f = try Fixture()
        let c = f.context()
        let mismatches = try await c.perform { c -> [String] in
            let a = c.insert(Author.self); a.name = "Herbert"; a.born = 1920
            let b = c.insert(Author.self); b.name = "Le Guin"
            let specs: [(String?, Int?, Int, Author?)] = [("Dune", 1965, 412, a), ("Dune Messiah", 1969, 256, a),
                                                         ("The Dispossessed", 1974, 387, b), ("Anonymous", nil, 100, nil),
                                                         ("dust", 2001, 50, b)]
            for (title, year, pages, author) in specs {
                let x = c.insert(Book.self); x.title = title!; x.year = year; x.pages = pages; x.author = author
            }
            let cases: [(TypedPredicate<Book>, String)] = [
                (\.year > 1966, "year > 1966"),
                (\.year == nil, "year == nil"),
                (\.year != nil, "year != nil"),
                (\.year <= 1969, "year <= 1969"),
                (\.author?.name == "Herbert", "author.name == 'Herbert'"),
                (\.author?.born == nil, "author.born == nil"),
                (.compare(\.title, .beginsWith, "d", options: .caseInsensitive), "title BEGINSWITH[c] 'd'"),
                (.isIn(\.year, [1965, 1974]), "year IN {1965, 1974}"),
                (!(\.title == "Dune"), "NOT title == 'Dune'"),
                (\.pages <= 256 || \.year < 1966, "pages <= 256 OR year < 1966"),
            ]
            var out: [String] = []
            for (typed, format) in cases {
                let t = try c.fetch(Book.self, where: typed).map(\.title)
                let s = try c.findAll(Book.self, where: format).map(\.title)
                if t != s { out.append("\(format): typed \(t) (\(c.resolve(typed))) vs format \(s)") }
            }
            return out
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
        await f.close()
    }

    // MARK: - Offset / limit / count with pending changes

    @Test func offsetLimitAndCountWithPendingChanges() async throws {
        let f = try Fixture()
        let ids = try await f.seedBooks()
        let c = f.context()
        let r = try await c.perform { c in
            let early = c.insert(Book.self); early.title = "B1990"; early.year = 1990
            let late = c.insert(Book.self); late.title = "B2020"; late.year = 2020
            c.delete(c.object(with: ids[3]))   // B2003
            let page = FetchRequest(entity: "Book", sortBy: [SortKey("year")], offset: 2, limit: 5)
            let tail = FetchRequest(entity: "Book", sortBy: [SortKey("year")], offset: 8, limit: 5)
            let byTitle = FetchRequest(entity: "Book", offset: 1, limit: 2)  // default sort: title
            return (try c.fetch(page).map { ($0 as! Book).title }, try c.count(for: page),
                    try c.fetch(tail).map { ($0 as! Book).title }, try c.count(for: tail),
                    try c.fetch(byTitle).map { ($0 as! Book).title },
                    try c.count(Book.self), try c.findFirst(Book.self, sortedBy: [SortKey("year", ascending: false)])?.title)
        }
        #expect(r.0 == ["B2001", "B2002", "B2004", "B2005", "B2006"])
        #expect(r.1 == 5)
        #expect(r.2 == ["B2008", "B2009", "B2020"])
        #expect(r.3 == 3)
        #expect(r.4 == ["B2000", "B2001"])
        #expect(r.5 == 11)
        #expect(r.6 == "B2020")
        await f.close()
    }

    /// Child context: pending changes through the parent chain.
    @Test func childSeesParentPendingInFinders() async throws {
        let f = try Fixture()
        let ids = try await f.seedBooks(2000...2004)
        let root = f.context("root")
        await root.perform { c in
            c.delete(c.object(with: ids[0]))
            let b = c.insert(Book.self); b.title = "A-new"; b.year = 1999
        }
        let child = ObjectContext(parent: root, name: "child")
        let r = try await child.perform { c in
            (try c.findAll(Book.self).map(\.title), try c.count(Book.self, where: "year < 2002"),
             try c.fetch(FetchRequest(entity: "Book", includesPendingChanges: false)).count)
        }
        #expect(r.0 == ["A-new", "B2001", "B2002", "B2003", "B2004"])
        #expect(r.1 == 2)
        #expect(r.2 == 5)
        await f.close()
    }

    // MARK: - findOrCreate

    @Test func findOrCreateAfterDeletingAndRenaming() async throws {
        let f = try Fixture()
        let setup = f.context("setup")
        await setup.perform { c in
            c.insert(Author.self).name = "A"
            c.insert(Author.self).name = "B"
        }
        try await setup.save()
        let c = f.context()
        let r = await c.perform { c -> (Bool, Bool, Bool, Bool) in
            let a = c.find(Author.self, uniqueKey: .string("A"))!
            c.delete(a)
            let afterDelete = c.find(Author.self, uniqueKey: .string("A")) == nil
            let newA = c.findOrCreate(Author.self, uniqueKey: .string("A"))
            let b = c.find(Author.self, uniqueKey: .string("B"))!
            b.name = "C"
            let oldKeyGone = c.find(Author.self, uniqueKey: .string("B")) == nil
            let newKeyFound = c.find(Author.self, uniqueKey: .string("C")) === b
            return (afterDelete, newA.isInserted, oldKeyGone, newKeyFound)
        }
        #expect(r.0); #expect(r.1); #expect(r.2); #expect(r.3)
        try await c.save()
        let names = await f.context("check").perform { c in try! c.findAll(Author.self, sortedBy: [SortKey("name")]).map(\.name) }
        #expect(names == ["A", "C"])
        await f.close()
    }

    // MARK: - Aggregates

    @Test func aggregatesWithPendingChanges() async throws {
        let f = try Fixture()
        let ids = try await f.seedBooks(2000...2003)
        let c = f.context()
        let r = try await c.perform { c in
            let n = c.insert(Book.self); n.title = "undated"; n.year = nil; n.pages = 10
            c.object(with: ids[0], as: Book.self).pages = 300
            c.delete(c.object(with: ids[3]))
            return (try c.aggregate(.count, entity: "Book"),
                    try c.aggregate(.count, of: "year", entity: "Book"),
                    try c.aggregate(.sum, of: "pages", entity: "Book"),
                    try c.aggregate(.avg, of: "year", entity: "Book"),
                    try c.aggregate(.max, of: "year", entity: "Book", where: try ObjectPredicate(format: "year > 3000")),
                    try c.aggregate(.count, entity: "Book", groupBy: "year"))
        }
        #expect(r.0.map(\.value) == [.int(4)])
        #expect(r.1.map(\.value) == [.int(3)])
        #expect(r.2.map(\.value) == [.int(510)])
        #expect(r.3.map(\.value) == [.double(2001)])
        #expect(r.4.map(\.value) == [.null])
        #expect(r.5.map(\.group) == [.null, .int(2000), .int(2001), .int(2002)])
        await f.close()
    }

    // MARK: - Rollback / reset / refresh

    @Test func rollbackUndoesCascadeDelete() async throws {
        let f = try Fixture()
        let setup = f.context("setup")
        let aid = await setup.perform { c in
            let a = c.insert(Author.self); a.name = "A"
            for t in ["x", "y"] { let b = c.insert(Book.self); b.title = t; b.author = a }
            return a.objectID
        }
        try await setup.save()
        let c = f.context()
        let r = await c.perform { c in
            let a = c.object(with: aid, as: Author.self)
            let books = a.books
            c.delete(a)
            let cascaded = books.allSatisfy(\.isDeleted)
            let inserted = c.insert(Book.self); inserted.title = "z"
            c.rollback()
            return (cascaded, a.isDeleted, a.books.map(\.title), books.map(\.isDeleted), c.hasChanges, inserted.isDeleted,
                    try! c.count(Book.self))
        }
        #expect(r.0)
        #expect(!r.1)
        #expect(r.2 == ["x", "y"])
        #expect(r.3 == [false, false])
        #expect(!r.4)
        #expect(r.5)
        #expect(r.6 == 2)
        await f.close()
    }

    @Test func resetAndRefresh() async throws {
        let f = try Fixture()
        let ids = try await f.seedBooks(2000...2001)
        let c = f.context()
        let r = await c.perform { c in
            let b = c.object(with: ids[0], as: Book.self)
            b.title = "changed"
            c.reset()
            let fresh = c.object(with: ids[0], as: Book.self)
            return (b.isDeleted, b.title, fresh !== b, fresh.title, c.hasChanges)
        }
        #expect(r.0)
        #expect(r.1 == "changed")
        #expect(r.2)
        #expect(r.3 == "B2000")
        #expect(!r.4)
        let other = f.context("other")
        await other.perform { c in c.object(with: ids[1], as: Book.self).pages = 7 }
        try await other.save()
        let s = await c.perform { c in
            let b = c.object(with: ids[1], as: Book.self)
            _ = b.title
            b.title = "mine"
            c.refresh(b, mergeChanges: true)
            let kept = (b.title, b.pages, b.hasChanges)
            c.refresh(b, mergeChanges: false)
            return (kept, b.title, b.isFault, c.hasChanges, c.updatedObjects.count)
        }
        #expect(s.0.0 == "mine")
        #expect(s.0.1 == 7)
        #expect(s.0.2)
        #expect(s.1 == "B2001")
        #expect(!s.3)
        #expect(s.4 == 0)
        await f.close()
    }

    // MARK: - Documented throws

    @Test func documentedSetValueErrors() async throws {
        let f = try Fixture()
        let ids = try await f.seedBooks(2000...2000)
        let c = f.context()
        let errors = await c.perform { c -> [(StoreError.Code?, String)] in
            let b = c.object(with: ids[0], as: Book.self)
            let shelf = c.insert(Shelf.self); shelf.label = "s"
            var out: [(StoreError.Code?, String)] = []
            func attempt(_ body: () throws -> Void) {
                do { try body(); out.append((nil, "no error")) } catch {
                    let e = error as! StoreError
                    out.append((e.code, e.description))
                }
            }
            attempt { try b.setValue(.int(1), forKey: "nope") }
            attempt { try b.setValue(.int(1), forKey: "title") }
            attempt { try b.setValue(.object(shelf.objectID), forKey: "author") }
            attempt { try b.setValue(.object(ObjectID(entity: "Author", number: 999)), forKey: "author") }
            attempt { _ = try c.existingObject(with: ObjectID(entity: "Nope", number: 1)) }
            attempt { _ = try c.fetch(FetchRequest(entity: "Book", predicate: try! ObjectPredicate(format: "colour == 'red'"))) }
            attempt { _ = try c.findAll(Book.self, where: "year >") }
            c.delete(b)
            attempt { try b.setValue(.string("t"), forKey: "title") }
            attempt { _ = try c.existingObject(with: ids[0]) }
            return out
        }
        let expected: [StoreError.Code?] = [.invalidValue, .invalidValue, .invalidValue, .objectNotFound, .objectNotFound,
                                           .invalidQuery, .invalidQuery, .objectDeleted, .objectNotFound]
        let codes: [StoreError.Code?] = errors.map { $0.0 }
        #expect(codes == expected)
        await f.close()
    }

    @Test func documentedSaveErrorsChangeNothing() async throws {
        let f = try Fixture()
        func failingSave(_ setup: @escaping @Sendable (isolated ObjectContext) -> Void) async -> (StoreError?, Bool) {
            let c = f.context("failing")
            await c.perform { c in setup(c) }
            do {
                try await c.save()
                return (nil, false)
            } catch {
                return (error, await c.perform { c in c.hasChanges })
            }
        }
        let cases: [(StoreError.Code, @Sendable (isolated ObjectContext) -> Void)] = [
            (.missingValue, { c in _ = c.insert(Book.self) }),
            (.invalidValue, { c in c.insert(Book.self).title = String(repeating: "x", count: 41) }),
            (.invalidValue, { c in let b = c.insert(Book.self); b.title = "t"; b.pages = 0 }),
            (.validationFailed, { c in c.insert(Book.self).title = "forbidden" }),
            (.uniqueViolation, { c in c.insert(Author.self).name = "same"; c.insert(Author.self).name = "same" }),
        ]
        for (code, setup) in cases {
            let (error, stillHasChanges) = await failingSave(setup)
            #expect(error?.code == code)
            #expect(error?.object != nil)
            #expect(stillHasChanges)
        }
        // deny
        let setup = f.context("setup")
        let shelfID = await setup.perform { c in
            let s = c.insert(Shelf.self); s.label = "s"
            let b = c.insert(Book.self); b.title = "on shelf"; b.shelf = s
            return s.objectID
        }
        try await setup.save()
        let (error, still) = await failingSave { c in c.delete(c.object(with: shelfID)) }
        #expect(error?.code == .deleteRule)
        #expect(still)
        await f.close()
    }

    @Test func conflictUnderDefaultPolicy() async throws {
        let f = try Fixture()
        let ids = try await f.seedBooks(2000...2000)
        let a = f.context("a"), b = f.context("b")
        #expect(await a.mergePolicy == .error)
        #expect(await a.retainsRegisteredObjects == false)
        #expect(await a.automaticallyMergesChanges == false)
        await a.perform { c in c.object(with: ids[0], as: Book.self).title = "from a" }
        await b.perform { c in c.object(with: ids[0], as: Book.self).title = "from b" }
        try await a.save()
        do {
            try await b.save()
            Issue.record("second save did not throw")
        } catch {
            #expect(error.code == .conflict)
            #expect(error.conflicts.map(\.key) == ["title"])
        }
        await f.close()
    }

    // MARK: - Defaults

    @Test func attributeDefaultsAndNewObjectValues() async throws {
        let f = try Fixture()
        let c = f.context()
        let r = await c.perform { c in
            let b = c.insert(Book.self)
            return (b.pages, b["pages"], b.year, b["title"], b.changedValues.keys.sorted())
        }
        #expect(r.0 == 100)
        #expect(r.1 == .int(100))
        #expect(r.2 == nil)
        await f.close()
    }

    // MARK: - Typed properties declared with the wrong Swift type

    /// `@Managed("year") var year: Double?` on an int attribute would read nil over the
    /// stored year (and writing it would trap later): the first access traps, naming the
    /// declaration and the attribute.
    @Test func aMistypedManagedPropertyTrapsOnFirstUse() async throws {
        // The child traps before it can remove its store: the test does.
        let directory = Fixture.newDirectoryPath()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [directory = directory as String] in
            let f = try! Fixture(directory: directory)
            _ = try! await f.seedBooks(2000...2000)
            let plain = Coordinator(store: f.store, name: "plain")
            let c = ObjectContext(coordinator: plain, name: "plain")
            _ = await c.perform { c in c.objects(of: MistypedBook.self).first?.year }
        }
        let message = trapMessage(result)
        #expect(message.contains("MistypedBook.year is declared as Optional<Double>") && message.contains("an int attribute"), "\(message)")
    }

    // MARK: - FetchedResults

    /// Sectioned by `year` with the request sorted by `year` descending: Core Data keeps the
    /// request's direction; here the sections come out ascending.
    @Test func sectionsFollowRequestedSortDirection() async throws {
        let f = try Fixture()
        _ = try await f.seedBooks(2000...2002)
        let c = f.context()
        let keys = try await c.perform { c in
            let results = try c.fetchedResults(Book.self, request: FetchRequest(entity: "Book", sortBy: [SortKey("year", ascending: false)]),
                                               sectionedBy: "year")
            return results.sections.map(\.key)
        }
        #expect(keys == [.int(2002), .int(2001), .int(2000)])
        await f.close()
    }

    @Test func fetchedResultsDiffsApply() async throws {
        let f = try Fixture()
        let ids = try await f.seedBooks(2000...2003)
        let c = f.context()
        final class Box: @unchecked Sendable { var results: FetchedResults<Book>?; var diffs: [ResultsDiff] = []; var bad: [String] = [] }
        let box = Box()
        try await c.perform { c in
            let results = try c.fetchedResults(Book.self, request: FetchRequest(entity: "Book", sortBy: [SortKey("title")]),
                                               sectionedBy: "year")
            box.results = results
            var previous = results.snapshot
            results.onChange = { diff in
                box.diffs.append(diff)
                if previous.applying(diff) != results.snapshot { box.bad.append("\(diff)") }
                previous = results.snapshot
            }
        }
        await c.perform { c in
            c.object(with: ids[0], as: Book.self).year = 2003     // moves to another section; 2000 section goes
            c.object(with: ids[1], as: Book.self).title = "Z"     // update in place
            let n = c.insert(Book.self); n.title = "new"; n.year = 1999   // new section
        }
        await c.perform { c in
            c.object(with: ids[2], as: Book.self).year = 2001     // joins 2001 section
            c.delete(c.object(with: ids[3]))
        }
        await c.perform { c in
            box.results!.searchPredicate = try! ObjectPredicate(format: "title CONTAINS[c] 'z'")
        }
        let (count, keys, version) = await c.perform { c in
            (box.diffs.count, box.results!.sections.map(\.key), box.results!.version)
        }
        #expect(box.bad.isEmpty, "\(box.bad)")
        #expect(count == 3 && version == 3)
        #expect(keys == [.int(2001)])
        await f.close()
    }
}
