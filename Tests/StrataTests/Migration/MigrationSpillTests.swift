import Foundation
import Testing
@testable import Strata

/// Custom steps whose destination outgrows the spill file's batch: the rows are written to
/// the temporary file in several batches, read back from it by transforms, links, validation
/// and the checkpoint, and the file is gone when the step ends — however it ends.
@Suite struct MigrationSpillTests {
    /// v1: `Item(itemID unique, text)`.
    static let v1: Schema = try! Schema("Items", version: 1, entities: [
        Entity("Item", attributes: [Attribute("itemID", .int, unique: true), Attribute("text", .string)]),
    ])

    /// v2: each Item split into an Item and a Detail (the text, and a weight that must not be
    /// negative), linked by the shared itemID; Items are chained by `next` / `previous`.
    static let v2: Schema = try! Schema("Items", version: 2, entities: [
        Entity("Item", attributes: [Attribute("itemID", .int, unique: true)],
               relationships: [Relationship("detail", to: "Detail", inverse: "item", optional: false, deleteRule: .cascade),
                               Relationship("next", to: "Item", inverse: "previous"),
                               Relationship("previous", to: "Item", inverse: "next")]),
        Entity("Detail", attributes: [Attribute("itemID", .int, unique: true), Attribute("text", .string),
                                      Attribute("weight", .int, min: .int(0))],
               relationships: [Relationship("item", to: "Item", inverse: "detail", optional: false)]),
    ])

    /// How far back a transform reads a Detail it made earlier: far enough that the Detail's
    /// row is no longer in the spill's buffer.
    static let lookBack = 1_200

    /// The split. A Detail's weight is the weight of the Detail made `lookBack` items before
    /// plus one (read back from the destination), except for `negativeAt`, whose weight is -1.
    static func split(negativeAt: Int64? = nil) -> MigrationStep {
        var step = MigrationStep(from: v1, to: v2)
        step.transform("Item") { item, destination in
            guard case .int(let key) = try item["itemID"] else { return }
            var weight: Int64 = 1
            if key > Int64(lookBack), let earlier = destination.object("Detail", uniqueValue: .int(key - Int64(lookBack))),
                case .int(let before) = try destination.value(forKey: "weight", of: earlier)
            {
                weight = before + 1
            }
            if key == negativeAt { weight = -1 }
            try destination.insert("Item", values: ["itemID": .int(key)])
            try destination.insert("Detail", values: ["itemID": .int(key), "text": item["text"], "weight": .int(weight)])
        }
        step.link("Item") { item, destination in
            guard case .int(let key) = try destination.value(forKey: "itemID", of: item) else { return }
            if let detail = destination.object("Detail", uniqueValue: .int(key)) {
                try destination.setValue(.object(detail), forKey: "detail", of: item)
            }
            if let next = destination.object("Item", uniqueValue: .int(key + 1)) {
                try destination.setValue(.object(next), forKey: "next", of: item)  // next.previous follows
            }
        }
        return step
    }

    static func text(_ n: Int) -> String { "item \(n) " + String(repeating: "x", count: 1_000) }

    /// Creates a v1 store of `count` items (numbers and itemIDs 1...count).
    static func createStore(count: Int, at path: String, fileIO: any FileIO) async throws {
        let store = try Store.create(at: path, schema: v1, configuration: .init(durability: .full, fileIO: fileIO))
        _ = store.allocateObjectIDs(for: "Item", count: count)
        let rows = (1...count).map { n in
            RowImage(id: ObjectID(entity: "Item", number: UInt64(n)), values: [.int(Int64(n)), .string(text(n))])
        }
        try await store.commit(ChangeSet(author: "fixture", inserted: rows))
        await store.close()
    }

    /// Checks a migrated store: every Item kept its number, has its Detail, and is chained.
    static func checkMigrated(_ generation: Generation, count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(generation.schema.version == 2, sourceLocation: sourceLocation)
        #expect(generation.count(of: "Item") == count && generation.count(of: "Detail") == count, sourceLocation: sourceLocation)
        #expect(generation.integrityProblems().isEmpty, "\(generation.integrityProblems().prefix(3))", sourceLocation: sourceLocation)
        for n in [1, 2, lookBack, lookBack + 1, count / 2, count - 1, count] {
            guard let item = generation.object(ObjectID(entity: "Item", number: UInt64(n))) else {
                Issue.record("Item/\(n) is missing", sourceLocation: sourceLocation)
                continue
            }
            #expect(item.values[0] == .int(Int64(n)), sourceLocation: sourceLocation)
            guard case .object(let detailID) = item.values[1], let detail = generation.object(detailID) else {
                Issue.record("Item/\(n) has no Detail", sourceLocation: sourceLocation)
                continue
            }
            #expect(detail.values[0] == .int(Int64(n)) && detail.values[1] == .string(text(n)), sourceLocation: sourceLocation)
            #expect(detail.values[2] == .int(Int64((n - 1) / lookBack + 1)), "weight of Detail for \(n)", sourceLocation: sourceLocation)
            #expect(item.values[2] == (n == count ? .null : .object(ObjectID(entity: "Item", number: UInt64(n + 1)))),
                    sourceLocation: sourceLocation)
            #expect(item.values[3] == (n == 1 ? .null : .object(ObjectID(entity: "Item", number: UInt64(n - 1)))),
                    sourceLocation: sourceLocation)
        }
    }

    /// The size of the spill file, or `nil` when there is none.
    static func spillSize(_ io: any FileIO, store path: String) -> Int64? {
        let spill = StoreLayout.join(path, StoreLayout.migrationSpillName)
        guard io.kind(of: spill) != nil, let fd = try? io.open(spill, access: .readOnly, creation: .mustExist) else { return nil }
        defer { io.close(fd) }
        return try? io.size(of: fd)
    }

    /// With the default cache the bookkeeping stays in memory here; with two pages, every page
    /// of it is written out and read back again and again.
    @Test(arguments: [PagedSlots.defaultCachedPages, 2])
    func aStepLargerThanOneBatchIsLinkedAcrossBatchesAndLeavesNoSpill(cachedIndexPages: Int) async throws {
        let io = InMemoryFileIO(), path = "/items.strata", count = 3_000
        try await Self.createStore(count: count, at: path, fileIO: io)
        var plan = try MigrationPlan(schemas: [Self.v1, Self.v2], steps: [Self.split()])
        plan.cachedIndexPages = cachedIndexPages
        // The spill's size when validation starts (all rows made and linked).
        let sizeAtValidation = Locked<Int64?>(nil)
        let store = try await Store.open(at: path, migratingWith: plan, configuration: .init(fileIO: io)) { progress in
            if progress.phase == .validating && progress.completed == 0 {
                sizeAtValidation.withLock { $0 = Self.spillSize(io, store: path) }
            }
        }
        Self.checkMigrated(store.currentGeneration, count: count)
        await store.close()
        let size = try #require(sizeAtValidation.withLock { $0 })
        #expect(size > Int64(2 * MigrationSpill.batchSize), "the spill held \(size) bytes")
        #expect(Self.spillSize(io, store: path) == nil)
        let files = try io.contentsOfDirectory(path)
        #expect(!files.contains { StoreLayout.isTemporary($0) }, "\(files)")
    }

    @Test func aValidationFailureInALaterBatchLeavesTheStoreByteIdentical() async throws {
        let directory = TemporaryDirectory("strata-migration-spill")
        defer { directory.remove() }
        let path = directory.appending("items.strata"), count = 3_000
        try await Self.createStore(count: count, at: path, fileIO: POSIXFileIO())
        let before = try MusicModel.files(path)
        let plan = try MigrationPlan(schemas: [Self.v1, Self.v2], steps: [Self.split(negativeAt: 2_900)])
        await #expect {
            try await Store.open(at: path, migratingWith: plan)
        } throws: { error in
            let error = error as! MigrationError
            return error.code == .validationFailed && error.step == "Items 1 → 2 (custom)"
                && error.object == ObjectID(entity: "Detail", number: 2_900) && error.key == "weight"
                && error.message.hasPrefix("-1 is less than the minimum 0")
        }
        #expect(try MusicModel.files(path) == before)
        // The migration runs once the transform is fixed.
        let store = try await Store.open(at: path, migratingWith: try MigrationPlan(schemas: [Self.v1, Self.v2], steps: [Self.split()]))
        Self.checkMigrated(store.currentGeneration, count: count)
        await store.close()
    }

    @Test func aFailedReadOrWriteOfTheSpillLeavesTheStoreAsItWasAndTheMigrationReruns() async throws {
        let base = InMemoryFileIO(), path = "/items.strata", count = 2_000
        try await Self.createStore(count: count, at: path, fileIO: base)
        // A small cache of the step's bookkeeping, so that its file is read and written too.
        var plan = try MigrationPlan(schemas: [Self.v1, Self.v2], steps: [Self.split()])
        plan.cachedIndexPages = 4
        // Count the calls of one whole migration: mostly the spill's and its index's reads (the
        // store's own are few).
        let probe = FaultInjectingFileIO(wrapping: base.crashed(seed: 0, mode: .processCrash))
        await (try await Store.open(at: path, migratingWith: plan, configuration: .init(fileIO: probe))).close()
        #expect(probe.callCount(of: .read) > count, "\(probe.callCount(of: .read)) reads")
        // Fail the first, two middle and the last reads, and the same of writes: most reads are
        // the spill's and its index's, and the writes include their batches and pages.
        var failures: [String] = []
        for operation in [FaultInjectingFileIO.Operation.read, .write] {
            let total = probe.callCount(of: operation)
            for index in Set([0, total / 3, total / 2, total - 1]) where index >= 0 {
                let disk = base.crashed(seed: 0, mode: .processCrash)
                let faulty = FaultInjectingFileIO(wrapping: disk, faults: [.init(callIndex: index, kind: .error(EIO), operations: [operation])])
                do {
                    await (try await Store.open(at: path, migratingWith: plan, configuration: .init(fileIO: faulty))).close()
                } catch {
                    failures.append("\(error)")
                }
                // Whether it failed or not, the store opens at one version with its contents,
                // and a migration then finishes.
                let image = disk.crashed(seed: UInt64(index), mode: .powerLoss)
                let reader = try Store.open(at: path, configuration: .init(fileIO: image, readOnly: true))
                let generation = reader.currentGeneration
                await reader.close()
                if generation.schema.version == 1 {
                    #expect(generation.count(of: "Item") == count && generation.integrityProblems().isEmpty)
                } else {
                    Self.checkMigrated(generation, count: count)
                }
                let store = try await Store.open(at: path, migratingWith: plan, configuration: .init(fileIO: image))
                Self.checkMigrated(store.currentGeneration, count: count)
                await store.close()
                let files = try image.contentsOfDirectory(path)
                #expect(!files.contains { StoreLayout.isTemporary($0) }, "\(operation) \(index): \(files)")
            }
        }
        #expect(failures.contains { $0.contains("temporary index file") }, "\(failures)")
    }

    @Test func aSpillLeftByACrashIsRemovedWhenTheStoreOpens() async throws {
        let io = InMemoryFileIO(), path = "/items.strata"
        try await Self.createStore(count: 10, at: path, fileIO: io)
        let spill = StoreLayout.join(path, StoreLayout.migrationSpillName)
        let fd = try io.open(spill, access: .readWrite, creation: .createExclusive)
        try io.writeAll(fd, [UInt8](repeating: 7, count: 100), at: 0, path: spill)
        io.close(fd)
        let store = try Store.open(at: path, configuration: .init(fileIO: io))
        await store.close()
        #expect(io.kind(of: spill) == nil)
    }

    /// v2 with notes: each Item gets a Note, whose model class's `awakeFromInsert` sets its source.
    static let withNotes: Schema = try! Schema("Items", version: 2, entities: [
        Entity("Item", attributes: [Attribute("itemID", .int, unique: true)]),
        Entity("Note", attributes: [Attribute("itemID", .int), Attribute("source", .string)]),
    ])

    @Test func awakeFromInsertRunsForEveryBatchAndForObjectsLinksInsert() async throws {
        let io = InMemoryFileIO(), path = "/items.strata", count = AwakeFromInsert.batchSize + 1_000
        try await Self.createStore(count: count, at: path, fileIO: io)
        var step = MigrationStep(from: Self.v1, to: Self.withNotes)
        step.transform("Item") { item, destination in
            let key = try item["itemID"]
            try destination.insert("Item", values: ["itemID": key])
            // The transform's value wins over awakeFromInsert's, in the second batch too.
            try destination.insert("Note", values: key == .int(Int64(count)) ? ["itemID": key, "source": .string("transform")] : ["itemID": key])
        }
        step.link("Item") { item, destination in
            if try destination.value(forKey: "itemID", of: item) == .int(1) {
                try destination.insert("Note", values: ["itemID": .int(0)])
            }
        }
        let plan = try MigrationPlan(schemas: [Self.v1, Self.withNotes], steps: [step], modelClasses: [SpillNoteModel.self])
        let store = try await Store.open(at: path, migratingWith: plan, configuration: .init(fileIO: io))
        let generation = store.currentGeneration
        await store.close()
        #expect(generation.integrityProblems().isEmpty)
        let notes = generation.objects(of: "Note")
        #expect(notes.count == count + 1)
        var sources: [Value: Int] = [:]
        for note in notes { sources[note.values[1], default: 0] += 1 }
        #expect(sources == [.string("migrated"): count, .string("transform"): 1], "\(sources)")
        let linked = try #require(notes.first { $0.values[0] == .int(0) })
        #expect(linked.values[1] == .string("migrated"))
    }
}

/// Note's model class: its `awakeFromInsert` sets where the object came from.
final class SpillNoteModel: ManagedObject {
    override class var entityName: String { "Note" }
    @Managed("source") var source: String
    override func awakeFromInsert() {
        super.awakeFromInsert()
        source = "migrated"
    }
}
