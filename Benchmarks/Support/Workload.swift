import Foundation
import Strata
import Synchronization

/// The data the benchmarks write: one entity of sensor readings, about 110 bytes a row once
/// encoded (an int, a short string, a double, a date, a bool and 48 bytes of data).
enum Workload {
    static let schema: Schema = {
        do {
            return try Schema("Benchmark", version: 1, entities: [
                Entity("Reading", attributes: [
                    Attribute("sensor", .int, indexed: true),
                    Attribute("label", .string),
                    Attribute("value", .double),
                    Attribute("takenAt", .date),
                    Attribute("ok", .bool),
                    Attribute("raw", .data, optional: true),
                ]),
            ])
        } catch {
            fatalError("the benchmark schema is invalid: \(error)")
        }
    }()

    private static let rawBytes = filler(48)

    /// The row of object `number` (deterministic).
    static func row(_ number: UInt64) -> RowImage {
        let sensor = Int64(number % 997)
        return RowImage(id: ObjectID(entity: "Reading", number: number), values: [
            .int(sensor),
            .string("sensor \(sensor) / reading"),
            .double(Double(number) * 0.125),
            .date(Date(timeIntervalSinceReferenceDate: 700_000_000 + Double(number))),
            .bool(number % 3 != 0),
            .data(Data(rawBytes)),
        ])
    }

    /// Transaction `number` inserting `rows` new objects, numbered from `firstObject`.
    static func transaction(_ number: UInt64, firstObject: UInt64, rows: Int) -> TransactionRecord {
        TransactionRecord(number: number, author: "benchmark",
                          inserted: (0..<UInt64(rows)).map { row(firstObject + $0) })
    }

    /// Transactions 1...count of `rows` rows each, inserting objects 1, 2, 3, ... in order.
    static func transactions(_ count: Int, rows: Int) -> [TransactionRecord] {
        (0..<count).map { k in transaction(UInt64(k + 1), firstObject: UInt64(k * rows + 1), rows: rows) }
    }
}

/// What every benchmark group is given.
struct BenchmarkContext {
    /// A small, fast run for smoke testing.
    var quick: Bool
    /// A fresh directory for this run's files, removed at the end.
    var directory: String

    private static let counter = AtomicCounter()

    /// A new path inside ``directory`` (not created).
    func path(_ label: String) -> String {
        "\(directory)/\(label)-\(Self.counter.next())"
    }
}

/// A process-wide counter for unique file names.
final class AtomicCounter: Sendable {
    private let value = Mutex<Int>(0)
    func next() -> Int {
        value.withLock { v in
            v += 1
            return v
        }
    }
}

/// Removes a file or directory tree, ignoring errors.
func removeItem(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

/// A journal configuration at the given durability with the default segment size.
func configuration(_ durability: Durability, fileIO: any FileIO = POSIXFileIO()) -> Journal.Configuration {
    Journal.Configuration(durability: durability, fileIO: fileIO)
}
