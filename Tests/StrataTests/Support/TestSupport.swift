import Foundation
@testable import Strata

/// The tests' deterministic generator: every randomized test prints its seed and replays
/// exactly from it.
typealias SeededGenerator = SplitMix64

/// A temporary directory, named by a label and a UUID; removed by `remove()`.
struct TemporaryDirectory {
    let path: String
    init(_ label: String = "strata-test") {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)").path
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    /// A path inside the directory (not created).
    func appending(_ name: String) -> String { path + "/" + name }
    func remove() { try? FileManager.default.removeItem(atPath: path) }

    /// Removes every temporary directory made with `label` — for one an exit test's child
    /// process made before it trapped (it never got to remove it). The label must be the
    /// test's own.
    static func removeAll(labelled label: String) {
        let parent = FileManager.default.temporaryDirectory
        let names = (try? FileManager.default.contentsOfDirectory(atPath: parent.path)) ?? []
        for name in names where name.hasPrefix(label + "-") {
            try? FileManager.default.removeItem(atPath: parent.appendingPathComponent(name).path)
        }
    }
}

enum Fixtures {
    /// The songbook schema used across tests: every attribute type, to-one, to-many, each delete rule.
    static let songbook: Schema = FuzzTargets.schema

    /// A random value of an attribute type (unicode, empty and large values included).
    static func randomValue(_ type: AttributeType, optional: Bool, using rng: inout SeededGenerator) -> Value {
        if optional && Int.random(in: 0..<5, using: &rng) == 0 { return .null }
        switch type {
        case .string:
            let pool = ["", "a", "AC/DC", "Motörhead", "日本語のタイトル", "emoji 🎸🥁", "quote \" and \\ backslash", "line\nbreak",
                        String(repeating: "x", count: 300)]
            return .string(pool[Int.random(in: 0..<pool.count, using: &rng)] + String(Int.random(in: 0..<1000, using: &rng)))
        case .int:
            let pool: [Int64] = [0, 1, -1, .max, .min, 42]
            return .int(Bool.random(using: &rng) ? pool[Int.random(in: 0..<pool.count, using: &rng)] : Int64.random(in: .min ... .max, using: &rng))
        case .double:
            let pool: [Double] = [0, -0.0, 1.5, .greatestFiniteMagnitude, .leastNonzeroMagnitude, .infinity, -.infinity]
            return .double(Bool.random(using: &rng) ? pool[Int.random(in: 0..<pool.count, using: &rng)] : Double.random(in: -1e9...1e9, using: &rng))
        case .bool: return .bool(Bool.random(using: &rng))
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double.random(in: -1e9...1e9, using: &rng)))
        case .data:
            let count = [0, 1, 16, 1000][Int.random(in: 0..<4, using: &rng)]
            return .data(Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }))
        case .uuid:
            var bytes = [UInt8](repeating: 0, count: 16)
            for i in 0..<16 { bytes[i] = UInt8.random(in: 0...255, using: &rng) }
            return .uuid(UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                                     bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15])))
        }
    }
}

/// Generates random transactions that are valid against a `ReplayedState` model: inserts
/// of new objects, updates and deletes of existing ones, relationship values pointing at
/// existing objects (inverses are not maintained: the journal stores what it is given).
struct TransactionGenerator {
    let schema: Schema
    var rng: SeededGenerator
    var nextNumber: [String: UInt64] = [:]

    init(schema: Schema = Fixtures.songbook, seed: UInt64) {
        self.schema = schema
        self.rng = SeededGenerator(seed: seed)
    }

    mutating func randomRow(_ entity: Entity, id: ObjectID, existing: [ObjectID: [Value]]) -> [Value] {
        var values: [Value] = []
        for a in entity.attributes { values.append(Fixtures.randomValue(a.type, optional: a.isOptional, using: &rng)) }
        for r in entity.relationships {
            let candidates = existing.keys.filter { $0.entity == r.destination }.sorted().prefix(5)
            if r.isToMany {
                values.append(.objects(Array(candidates.prefix(Int.random(in: 0...candidates.count, using: &rng)))))
            } else {
                values.append(candidates.isEmpty || Bool.random(using: &rng) ? .null : .object(candidates.randomElement(using: &rng)!))
            }
        }
        return values
    }

    /// The next transaction after `state`, numbered `state.lastTransaction + 1`.
    mutating func next(after state: ReplayedState, maxChanges: Int = 6) -> TransactionRecord {
        var record = TransactionRecord(number: state.lastTransaction + 1,
                                       timestamp: Date(timeIntervalSinceReferenceDate: Double(state.lastTransaction) * 1.25),
                                       author: ["importer", "main", "editor-ä", ""][Int(state.lastTransaction % 4)])
        var touched = Set<ObjectID>()
        let existing = state.rows.keys.sorted()
        for _ in 0..<Int.random(in: 1...maxChanges, using: &rng) {
            let entity = schema.entities[Int.random(in: 0..<schema.entities.count, using: &rng)]
            switch Int.random(in: 0..<4, using: &rng) {
            case 0, 1:
                let number = max(nextNumber[entity.name, default: 0], state.highestObjectNumbers[entity.name, default: 0]) + 1
                nextNumber[entity.name] = number
                let id = ObjectID(entity: entity.name, number: number)
                touched.insert(id)
                record.inserted.append(RowImage(id: id, values: randomRow(entity, id: id, existing: state.rows)))
            case 2:
                guard let id = existing.randomElement(using: &rng), touched.insert(id).inserted,
                      let target = schema.entity(named: id.entity) else { continue }
                let full = randomRow(target, id: id, existing: state.rows)
                let indexes = (0..<target.propertyCount).filter { _ in Bool.random(using: &rng) }
                record.updated.append(RowUpdate(id: id, changes: indexes.map { PropertyChange(index: $0, value: full[$0]) }))
            default:
                guard let id = existing.randomElement(using: &rng), touched.insert(id).inserted else { continue }
                record.deleted.append(id)
            }
        }
        return record
    }
}
