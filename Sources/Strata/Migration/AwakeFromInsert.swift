/// Runs model classes' `awakeFromInsert()` for the objects a migration creates.
///
/// Core Data skips `awakeFromInsert` during migrations, so defaults set in code silently go
/// missing from migrated objects. Strata creates each such object a second time through the
/// very insert path a context uses — `ObjectGraph.insert`, on a scratch in-memory store of
/// the new schema — and takes the attribute values that insert and `awakeFromInsert()` set,
/// except the keys the transform set itself (which win, as if set after the insert).
/// Relationships set by `awakeFromInsert()` are not carried over: the scratch store holds no
/// other objects; set them in the step's links.
struct AwakeFromInsert: Sendable {
    let modelClasses: [ManagedObject.Type]
    /// Objects inserted on one scratch graph before it is torn down and replaced.
    static let batchSize = 4_096

    /// The storage indexes of the entities of `schema` that have a model class.
    func entities(in schema: Schema) -> [Int] {
        modelClasses.compactMap { schema.entityIndex(named: $0.entityName) }
    }

    /// Applies `awakeFromInsert` to the objects awaiting it (at most a batch, when called as
    /// they accumulate), sorted by entity, on one scratch graph per ``batchSize`` objects.
    func apply(to destination: MigrationDestination) throws(MigrationError) {
        guard !destination.awaitingAwake.isEmpty else { return }
        let schema = destination.schema
        let link: ContextLink
        if let existing = destination.awakeLink {
            link = existing
        } else {
            let classes = modelClasses.filter { schema.entity(named: $0.entityName) != nil }
            let store: Store
            do throws(StoreError) {
                store = try Store.create(at: "/scratch", schema: schema,
                                         configuration: .init(durability: .none, fileIO: InMemoryFileIO()))
            } catch {
                throw MigrationError.store(error, step: destination.stepName, "creating the scratch store for awakeFromInsert")
            }
            let coordinator = Coordinator(store: store, name: "migration", modelClasses: classes)
            link = ContextLink(parent: .coordinator(coordinator), name: "migration", executor: .privateQueue("strata.migration"))
            destination.awakeLink = link
        }
        let objects = destination.awaitingAwake.enumerated().sorted { ($0.element.entity, $0.offset) < ($1.element.entity, $1.offset) }
        var start = 0
        while start < objects.count {
            let graph = ObjectGraph(link: link)
            for (_, object) in objects[start..<min(start + Self.batchSize, objects.count)] {
                let entity = object.entity
                let attributeCount = schema.entities[entity].attributes.count
                let id = ObjectID(entityName: schema.layout.entityNames[entity], number: object.number)
                let awake = graph.insert(entity: entity).storage
                guard let row = try destination.row(entity, object.number) else { continue }
                let explicit = destination.explicitKeys[id] ?? []
                var changes: [(index: Int, value: Value)] = []
                for index in 0..<attributeCount where !explicit.contains(index) && row[index] != awake[index] {
                    changes.append((index, awake[index]))
                }
                if !changes.isEmpty { try destination.updateRow(entity, object.number, changes) }
            }
            graph.tearDown()
            start += Self.batchSize
        }
        destination.finishAwakening()
    }
}
