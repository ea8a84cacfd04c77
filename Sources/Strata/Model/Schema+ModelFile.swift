import Foundation

// MARK: - Reading and writing the model file (JSON)

extension Schema {
    /// Reads a schema from the model-file JSON form.
    ///
    /// ```swift
    /// let schema = try Schema(modelFile: Data(contentsOf: URL(filePath: "Songbook.json")))
    /// ```
    /// - Throws: ``SchemaError`` naming the entity and property (and the JSON key) at fault.
    public init(modelFile data: Data) throws(SchemaError) {
        let json: JSON
        do {
            // A UTF-8 byte-order mark, which some editors write, is skipped (as import files' is).
            let bom = data.starts(with: [0xEF, 0xBB, 0xBF])
            json = try JSON.parse(bom ? data.dropFirst(3) : data)
        } catch {
            throw SchemaError("the model file is not valid JSON: \(error)")
        }
        let root = ModelFileReader.Place(json: json, error: SchemaError(""))
        guard case .object = json else {
            throw SchemaError("the model file must be a JSON object with \"name\", \"version\" and \"entities\"")
        }
        let name = try root.string("name")
        let schemaPlace = ModelFileReader.Place(json: json, error: SchemaError(schema: name, ""))
        try schemaPlace.rejectUnknownKeys(["name", "version", "entities"])
        let version = try schemaPlace.optionalInt("version") ?? 1
        guard case .array(let items)? = json["entities"] else {
            throw SchemaError(schema: name, "\"entities\" must be an array of entity objects")
        }
        var entities: [Entity] = []
        for item in items { entities.append(try ModelFileReader.entity(item, schema: name)) }
        try self.init(name, version: version, entities: entities)
    }

    /// Reads a schema from a model file on disk.
    /// - Throws: ``SchemaError`` naming the file when it cannot be read, or the entity and
    ///   property at fault.
    public init(contentsOfModelFile path: String) throws(SchemaError) {
        let data: Data
        do throws(JSONLinesReader.ReadError) {
            // Read to its end, not by its size: a pipe (`--model <(…)`) reads too.
            data = Data(try JSONLinesReader(path: path == "-" ? "./-" : path).readToEnd())
        } catch {
            var failure = SchemaError("cannot read the model file: \(error.reason)")
            failure.file = path
            throw failure
        }
        do {
            try self.init(modelFile: data)
        } catch {
            var located = error
            located.file = path
            throw located
        }
    }

    /// The schema in model-file JSON form, with options at their defaults left out.
    public var modelFileJSON: JSON {
        let entitiesJSON: [JSON] = entities.map { entity in
            var e: [(key: String, value: JSON)] = [("name", .string(entity.name))]
            if let r = entity.renamedFrom { e.append(("renamedFrom", .string(r))) }
            e.append(("attributes", .array(entity.attributes.map { a in
                var json: [(key: String, value: JSON)] = [("name", .string(a.name)), ("type", .string(a.type.rawValue))]
                if a.isOptional { json.append(("optional", .bool(true))) }
                if let v = a.defaultValue { json.append(("default", v.json)) }
                if a.isUnique { json.append(("unique", .bool(true))) }
                if a.isIndexed { json.append(("indexed", .bool(true))) }
                if let r = a.renamedFrom { json.append(("renamedFrom", .string(r))) }
                if let v = a.minimum { json.append(("min", v.json)) }
                if let v = a.maximum { json.append(("max", v.json)) }
                if let n = a.minLength { json.append(("minLength", .int(Int64(n)))) }
                if let n = a.maxLength { json.append(("maxLength", .int(Int64(n)))) }
                return .object(json)
            })))
            e.append(("relationships", .array(entity.relationships.map { r in
                var json: [(key: String, value: JSON)] = [
                    ("name", .string(r.name)), ("destination", .string(r.destination)), ("inverse", .string(r.inverse)),
                ]
                if r.isToMany { json.append(("toMany", .bool(true))) }
                if !r.isOptional { json.append(("optional", .bool(false))) }
                if r.deleteRule != .nullify { json.append(("deleteRule", .string(r.deleteRule.rawValue))) }
                if let n = r.renamedFrom { json.append(("renamedFrom", .string(n))) }
                return .object(json)
            })))
            if !entity.defaultSort.isEmpty {
                e.append(("defaultSort", .array(entity.defaultSort.map {
                    .object([("key", .string($0.key)), ("ascending", .bool($0.ascending))])
                })))
            }
            return .object(e)
        }
        return .object([("name", .string(name)), ("version", .int(Int64(version))), ("entities", .array(entitiesJSON))])
    }
}

/// Walks the parsed JSON of a model file, producing errors that name where it is.
private enum ModelFileReader {
    /// A JSON object and the error context (schema, entity, property) it stands for.
    struct Place {
        var json: JSON
        var error: SchemaError

        func fail(_ message: String) -> SchemaError {
            var e = error
            e.message = message
            return e
        }

        func rejectUnknownKeys(_ allowed: Set<String>) throws(SchemaError) {
            guard case .object(let pairs) = json else { return }
            if let unknown = pairs.first(where: { !allowed.contains($0.key) }) {
                throw fail("unknown key \"\(unknown.key)\"; the keys allowed here are \(allowed.sorted())")
            }
        }

        func string(_ key: String) throws(SchemaError) -> String {
            guard case .string(let s)? = json[key] else { throw fail("\"\(key)\" must be a string") }
            return s
        }

        func optionalString(_ key: String) throws(SchemaError) -> String? {
            guard let value = json[key] else { return nil }
            guard case .string(let s) = value else { throw fail("\"\(key)\" must be a string") }
            return s
        }

        func optionalBool(_ key: String) throws(SchemaError) -> Bool? {
            guard let value = json[key] else { return nil }
            guard case .bool(let b) = value else { throw fail("\"\(key)\" must be true or false") }
            return b
        }

        func optionalInt(_ key: String) throws(SchemaError) -> Int? {
            guard let value = json[key] else { return nil }
            // Read as an import reads an int (`1.0` is one; a fraction or a number beyond 2^53
            // written with one is refused, saying so).
            switch Value.fromJSON(value, as: .int) {
            case .success(.int(let i)): return Int(i)
            case .failure(let e): throw fail("\"\(key)\" must be a whole number: \(e.reason)")
            default: throw fail("\"\(key)\" must be a whole number")
            }
        }

        func array(_ key: String) throws(SchemaError) -> [JSON] {
            guard let value = json[key] else { return [] }
            guard case .array(let items) = value else { throw fail("\"\(key)\" must be an array") }
            return items
        }
    }

    static func entity(_ item: JSON, schema: String) throws(SchemaError) -> Entity {
        guard case .object = item else { throw SchemaError(schema: schema, "every item of \"entities\" must be a JSON object") }
        let name = try Place(json: item, error: SchemaError(schema: schema, "")).string("name")
        let place = Place(json: item, error: SchemaError(schema: schema, entity: name, ""))
        try place.rejectUnknownKeys(["name", "attributes", "relationships", "defaultSort", "renamedFrom"])
        var attributes: [Attribute] = []
        for a in try place.array("attributes") { attributes.append(try attribute(a, in: place)) }
        var relationships: [Relationship] = []
        for r in try place.array("relationships") { relationships.append(try relationship(r, in: place)) }
        var sort: [SortKey] = []
        for key in try place.array("defaultSort") {
            guard case .object = key else { throw place.fail("\"defaultSort\" items must be {\"key\": ..., \"ascending\": ...}") }
            let keyPlace = Place(json: key, error: place.error)
            try keyPlace.rejectUnknownKeys(["key", "ascending"])
            sort.append(SortKey(try keyPlace.string("key"), ascending: try keyPlace.optionalBool("ascending") ?? true))
        }
        return Entity(name, attributes: attributes, relationships: relationships, defaultSort: sort,
                      renamedFrom: try place.optionalString("renamedFrom"))
    }

    private static func property(_ item: JSON, in entity: Place, kind: String) throws(SchemaError) -> Place {
        guard case .object = item else { throw entity.fail("every item of \"\(kind)\" must be a JSON object") }
        let name = try Place(json: item, error: entity.error).string("name")
        var error = entity.error
        error.property = name
        return Place(json: item, error: error)
    }

    static func attribute(_ item: JSON, in entity: Place) throws(SchemaError) -> Attribute {
        let place = try property(item, in: entity, kind: "attributes")
        try place.rejectUnknownKeys([
            "name", "type", "optional", "default", "unique", "indexed", "renamedFrom", "min", "max", "minLength", "maxLength",
        ])
        let typeName = try place.string("type")
        guard let type = AttributeType(rawValue: typeName) else {
            throw place.fail("unknown type \"\(typeName)\"; the types are \(AttributeType.allCases.map(\.rawValue))")
        }
        func value(_ key: String) throws(SchemaError) -> Value? {
            guard let json = item[key] else { return nil }
            switch Value.fromJSON(json, as: type) {
            case .success(let v): return v
            case .failure(let e): throw place.fail("\"\(key)\": \(e.reason)")
            }
        }
        return Attribute(
            try place.string("name"), type,
            optional: try place.optionalBool("optional") ?? false,
            default: try value("default"),
            unique: try place.optionalBool("unique") ?? false,
            indexed: try place.optionalBool("indexed") ?? false,
            renamedFrom: try place.optionalString("renamedFrom"),
            min: try value("min"), max: try value("max"),
            minLength: try place.optionalInt("minLength"),
            maxLength: try place.optionalInt("maxLength"))
    }

    static func relationship(_ item: JSON, in entity: Place) throws(SchemaError) -> Relationship {
        let place = try property(item, in: entity, kind: "relationships")
        try place.rejectUnknownKeys(["name", "destination", "inverse", "toMany", "optional", "deleteRule", "renamedFrom"])
        var rule = Relationship.DeleteRule.nullify
        if let ruleName = try place.optionalString("deleteRule") {
            guard let parsed = Relationship.DeleteRule(rawValue: ruleName) else {
                throw place.fail("unknown deleteRule \"\(ruleName)\"; the rules are \(Relationship.DeleteRule.allCases.map(\.rawValue))")
            }
            rule = parsed
        }
        guard item["inverse"] != nil else {
            throw place.fail("\"inverse\" is required: every relationship names its inverse on the destination")
        }
        return Relationship(
            try place.string("name"), to: try place.string("destination"),
            inverse: try place.string("inverse"),
            toMany: try place.optionalBool("toMany") ?? false,
            optional: try place.optionalBool("optional") ?? true,
            deleteRule: rule,
            renamedFrom: try place.optionalString("renamedFrom"))
    }
}
