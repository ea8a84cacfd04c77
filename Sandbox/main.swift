import Foundation

// The sandbox runs one deterministic workload through every stack preset and reports what
// each costs the main actor. The scenarios are built on the store, context and stack
// layers; until they exist this executable says so rather than printing made-up figures.

let message = """
    sandbox: no scenarios are available in this build yet.
    The scenarios (shootout, editor-cancel, edit-during-import, concurrent-writers,
    merge-scaling, fanout, durability, cold-open) arrive with the store, context and stack
    layers. The journal's own measurements are in Benchmarks/:
        swift run -c release strata-benchmarks

    """
FileHandle.standardError.write(Data(message.utf8))
exit(CommandLine.arguments.dropFirst().first == "list" ? 0 : 2)
