/// A schema that cannot be used, naming the entity and property at fault.
///
/// ```
/// schema "Songbook", entity "Album", property "artist": the inverse "Artist.albums" points back to "Song.artist", not "Album.artist"
/// ```
public struct SchemaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The model file, when the schema was read from one.
    public var file: String?
    /// The schema's name, when known.
    public var schema: String?
    /// The entity at fault, if the problem is inside one.
    public var entity: String?
    /// The attribute or relationship at fault, if the problem is inside one.
    public var property: String?
    /// What is wrong and, where it helps, what to do.
    public var message: String

    /// Creates a schema error.
    public init(schema: String? = nil, entity: String? = nil, property: String? = nil, _ message: String) {
        self.schema = schema
        self.entity = entity
        self.property = property
        self.message = message
    }

    public var description: String {
        var parts: [String] = []
        if let file { parts.append(file) }
        if let schema { parts.append("schema \"\(schema)\"") }
        if let entity { parts.append("entity \"\(entity)\"") }
        if let property { parts.append("property \"\(property)\"") }
        return parts.isEmpty ? message : parts.joined(separator: ", ") + ": " + message
    }
}
