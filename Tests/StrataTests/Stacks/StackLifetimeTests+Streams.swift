import Foundation
import Testing
@testable import Strata

/// A context's streams end when its store closes, under every preset: a task reading one
/// keeps the stack and its contexts alive, and once waited for ever after the stack closed.
extension StackLifetimeTests {
    @Test("a context's did-save, objects-did-change and conflict streams end when the stack closes", arguments: StackPreset.allCases)
    func contextStreamsEndWhenTheStackCloses(preset: StackPreset) async throws {
        let f = try await Fixture(preset)
        let o = f.objects
        let background = f.stack.newBackgroundContext()
        let editor = await f.stack.newEditorContext()
        // Each reader holds its context, as a task reading `stack.viewContext` does.
        let readers: [Task<Int, Never>] = [f.stack.viewContext, background, editor].flatMap { context in
            [Task { var n = 0; for await _ in context.didSave() { n += 1 }; _ = context; return n },
             Task { var n = 0; for await _ in context.objectsDidChange() { n += 1 }; _ = context; return n },
             Task { var n = 0; for await _ in context.mergeConflicts() { n += 1 }; _ = context; return n }]
        }
        await background.perform { c in c.object(with: o.a1)["name"] = .string("Changed") }
        try await f.saveDurably(background)
        await f.stack.close()
        for (k, reader) in readers.enumerated() {
            // The reader is cancelled if the wait runs out, so that the wait can end.
            let ended = await returns(within: .seconds(10)) {
                await withTaskCancellationHandler { _ = await reader.value } onCancel: { reader.cancel() }
                return !Task.isCancelled
            }
            #expect(ended, "stream \(k) (context \(k / 3), kind \(k % 3)) did not end when the stack closed")
            if !ended { reader.cancel() }
        }
        // A context made after the close gets streams that end at once.
        let late = ObjectContext(coordinator: f.stack.coordinator, name: "late")
        let lateEnded = await returns(within: .seconds(10)) {
            for await _ in late.didSave() {}
            return !Task.isCancelled
        }
        #expect(lateEnded)
        f.directory.remove()
    }
}
