import Foundation
import Testing
@testable import Strata
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The calling thread's `nice` value (on Linux, `nice` belongs to each thread).
private func currentNiceness() -> Int32 {
    #if os(Linux)
    getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
    #else
    getpriority(PRIO_PROCESS, 0)
    #endif
}

@Suite struct ContextPriorityTests {
    @Test("a context runs at its priority: utility below the process's own threads, user-initiated not below them", arguments: ContextPriority.allCases)
    func niceness(priority: ContextPriority) async throws {
        let fixture = try ContextFixture(.root)
        defer { fixture.directory.remove() }
        let base = currentNiceness()
        let context = ObjectContext(coordinator: fixture.coordinator, executor: .privateQueue("priority", priority: priority))
        let seen = try await withTimeout(30, "a perform") { await context.perform { _ in currentNiceness() } }
        #if os(Linux)
        // Dispatch's threads for a quality of service have a `nice` value of their own
        // (utility's is 2, absolute): utility work must rank below the process's own
        // threads, the main queue's among them, unless the process already runs at 2 or
        // lower; user-initiated work must not rank below them.
        if priority == .utility { #expect(seen > base || base >= 2) } else { #expect(seen <= base) }
        #endif
        // Work still gets done there: a save through the context reaches the store.
        try await withTimeout(30, "a save") {
            await context.perform { context in
                let artist = context.insert(Artist.self)
                artist.artistID = 7
            }
            try await context.save()
        }
        #expect(fixture.store.currentGeneration.totalCount == 1)
    }

    @Test("the stack presets run writer, background and import contexts at utility, editors at user-initiated",
          arguments: StackPreset.allCases)
    func stackPriorities(preset: StackPreset) async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try Store.create(at: directory.appending("store"), schema: Fixtures.songbook)
        let stack = Stack(preset, store: store)
        await stack.start()
        #expect(stack.newBackgroundContext().executor == .privateQueue("strata.stack.background", priority: .utility))
        #expect(stack.newImportContext().executor == .privateQueue("strata.stack.import", priority: .utility))
        #expect(await stack.newEditorContext().executor == .privateQueue("strata.stack.editor", priority: .userInitiated))
        if let writer = stack.writerContext { #expect(writer.executor == .privateQueue("strata.stack.writer", priority: .utility)) }
        await store.close()
    }

    @Test("a private-queue context saving alone writes its transactions itself; a main-actor context leaves it to the writer",
          arguments: [Tier.root, .mainRoot])
    func savesWrittenBySaver(tier: Tier) async throws {
        let fixture = try ContextFixture(tier, durability: .full)
        defer { fixture.directory.remove() }
        let saves = 12
        try await withTimeout(60, "\(saves) saves") {
            for n in 0..<saves {
                try await fixture.context.perform { context in
                    let artist = context.insert(Artist.self)
                    artist.artistID = n
                    try await context.save()
                }
            }
        }
        let statistics = fixture.store.journal.statistics
        #expect(statistics.syncs == saves, "one sync per save: \(statistics)")
        #expect(statistics.writesByAppenders == (tier == .root ? saves : 0), "\(statistics)")
        await fixture.store.close()
        let reopened = try Store.open(at: fixture.store.journal.path)
        #expect(reopened.currentGeneration.count(of: "Artist") == saves)
        await reopened.close()
    }
}
