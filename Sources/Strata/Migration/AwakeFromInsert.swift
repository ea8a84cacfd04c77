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

    func apply(to destination: MigrationDestination) throws(MigrationError) {
        guard !destination.awaitingAwake.isEmpty else { return }
        let schema = destination.schema
        let classes = modelClasses.filter { schema.entity(named: $0.entityName) != nil }
        let store: Store
        do throws(StoreError) {
            store = try Store.create(at: "/scratch", schema: schema,
                                     configuration: .init(durability: .none, fileIO: InMemoryFileIO()))
        } catch {
            throw MigrationError.store(error, step: destination.stepName, "creating the scratch store for awakeFromInsert")
        }
        let coordinator = Coordinator(store: store, name: "migration", modelClasses: classes)
        let link = ContextLink(parent: .coordinator(coordinator), name: "migration", executor: .privateQueue("strata.migration"))
        for (entity, ids) in destination.awaitingAwake.sorted(by: { $0.key < $1.key }) {
            let attributeCount = schema.entities[entity].attributes.count
            var start = 0
            while start < ids.count {
                let graph = ObjectGraph(link: link)
                for id in ids[start..<min(start + Self.batchSize, ids.count)] {
                    let awake = graph.insert(entity: entity).storage
                    var row = destination.generation.tables[entity][id.number]!.values
                    let explicit = destination.explicitKeys[id] ?? []
                    var changes: [PropertyChange] = []
                    for index in 0..<attributeCount where !explicit.contains(index) && row[index] != awake[index] {
                        row[index] = awake[index]
                        changes.append(PropertyChange(index: index, value: awake[index]))
                    }
                    if !changes.isEmpty { destination.generation.updateRow(id, entity: entity, changes: changes, version: 0) }
                }
                graph.tearDown()
                start += Self.batchSize
            }
        }
        destination.awaitingAwake = [:]
        destination.explicitKeys = [:]
    }
}
