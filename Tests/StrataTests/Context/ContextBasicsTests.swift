import Foundation
import Testing
@testable import Strata

@Suite struct ContextBasicsTests {
    @Test("insert, relate and save through every tier", arguments: Tier.allCases)
    func insertAndSave(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let (artistID, albumID, songID) = await f.context.perform { c in
            let artist = c.insert(Artist.self)
            artist.artistID = 7
            artist.name = "AC/DC"
            let album = c.insert(Album.self)
            album.albumID = 70
            album.title = "Back in Black"
            album.artist = artist
            let song = c.insert(Song.self)
            song.songID = StoreTesting.uuid(1)
            song.title = "Hells Bells"
            song.milliseconds = 312_000
            album.songs.append(song)
            #expect(artist.albums.map(\.objectID) == [album.objectID], "the inverse to-many follows the to-one")
            #expect(song.album === album, "the inverse to-one follows the to-many")
            let contextHasChanges = c.hasChanges
            #expect(contextHasChanges)
            #expect(artist.isInserted && artist.hasChanges)
            return (artist.objectID, album.objectID, song.objectID)
        }
        try await f.saveThrough()
        let g = f.generation
        #expect(g.value(artistID, "name") == .string("AC/DC"))
        #expect(g.value(artistID, "createdAt") == .date(Songbook.epoch), "the attribute's default is applied on insert")
        #expect(g.value(artistID, "albums") == .objects([albumID]))
        #expect(g.value(albumID, "artist") == .object(artistID))
        #expect(g.value(songID, "album") == .object(albumID))
        await f.context.perform { c in
            let contextHasChanges = c.hasChanges
            #expect(!contextHasChanges)
            let artist = c.object(with: artistID, as: Artist.self)
            #expect(!artist.isInserted && !artist.hasChanges)
            #expect(artist.name == "AC/DC")
        }
        await f.close()
    }

    @Test("one instance per object ID; objects load lazily", arguments: Tier.allCases)
    func identityAndFaulting(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        try await f.context.perform { c in
            let a = c.object(with: o.a1, as: Artist.self)
            #expect(a.isFault)
            #expect(c.object(with: o.a1) === a)
            #expect(a.name == "One")
            #expect(!a.isFault)
            let album = a.albums[0]
            #expect(album.objectID == o.x)
            #expect(album.artist === a)
            #expect(c.object(with: o.x) === album)
            let song = try c.existingObject(with: o.s)
            #expect(song === album.songs[0])
            let missing = Result { () throws(StoreError) in try c.existingObject(with: ObjectID(entity: "Song", number: 99)) }
            #expect(throws: StoreError.self) { try missing.get() }
        }
        await f.close()
    }

    @Test("two contexts never share an instance", arguments: Tier.allCases)
    func distinctInstances(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        let other = ObjectContext(coordinator: f.coordinator, name: "other")
        let mine = await f.context.perform { c in ObjectIdentifier(c.object(with: o.a1)) }
        let theirs = await other.perform { c in ObjectIdentifier(c.object(with: o.a1)) }
        #expect(mine != theirs)
        let again = await f.context.perform { c in ObjectIdentifier(c.object(with: o.a1)) }
        #expect(mine == again)
        await f.close()
    }

    @Test("change tracking: changed keys with old values; setting a value back is no change", arguments: Tier.allCases)
    func changeTracking(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        await f.context.perform { c in
            let a = c.object(with: o.a1, as: Artist.self)
            a.name = "Uno"
            #expect(a.hasChanges)
            #expect(a.changedValues == ["name": .string("Uno")])
            #expect(a.committedValues == ["name": .string("One")])
            let updated = c.updatedObjects.map(\.objectID)
            #expect(updated == [o.a1])
            a.name = "One"
            #expect(!a.hasChanges)
            let contextHasChanges = c.hasChanges
            #expect(!contextHasChanges)
            a["name"] = .string("Eins")
            #expect(a.name == "Eins")
            #expect(throws: StoreError.self) { try a.setValue(.int(3), forKey: "name") }
            #expect(throws: StoreError.self) { try a.setValue(.string("x"), forKey: "nope") }
            #expect(a.name == "Eins", "a refused change changes nothing")
        }
        await f.close()
    }

    @Test("moving objects between relationships keeps every inverse", arguments: Tier.allCases)
    func inverseMaintenance(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        await f.context.perform { c in
            let a1 = c.object(with: o.a1, as: Artist.self)
            let a2 = c.object(with: o.a2, as: Artist.self)
            let x = c.object(with: o.x, as: Album.self)
            let y = c.object(with: o.y, as: Album.self)
            x.artist = a2                               // to-one: leaves a1, joins a2
            #expect(a1.albums.isEmpty)
            #expect(a2.albums.map(\.objectID) == [o.x])
            a2.albums = [y]                             // to-many: x leaves, y joins
            #expect(x.artist == nil)
            #expect(y.artist === a2)
            a1.albums.append(y)                         // y moves from a2 to a1
            #expect(a2.albums.isEmpty)
            #expect(y.artist === a1)
            let s = x.songs[0]
            s.album = y
            #expect(x.songs.isEmpty)
            #expect(y.songs.map(\.objectID) == [o.s])
        }
        try await f.saveThrough()
        let g = f.generation
        #expect(g.integrityProblems().isEmpty)
        #expect(g.value(o.a1, "albums") == .objects([o.y]))
        #expect(g.value(o.a2, "albums") == .objects([]))
        #expect(g.value(o.x, "artist") == .null)
        #expect(g.value(o.y, "artist") == .object(o.a1))
        #expect(g.value(o.s, "album") == .object(o.y))
        await f.close()
    }

    @Test("delete rules: cascade, nullify, and deny refused at save with nothing changed", arguments: Tier.allCases)
    func deleteRules(tier: Tier) async throws {
        let f = try ContextFixture(tier, durability: .relaxed)
        let o = try await seedSongbook(f.store)
        let before = StoreState(f.store)
        // deny: album X still has song S.
        await f.context.perform { c in c.delete(c.object(with: o.x)) }
        let error = await #expect(throws: StoreError.self) { try await f.saveThrough() }
        #expect(error?.code == .deleteRule)
        #expect(error?.object == o.x)
        #expect(error?.key == "songs")
        #expect(StoreState(f.store) == before, "a refused save leaves the store byte-identical")
        await f.context.perform { c in
            #expect(c.object(with: o.x).isDeleted, "the refused save left the context's changes pending")
            c.rollback()
            #expect(!c.object(with: o.x).isDeleted)
            // nullify: deleting the song removes it from its album.
            c.delete(c.object(with: o.s))
            #expect(c.object(with: o.x, as: Album.self).songs.isEmpty)
            // cascade: deleting artist A1 deletes album X (whose songs are now gone).
            c.delete(c.object(with: o.a1))
            #expect(c.object(with: o.x).isDeleted)
        }
        try await f.saveThrough()
        let g = f.generation
        #expect(g.object(o.a1) == nil && g.object(o.x) == nil && g.object(o.s) == nil)
        #expect(g.object(o.a2) != nil && g.object(o.y) != nil)
        await f.close()
    }

    @Test("validation in the saving tier: required, limits, custom rules, uniques", arguments: Tier.allCases)
    func validation(tier: Tier) async throws {
        let f = try ContextFixture(tier, durability: .relaxed)
        let o = try await seedSongbook(f.store)
        let before = StoreState(f.store)
        struct Case: Sendable {
            let code: StoreError.Code
            let key: String
            let make: @Sendable (isolated ObjectContext, ConstraintTests.Objects) -> ObjectID
        }
        let cases: [Case] = [
            Case(code: .missingValue, key: "title") { c, _ in
                let album = c.insert(Album.self)
                album.albumID = 99
                return album.objectID
            },
            Case(code: .invalidValue, key: "milliseconds") { c, o in
                let song = c.object(with: o.s, as: Song.self)
                song.milliseconds = -1
                return o.s
            },
            Case(code: .validationFailed, key: "title") { c, o in
                let song = c.object(with: o.s, as: Song.self)
                song.title = "forbidden"
                return o.s
            },
            Case(code: .uniqueViolation, key: "artistID") { c, _ in
                let artist = c.insert(Artist.self)
                artist.artistID = 1  // A1 has it in the store
                return artist.objectID
            },
            Case(code: .uniqueViolation, key: "artistID") { c, _ in
                let first = c.insert(Artist.self)
                first.artistID = 50
                let second = c.insert(Artist.self)
                second.artistID = 50
                return max(first.objectID, second.objectID)
            },
        ]
        for (n, check) in cases.enumerated() {
            let culprit = await f.context.perform { c in check.make(c, o) }
            let error = await #expect(throws: StoreError.self, "case \(n)") { try await f.context.save() }
            #expect(error?.code == check.code, "case \(n): \(String(describing: error))")
            #expect(error?.object == culprit, "case \(n): \(String(describing: error))")
            #expect(error?.key == check.key, "case \(n)")
            await f.context.perform { c in c.rollback() }
            for ancestor in f.ancestors { #expect(await ancestor.hasChanges == false, "case \(n): nothing reached the parent") }
            #expect(StoreState(f.store) == before, "case \(n): the store is unchanged")
        }
        await f.close()
    }

    /// A save with several problems reports every one (as Core Data's multiple-errors error
    /// does): the first is thrown, naming its object and key, with all of them in
    /// `validationProblems`. (Only the first was reported: fixing it met the next.)
    @Test("a save with several problems reports every one", arguments: Tier.allCases)
    func everyValidationProblem(tier: Tier) async throws {
        let f = try ContextFixture(tier, durability: .relaxed)
        let o = try await seedSongbook(f.store)
        let before = StoreState(f.store)
        let album = await f.context.perform { c in
            let album = c.insert(Album.self)  // no title
            album.albumID = 99
            let song = c.object(with: o.s, as: Song.self)
            song.milliseconds = -1
            song.title = "forbidden"
            c.insert(Artist.self).artistID = 1  // A1 has it in the store
            return album.objectID
        }
        let error = await #expect(throws: StoreError.self) { try await f.context.save() }
        let found = (error?.validationProblems ?? []).map { "\($0.code) \($0.object.map(\.entity) ?? "")/\($0.key ?? "")" }.sorted()
        #expect(found == ["invalidValue Song/milliseconds", "missingValue Album/title", "uniqueViolation Artist/artistID", "validationFailed Song/title"],
                "\(String(describing: error))")
        #expect(error?.validationProblems.first.map { $0.code == error?.code && $0.object == error?.object } == true)
        #expect(error?.message.contains("3 more problem(s)") == true, "\(error?.message ?? "")")
        #expect(error?.validationProblems.contains { $0.object == album && $0.key == "title" } == true)
        for ancestor in f.ancestors { #expect(await ancestor.hasChanges == false, "nothing reached the parent") }
        #expect(StoreState(f.store) == before, "the store is unchanged")
        await f.close()
    }

    @Test("custom validation rules run in every tier and refuse the save", arguments: Tier.allCases)
    func validationRules(tier: Tier) async throws {
        let rule = ValidationRule(entity: "Album") { album throws(StoreError) in
            if case .string(let title) = album["title"], title.hasPrefix(" ") {
                throw album.validationError("titles do not start with a space", key: "title")
            }
        }
        let f = try ContextFixture(tier, validationRules: [rule])
        let o = try await seedSongbook(f.store)
        await f.context.perform { c in c.object(with: o.y, as: Album.self).title = " Spaced" }
        let error = await #expect(throws: StoreError.self) { try await f.context.save() }
        #expect(error?.code == .validationFailed && error?.object == o.y && error?.key == "title")
        await f.context.perform { c in c.object(with: o.y, as: Album.self).title = "Fine" }
        try await f.saveThrough()
        #expect(f.generation.value(o.y, "title") == .string("Fine"))
        await f.close()
    }

    @Test("findOrCreate finds in the store, in pending changes, or creates", arguments: Tier.allCases)
    func findOrCreate(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        await f.context.perform { c in
            #expect(c.findOrCreate(Artist.self, uniqueKey: .int(1)).objectID == o.a1)
            let new = c.findOrCreate(Artist.self, uniqueKey: .int(40))
            #expect(new.isInserted && new.artistID == 40)
            #expect(c.findOrCreate(Artist.self, uniqueKey: .int(40)) === new)
            c.object(with: o.a2, as: Artist.self).artistID = 41
            #expect(c.find(Artist.self, uniqueKey: .int(41))?.objectID == o.a2)
            #expect(c.find(Artist.self, uniqueKey: .int(2)) == nil, "A2 no longer holds 2 here")
        }
        await f.close()
    }

    @Test("rollback and reset", arguments: Tier.allCases)
    func rollbackAndReset(tier: Tier) async throws {
        let f = try ContextFixture(tier)
        let o = try await seedSongbook(f.store)
        await f.context.perform { c in
            let a = c.object(with: o.a1, as: Artist.self)
            a.name = "changed"
            let new = c.insert(Artist.self)
            a.albums[0].artist = c.object(with: o.a2, as: Artist.self)
            c.rollback()
            let afterRollback = c.hasChanges
            #expect(!afterRollback)
            #expect(a.name == "One")
            #expect(a.albums.map(\.objectID) == [o.x])
            #expect(new.isDeleted)
            a.name = "again"
            c.reset()
            let afterReset = c.hasChanges
            #expect(!afterReset)
            #expect(a.isDeletedElsewhere, "a reset instance is a tombstone")
            #expect(a.name == "again", "with its last snapshot")
            let fresh = c.object(with: o.a1, as: Artist.self)
            #expect(fresh !== a)
            #expect(fresh.name == "One")
        }
        await f.close()
    }

    @Test("a child reads its parent's pending changes, and the store's rows once the parent saved or rolled back")
    func childSeesParentsPendingLayer() async throws {
        let f = try ContextFixture(.root)
        let parent = f.context
        /// What a new child of the parent sees: every artist's key and name.
        func seen() async throws -> [String] {
            let child = ObjectContext(parent: parent, name: "child")
            return try await child.perform { c in
                try c.fetch(Artist.self, sortedBy: [SortKey("artistID")]).map { "\($0.artistID) \($0.name ?? "-")" }
            }
        }
        await parent.perform { c in
            let a = c.insert(Artist.self)
            a.artistID = 1
            a.name = "pending"
        }
        #expect(try await seen() == ["1 pending"])
        await parent.perform { c in c.rollback() }
        #expect(try await seen() == [], "rolled back: nothing pending, nothing stored")
        await parent.perform { c in
            let a = c.insert(Artist.self)
            a.artistID = 2
            a.name = "saved"
        }
        try await parent.save()
        #expect(try await seen() == ["2 saved"], "from the store, once")
        await parent.perform { c in
            let a = try! #require(c.fetch(Artist.self).first)
            a.name = "edited"
            let b = c.insert(Artist.self)
            b.artistID = 3
            b.name = "new"
        }
        #expect(try await seen() == ["2 edited", "3 new"])
        try await parent.save()
        #expect(try await seen() == ["2 edited", "3 new"])
        await parent.perform { c in
            for artist in try! c.fetch(Artist.self) { artist.name = "dropped" }
            c.rollback()
        }
        #expect(try await seen() == ["2 edited", "3 new"])
        // A child's save lands in the parent's pending changes, beside the saved rows.
        let child = ObjectContext(parent: parent, name: "child")
        await child.perform { c in
            let a = c.insert(Artist.self)
            a.artistID = 4
            a.name = "child's"
        }
        try await child.save()
        #expect(try await seen() == ["2 edited", "3 new", "4 child's"])
        await f.close()
    }

    @Test("a main context works synchronously from the main actor")
    @MainActor func mainContext() async throws {
        let f = try ContextFixture(.mainRoot)
        let id = f.context.performAndWait { c in
            let artist = c.insert(Artist.self)
            artist.artistID = 5
            artist.name = "Main"
            return artist.objectID
        }
        try await f.context.save()
        #expect(f.generation.value(id, "name") == .string("Main"))
        await f.close()
    }

    /// An object of a `.main` context changed directly on the main actor, outside any turn
    /// of work, as UI code changes one it keeps: the change is processed once the main
    /// actor's job ends — objects-did-change is posted and live results move the object —
    /// as a Core Data view context processes it at the end of the run loop's turn. (Nothing
    /// was posted until the next `perform`, and the results kept the old order.)
    @Test("a main-actor object changed directly is processed once the main actor's job ends")
    @MainActor func directChangeOnTheMainActor() async throws {
        let f = try ContextFixture(.mainRoot)
        let results = try f.context.performAndWait { c in
            for (number, name) in [(1, "A"), (2, "B"), (3, "C")] {
                let artist = c.insert(Artist.self)
                artist.artistID = number
                artist.name = name
            }
            return try c.fetchedResults(Artist.self, request: FetchRequest(entity: "Artist", sortBy: [SortKey("name")]))
        }
        var diffs = 0
        results.onChange = { _ in diffs += 1 }
        let changes = f.context.objectsDidChange()
        let first = results.objects[0]
        first.name = "Z"
        let change = await firstElement(of: changes, timeout: .seconds(10))
        #expect(change?.updated[first.objectID] == ["name"], "\(String(describing: change))")
        #expect(diffs == 1)
        #expect(results.objects.map(\.name) == ["B", "C", "Z"])
        await f.close()
    }
}
