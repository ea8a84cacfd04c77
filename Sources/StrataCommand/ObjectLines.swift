import Strata

/// Objects in the `query --format jsonl` and `dump` form:
/// `{"entity":"Artist","id":"Artist/1","values":{"artistID":1,"name":"AC/DC","albums":[1,4]}}`,
/// every property in storage order, relationships by the destination's unique key (or by
/// `Entity/N` where the destination has none) — the form `import` reads back. An object
/// whose optional key is null is named by its ID: `"Entity/N"`, or `{"id": "Entity/N"}`
/// where the key is a string or data (a string, or data's base64, could read `"Entity/N"`).
struct ObjectLines {
    let generation: Generation
    private let schema: Schema

    init(_ generation: Generation) {
        self.generation = generation
        schema = generation.schema
    }

    /// The JSON line of one object.
    func line(_ object: StoredObject) -> String {
        json(object).text
    }

    func json(_ object: StoredObject) -> JSON {
        let entity = schema.entity(named: object.id.entity)!
        var values: [(key: String, value: JSON)] = []
        values.reserveCapacity(entity.propertyCount)
        for (i, attribute) in entity.attributes.enumerated() {
            values.append((attribute.name, object.values[i].json))
        }
        for (offset, relationship) in entity.relationships.enumerated() {
            let value = object.values[entity.attributes.count + offset]
            let json: JSON
            switch value {
            case .object(let id): json = reference(id)
            case .objects(let ids): json = .array(ids.map(reference))
            default: json = relationship.isToMany ? .array([]) : .null
            }
            values.append((relationship.name, json))
        }
        return .object([("entity", .string(object.id.entity)), ("id", .string(object.id.description)), ("values", .object(values))])
    }

    /// How a relationship names an object: its unique value, or its ID (in a form no key
    /// reads the same: `{"id": "Entity/N"}` where the key is a string or data).
    func reference(_ id: ObjectID) -> JSON {
        if let entity = schema.entity(named: id.entity), let unique = entity.attributes.firstIndex(where: \.isUnique) {
            if let target = generation.object(id), !target.values[unique].isNull {
                return target.values[unique].json
            }
            if entity.attributes[unique].type == .string || entity.attributes[unique].type == .data {
                return .object([("id", .string(id.description))])
            }
        }
        return .string(id.description)
    }

    /// A value as a table cell: text as it is, references by key (or plain ID), nothing for nil.
    func cell(_ value: Value) -> String {
        switch value {
        case .null: ""
        case .string(let s): Self.tableText(s)
        case .object(let id): plain(reference(id))
        case .objects(let ids): "[" + ids.map { plain(reference($0)) }.joined(separator: ", ") + "]"
        default: plain(value.json)
        }
    }

    /// A string as a table cell: one line whatever it holds (control characters written as
    /// JSON writes them, ``JSON/controlEscape(_:)``, and DEL as `\u007f`, which JSON leaves
    /// as it is but a terminal does not show), and `""` when empty, so that it is told apart
    /// from a nil (an empty cell).
    static func tableText(_ text: String) -> String {
        if text.isEmpty { return "\"\"" }
        func escape(_ scalar: Unicode.Scalar) -> String? { scalar.value == 0x7F ? "\\u007f" : JSON.controlEscape(scalar) }
        guard text.unicodeScalars.contains(where: { escape($0) != nil }) else { return text }
        var escaped = ""
        for scalar in text.unicodeScalars {
            if let escape = escape(scalar) { escaped += escape } else { escaped.unicodeScalars.append(scalar) }
        }
        return escaped
    }

    private func plain(_ json: JSON) -> String {
        switch json {
        case .string(let s): s
        case .object(let pairs) where pairs.count == 1 && pairs[0].key == "id": plain(pairs[0].value)
        default: json.text
        }
    }
}
