/// Which model class makes the objects of each entity.
struct ModelRegistry: Sendable {
    private var classes: [String: ManagedObject.Type] = [:]

    init(_ types: [ManagedObject.Type], schema: Schema) {
        for type in types {
            let name = type.entityName
            guard schema.entity(named: name) != nil else {
                preconditionFailure("model class \(type) stands for entity \"\(name)\", which schema \"\(schema.name)\" lacks; its entities are \(schema.entities.map(\.name)) (override entityName to choose another)")
            }
            if let existing = classes[name], existing != type {
                preconditionFailure("entity \"\(name)\" is modelled by both \(existing) and \(type); give one class per entity")
            }
            classes[name] = type
        }
    }

    subscript(entity: String) -> ManagedObject.Type? { classes[entity] }
}
