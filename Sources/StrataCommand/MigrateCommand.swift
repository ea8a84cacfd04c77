import Strata

/// `migrate`: an inferred migration of a store to a model file's schema.
enum MigrateCommand {
    static let command = StrataCommand.Command(
        name: "migrate", usage: "strata migrate STORE --model NEW-MODEL.json [--dry-run]",
        summary: "migrate a store to a newer model file's schema (inferred changes)",
        help: """
            Migrates STORE from the schema it records to the schema of NEW-MODEL.json, which
            must have the same name and a higher version. The step is inferred from the two
            schemas: added attributes with a default, removed attributes, renames declared
            with renamedFrom (entities, attributes, relationships), optional <-> required with
            a default, added and removed entities, added relationships. A change that cannot be inferred is
            refused, naming the entity and key (custom steps need the Swift API).

            The result is validated (required values, unique keys, inverses) before anything
            is written; then it replaces the store's contents in one atomic step, so a crash
            leaves the store as it was and the command can be run again. With --dry-run it
            prints the plan (changes, objects per entity, what would fail validation) and
            writes nothing. Takes the write lock.

            example:
              strata migrate songs.strata --model Songbook-v2.json --dry-run
            """,
        options: ["model"], flags: ["dry-run"]
    ) { arguments, output in
        let path = try arguments.positional(0, "STORE")
        try arguments.expectPositionals(1)
        let modelPath = try arguments.requireOption("model")
        let schema = try Schema(contentsOfModelFile: modelPath)
        // A dry run reads; a migration opens for writing first, so that another writer's
        // lock is reported at once, before the store is read (and cuts a torn tail, saying so).
        let reader = arguments.flags.contains("dry-run")
            ? try StrataCommand.openForReading(path, command: "migrate", output)
            : try StrataCommand.openForWriting(path, command: "migrate", output)
        let stored = reader.schema
        await reader.close()
        // Inferred from the store's schema, another model's would remove every entity.
        guard schema.name == stored.name else {
            output.errorLine("strata migrate: \(modelPath): the model is \"\(schema.name)\", but the store holds \"\(stored.name)\" (version \(stored.version)); give a newer version of \"\(stored.name)\"")
            return 1
        }
        if stored.version == schema.version && stored.fingerprint == schema.fingerprint {
            output.line("\(path) is already at schema \"\(schema.name)\" version \(schema.version); nothing to do")
            return 0
        }
        guard schema.version > stored.version else {
            output.errorLine("strata migrate: \(modelPath): the model's version \(schema.version) is not newer than the store's (\"\(stored.name)\" version \(stored.version)); give the new model a higher \"version\"")
            return 1
        }
        let plan: MigrationPlan
        do throws(MigrationError) {
            plan = try MigrationPlan(schemas: [stored, schema])
        } catch {
            output.errorLine("strata migrate: \(error)")
            for change in error.changes.dropFirst() { output.errorLine("  \(change)") }
            return 1
        }
        if arguments.flags.contains("dry-run") {
            let dryRun = try await plan.dryRun(storeAt: path)
            output.standard(dryRun.description)
            if dryRun.wouldSucceed { return 0 }
            // The report is on standard output; the error line names what fails first.
            if let step = dryRun.steps.first(where: { $0.failure != nil || !$0.problems.isEmpty }) {
                if let failure = step.failure {
                    output.errorLine("strata migrate: the migration would fail: \(failure); nothing was written")
                } else {
                    let more = step.problems.count - 1
                    output.errorLine("strata migrate: the migration would fail: validationFailed: step \(step.name): \(step.problems[0])"
                        + (more > 0 ? "; and \(more)\(step.problems.count >= 100 ? "+" : "") more problem\(more == 1 ? "" : "s") (the dry run's report lists them)" : "")
                        + "; nothing was written")
                }
            }
            return 1
        }
        let store: Store
        do throws(MigrationError) {
            store = try await Store.open(at: path, migratingWith: plan)
        } catch {
            if error.code == .cancelled {
                // The plan has one step, switched into place with one rename: not reached.
                output.errorLine("strata migrate: interrupted before the migrated store was in place: \(path) is as it was; run the same command again to migrate it")
                return 1
            }
            output.errorLine("strata migrate: \(error)")
            for problem in error.problems.dropFirst().prefix(9) { output.errorLine("  \(problem)") }
            return 1
        }
        let generation = store.currentGeneration
        await store.close()
        output.line("migrated \(path): schema \"\(schema.name)\" version \(stored.version) → \(schema.version), \(generation.totalCount) objects, fingerprint \(schema.fingerprint)")
        return 0
    }
}
