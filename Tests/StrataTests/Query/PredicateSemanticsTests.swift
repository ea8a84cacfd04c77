import Foundation
import Testing
@testable import Strata

/// What predicates mean, case by case, against what a Core Data user expects of
/// `NSPredicate` (and what docs/ARCHITECTURE.md "Queries" says where Strata differs), each
/// checked through every path a fetch takes: the store's generation with its indexes, the
/// same rows without indexes, and a context evaluating its unsaved objects in memory.
@Suite struct PredicateSemanticsTests {
    /// The songbook schema, or a schema like it without any index.
    static func songbook(indexed: Bool) -> Schema { indexed ? Fixtures.songbook : QueryPropertyTests.unindexed }

    /// A shelf of books, each with an optional author that is not the shelf's inverse: a
    /// to-one relationship reached through a to-many one, which may be nil.
    static func library(indexed: Bool) -> Schema {
        try! Schema("Shelves", version: 1, entities: [
            Entity("Shelf",
                   attributes: [Attribute("label", .string, unique: indexed)],
                   relationships: [Relationship("books", to: "Book", inverse: "shelf", toMany: true)]),
            Entity("Book",
                   attributes: [Attribute("title", .string, indexed: indexed)],
                   relationships: [Relationship("shelf", to: "Shelf", inverse: "books"),
                                   Relationship("author", to: "Author", inverse: "books")]),
            Entity("Author",
                   attributes: [Attribute("name", .string, optional: true, indexed: indexed)],
                   relationships: [Relationship("books", to: "Book", inverse: "author", toMany: true)]),
        ])
    }

    /// The `label` of every object of `entity` that `format` matches, ordered by `label`,
    /// through each path: `"unsaved"` (a context's fetch over objects it inserted and has
    /// not saved), `"unsaved count"`, then, after saving, `"store"` (the generation, with
    /// indexes), `"store count"`, `"saved"` (a fresh context's fetch), and the same three
    /// over a store of `unindexed` (`"store without indexes"`...).
    static func paths(
        _ schemas: (indexed: Schema, unindexed: Schema), entity: String, _ format: String, label: String,
        populate: @escaping @Sendable (isolated ObjectContext) -> Void
    ) async throws -> [String: [String]] {
        let request = FetchRequest(entity: entity, predicate: try ObjectPredicate(format: format), sortBy: [SortKey(label)])
        @Sendable func labels(_ values: [Value]) -> [String] {
            values.map { if case .string(let text) = $0 { text } else { "\($0)" } }
        }
        var results: [String: [String]] = [:]
        for (schema, suffix) in [(schemas.indexed, ""), (schemas.unindexed, " without indexes")] {
            let directory = TemporaryDirectory("predicate-semantics")
            defer { directory.remove() }
            let store = try StoreTesting.create(in: directory, schema: schema)
            let coordinator = Coordinator(store: store)
            let context = ObjectContext(coordinator: coordinator, name: "unsaved")
            let unsaved = try await context.perform { c -> ([String], Int) in
                populate(c)
                return (labels(try c.fetch(request).map { $0[label] }), try c.count(for: request))
            }
            results["unsaved" + suffix] = unsaved.0
            results["unsaved count" + suffix] = ["\(unsaved.1)"]
            _ = try await context.perform { c in try await c.save() }
            let generation = store.currentGeneration
            let index = schema.entity(named: entity)!.propertyIndex(named: label)!
            results["store" + suffix] = labels(try generation.fetch(request).map { $0.values[index] })
            results["store count" + suffix] = ["\(try generation.count(for: request))"]
            let saved = ObjectContext(coordinator: coordinator, name: "saved")
            results["saved" + suffix] = try await saved.perform { c in labels(try c.fetch(request).map { $0[label] }) }
            await store.close()
        }
        return results
    }

    /// `paths` over the songbook schema.
    static func songbookPaths(
        entity: String, _ format: String, label: String, populate: @escaping @Sendable (isolated ObjectContext) -> Void
    ) async throws -> [String: [String]] {
        try await paths((songbook(indexed: true), songbook(indexed: false)), entity: entity, format, label: label, populate: populate)
    }

    /// Expects every path to give `expected` (and every count its count).
    static func expectEveryPath(_ results: [String: [String]], _ expected: [String], _ comment: Comment,
                                sourceLocation: SourceLocation = #_sourceLocation) {
        let wanted = results.mapValues { _ in expected }.merging(
            results.keys.filter { $0.contains("count") }.map { ($0, ["\(expected.count)"]) }) { $1 }
        let wrong = results.filter { wanted[$0.key] != $0.value }
        #expect(wrong.isEmpty, "\(comment): expected \(expected), found \(wrong.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" })",
                sourceLocation: sourceLocation)
    }

    /// Inserts albums with the given titles (and album IDs counting from 1).
    static func albums(_ titles: [String]) -> @Sendable (isolated ObjectContext) -> Void {
        { c in
            for (i, title) in titles.enumerated() {
                let album = c.insert(entity: "Album")
                album["albumID"] = .int(Int64(i + 1))
                album["title"] = .string(title)
            }
        }
    }
}

// MARK: - MATCHES

extension PredicateSemanticsTests {
    /// NSPredicate's MATCHES matches the whole string (ICU's `matches`); a `$` at the end of
    /// the wrapped expression also matched before a final line break, so "abc\n" matched "abc".
    @Test("MATCHES must match the whole string, a final line break included")
    func matchesWholeStringWithFinalLineBreak() async throws {
        for (format, expected) in [("title MATCHES 'abc'", ["abc"]), ("title MATCHES[c] 'ABC'", ["abc"]),
                                   ("title MATCHES 'abc\\n'", ["abc\n"]), ("title MATCHES 'abc\\\\s'", ["abc\n"])] {
            let results = try await Self.songbookPaths(entity: "Album", format, label: "title", populate: Self.albums(["abc", "abc\n", "xabc"]))
            Self.expectEveryPath(results, expected, "\(format)")
        }
    }

    /// An expression in free-spacing mode whose `#` comment runs to its end matches the whole
    /// text like any other (the comment swallowed the wrapper's end, and the expression was
    /// refused as unparseable); the line break that ends the comment matches nothing. An
    /// expression that does not parse is still refused.
    @Test("MATCHES with a free-spacing comment running to the expression's end")
    func matchesWithTrailingFreeSpacingComment() async throws {
        for (format, expected) in [("title MATCHES '(?x) a b c  # the letters'", ["abc"]),
                                   ("title MATCHES[c] '(?x) A B C # no line break after me'", ["abc"]),
                                   ("title MATCHES '(?x) abc \\\\n? # an optional line break'", ["abc", "abc\n"]),
                                   ("title MATCHES 'a(?x: b c # inner comment\n)'", ["abc"])] {
            let results = try await Self.songbookPaths(entity: "Album", format, label: "title", populate: Self.albums(["abc", "abc\n", "xabc", "abcd"]))
            Self.expectEveryPath(results, expected, "\(format)")
        }
        let schema = Fixtures.songbook
        let album = try #require(schema.entityIndex(named: "Album"))
        for format in ["title MATCHES 'abc('", "title MATCHES '(?x) abc ) # stray'", "title MATCHES 'abc\\\\'"] {
            let predicate = try ObjectPredicate(format: format)
            #expect(throws: StoreError.self, "\(format)") { _ = try BoundPredicate(predicate, entity: album, schema: schema) }
        }
    }

    /// `[d]` makes MATCHES diacritic-insensitive: the text is compared without its
    /// diacritics, so the expression must be too — an accented letter in it matched nothing,
    /// not even the same text.
    @Test("MATCHES[d] ignores diacritics in the expression as well as in the text")
    func matchesDiacriticInsensitiveExpression() async throws {
        let titles = ["Café", "Cafe", "Cafe\u{301}", "CAFÉ", "Cafés"]
        for (format, expected) in [("title MATCHES[d] 'Café'", ["Cafe", "Cafe\u{301}", "Café"]),
                                   ("title MATCHES[d] 'Cafe'", ["Cafe", "Cafe\u{301}", "Café"]),
                                   ("title MATCHES[cd] 'CAFÉ'", ["CAFÉ", "Cafe", "Cafe\u{301}", "Café"]),
                                   ("title MATCHES[cd] 'c[aà]fé.?'", ["CAFÉ", "Cafe", "Cafe\u{301}", "Café", "Cafés"]),
                                   ("title MATCHES 'Café'", ["Café"])] {
            let results = try await Self.songbookPaths(entity: "Album", format, label: "title", populate: Self.albums(titles))
            Self.expectEveryPath(results, expected, "\(format)")
        }
    }
}

// MARK: - Strings

extension PredicateSemanticsTests {
    /// The string operators compare Unicode scalars, as `==`, the sort order and MATCHES do
    /// (by UTF-8 bytes; docs/ARCHITECTURE.md "Queries"): "é" as one scalar and as "e" plus a
    /// combining accent are two spellings, which `[d]` makes one. They compared Swift
    /// characters, so `title LIKE 'Café'` matched a spelling `title == 'Café'` did not,
    /// `CONTAINS 'e'` missed the "e" of "Cafe\u{301}", and `LIKE 'Caf?'` disagreed with
    /// `MATCHES 'Caf.'`.
    @Test("string operators compare Unicode scalars, as == and MATCHES do")
    func stringOperatorsCompareScalars() async throws {
        let nfc = "Caf\u{E9}", nfd = "Cafe\u{301}"
        for (format, expected) in [("title == 'Caf\u{E9}'", [nfc]),
                                   ("title LIKE 'Caf\u{E9}'", [nfc]),
                                   ("title BEGINSWITH 'Caf\u{E9}'", [nfc]),
                                   ("title ENDSWITH '\u{E9}'", [nfc]),
                                   ("title CONTAINS 'f\u{E9}'", [nfc]),
                                   ("title IN {'Caf\u{E9}'}", [nfc]),
                                   ("title BEGINSWITH 'Cafe'", ["Cafe", nfd]),
                                   ("title CONTAINS 'e'", ["Cafe", nfd, "Tea"]),
                                   ("title ENDSWITH '\u{301}'", [nfd]),
                                   ("title LIKE 'Caf?'", ["Cafe", nfc]),
                                   ("title MATCHES 'Caf.'", ["Cafe", nfc]),
                                   ("title LIKE 'Cafe?'", [nfd]),
                                   ("title MATCHES 'Cafe.'", [nfd]),
                                   ("title LIKE '*e*'", ["Cafe", nfd, "Tea"]),
                                   ("title LIKE[d] 'Cafe'", ["Cafe", nfd, nfc]),
                                   ("title BEGINSWITH[d] 'Caf\u{E9}'", ["Cafe", nfd, nfc]),
                                   ("title CONTAINS[cd] 'FE'", ["Cafe", nfd, nfc]),
                                   ("title ENDSWITH[d] 'e'", ["Cafe", nfd, nfc])] {
            let results = try await Self.songbookPaths(entity: "Album", format, label: "title", populate: Self.albums([nfc, nfd, "Cafe", "Tea"]))
            Self.expectEveryPath(results, expected, "\(format)")
        }
    }
}

// MARK: - Key paths

extension PredicateSemanticsTests {
    /// A key path through a nil to-one relationship gives nil, also past a to-many one: for
    /// each book, `books.author.name` is its author's name or nil, as NSPredicate's key-value
    /// coding gives (`NSNull` for each book without an author). A book without an author
    /// was left out, so `ALL books.author.name == 'X'` held for a shelf with such a book,
    /// while `ANY books.author == nil` found it.
    @Test("a to-one relationship past a to-many one gives nil for each object where it is nil")
    func nilToOnePastToMany() async throws {
        let populate: @Sendable (isolated ObjectContext) -> Void = { c in
            let x = c.insert(entity: "Author"), unnamed = c.insert(entity: "Author")
            x["name"] = .string("X")
            for (label, authors) in [("A", [x, nil]), ("B", [x]), ("C", []), ("D", [unnamed])] as [(String, [ManagedObject?])] {
                let shelf = c.insert(entity: "Shelf")
                shelf["label"] = .string(label)
                for (i, writer) in authors.enumerated() {
                    let book = c.insert(entity: "Book")
                    book["title"] = .string("\(label)\(i)")
                    book["shelf"] = .object(shelf.objectID)
                    if let writer { book["author"] = .object(writer.objectID) }
                }
            }
        }
        for (format, expected) in [("ANY books.author == nil", ["A"]),
                                   ("ANY books.author.name == nil", ["A", "D"]),
                                   ("ANY books.author.name != 'X'", ["A", "D"]),
                                   ("ALL books.author.name == 'X'", ["B", "C"]),
                                   ("NONE books.author.name == nil", ["B", "C"]),
                                   ("ANY books.author.name == 'X'", ["A", "B"]),
                                   ("ANY books.author.books.@count == nil", ["A"])] {
            let results = try await Self.paths((Self.library(indexed: true), Self.library(indexed: false)), entity: "Shelf", format,
                                               label: "label", populate: populate)
            Self.expectEveryPath(results, expected, "\(format)")
        }
    }
}

// MARK: - Numbers

extension PredicateSemanticsTests {
    /// An int and a double compare by their exact values, as SQLite compares an integer with
    /// a real: beyond 2^53 a double is not every int, and converting the int to a double
    /// made 2^53 + 1 equal to 2^53.0 (and not greater than it), in a scan and through the
    /// index alike.
    @Test("ints and doubles compare exactly, beyond 2^53 too")
    func intsAndDoublesCompareExactly() async throws {
        let big: Int64 = 1 << 53
        let populate: @Sendable (isolated ObjectContext) -> Void = { c in
            for (title, albumID, rating) in [("2^53", big, Double(big)), ("2^53+1", big + 1, Double(big)), ("-2^63", Int64.min, -0x1p63),
                                             ("max", Int64.max, 0x1p63)] {
                let album = c.insert(entity: "Album")
                album["title"] = .string(title)
                album["albumID"] = .int(albumID)
                album["rating"] = .double(rating)
            }
        }
        for (format, expected) in [("albumID == 9007199254740992.0", ["2^53"]),
                                   ("albumID > 9007199254740992.0", ["2^53+1", "max"]),
                                   ("albumID >= 9007199254740993.0", ["2^53", "2^53+1", "max"]),  // the literal is 2^53.0
                                   ("albumID IN {9007199254740992.0, 1.5}", ["2^53"]),
                                   ("albumID < 9223372036854775807.0", ["-2^63", "2^53", "2^53+1", "max"]),
                                   ("albumID == 9223372036854775807.0", []),
                                   ("albumID == -9223372036854775808.0", ["-2^63"]),
                                   ("rating == 9007199254740993", []),
                                   ("rating < 9007199254740993", ["-2^63", "2^53", "2^53+1"]),
                                   ("rating > 9223372036854775807", ["max"]),
                                   ("albumID == rating", ["-2^63", "2^53"]),
                                   ("albumID < rating", ["max"])] {
            let results = try await Self.songbookPaths(entity: "Album", format, label: "title", populate: populate)
            Self.expectEveryPath(results, expected, "\(format)")
        }
    }
}

extension PredicateSemanticsTests {
    /// A bool attribute takes 1 and 0 for true and false and refuses another number
    /// (docs/ARCHITECTURE.md "Queries"); so too as decimals, which NSPredicate's NSNumbers
    /// and SQLite's integers compare as equal (`explicit == 1.0` matched nothing and
    /// `explicit == 0.5` was not refused). And a bool compared with a number is 1 or 0.
    @Test("bools and numbers compare as 1 and 0, decimals too")
    func boolsAndNumbers() async throws {
        let populate: @Sendable (isolated ObjectContext) -> Void = { c in
            for (title, explicit, albumID, rating) in [("a", true, 1, 1.0), ("b", false, 0, 0.0), ("c", false, 2, 0.5)] as [(String, Bool, Int64, Double)] {
                let album = c.insert(entity: "Album")
                album["title"] = .string(title)
                album["explicit"] = .bool(explicit)
                album["albumID"] = .int(albumID)
                album["rating"] = .double(rating)
            }
        }
        for (format, expected) in [("explicit == 1", ["a"]), ("explicit == 1.0", ["a"]), ("explicit == 0.0", ["b", "c"]),
                                   ("explicit IN {1.0}", ["a"]), ("explicit != 1e0", ["b", "c"]),
                                   ("albumID == YES", ["a"]), ("albumID == false", ["b"]), ("albumID > NO", ["a", "c"]),
                                   ("rating == true", ["a"]), ("rating < true", ["b", "c"])] {
            let results = try await Self.songbookPaths(entity: "Album", format, label: "title", populate: populate)
            Self.expectEveryPath(results, expected, "\(format)")
        }
        let generation = Generation(schema: Fixtures.songbook)
        for format in ["explicit == 0.5", "explicit == 2.0", "explicit IN {1, 0.25}"] {
            #expect(throws: StoreError.self, "\(format)") {
                try generation.fetch(FetchRequest(entity: "Album", predicate: try ObjectPredicate(format: format)))
            }
        }
    }
}

// MARK: - Documented differences

extension PredicateSemanticsTests {
    /// What docs/ARCHITECTURE.md "Where predicates differ from Core Data's" says Strata
    /// does where Core Data or Foundation answers otherwise, held to it on every path.
    @Test("the documented differences from Core Data hold on every path")
    func documentedDifferences() async throws {
        let populate: @Sendable (isolated ObjectContext) -> Void = { c in
            for (title, rating) in [("straße", 5.0), ("İstanbul", 7.0), ("", nil), ("a*b", .nan), ("STRASSE", nil)] as [(String, Double?)] {
                let album = c.insert(entity: "Album")
                album["title"] = .string(title)
                album["albumID"] = .int(Int64(title.unicodeScalars.count))
                album["rating"] = rating.map(Value.double) ?? .null
            }
        }
        let all = ["", "STRASSE", "a*b", "straße", "İstanbul"]
        for (format, expected) in [
            // Nil is two-valued.
            ("rating != 5", ["", "STRASSE", "a*b", "İstanbul"]), ("NOT (rating > 5)", ["", "STRASSE", "a*b", "straße"]),
            ("rating > nil", []), ("rating == nil", ["", "STRASSE"]),
            // The empty string.
            ("title BEGINSWITH ''", all), ("title ENDSWITH ''", all), ("title CONTAINS ''", all), ("title LIKE '*'", all),
            ("title == ''", [""]),
            // [c] lowercases.
            ("title ==[c] 'STRASSE'", ["STRASSE"]), ("title BEGINSWITH[c] 'i'", ["İstanbul"]), ("title ==[c] 'istanbul'", []),
            ("title ==[cd] 'istanbul'", ["İstanbul"]),
            // LIKE has no escape; MATCHES does.
            ("title LIKE 'a\\\\*b'", []), ("title LIKE 'a?b'", ["a*b"]), ("title MATCHES 'a\\\\*b'", ["a*b"]),
            // A `*` in the pattern is a wildcard even where the text holds a `*`.
            ("title LIKE 'a*'", ["a*b"]), ("title LIKE '*b'", ["a*b"]),
            // Unlike kinds.
            ("title == 5", []), ("title != 5", all), ("title > 5", []), ("rating == 'x'", []),
        ] {
            let results = try await Self.songbookPaths(entity: "Album", format, label: "title", populate: populate)
            Self.expectEveryPath(results, expected, "\(format)")
        }
        // Aggregates follow the sort order: NaN after every number, nil left out.
        let directory = TemporaryDirectory("predicate-semantics")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let context = ObjectContext(coordinator: Coordinator(store: store), name: "aggregates")
        let found = try await context.perform { c -> [String] in
            populate(c)
            return try [AggregateFunction.min, .max, .sum, .avg, .count].map { function in
                "\(try c.aggregate(function, of: "rating", entity: "Album")[0].value)"
            }
        }
        #expect(found == ["5.0", "nan", "nan", "nan", "3"])
        await store.close()
    }

    /// A sum of ints is an int when the total fits, whatever partial sums the order of the
    /// rows passes through (one past the end made it a double, depending on that order).
    @Test("a sum of ints that fits is an int, in any order of the rows")
    func intSumFitsWhateverTheOrder() async throws {
        let directory = TemporaryDirectory("predicate-semantics-sum")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let context = ObjectContext(coordinator: Coordinator(store: store), name: "sums")
        // Saved, so that the rows are read in object-number order: Int64.max first.
        await context.perform { c in
            for id in [Int64.max, 1, -2] {
                let album = c.insert(entity: "Album")
                album["title"] = .string("\(id)")
                album["albumID"] = .int(id)
            }
        }
        try await context.save()
        let (fits, over) = try await context.perform { c -> (Value, Value) in
            let fits = try c.aggregate(.sum, of: "albumID", entity: "Album")[0].value
            let over = try c.aggregate(.sum, of: "albumID", entity: "Album", where: try ObjectPredicate(format: "albumID > 0"))[0].value
            return (fits, over)
        }
        #expect(fits == .int(Int64.max - 1))
        #expect(over == .double(Double(Int64.max) + 1), "a total past the end is a double")
        await store.close()
    }

    /// An average of ints is their exact total over the count, as their sum is exact (a
    /// running sum of doubles rounded at each row: 2^53 + 1 and -2^53 averaged 0).
    @Test("an average of ints is the exact sum over the count")
    func intAverageIsExactSumOverCount() async throws {
        let directory = TemporaryDirectory("predicate-semantics-avg")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory)
        let context = ObjectContext(coordinator: Coordinator(store: store), name: "averages")
        await context.perform { c in
            for id: Int64 in [9_007_199_254_740_993, -9_007_199_254_740_992, Int64.max, Int64.min, 3, 2, 5, 7] {
                let album = c.insert(entity: "Album")
                album["title"] = .string("\(id)")
                album["albumID"] = .int(id)
            }
        }
        let two = try ObjectPredicate(format: "albumID IN {9007199254740993, -9007199254740992}")
        let rest = try ObjectPredicate(format: "NOT (albumID IN {9007199254740993, -9007199254740992})")
        let unsaved = try await context.perform { c in
            try [two, rest].map { try c.aggregate(.avg, of: "albumID", entity: "Album", where: $0)[0].value }
        }
        try await context.save()
        let stored = try [two, rest].map { try store.currentGeneration.aggregate(.avg, of: "albumID", entity: "Album", where: $0)[0].value }
        for found in [unsaved, stored] {
            #expect(found == [.double(0.5), .double(16.0 / 6)], "\(found)")
        }
        await store.close()
    }
}

// MARK: - Object and data literals

extension PredicateSemanticsTests {
    /// Two artists (Artist/1 with albums x and y, Artist/2 with z) and an album w without
    /// one; song s1 with artwork bytes 1, 2, 3 on album x, s2 without artwork on y.
    static let related: @Sendable (isolated ObjectContext) -> Void = { c in
        let artists = (1...2).map { n -> ManagedObject in
            let artist = c.insert(entity: "Artist")
            artist["artistID"] = .int(Int64(n))
            return artist
        }
        for (n, (title, artist)) in [("x", artists[0]), ("y", artists[0]), ("z", artists[1]), ("w", nil)].enumerated() {
            let album = c.insert(entity: "Album")
            album["albumID"] = .int(Int64(n + 1))
            album["title"] = .string(title)
            if let artist { album["artist"] = .object(artist.objectID) }
        }
    }

    /// An object ID written as text, as a predicate prints one, names that object when it is
    /// compared with a relationship (it matched nothing: a string is never a relationship's
    /// value), and a predicate's printed form reads back as itself.
    @Test("a relationship compared with an object ID written as text, as predicates print them")
    func relationshipsCompareWithObjectIDs() async throws {
        for (format, expected) in [
            (#"artist == "Artist/1""#, ["x", "y"]), ("artist == 'Artist/2'", ["z"]), (#"artist != "Artist/1""#, ["w", "z"]),
            (#"artist IN {"Artist/1", "Artist/2"}"#, ["x", "y", "z"]), ("artist == nil", ["w"]),
            (#"artist == "Artist/3""#, []),
        ] {
            let results = try await Self.songbookPaths(entity: "Album", format, label: "title", populate: Self.related)
            Self.expectEveryPath(results, expected, "\(format)")
        }
        for (format, expected) in [(#"ANY albums == "Album/3""#, ["2"]), (#"ANY albums IN {"Album/1", "Album/3"}"#, ["1", "2"])] {
            let results = try await Self.songbookPaths(entity: "Artist", format, label: "artistID", populate: Self.related)
            Self.expectEveryPath(results, expected, "\(format)")
        }
        // A to-many relationship CONTAINS an object: membership, as NSPredicate's collections
        // (it was accepted and matched nothing, an object not being text).
        for (format, expected) in [(#"albums CONTAINS "Album/3""#, ["2"]), ("albums CONTAINS 'Album/4'", []),
                                   ("NOT (albums CONTAINS 'Album/1')", ["2"])] {
            let results = try await Self.songbookPaths(entity: "Artist", format, label: "artistID", populate: Self.related)
            Self.expectEveryPath(results, expected, "\(format)")
        }
        let printed = ObjectPredicate.comparison(Comparison(.key("artist"), .equal, .value(.object(ObjectID(entity: "Artist", number: 1)))))
        let reread = try ObjectPredicate(format: printed.description)
        #expect(reread.description == printed.description)
        let results = try await Self.songbookPaths(entity: "Album", printed.description, label: "title", populate: Self.related)
        Self.expectEveryPath(results, ["x", "y"], "printed: \(printed)")
    }

    @Test("a literal that is no object of the relationship's entity is refused, naming the key")
    func wrongObjectLiteralsAreRefused() throws {
        let schema = Fixtures.songbook
        let album = try #require(schema.entityIndex(named: "Album"))
        for (format, message) in [
            (#"artist == "Album/1""#, "\"artist\" is a relationship to Artist; Album/1 is not one of its objects"),
            (#"artist == "nobody""#, "\"artist\" is a relationship to Artist; \"nobody\" is not an object ID like Artist/1"),
            ("artist == 3", "\"artist\" is a relationship to Artist; compare it with an object ID like \"Artist/1\" or nil, not 3"),
            (#"artist == "NoSuchEntityInAnyModel/1""#, "\"artist\" is a relationship to Artist; NoSuchEntityInAnyModel/1 is not one of its objects"),
        ] {
            let predicate = try ObjectPredicate(format: format)
            #expect(throws: StoreError.self, "\(format)") { _ = try BoundPredicate(predicate, entity: album, schema: schema) }
            do {
                _ = try BoundPredicate(predicate, entity: album, schema: schema)
            } catch {
                #expect(error.code == .invalidQuery)
                #expect(error.message == message)
                #expect(error.key == "artist")
            }
        }
        // Text operators on a relationship could only be false: refused, saying what to write.
        let artist = try #require(schema.entityIndex(named: "Artist"))
        for (format, entity) in [("artist CONTAINS 'Artist/1'", album), ("artist BEGINSWITH 'Artist/1'", album),
                                 ("ANY albums CONTAINS 'Album/1'", artist), ("albums LIKE 'Album/1'", artist)] {
            let predicate = try ObjectPredicate(format: format)
            do {
                _ = try BoundPredicate(predicate, entity: entity, schema: schema)
                Issue.record("\(format) was accepted")
            } catch {
                #expect(error.code == .invalidQuery)
                #expect(error.message.contains("compares text"), "\(error.message)")
                #expect(error.message.contains("CONTAINS '\(entity == album ? "Artist" : "Album")/1'"), "\(error.message)")
            }
        }
        // Entity names are interned for the life of the process: text naming another entity
        // is refused before its name is.
        #expect(!EntityName.isInterned("NoSuchEntityInAnyModel"))
    }

    /// Data prints as base64 in a predicate, and reads back as data.
    @Test("a data attribute compared with base64 text, as data prints in a predicate")
    func dataComparesWithBase64() async throws {
        let populate: @Sendable (isolated ObjectContext) -> Void = { c in
            for (n, artwork) in [Data([1, 2, 3]), nil, Data()].enumerated() {
                let song = c.insert(entity: "Song")
                song["songID"] = .uuid(UUID(uuidString: "00000000-0000-0000-0000-00000000000\(n)")!)
                song["title"] = .string("s\(n)")
                song["milliseconds"] = .int(1)
                song["artwork"] = artwork.map(Value.data) ?? .null
            }
        }
        let printed = ObjectPredicate.comparison(Comparison(.key("artwork"), .equal, .value(.data(Data([1, 2, 3])))))
        for (format, expected) in [(printed.description, ["s0"]), ("artwork == ''", ["s2"]), ("artwork == nil", ["s1"])] {
            let results = try await Self.songbookPaths(entity: "Song", format, label: "title", populate: populate)
            Self.expectEveryPath(results, expected, "\(format)")
        }
        let song = try #require(Fixtures.songbook.entityIndex(named: "Song"))
        #expect(throws: StoreError.self) {
            _ = try BoundPredicate(try ObjectPredicate(format: "artwork == 'not base64!'"), entity: song, schema: Fixtures.songbook)
        }
    }
}

extension PredicateSemanticsTests {
    /// `\Q` quotes the rest of an expression when no `\E` closes it; the whole-text wrapper
    /// once fell inside the quotation, and the expression was refused as unparseable.
    @Test("MATCHES takes an expression whose \\Q quotation runs to its end")
    func matchesWithOpenQuotation() async throws {
        for (format, expected) in [(#"title MATCHES 'a\\Qb.*'"#, ["ab.*"]), (#"title MATCHES 'a\\Qb\\E.*'"#, ["ab.*", "abc"]),
                                   (#"title MATCHES 'a\\Q\\\\E'"#, []), (#"title MATCHES 'x\\\\Qy'"#, [])] {
            let results = try await Self.songbookPaths(entity: "Album", format, label: "title", populate: Self.albums(["ab.*", "abc"]))
            Self.expectEveryPath(results, expected, "\(format)")
        }
        #expect(BoundComparison.leavesQuotationOpen(#"a\Qb"#))
        #expect(!BoundComparison.leavesQuotationOpen(#"a\Qb\E"#))
        #expect(!BoundComparison.leavesQuotationOpen(#"a\Q\\E"#), #"\\E inside a quotation: a backslash, then \E"#)
        #expect(!BoundComparison.leavesQuotationOpen(#"a\\Qb"#), #"an escaped backslash, then Q"#)
        #expect(BoundComparison.leavesQuotationOpen(#"\E\Q"#))
    }
}
