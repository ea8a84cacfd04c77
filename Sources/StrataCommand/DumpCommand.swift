import Strata

/// `dump`: every object as JSON Lines, in the order `import` reads back to the same dump.
enum DumpCommand {
    static let command = StrataCommand.Command(
        name: "dump", usage: "strata dump STORE [--format jsonl]",
        summary: "print every object as JSON Lines (import reads it back)",
        help: """
            Prints every object in the query --format jsonl form, entity by entity in the
            schema's order, each entity's objects in object-number order. Every line carries
            the object's "id", which import keeps for new objects, so that dump of a store,
            import of that dump into a fresh store with the same model, and dump again give
            identical output. Reads without taking the write lock.

            example:
              strata dump songs.strata > songs.jsonl
            """,
        options: ["format"]
    ) { arguments, output in
        let path = try arguments.positional(0, "STORE")
        try arguments.expectPositionals(1)
        _ = try arguments.choice("format", of: ["jsonl"], default: "jsonl")
        let store = try StrataCommand.openForReading(path, command: "dump", output)
        let generation = store.currentGeneration
        await store.close()
        let lines = ObjectLines(generation)
        let out = BufferedLines(output)
        for entity in generation.schema.entities {
            for object in generation.objects(of: entity.name) { out.line(lines.line(object)) }
        }
        out.flush()
        return 0
    }
}
