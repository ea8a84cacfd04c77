import Foundation
import Testing
@testable import Strata

@Suite struct ConstraintTests {
    /// The songbook objects every case starts from (transaction 1): artist A1 with album X
    /// holding song S; artists A2 and A3 without albums; album Y without artist or songs.
    struct Objects: Sendable {
        var a1, a2, a3, x, y, s: ObjectID

        static func commit(into store: Store) async throws -> Objects {
            let artists = store.allocateObjectIDs(for: "Artist", count: 3)
            let albums = store.allocateObjectIDs(for: "Album", count: 2)
            let o = Objects(a1: artists[0], a2: artists[1], a3: artists[2], x: albums[0], y: albums[1],
                            s: store.allocateObjectIDs(for: "Song")[0])
            try await store.commit(ChangeSet(author: "setup", inserted: [
                Songbook.artist(o.a1, artistID: 1, name: "One", albums: [o.x]),
                Songbook.artist(o.a2, artistID: 2, name: "Two"),
                Songbook.artist(o.a3, artistID: 3, name: "Three"),
                Songbook.album(o.x, albumID: 10, artist: o.a1, songs: [o.s]),
                Songbook.album(o.y, albumID: 11),
                Songbook.song(o.s, songID: StoreTesting.uuid(1), album: o.x),
            ]))
            return o
        }
    }

    /// What a refused change set must be refused with.
    struct Refusal {
        var code: StoreError.Code
        var object: ObjectID
        var key: String?
        /// Whether the error's `object` and `key` fields are set (some schema checks name them only in the message).
        var structured = true
    }

    /// Change sets that break one rule each.
    enum Violation: String, CaseIterable, Sendable {
        case uniqueOnInsert, uniqueOnUpdate, uniqueTwoInserts, uniqueInsertAndUpdate, uniqueHolderUpdatedElsewhere
        case inverseOneSideOnInsert, inverseOneSideOnUpdate, inverseRemovedFromOneSide, inverseClearedOnOtherSide, inverseMovedHalfway
        case danglingToOne, danglingToMany, duplicateInToMany
        case requiredAttributeOnInsert, requiredAttributeOnUpdate, belowMinimum
        case denyDelete, cascadeDelete, nullifyDelete, cascadeAfterHalfMove
        case unallocatedInsert, insertOfExisting, insertedTwice, updatedAndDeleted, updateOfNeverExisting, unknownEntity
        case wrongAttributeType, wrongRelationshipEntity

        func build(_ store: Store, _ g: Generation, _ o: Objects) -> (ChangeSet, Refusal) {
            func new(_ entity: String) -> ObjectID { store.allocateObjectIDs(for: entity)[0] }
            switch self {
            case .uniqueOnInsert:
                let n = new("Artist")
                return (ChangeSet(inserted: [Songbook.artist(n, artistID: 1)]), Refusal(code: .uniqueViolation, object: n, key: "artistID"))
            case .uniqueOnUpdate:
                return (ChangeSet(updated: [g.update(o.a2, ["artistID": .int(1)])]), Refusal(code: .uniqueViolation, object: o.a2, key: "artistID"))
            case .uniqueTwoInserts:
                let (n1, n2) = (new("Artist"), new("Artist"))
                return (ChangeSet(inserted: [Songbook.artist(n1, artistID: 7), Songbook.artist(n2, artistID: 7)]),
                        Refusal(code: .uniqueViolation, object: n2, key: "artistID"))
            case .uniqueInsertAndUpdate:
                let n = new("Artist")
                return (ChangeSet(inserted: [Songbook.artist(n, artistID: 7)], updated: [g.update(o.a2, ["artistID": .int(7)])]),
                        Refusal(code: .uniqueViolation, object: o.a2, key: "artistID"))
            case .uniqueHolderUpdatedElsewhere:
                // The holder of the value is changed, but not its unique key: the value stays taken.
                let n = new("Artist")
                return (ChangeSet(inserted: [Songbook.artist(n, artistID: 1)], updated: [g.update(o.a1, ["name": .string("Renamed")])]),
                        Refusal(code: .uniqueViolation, object: n, key: "artistID"))
            case .inverseOneSideOnInsert:
                let z = new("Album")
                return (ChangeSet(inserted: [Songbook.album(z, albumID: 12, artist: o.a2)]),
                        Refusal(code: .inverseViolation, object: z, key: "artist"))
            case .inverseOneSideOnUpdate:
                return (ChangeSet(updated: [g.update(o.a2, ["albums": .objects([o.y])])]),
                        Refusal(code: .inverseViolation, object: o.a2, key: "albums"))
            case .inverseRemovedFromOneSide:
                return (ChangeSet(updated: [g.update(o.a1, ["albums": .objects([])])]),
                        Refusal(code: .inverseViolation, object: o.a1, key: "albums"))
            case .inverseClearedOnOtherSide:
                return (ChangeSet(updated: [g.update(o.x, ["artist": .null])]), Refusal(code: .inverseViolation, object: o.x, key: "artist"))
            case .inverseMovedHalfway:
                // The album moves to A2 and A2 lists it, but A1 still does.
                return (ChangeSet(updated: [g.update(o.a2, ["albums": .objects([o.x])]), g.update(o.x, ["artist": .object(o.a2)])]),
                        Refusal(code: .inverseViolation, object: o.x, key: "artist"))
            case .danglingToOne:
                return (ChangeSet(updated: [g.update(o.y, ["artist": .object(ObjectID(entity: "Artist", number: 999))])]),
                        Refusal(code: .danglingReference, object: o.y, key: "artist"))
            case .danglingToMany:
                return (ChangeSet(updated: [g.update(o.a2, ["albums": .objects([ObjectID(entity: "Album", number: 999)])])]),
                        Refusal(code: .danglingReference, object: o.a2, key: "albums"))
            case .duplicateInToMany:
                return (ChangeSet(updated: [g.update(o.a1, ["albums": .objects([o.x, o.x])])]),
                        Refusal(code: .invalidTransaction, object: o.a1, key: "albums"))
            case .requiredAttributeOnInsert:
                let z = new("Album")
                return (ChangeSet(inserted: [Songbook.album(z, albumID: 12, title: nil)]), Refusal(code: .missingValue, object: z, key: "title"))
            case .requiredAttributeOnUpdate:
                return (ChangeSet(updated: [g.update(o.s, ["title": .null])]), Refusal(code: .missingValue, object: o.s, key: "title"))
            case .belowMinimum:
                return (ChangeSet(updated: [g.update(o.s, ["milliseconds": .int(-1)])]),
                        Refusal(code: .invalidValue, object: o.s, key: "milliseconds"))
            case .denyDelete:
                return (ChangeSet(updated: [g.update(o.a1, ["albums": .objects([])])], deleted: [g.deletion(o.x)]),
                        Refusal(code: .deleteRule, object: o.x, key: "songs"))
            case .cascadeDelete:
                return (ChangeSet(deleted: [g.deletion(o.a1)]), Refusal(code: .deleteRule, object: o.a1, key: "albums"))
            case .cascadeAfterHalfMove:
                // The album claims a new artist that does not list it; the old one is deleted.
                return (ChangeSet(updated: [g.update(o.x, ["artist": .object(o.a2)])], deleted: [g.deletion(o.a1)]),
                        Refusal(code: .inverseViolation, object: o.x, key: "artist"))
            case .nullifyDelete:
                return (ChangeSet(deleted: [g.deletion(o.s)]), Refusal(code: .inverseViolation, object: o.x, key: "songs"))
            case .unallocatedInsert:
                let id = ObjectID(entity: "Artist", number: 999)
                return (ChangeSet(inserted: [Songbook.artist(id, artistID: 99)]), Refusal(code: .invalidTransaction, object: id))
            case .insertOfExisting:
                return (ChangeSet(inserted: [Songbook.artist(o.a2, artistID: 99)]), Refusal(code: .invalidTransaction, object: o.a2))
            case .insertedTwice:
                let n = new("Artist")
                return (ChangeSet(inserted: [Songbook.artist(n, artistID: 98), Songbook.artist(n, artistID: 99)]),
                        Refusal(code: .invalidTransaction, object: n))
            case .updatedAndDeleted:
                return (ChangeSet(updated: [g.update(o.a2, ["name": .string("x")])], deleted: [g.deletion(o.a2)]),
                        Refusal(code: .invalidTransaction, object: o.a2))
            case .updateOfNeverExisting:
                let n = new("Artist")
                let update = ObjectUpdate(id: n, baseVersion: 0, baseValues: Songbook.artist(n, artistID: 5).values,
                                          changes: [PropertyChange(index: 1, value: .string("Ghost"))])
                return (ChangeSet(updated: [update]), Refusal(code: .objectNotFound, object: n))
            case .unknownEntity:
                let id = ObjectID(entity: "Playlist", number: 1)
                return (ChangeSet(deleted: [ObjectDeletion(id: id, baseVersion: 1)]), Refusal(code: .invalidTransaction, object: id))
            case .wrongAttributeType:
                return (ChangeSet(updated: [g.update(o.a2, ["name": .int(5)])]),
                        Refusal(code: .invalidTransaction, object: o.a2, key: "name", structured: false))
            case .wrongRelationshipEntity:
                return (ChangeSet(updated: [g.update(o.y, ["artist": .object(o.s)])]),
                        Refusal(code: .invalidTransaction, object: o.y, key: "artist", structured: false))
            }
        }
    }

    static func expectRefused(_ result: Result<CommitResult, StoreError>, _ refusal: Refusal, _ context: Comment) {
        guard case .failure(let error) = result else {
            Issue.record("\(context): accepted")
            return
        }
        #expect(error.code == refusal.code, "\(context): \(error)")
        // What the user reads names the object and the key (in the message, or in the error's fields).
        #expect(error.description.contains(refusal.object.description), "\(context): \(error)")
        if let key = refusal.key { #expect(error.description.contains(key), "\(context): \(error)") }
        if refusal.structured {
            #expect(error.object == refusal.object, "\(context): \(error)")
            #expect(error.key == refusal.key, "\(context): \(error)")
        }
    }

    @Test(arguments: Violation.allCases)
    func refused(_ violation: Violation) async throws {
        let directory = TemporaryDirectory("strata-constraint")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, durability: .relaxed)
        let o = try await Objects.commit(into: store)
        let g = store.currentGeneration
        let (changes, refusal) = violation.build(store, g, o)
        let before = StoreState(store)
        let result = await attempt(store, changes)
        Self.expectRefused(result, refusal, "\(violation)")
        #expect(StoreState(store) == before, "\(violation): a refused commit changed the store")
        #expect(store.currentGeneration.integrityProblems().isEmpty)
        // Every policy checks constraints the same way.
        var lenient = changes
        lenient.mergePolicy = .overwrite
        Self.expectRefused(await attempt(store, lenient), refusal, "\(violation) under overwrite")
        #expect(StoreState(store) == before)
        await store.close()
    }

    /// Change sets that look like violations one change at a time but are valid as a whole.
    enum Allowed: String, CaseIterable, Sendable {
        case swapUniqueValues, rotateUniqueValues, deleteThenReuseUniqueValue, releaseThenReuseUniqueValue
        case denyWithDependentsDeleted, cascadeWithDependentsDeleted, nullifyWithOtherSideCleared
        case moveDependentsThenDeleteCascadingOwner, moveDependentsThenDeleteDenyingOwner, detachDependentsThenDeleteCascadingOwner

        func build(_ store: Store, _ g: Generation, _ o: Objects) -> (ChangeSet, @Sendable (Generation) -> Void) {
            switch self {
            case .swapUniqueValues:
                return (ChangeSet(updated: [g.update(o.a1, ["artistID": .int(2)]), g.update(o.a2, ["artistID": .int(1)])]), { n in
                    #expect(n.object(of: "Artist", uniqueValue: .int(1))?.id == o.a2)
                    #expect(n.object(of: "Artist", uniqueValue: .int(2))?.id == o.a1)
                })
            case .rotateUniqueValues:
                return (ChangeSet(updated: [g.update(o.a1, ["artistID": .int(2)]), g.update(o.a2, ["artistID": .int(3)]),
                                            g.update(o.a3, ["artistID": .int(1)])]), { n in
                    #expect(n.object(of: "Artist", uniqueValue: .int(1))?.id == o.a3)
                    #expect(n.object(of: "Artist", uniqueValue: .int(2))?.id == o.a1)
                    #expect(n.object(of: "Artist", uniqueValue: .int(3))?.id == o.a2)
                })
            case .deleteThenReuseUniqueValue:
                let n = store.allocateObjectIDs(for: "Artist")[0]
                return (ChangeSet(inserted: [Songbook.artist(n, artistID: 2)], deleted: [g.deletion(o.a2)]), { next in
                    #expect(next.object(o.a2) == nil)
                    #expect(next.object(of: "Artist", uniqueValue: .int(2))?.id == n)
                })
            case .releaseThenReuseUniqueValue:
                let n = store.allocateObjectIDs(for: "Artist")[0]
                return (ChangeSet(inserted: [Songbook.artist(n, artistID: 2)], updated: [g.update(o.a2, ["artistID": .int(20)])]), { next in
                    #expect(next.object(of: "Artist", uniqueValue: .int(2))?.id == n)
                    #expect(next.object(of: "Artist", uniqueValue: .int(20))?.id == o.a2)
                })
            case .denyWithDependentsDeleted:
                return (ChangeSet(updated: [g.update(o.a1, ["albums": .objects([])])], deleted: [g.deletion(o.x), g.deletion(o.s)]), { n in
                    #expect(n.object(o.x) == nil && n.object(o.s) == nil)
                })
            case .cascadeWithDependentsDeleted:
                return (ChangeSet(deleted: [g.deletion(o.a1), g.deletion(o.x), g.deletion(o.s)]), { n in
                    #expect(n.totalCount == 3)
                })
            case .nullifyWithOtherSideCleared:
                return (ChangeSet(updated: [g.update(o.x, ["songs": .objects([])])], deleted: [g.deletion(o.s)]), { n in
                    #expect(n.value(o.x, "songs") == .objects([]))
                })
            case .moveDependentsThenDeleteCascadingOwner:
                // A1's album moves to A2; deleting A1 then has nothing left to cascade to.
                return (ChangeSet(updated: [g.update(o.a2, ["albums": .objects([o.x])]), g.update(o.x, ["artist": .object(o.a2)])],
                                  deleted: [g.deletion(o.a1)]), { n in
                    #expect(n.object(o.a1) == nil)
                    #expect(n.value(o.x, "artist") == .object(o.a2))
                })
            case .detachDependentsThenDeleteCascadingOwner:
                // X leaves A1 (and keeps existing without an artist) before A1 is deleted.
                return (ChangeSet(updated: [g.update(o.x, ["artist": .null])], deleted: [g.deletion(o.a1)]), { n in
                    #expect(n.object(o.a1) == nil)
                    #expect(n.value(o.x, "artist") == .null)
                })
            case .moveDependentsThenDeleteDenyingOwner:
                // X's song moves to Y; deleting X then denies nothing.
                return (ChangeSet(updated: [g.update(o.a1, ["albums": .objects([])]), g.update(o.y, ["songs": .objects([o.s])]),
                                            g.update(o.s, ["album": .object(o.y)])],
                                  deleted: [g.deletion(o.x)]), { n in
                    #expect(n.object(o.x) == nil)
                    #expect(n.value(o.s, "album") == .object(o.y))
                })
            }
        }
    }

    @Test(arguments: Allowed.allCases)
    func allowed(_ allowed: Allowed) async throws {
        let directory = TemporaryDirectory("strata-constraint")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let o = try await Objects.commit(into: store)
        let (changes, check) = allowed.build(store, store.currentGeneration, o)
        switch await attempt(store, changes) {
        case .success(let result):
            #expect(result.transaction == 2)
            check(store.currentGeneration)
            #expect(store.currentGeneration.integrityProblems().isEmpty)
        case .failure(let error):
            Issue.record("\(allowed) refused: \(error)")
        }
        // What was committed replays to the same state.
        let live = store.currentGeneration
        await store.close()
        let reopened = try StoreTesting.open(in: directory)
        #expect(reopened.currentGeneration.allObjects == live.allObjects)
        check(reopened.currentGeneration)
        await reopened.close()
    }

    /// Limits and required relationships, which the songbook does not declare.
    enum LibraryViolation: String, CaseIterable, Sendable {
        case codeTooShort, codeTooLong, titleEmpty, titleTooLong, pagesBelowMinimum, pagesAboveMaximum, priceAboveMaximum
        case coverTooLong, bookWithoutShelf, shelfCleared, shelfDeletedUnderRequiredInverse

        func build(_ store: Store, _ g: Generation, shelf: ObjectID, book: ObjectID) -> (ChangeSet, Refusal) {
            let newShelf = store.allocateObjectIDs(for: "Shelf")[0]
            let newBook = store.allocateObjectIDs(for: "Book")[0]
            func insertBook(_ row: RowImage) -> ChangeSet {
                ChangeSet(inserted: [row], updated: [g.update(shelf, ["books": .objects([book, newBook])])])
            }
            let invalid = { (key: String) in Refusal(code: .invalidValue, object: newBook, key: key) }
            switch self {
            case .codeTooShort:
                return (ChangeSet(inserted: [Library.shelf(newShelf, code: "A")]), Refusal(code: .invalidValue, object: newShelf, key: "code"))
            case .codeTooLong:
                return (ChangeSet(inserted: [Library.shelf(newShelf, code: "ABCDE")]), Refusal(code: .invalidValue, object: newShelf, key: "code"))
            case .titleEmpty: return (insertBook(Library.book(newBook, title: "", shelf: shelf)), invalid("title"))
            case .titleTooLong: return (insertBook(Library.book(newBook, title: "Eleven char", shelf: shelf)), invalid("title"))
            case .pagesBelowMinimum: return (insertBook(Library.book(newBook, pages: 0, shelf: shelf)), invalid("pages"))
            case .pagesAboveMaximum: return (insertBook(Library.book(newBook, pages: 1_001, shelf: shelf)), invalid("pages"))
            case .priceAboveMaximum: return (insertBook(Library.book(newBook, price: 100.5, shelf: shelf)), invalid("price"))
            case .coverTooLong: return (insertBook(Library.book(newBook, cover: Data([1, 2, 3, 4, 5]), shelf: shelf)), invalid("cover"))
            case .bookWithoutShelf:
                return (ChangeSet(inserted: [Library.book(newBook, shelf: nil)]), Refusal(code: .missingValue, object: newBook, key: "shelf"))
            case .shelfCleared:
                return (ChangeSet(updated: [g.update(book, ["shelf": .null]), g.update(shelf, ["books": .objects([])])]),
                        Refusal(code: .missingValue, object: book, key: "shelf"))
            case .shelfDeletedUnderRequiredInverse:
                // Nullify would leave the book without its required shelf.
                return (ChangeSet(updated: [g.update(book, ["shelf": .null])], deleted: [g.deletion(shelf)]),
                        Refusal(code: .missingValue, object: book, key: "shelf"))
            }
        }
    }

    @Test(arguments: LibraryViolation.allCases)
    func limitsAndRequiredRelationshipsAtFullDurability(_ violation: LibraryViolation) async throws {
        let directory = TemporaryDirectory("strata-constraint")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, schema: Library.schema, durability: .full)
        let shelf = store.allocateObjectIDs(for: "Shelf")[0]
        let book = store.allocateObjectIDs(for: "Book")[0]
        try await store.commit(ChangeSet(inserted: [Library.shelf(shelf, code: "AB", books: [book]),
                                                    Library.book(book, price: 100, cover: Data([1, 2, 3, 4]), shelf: shelf)]))
        let (changes, refusal) = violation.build(store, store.currentGeneration, shelf: shelf, book: book)
        let before = StoreState(store)
        Self.expectRefused(await attempt(store, changes), refusal, "\(violation)")
        #expect(StoreState(store) == before, "\(violation): a refused commit changed the store")
        await store.close()
    }

    @Test func boundaryValuesAreAccepted() async throws {
        let directory = TemporaryDirectory("strata-constraint")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, schema: Library.schema)
        let shelf = store.allocateObjectIDs(for: "Shelf")[0]
        let books = store.allocateObjectIDs(for: "Book", count: 2)
        try await store.commit(ChangeSet(inserted: [
            Library.shelf(shelf, code: "ABCD", books: books),
            Library.book(books[0], title: "A", pages: 1, price: 0, cover: Data(), shelf: shelf),
            Library.book(books[1], title: "Ten chars!", pages: 1_000, price: 100, cover: Data([1, 2, 3, 4]), shelf: shelf),
        ]))
        #expect(store.currentGeneration.count(of: "Book") == 2)
        #expect(store.currentGeneration.integrityProblems().isEmpty)
        await store.close()
    }
}
