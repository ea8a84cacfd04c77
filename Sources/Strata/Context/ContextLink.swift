#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a context shares with its graph and its children, readable from any isolation:
/// its place in the tree, its published pending changes, its pinned generation.
final class ContextLink: Sendable {
    enum Parent: Sendable {
        case coordinator(Coordinator)
        case context(ContextLink)
    }

    let parent: Parent
    /// The coordinator at the root of the tree.
    let coordinator: Coordinator
    let name: String
    let executor: ContextExecutor
    let observer: ContextObserver?
    /// The context's pending changes as its children see them.
    let published: Locked<PendingLayer>
    /// The generation a root context reads, when pinned.
    let pinned = Locked<Generation?>(nil)
    /// Saves, merges and child saves that changed this context, for children that merge automatically.
    let changes = Broadcast<DidSave>()
    /// Whether a private-queue root context may block its queue to write its own
    /// transaction and wait for its group commit (see ``Store/commitOnCallersExecutor(_:mayBlock:)``).
    /// A stack's asynchronous writer may not: children hand it their changes while its
    /// save waits for the disk.
    let mayBlockQueueOnCommit: Bool

    init(parent: Parent, name: String, executor: ContextExecutor, mayBlockQueueOnCommit: Bool = true) {
        self.parent = parent
        self.mayBlockQueueOnCommit = mayBlockQueueOnCommit
        self.name = name
        self.executor = executor
        switch parent {
        case .coordinator(let coordinator):
            self.coordinator = coordinator
            self.observer = coordinator.observer
        case .context(let link):
            self.coordinator = link.coordinator
            self.observer = link.observer
        }
        published = Locked(PendingLayer(schema: coordinator.store.schema))
    }

    var schema: Schema { coordinator.store.schema }
    var models: ModelRegistry { coordinator.models }
    var isRoot: Bool { if case .coordinator = parent { true } else { false } }

    /// What this context reads through: its parent's published state.
    func sourceView() -> ContextView {
        switch parent {
        case .coordinator(let coordinator):
            ContextView(generation: pinned.withLock { $0 } ?? coordinator.currentGeneration, layers: [])
        case .context(let link):
            link.childView()
        }
    }

    /// What this context's children read through: its source overlaid with its own pending changes.
    ///
    /// The layer is read before the source: a save publishes what it wrote (a generation,
    /// or the parent's layer) before it empties this layer, so a layer read first is never
    /// older than the source read after it. Read the other way round, a save between the two
    /// reads gave the state from before the save (the old source, the emptied layer).
    func childView() -> ContextView {
        let layer = published.withLock { $0 }
        var view = sourceView()
        // An empty layer still listing merges: a child merging one of them looks it up.
        if !layer.isEmpty || !layer.mergesLeftUnchanged.isEmpty { view.layers.insert(layer, at: 0) }
        return view
    }

    func allocateObjectID(entity: Int) -> ObjectID {
        coordinator.store.allocateObjectID(entity: entity)
    }

    /// Runs `body`, reporting its duration to the observer.
    func measure<T, E: Error>(_ operation: ContextEvent.Operation, objects: (T) -> Int, _ body: () throws(E) -> T) throws(E) -> T {
        guard let observer else { return try body() }
        let clock = ContinuousClock()
        let start = clock.now
        let processorStart = Self.threadProcessorTime()
        let result = try body()
        let processorTime = Self.threadProcessorTime() - processorStart
        observer(ContextEvent(context: name, executor: executor.kind, operation: operation, start: start,
                              duration: clock.now - start, processorTime: processorTime, objectCount: objects(result)))
        return result
    }

    /// The processor time the calling thread has used.
    static func threadProcessorTime() -> Duration {
        var time = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time) == 0 else { return .zero }
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
}
