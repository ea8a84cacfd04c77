/// One step of a migration plan: how objects of one schema version become objects of the
/// next.
///
/// A step is *inferred* from its two schemas (see ``SchemaChange``) unless it has custom
/// parts:
///
/// - a **transform** per source entity sees every source object (``MigrationSourceObject``,
///   with dynamic access to every old key) and creates the destination objects it becomes —
///   none, one, or several;
/// - then a **link** per destination entity visits every destination object of the entity,
///   once all objects exist, to establish relationships (inverses are kept in step);
/// - then the result is **validated** against the new schema.
///
/// Entities without a transform are carried over as an inferred step would. Relationships
/// of transformed objects that the transform leaves empty are carried over from their source
/// object, following the objects the related objects became.
///
/// The `Song` → `Song` + `SongData` split, linked by the shared `songID`:
///
/// ```swift
/// var step = MigrationStep(from: v2, to: v3)
/// step.transform("Song") { song, destination in
///     try destination.insert("Song", values: ["songID": song["songID"], "title": song["title"]])
///     try destination.insert("SongData", values: ["songID": song["songID"], "lyrics": song["lyrics"]])
/// }
/// step.link("Song") { song, destination in
///     let key = try destination.value(forKey: "songID", of: song)
///     if let data = destination.object("SongData", uniqueValue: key) {
///         try destination.setValue(.object(data), forKey: "data", of: song)   // SongData.song follows
///     }
/// }
/// ```
public struct MigrationStep: Sendable {
    /// Creates the destination objects for one source object.
    public typealias Transform = @Sendable (MigrationSourceObject, MigrationDestination) throws -> Void
    /// Establishes relationships of one destination object, once every object exists.
    public typealias Link = @Sendable (ObjectID, MigrationDestination) throws -> Void

    /// The older schema.
    public let source: Schema
    /// The newer schema.
    public let destination: Schema
    /// Transforms by source entity name.
    private(set) var transforms: [String: Transform] = [:]
    /// Links by destination entity name, in the order they were added.
    private(set) var links: [(entity: String, body: Link)] = []
    /// What the two schemas say, entity by entity and key by key.
    let mapping: InferredMapping

    /// Creates a step between two schemas; without transforms or links it is inferred.
    public init(from source: Schema, to destination: Schema) {
        self.source = source
        self.destination = destination
        self.mapping = InferredMapping(from: source, to: destination)
    }

    /// Whether the step has transforms or links.
    public var isCustom: Bool { !transforms.isEmpty || !links.isEmpty }

    /// The source entities that have a transform, in schema order.
    public var transformedEntities: [String] { source.entities.map(\.name).filter { transforms[$0] != nil } }

    /// The destination entities that have a link, in the order added.
    public var linkedEntities: [String] { links.map(\.entity) }

    /// `Name n → m (inferred|custom)`, as errors and progress name the step.
    public var name: String {
        "\(destination.name) \(source.version) → \(destination.version) (\(isCustom ? "custom" : "inferred"))"
    }

    /// Every difference between the two schemas.
    public var changes: [SchemaChange] { mapping.changes }

    /// The differences this step cannot carry out: the non-inferable changes of entities that
    /// no transform creates and no link completes — and, for an entity with a link but no
    /// transform, the attributes whose values would be dropped without a word (a new type,
    /// an attribute that was a relationship, two attributes renamed from one): only a
    /// transform carries those.
    public var unhandledChanges: [SchemaChange] {
        mapping.problems.filter { change in
            guard let entity = destination.entityIndex(named: change.entity) else { return true }
            if let source = mapping.entities[entity].source, transforms[self.source.entities[source].name] != nil { return false }
            // A link completes what validation checks: relationships, and attributes that must
            // have a value. An attribute whose old values would otherwise be dropped quietly —
            // a new type, an attribute that was a relationship, a second attribute renamed from
            // the same one — needs a transform: a link that does not set it (one written for
            // another key) left it nil, and the step passed.
            if links.contains(where: { $0.entity == change.entity }) { return losesValuesQuietly(change) }
            return true
        }
    }

    /// Whether a change that cannot be inferred leaves an attribute of the newer schema with
    /// its default (or nil) where the objects had values, with nothing for validation to
    /// find.
    private func losesValuesQuietly(_ change: SchemaChange) -> Bool {
        guard let key = change.key, let entity = destination.entity(named: change.entity),
              entity.attributes.contains(where: { $0.name == key }) else { return false }
        switch change.kind {
        case .typeChanged, .shapeChanged, .renamedAttribute: return true
        default: return false
        }
    }

    /// Sets the transform for every object of a source entity.
    ///
    /// The transform calls ``MigrationDestination/insert(_:values:)`` for each object the
    /// source object becomes; a source object for which it inserts nothing is dropped (its
    /// delete rules are checked). Objects of other entities may not exist yet while
    /// transforms run (entities are transformed in schema order), and carried-over
    /// relationships are filled afterwards: set relationships in a ``link(_:_:)``.
    public mutating func transform(_ sourceEntity: String, _ body: @escaping Transform) {
        guard source.entity(named: sourceEntity) != nil else {
            preconditionFailure("MigrationStep.transform: schema \"\(source.name)\" version \(source.version) has no entity \"\(sourceEntity)\"; its entities are \(source.entities.map(\.name))")
        }
        transforms[sourceEntity] = body
    }

    /// Adds a link run for every destination object of an entity once every object exists.
    public mutating func link(_ destinationEntity: String, _ body: @escaping Link) {
        guard destination.entity(named: destinationEntity) != nil else {
            preconditionFailure("MigrationStep.link: schema \"\(destination.name)\" version \(destination.version) has no entity \"\(destinationEntity)\"; its entities are \(destination.entities.map(\.name))")
        }
        links.append((destinationEntity, body))
    }
}

extension MigrationStep {
    /// The highest object number destination entity `d` must start above: its source
    /// entity's, and that of a source entity of its name that it does not come from (a new
    /// entity taking a renamed one's old name) — so that no number an object of that name
    /// ever had is given again: an ID kept outside the store (`Track/1`) never comes to name
    /// another object.
    func highestNumberCarried(into d: Int, from source: Generation) -> UInt64 {
        var highest: UInt64 = 0
        if let s = mapping.entities[d].source { highest = source.highestNumbers[s] }
        if let same = self.source.entityIndex(named: destination.entities[d].name) {
            highest = max(highest, source.highestNumbers[same])
        }
        return highest
    }
}
