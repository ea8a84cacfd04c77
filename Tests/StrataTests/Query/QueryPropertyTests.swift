import Foundation
import Testing
@testable import Strata

/// Random predicates and sorts over random data give the same results evaluated in the
/// store (with and without indexes), in a context with pending changes, and by a
/// brute-force reference written independently here.
@Suite struct QueryPropertyTests {
    /// The songbook schema with no indexed or unique attributes (so no index is used).
    static let unindexed: Schema = {
        let entities = Fixtures.songbook.entities.map { entity -> Entity in
            var copy = entity
            copy.attributes = entity.attributes.map { attribute in
                var plain = attribute
                plain.isIndexed = false
                plain.isUnique = false
                return plain
            }
            return copy
        }
        return try! Schema("Songbook", version: 1, entities: entities)
    }()

    /// The songbook schema with every attribute indexed, nullable and double ones included
    /// (so that every condition on an attribute may be planned on an index).
    static let allIndexed: Schema = {
        let entities = Fixtures.songbook.entities.map { entity -> Entity in
            var copy = entity
            copy.attributes = entity.attributes.map { attribute in
                var indexed = attribute
                indexed.isIndexed = true
                return indexed
            }
            return copy
        }
        return try! Schema("Songbook", version: 1, entities: entities)
    }()

    static let titles = ["Hells Bells", "hells bells", "Back in Black", "Thunderstruck", "T.N.T.", "Café", "Cafe", "Cafe\u{301}", "", "Éire", "a*b?c"]
    static let names: [String?] = ["AC/DC", "ac/dc", "Motörhead", "Queen", nil, "Zebra", "abba"]

    /// Random rows: artists, albums (some without artist), songs (some without album).
    static func randomRows(_ store: Store, rng: inout SeededGenerator) -> [RowImage] {
        let artists = store.allocateObjectIDs(for: "Artist", count: 12)
        let albums = store.allocateObjectIDs(for: "Album", count: 30)
        let songs = store.allocateObjectIDs(for: "Song", count: 120)
        var albumArtist: [ObjectID: ObjectID?] = [:]
        var songAlbum: [ObjectID: ObjectID?] = [:]
        for album in albums { albumArtist[album] = Int.random(in: 0..<5, using: &rng) == 0 ? nil : artists.randomElement(using: &rng)! }
        for song in songs { songAlbum[song] = Int.random(in: 0..<6, using: &rng) == 0 ? nil : albums.randomElement(using: &rng)! }
        var rows: [RowImage] = []
        for (i, artist) in artists.enumerated() {
            let owned = albums.filter { albumArtist[$0]! == artist }
            rows.append(Songbook.artist(artist, artistID: Int64(i * 7 % 12), name: names.randomElement(using: &rng)!,
                                        createdAt: Date(timeIntervalSince1970: Double(Int.random(in: 0...5, using: &rng) * 86_400)), albums: owned))
        }
        for (i, album) in albums.enumerated() {
            let owned = songs.filter { songAlbum[$0]! == album }
            let rating: Double? = Int.random(in: 0..<4, using: &rng) == 0 ? nil : Double(Int.random(in: 0...10, using: &rng)) / 2
            rows.append(Songbook.album(album, albumID: Int64(100 + i), title: titles.randomElement(using: &rng)!, rating: rating,
                                       explicit: Bool.random(using: &rng), artist: albumArtist[album]!, songs: owned))
        }
        for (i, song) in songs.enumerated() {
            rows.append(Songbook.song(song, songID: StoreTesting.uuid(i), title: titles.randomElement(using: &rng)!,
                                      artwork: Bool.random(using: &rng) ? nil : Data([UInt8(i % 256)]),
                                      milliseconds: Int64(Int.random(in: 0...20, using: &rng) * 30_000), album: songAlbum[song]!))
        }
        return rows
    }

    // MARK: - Random predicates

    static func randomLiteral(for key: String, rng: inout SeededGenerator) -> Value {
        switch key {
        case "title", "album.title": return .string(titles.randomElement(using: &rng)!)
        case "name", "artist.name", "album.artist.name": return names.randomElement(using: &rng)!.map(Value.string) ?? .null
        case "milliseconds", "songs.milliseconds": return .int(Int64(Int.random(in: 0...20, using: &rng) * 30_000))
        case "rating", "album.rating": return Int.random(in: 0..<6, using: &rng) == 0 ? .null : .double(Double(Int.random(in: 0...10, using: &rng)) / 2)
        case "explicit", "album.explicit": return .bool(Bool.random(using: &rng))
        case "albumID": return .int(Int64(Int.random(in: 95...135, using: &rng)))
        case "artistID", "artist.artistID": return .int(Int64(Int.random(in: -1...12, using: &rng)))
        case "songs.@count", "albums.@count": return .int(Int64(Int.random(in: 0...6, using: &rng)))
        case "createdAt", "artist.createdAt": return .string(ISO8601.string(from: Date(timeIntervalSince1970: Double(Int.random(in: 0...5, using: &rng) * 86_400))))
        default: return .null
        }
    }

    static let keys: [String: [String]] = [
        "Song": ["title", "milliseconds", "album.title", "album.rating", "album.explicit", "album.artist.name"],
        "Album": ["albumID", "title", "rating", "explicit", "songs.@count", "artist.name", "artist.artistID", "songs.milliseconds"],
        "Artist": ["artistID", "name", "createdAt", "albums.@count"],
    ]

    static func randomComparison(_ entity: String, rng: inout SeededGenerator) -> ObjectPredicate {
        let key = keys[entity]!.randomElement(using: &rng)!
        let literal = randomLiteral(for: key, rng: &rng)
        let isString = key.hasSuffix("title") || key.hasSuffix("name")
        var ops: [Comparison.Operator] = [.equal, .notEqual, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .in, .between]
        if isString { ops += [.beginsWith, .endsWith, .contains, .like, .matches] }
        let op = ops.randomElement(using: &rng)!
        var right = Operand.value(literal)
        switch op {
        case .in: right = .list((0..<Int.random(in: 1...3, using: &rng)).map { _ in randomLiteral(for: key, rng: &rng) })
        case .between:
            let a = randomLiteral(for: key, rng: &rng), b = randomLiteral(for: key, rng: &rng)
            right = .list([a, b])
        case .like: right = .value(.string(["*ll*", "?afe", "*", "T*", "*b?c", "Back*Black", "Caf?", "*e?"].randomElement(using: &rng)!))
        case .matches: right = .value(.string(["H.*", "[A-Z].*", "caf.", ".*"].randomElement(using: &rng)!))
        case .beginsWith, .endsWith, .contains: right = .value(.string(["h", "H", "ell", "é", "e", "", "Black"].randomElement(using: &rng)!))
        default: break
        }
        var options: Comparison.Options = []
        if isString && Bool.random(using: &rng) { options.insert(.caseInsensitive) }
        if isString && Int.random(in: 0..<3, using: &rng) == 0 { options.insert(.diacriticInsensitive) }
        let quantifier: Comparison.Quantifier? = key == "songs.milliseconds" ? [Comparison.Quantifier.any, .all, Comparison.Quantifier.none].randomElement(using: &rng)! : nil
        return .comparison(Comparison(.key(key), op, right, options: options, quantifier: quantifier))
    }

    static func randomPredicate(_ entity: String, depth: Int = 0, rng: inout SeededGenerator) -> ObjectPredicate {
        switch depth >= 2 ? 0 : Int.random(in: 0..<6, using: &rng) {
        case 0, 1, 2: return randomComparison(entity, rng: &rng)
        case 3: return .and((0..<Int.random(in: 2...3, using: &rng)).map { _ in randomPredicate(entity, depth: depth + 1, rng: &rng) })
        case 4: return .or((0..<2).map { _ in randomPredicate(entity, depth: depth + 1, rng: &rng) })
        default: return .not(randomPredicate(entity, depth: depth + 1, rng: &rng))
        }
    }

    static func randomSort(_ entity: String, rng: inout SeededGenerator) -> [SortKey] {
        let sortable = keys[entity]!.filter { !$0.hasPrefix("songs.") && !$0.hasPrefix("albums.") }
        return (0..<Int.random(in: 0...2, using: &rng)).map { _ in SortKey(sortable.randomElement(using: &rng)!, ascending: Bool.random(using: &rng)) }
    }

    // MARK: - The test

    @Test("store (indexed and not), context with pending changes, and brute force agree", arguments: [1, 2, 3])
    func agree(seed: UInt64) async throws {
        var rng = SeededGenerator(seed: seed)
        let indexedDir = TemporaryDirectory("strata-query")
        let plainDir = TemporaryDirectory("strata-query")
        defer {
            indexedDir.remove()
            plainDir.remove()
        }
        let fullDir = TemporaryDirectory("strata-query")
        defer { fullDir.remove() }
        let indexed = try StoreTesting.create(in: indexedDir)
        let plain = try StoreTesting.create(in: plainDir, schema: Self.unindexed)
        let full = try StoreTesting.create(in: fullDir, schema: Self.allIndexed)
        let rows = Self.randomRows(indexed, rng: &rng)
        for other in [plain, full] {
            _ = other.allocateObjectIDs(for: "Artist", count: 12)
            _ = other.allocateObjectIDs(for: "Album", count: 30)
            _ = other.allocateObjectIDs(for: "Song", count: 120)
        }
        try await indexed.commit(ChangeSet(inserted: rows))
        try await plain.commit(ChangeSet(inserted: rows))
        try await full.commit(ChangeSet(inserted: rows))
        var g = indexed.currentGeneration
        var p = plain.currentGeneration
        var f = full.currentGeneration

        // A context with pending changes on top: renamed titles, changed numbers, a deletion, an insert.
        let coordinator = Coordinator(store: indexed, modelClasses: [Artist.self, Album.self, Song.self])
        let context = ObjectContext(coordinator: coordinator, name: "pending")
        let clean = ObjectContext(coordinator: coordinator, name: "clean")
        let changes = UInt64.random(in: 0...UInt64.max, using: &rng)
        await context.perform { c in
            var local = SeededGenerator(seed: changes)
            for _ in 0..<15 {
                let song = c.object(with: ObjectID(entity: "Song", number: UInt64.random(in: 1...120, using: &local)), as: Song.self)
                if song.isDeleted { continue }
                song.title = Self.titles.randomElement(using: &local)!
                song.milliseconds = Int.random(in: 0...20, using: &local) * 30_000
            }
            for _ in 0..<5 {
                let album = c.object(with: ObjectID(entity: "Album", number: UInt64.random(in: 1...30, using: &local)), as: Album.self)
                album.rating = Bool.random(using: &local) ? nil : 2.5
                album.artist = c.object(with: ObjectID(entity: "Artist", number: UInt64.random(in: 1...12, using: &local)), as: Artist.self)
            }
            c.delete(c.object(with: ObjectID(entity: "Song", number: UInt64.random(in: 1...120, using: &local))))
            let song = c.insert(Song.self)
            song.title = "Inserted"
            song.milliseconds = 90_000
            song.album = c.object(with: ObjectID(entity: "Album", number: 1), as: Album.self)
        }
        var contextState = await context.perform { c in Self.snapshot(of: c) }

        for round in 0..<300 {
            if round == 150 {
                // Change the stores after the indexes were built: commits must keep them right.
                var updates: [ObjectUpdate] = []
                for number in Set((0..<40).map { _ in UInt64.random(in: 1...120, using: &rng) }) {
                    let id = ObjectID(entity: "Song", number: number)
                    updates.append(g.update(id, ["title": .string(Self.titles.randomElement(using: &rng)!),
                                                 "milliseconds": .int(Int64(Int.random(in: 0...20, using: &rng) * 30_000))]))
                }
                for number in Set((0..<10).map { _ in UInt64.random(in: 1...12, using: &rng) }) {
                    let id = ObjectID(entity: "Artist", number: number)
                    updates.append(g.update(id, ["name": Self.names.randomElement(using: &rng)!.map(Value.string) ?? .null]))
                }
                try await indexed.commit(ChangeSet(updated: updates))
                try await plain.commit(ChangeSet(updated: updates))
                try await full.commit(ChangeSet(updated: updates))
                g = indexed.currentGeneration
                p = plain.currentGeneration
                f = full.currentGeneration
                // The context follows the store: objects it has not changed show the commit.
                contextState = await context.perform { c in
                    for object in c.registeredObjects where !object.hasChanges && !object.isDeleted { c.refresh(object, mergeChanges: false) }
                    return Self.snapshot(of: c)
                }
            }
            let entity = ["Song", "Album", "Artist"].randomElement(using: &rng)!
            let predicate = Bool.random(using: &rng) ? Self.randomPredicate(entity, rng: &rng) : nil
            let sort = Self.randomSort(entity, rng: &rng)
            // (Sometimes a limit of Int.max, which means all: nothing may overflow on it.)
            let limit: Int? = Bool.random(using: &rng) ? (Int.random(in: 0..<8, using: &rng) == 0 ? Int.max : Int.random(in: 0...20, using: &rng)) : nil
            let offset = Bool.random(using: &rng) ? Int.random(in: 0...5, using: &rng) : 0
            let request = FetchRequest(entity: entity, predicate: predicate, sortBy: sort, offset: offset, limit: limit)
            let context_: Comment = "seed \(seed) round \(round): \(entity) where \(String(describing: predicate)) sorted \(sort) offset \(offset) limit \(String(describing: limit))"

            let expected = Reference(objects: g.valuesByID, schema: g.schema).fetch(request)
            let fromIndexed = try g.fetch(request).map(\.id)
            let fromPlain = try p.fetch(request).map(\.id)
            let fromFull = try f.fetch(request).map(\.id)
            #expect(fromIndexed == expected, context_)
            #expect(fromPlain == expected, context_)
            #expect(fromFull == expected, "every attribute indexed: \(context_)")
            #expect(try g.count(for: request) == expected.count, context_)
            #expect(try f.count(for: request) == expected.count, "every attribute indexed: \(context_)")

            let expectedPending = Reference(objects: contextState, schema: g.schema).fetch(request)
            let fromContext = try await context.perform { c in try c.fetchIDs(request) }
            #expect(fromContext == expectedPending, "in the context: \(context_)")

            // A context without changes fetches through the store's plan (IDs only: a sorted
            // page of an index reads no rows).
            let fromClean = try await clean.perform { c in try c.fetchIDs(request) }
            #expect(fromClean == expected, "in a context without changes: \(context_)")
        }
        await indexed.close()
        await plain.close()
        await full.close()
    }

    /// A random request of an entity (Song most often: it is the entity with enough changed
    /// rows for live results to index them).
    static func randomRequest(rng: inout SeededGenerator) -> FetchRequest {
        let entity = Int.random(in: 0..<4, using: &rng) > 0 ? "Song" : ["Album", "Artist"].randomElement(using: &rng)!
        let predicate = Int.random(in: 0..<5, using: &rng) > 0 ? randomPredicate(entity, rng: &rng) : nil
        let sort = randomSort(entity, rng: &rng)
        let limit: Int? = Bool.random(using: &rng) ? Int.random(in: 0...20, using: &rng) : nil
        let offset = Bool.random(using: &rng) ? Int.random(in: 0...5, using: &rng) : 0
        return FetchRequest(entity: entity, predicate: predicate, sortBy: sort, offset: offset, limit: limit)
    }

    /// Live results refreshed by one change share the context's changed rows, and index
    /// them per attribute once there are many (more than 64 of an entity): random result
    /// sets over a context that changes most songs at once — titles, lengths, deletions,
    /// insertions, albums' ratings and artists' names, nil ones included — must show what
    /// the brute-force reference finds in the context's objects, after each of two turns,
    /// as must the context's fetches and counts.
    @Test("live results over many unsaved changes agree with brute force", arguments: [1, 2, 3] as [UInt64])
    func liveResultsOverManyChanges(seed: UInt64) async throws {
        var rng = SeededGenerator(seed: seed)
        let directory = TemporaryDirectory("strata-query-live")
        defer { directory.remove() }
        let store = try StoreTesting.create(in: directory, schema: Self.allIndexed)
        try await store.commit(ChangeSet(inserted: Self.randomRows(store, rng: &rng)))
        let coordinator = Coordinator(store: store, modelClasses: [Artist.self, Album.self, Song.self])
        let context = ObjectContext(coordinator: coordinator, name: "many changes")
        let requests = (0..<60).map { _ in Self.randomRequest(rng: &rng) }
        let changes = UInt64.random(in: 0...UInt64.max, using: &rng)
        let schema = store.schema
        let failures = await context.perform { c -> [String] in
            var local = SeededGenerator(seed: changes)
            var live: [(request: FetchRequest, ids: () -> [ObjectID])] = []
            for request in requests {
                switch request.entity {
                case "Song":
                    let results = try! c.fetchedResults(Song.self, request: request)
                    live.append((request, { results.snapshot.sections.flatMap(\.ids) }))
                case "Album":
                    let results = try! c.fetchedResults(Album.self, request: request)
                    live.append((request, { results.snapshot.sections.flatMap(\.ids) }))
                default:
                    let results = try! c.fetchedResults(Artist.self, request: request)
                    live.append((request, { results.snapshot.sections.flatMap(\.ids) }))
                }
            }
            var failures: [String] = []
            for turn in 0..<2 {
                for number in 1...120 where Int.random(in: 0..<4, using: &local) > 0 {
                    let song = c.object(with: ObjectID(entity: "Song", number: UInt64(number)), as: Song.self)
                    if song.isDeleted { continue }
                    if Bool.random(using: &local) { song.title = Self.titles.randomElement(using: &local)! }
                    if Bool.random(using: &local) { song.milliseconds = Int.random(in: 0...20, using: &local) * 30_000 }
                    if Int.random(in: 0..<30, using: &local) == 0 { c.delete(song) }
                }
                for _ in 0..<10 {
                    let song = c.insert(Song.self)
                    song.songID = UUID()
                    song.title = Self.titles.randomElement(using: &local)!
                    song.milliseconds = Int.random(in: 0...20, using: &local) * 30_000
                    if Bool.random(using: &local) {
                        song.album = c.object(with: ObjectID(entity: "Album", number: UInt64.random(in: 1...30, using: &local)), as: Album.self)
                    }
                }
                for number in 1...30 where Bool.random(using: &local) {
                    let album = c.object(with: ObjectID(entity: "Album", number: UInt64(number)), as: Album.self)
                    album.rating = Int.random(in: 0..<3, using: &local) == 0 ? nil : Double(Int.random(in: 0...10, using: &local)) / 2
                    if Bool.random(using: &local) { album.title = Self.titles.randomElement(using: &local)! }
                }
                for number in 1...12 where Bool.random(using: &local) {
                    let artist = c.object(with: ObjectID(entity: "Artist", number: UInt64(number)), as: Artist.self)
                    artist.name = Self.names.randomElement(using: &local)!
                }
                c.processPendingChanges()
                let reference = Reference(objects: Self.snapshot(of: c), schema: schema)
                for (request, ids) in live {
                    let expected = reference.fetch(request)
                    let described = "seed \(seed) turn \(turn): \(request.entity) where \(String(describing: request.predicate)) sorted \(request.sortBy ?? []) offset \(request.offset) limit \(String(describing: request.limit))"
                    if ids() != expected { failures.append("live results \(ids()) != \(expected): \(described)") }
                    let fetched = try! c.fetchIDs(request)
                    if fetched != expected { failures.append("fetch \(fetched) != \(expected): \(described)") }
                    let counted = try! c.count(for: request)
                    if counted != expected.count { failures.append("count \(counted) != \(expected.count): \(described)") }
                }
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures.count) failures, the first: \(failures.prefix(3))")
        await store.close()
    }

    /// Every object as the context sees it (pending changes applied, deletions gone).
    static func snapshot(of context: isolated ObjectContext) -> [ObjectID: [Value]] {
        var result: [ObjectID: [Value]] = [:]
        for entity in ["Artist", "Album", "Song"] {
            for object in context.objects(ofEntity: entity) {
                result[object.objectID] = object.entity.propertyNames.map { object[$0] }
            }
        }
        return result
    }
}

/// An independent, slow, obviously-correct evaluator over plain dictionaries.
struct Reference {
    let objects: [ObjectID: [Value]]
    let schema: Schema

    func value(_ id: ObjectID, _ key: String) -> Value {
        let entity = schema.entity(named: id.entity)!
        return objects[id]![entity.propertyIndex(named: key)!]
    }

    /// The values a key path gives for an object (several through a to-many relationship).
    func resolve(_ id: ObjectID, _ path: String) -> [Value] {
        var parts = path.split(separator: ".").map(String.init)
        let count = parts.last == "@count"
        if count { parts.removeLast() }
        var current: [ObjectID] = [id]
        for (i, part) in parts.enumerated() {
            let last = i == parts.count - 1
            var next: [ObjectID] = []
            var out: [Value] = []
            for object in current {
                let v = value(object, part)
                if last {
                    if count {
                        if case .objects(let ids) = v { out.append(.int(Int64(ids.count))) }
                    } else {
                        out.append(v)
                    }
                } else {
                    switch v {
                    case .object(let target): next.append(target)
                    case .objects(let targets): next += targets
                    default: break
                    }
                }
            }
            if last { return out }
            if next.isEmpty && !parts.contains(where: { isToMany(id.entity, path, $0) }) { return [.null] }
            current = next
        }
        return []
    }

    func isToMany(_ entity: String, _ path: String, _ part: String) -> Bool {
        ["songs", "albums"].contains(part) && !path.hasSuffix("@count")
    }

    func fold(_ v: Value, _ options: Comparison.Options) -> Value {
        guard case .string(var s) = v else { return v }
        if options.contains(.diacriticInsensitive) { s = s.folding(options: .diacriticInsensitive, locale: nil) }
        if options.contains(.caseInsensitive) { s = s.lowercased() }
        return .string(s)
    }

    func number(_ v: Value) -> Double? {
        switch v {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }

    func literal(_ v: Value, key: String) -> Value {
        if case .string(let s) = v, key.hasSuffix("createdAt") { return .date(ISO8601.date(from: s)!) }
        if case .int(let i) = v, key.hasSuffix("rating") { return .double(Double(i)) }
        return v
    }

    func less(_ a: Value, _ b: Value) -> Bool? {
        if a.isNull || b.isNull { return nil }
        if let x = number(a), let y = number(b) { return x < y }
        switch (a, b) {
        case (.string(let x), .string(let y)): return Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8))
        case (.date(let x), .date(let y)): return x < y
        case (.bool(let x), .bool(let y)): return !x && y
        default: return nil
        }
    }

    func equal(_ a: Value, _ b: Value) -> Bool {
        if let x = number(a), let y = number(b) { return x == y }
        if case .string(let x) = a, case .string(let y) = b { return Array(x.utf8) == Array(y.utf8) }
        return a == b
    }

    func like(_ text: String, _ pattern: String) -> Bool {
        var regex = #"(?s)\A"#
        for c in pattern.unicodeScalars {
            switch c {
            case "*": regex += ".*"
            case "?": regex += "."
            default: regex += NSRegularExpression.escapedPattern(for: String(c))
            }
        }
        return text.range(of: regex + #"\z"#, options: .regularExpression) != nil
    }

    func compare(_ l: Value, _ c: Comparison) -> Bool {
        let key: String = if case .key(let k) = c.left { k } else { "" }
        let l = c.op == .matches ? l : fold(l, c.options)
        func lit(_ v: Value) -> Value { c.op == .matches ? v : fold(literal(v, key: key), c.options) }
        switch (c.op, c.right) {
        case (.equal, .value(let r)): return equal(l, lit(r))
        case (.notEqual, .value(let r)): return !equal(l, lit(r))
        case (.lessThan, .value(let r)): return less(l, lit(r)) == true
        case (.greaterThan, .value(let r)): return less(lit(r), l) == true
        case (.lessThanOrEqual, .value(let r)): return less(l, lit(r)) == true || (less(l, lit(r)) != nil && equal(l, lit(r)))
        case (.greaterThanOrEqual, .value(let r)): return less(lit(r), l) == true || (less(l, lit(r)) != nil && equal(l, lit(r)))
        case (.in, .list(let rs)): return rs.contains { equal(l, lit($0)) }
        case (.between, .list(let rs)):
            guard less(l, lit(rs[0])) == false, less(lit(rs[1]), l) == false else { return false }
            return true
        case (_, .value(.string(let pattern))):
            guard case .string(let text) = l else { return false }
            let p: String = if case .string(let f) = lit(.string(pattern)) { f } else { pattern }
            switch c.op {
            // By scalars, as `==` compares (not Swift's characters).
            case .beginsWith: return Array(text.unicodeScalars).starts(with: Array(p.unicodeScalars))
            case .endsWith: return Array(text.unicodeScalars).reversed().starts(with: Array(p.unicodeScalars).reversed())
            case .contains: return p.isEmpty || text.range(of: p, options: .literal) != nil
            case .like: return like(text, p)
            case .matches:
                let options: String.CompareOptions = c.options.contains(.caseInsensitive) ? [.regularExpression, .caseInsensitive] : [.regularExpression]
                let t = c.options.contains(.diacriticInsensitive) ? text.folding(options: .diacriticInsensitive, locale: nil) : text
                let p = c.options.contains(.diacriticInsensitive) ? pattern.folding(options: .diacriticInsensitive, locale: nil) : pattern
                return t.range(of: #"\A(?:"# + p + #")\z"#, options: options) != nil
            default: return false
            }
        default: return false
        }
    }

    func matches(_ id: ObjectID, _ predicate: ObjectPredicate) -> Bool {
        switch predicate {
        case .constant(let b): return b
        case .and(let ps): return ps.allSatisfy { matches(id, $0) }
        case .or(let ps): return ps.contains { matches(id, $0) }
        case .not(let p): return !matches(id, p)
        case .comparison(let c):
            guard case .key(let key) = c.left else { return false }
            let values = resolve(id, key)
            if key.hasPrefix("songs.") && !key.hasSuffix("@count") {
                switch c.quantifier ?? .any {
                case .any: return values.contains { compare($0, c) }
                case .all: return values.allSatisfy { compare($0, c) }
                case .none: return !values.contains { compare($0, c) }
                }
            }
            return compare(values.first ?? .null, c)
        }
    }

    func fetch(_ request: FetchRequest) -> [ObjectID] {
        var ids = objects.keys.filter { $0.entity == request.entity }.sorted()
        if let predicate = request.predicate { ids = ids.filter { matches($0, predicate) } }
        let sort = request.sortBy ?? schema.entity(named: request.entity)!.defaultSort
        ids.sort { a, b in
            for key in sort {
                let x = resolve(a, key.key).first ?? .null, y = resolve(b, key.key).first ?? .null
                if equal(x, y) || (x.isNull && y.isNull) { continue }
                let ascending: Bool = x.isNull ? true : (y.isNull ? false : (less(x, y) ?? false))
                return ascending == key.ascending
            }
            return a.number < b.number
        }
        let start = min(request.offset, ids.count)
        let end = request.limit.map { start + min(ids.count - start, $0) } ?? ids.count
        return Array(ids[start..<end])
    }
}
