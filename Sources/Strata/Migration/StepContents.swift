/// The result of a custom step, read back from its spill file while the checkpoint is
/// written: a ``CheckpointSource`` whose rows are never all in memory at once.
///
/// A read of the spill that fails stops the rows early and is reported through
/// ``readFailure``, which the checkpoint writer checks before it finishes the file — so a
/// checkpoint missing rows is never put in place.
struct StepContents: FallibleCheckpointSource {
    let spill: MigrationSpill
    let schema: Schema
    let lastTransaction: UInt64
    let highestObjectNumbers: [String: UInt64]

    var readFailure: StoreError? { spill.failure }

    /// The objects the checkpoint holds.
    var objectCount: Int { schema.entities.indices.reduce(0) { $0 + spill.count(of: $1) } }

    func forEachRow(_ body: (RowImage) throws -> Void) rethrows {
        for (index, name) in schema.layout.entityNames.enumerated() {
            var rows: [RowImage] = []
            // Rows are read in batches, then handed over, so that `body`'s errors pass through.
            var numbers = spill.numbers(of: index)
            var more = true
            while more, spill.failure == nil {
                rows.removeAll(keepingCapacity: true)
                while rows.count < 4_096 {
                    guard let number = numbers.next() else {
                        more = false
                        break
                    }
                    do throws(StoreError) {
                        guard let values = try spill.values(index, number, scanning: true) else { continue }
                        rows.append(RowImage(id: ObjectID(entityName: name, number: number), values: values))
                    } catch {
                        spill.recordFailure(error)
                        return
                    }
                }
                for row in rows { try body(row) }
            }
        }
    }

    /// The rows read back into a generation (for dry runs and legacy stores).
    func generation(step: String) throws(MigrationError) -> Generation {
        var generation = Generation(schema: schema)
        do {
            try generation.beginCheckpoint(through: lastTransaction)
            try forEachRow { row in try generation.loadCheckpointRow(row) }
            try generation.finishCheckpoint(through: lastTransaction, highestObjectNumbers: highestObjectNumbers)
        } catch {
            throw MigrationError(.store, "reading the step's new objects back: \(error)", step: step)
        }
        if let failure = readFailure { throw MigrationError.store(failure, step: step, "reading the step's new objects back") }
        return generation
    }
}
