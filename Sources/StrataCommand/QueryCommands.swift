import Foundation
import Strata

/// `query`, `aggregate`, `update` and `delete`: the commands that select objects with a
/// predicate format string.
enum QueryCommands {
    static let query = StrataCommand.Command(
        name: "query",
        usage: #"strata query STORE --entity E [--where PREDICATE] [--sort "key [asc|desc], ..."] [--limit N] [--offset N] [--count] [--format jsonl|table]"#,
        summary: "print the objects of an entity that match a predicate",
        help: """
            Selects the objects of entity E that match PREDICATE (the predicate format
            language: comparisons, BEGINSWITH/CONTAINS/LIKE/MATCHES with [c] and [d],
            AND/OR/NOT, key paths through to-one relationships, @count, ANY/ALL/NONE), in the
            --sort order (default: the entity's default sort, then object ID), after --offset,
            at most --limit. --count prints how many match. --format jsonl (the default)
            prints one object per line, relationships by the destination's unique key; table
            is for people.

            example:
              strata query songs.strata --entity Album --where 'artist.name == "AC/DC" AND year >= 1980' --sort "year desc" --format table
            """,
        options: ["entity", "where", "sort", "limit", "offset", "format"], flags: ["count"]
    ) { arguments, output in
        let path = try arguments.positional(0, "STORE")
        try arguments.expectPositionals(1)
        var request = FetchRequest(entity: try arguments.requireOption("entity"), predicate: try predicate(arguments))
        request.sortBy = try sortKeys(arguments.option("sort"))
        request.limit = try count(arguments, "limit")
        request.offset = try count(arguments, "offset") ?? 0
        let format = try arguments.choice("format", of: ["jsonl", "table"], default: "jsonl")
        let store = try StrataCommand.openForReading(path, command: "query", output)
        let generation = store.currentGeneration
        await store.close()
        if arguments.flags.contains("count") {
            output.line(String(try generation.count(for: request)))
            return 0
        }
        let objects = try generation.fetch(request)
        let lines = ObjectLines(generation)
        if format == "jsonl" {
            let out = BufferedLines(output)
            for object in objects { out.line(lines.line(object)) }
            out.flush()
        } else {
            let entity = generation.schema.entity(named: request.entity)!
            var rows = [["id"] + entity.propertyNames]
            for object in objects { rows.append([object.id.description] + object.values.map(lines.cell)) }
            let out = BufferedLines(output)
            let table = columns(rows)
            out.line(table[0])
            out.line(String(repeating: "-", count: table[0].count))
            for line in table.dropFirst() { out.line(line) }
            out.line("(\(objects.count) \(objects.count == 1 ? "object" : "objects"))")
            out.flush()
        }
        return 0
    }

    static let aggregate = StrataCommand.Command(
        name: "aggregate",
        usage: "strata aggregate STORE --entity E --function count|sum|min|max|avg [--key K] [--where PREDICATE] [--group-by K]",
        summary: "count, sum, min, max or average a key over matching objects",
        help: """
            Computes FUNCTION over the objects of E that match PREDICATE: count (of objects,
            or with --key of non-nil values), sum, min, max or avg of key K (a key path
            through to-one relationships). Prints the value as JSON (a number, a string or
            null). With --group-by G prints one line per group, in ascending order of G:
            the group's value (an object by its unique key, as query prints it), a tab,
            the aggregate.

            example:
              strata aggregate songs.strata --entity Track --function avg --key milliseconds --group-by album.title
            """,
        options: ["entity", "function", "key", "where", "group-by"]
    ) { arguments, output in
        let path = try arguments.positional(0, "STORE")
        try arguments.expectPositionals(1)
        let entity = try arguments.requireOption("entity")
        let name = try arguments.requireOption("function")
        guard let function = AggregateFunction(rawValue: name) else {
            throw Arguments.UsageError(message: "--function must be one of count, sum, min, max, avg, not '\(name)'")
        }
        if function != .count && arguments.option("key") == nil {
            throw Arguments.UsageError(message: "--function \(name) needs --key K: the key whose values it aggregates")
        }
        let predicate = try predicate(arguments)
        let store = try StrataCommand.openForReading(path, command: "aggregate", output)
        let generation = store.currentGeneration
        await store.close()
        let groupBy = arguments.option("group-by")
        var rows = try generation.aggregate(function, of: arguments.option("key"), entity: entity, where: predicate, groupBy: groupBy)
        // A group that is an object is named as `query` names it, by its unique key, and the
        // groups are in the order of those keys.
        let lines = ObjectLines(generation)
        func key(_ group: Value?) -> Value? {
            guard case .object(let id)? = group, let target = generation.object(id),
                let unique = generation.schema.entity(named: id.entity)?.attributes.firstIndex(where: \.isUnique)
            else { return group }
            return target.values[unique]
        }
        if rows.contains(where: { if case .object? = $0.group { true } else { false } }) {
            rows = rows.enumerated().sorted { a, b in
                let (x, y) = (key(a.element.group) ?? .null, key(b.element.group) ?? .null)
                if x.isNull != y.isNull { return x.isNull }  // nil first
                let order = Value.compare(x, y) ?? .orderedSame
                return order == .orderedSame ? a.offset < b.offset : order == .orderedAscending
            }.map(\.element)
        }
        let out = BufferedLines(output)
        for row in rows {
            if let group = row.group {
                let name: JSON = if case .object(let id) = group { lines.reference(id) } else { group.json }
                out.line(name.text + "\t" + row.value.json.text)
            } else {
                out.line(row.value.json.text)
            }
        }
        out.flush()
        return 0
    }

    static let update = StrataCommand.Command(
        name: "update", usage: "strata update STORE --entity E --where PREDICATE --set key=value [--set ...]",
        summary: "set attributes of the objects that match a predicate",
        help: """
            Sets attribute values of every object of E that matches PREDICATE, in one
            transaction. A value is read as JSON when it can be (42, 2.5, true, null,
            "quoted text"), otherwise as plain text; null and nil (as in predicates) remove
            a value ("null" in quotes is the text); dates are ISO-8601, data base64, UUIDs
            canonical. Limits and unique keys are checked: if any object breaks one, nothing
            changes. Relationships are changed with import, which keeps inverses in step.

            example:
              strata update songs.strata --entity Album --where 'title BEGINSWITH[c] "let there"' --set year=1977
            """,
        options: ["entity", "where", "set"], repeatable: ["set"]
    ) { arguments, output in
        let path = try arguments.positional(0, "STORE")
        try arguments.expectPositionals(1)
        let entityName = try arguments.requireOption("entity")
        _ = try arguments.requireOption("where")
        let assignments = arguments.options["set"] ?? []
        guard !assignments.isEmpty else { throw Arguments.UsageError(message: "--set is required") }
        let predicate = try predicate(arguments)
        let store = try StrataCommand.openForWriting(path, command: "update", output)
        do {
            let generation = store.currentGeneration
            guard let entity = store.schema.entity(named: entityName) else {
                throw StoreError(.invalidQuery, "schema \"\(store.schema.name)\" has no entity \"\(entityName)\"; its entities are \(store.schema.entities.map(\.name))")
            }
            var changes: [PropertyChange] = []
            for assignment in assignments {
                guard let equals = assignment.firstIndex(of: "=") else {
                    throw Arguments.UsageError(message: "--set takes key=value, not '\(assignment)'")
                }
                let key = String(assignment[..<equals]), text = String(assignment[assignment.index(after: equals)...])
                guard let index = entity.propertyIndex(named: key) else {
                    throw StoreError(.invalidQuery, "\(entity.name) has no key \"\(key)\"; its keys are \(entity.propertyNames.joined(separator: ", "))", key: key)
                }
                guard index < entity.attributes.count else {
                    throw StoreError(.invalidQuery, "\(entity.name).\(key) is a relationship; update sets attributes (import a line naming the object to change relationships)", key: key)
                }
                changes.removeAll { $0.index == index }
                changes.append(PropertyChange(index: index, value: try value(text, for: entity.attributes[index], of: entity)))
            }
            changes.sort { $0.index < $1.index }
            let objects = try generation.fetch(FetchRequest(entity: entity.name, predicate: predicate, sortBy: []))
            var changeSet = ChangeSet(author: "strata update")
            for object in objects {
                let changed = changes.filter { object.values[$0.index] != $0.value }
                if changed.isEmpty { continue }
                changeSet.updated.append(ObjectUpdate(id: object.id, baseVersion: object.version, baseValues: object.values, changes: changed))
            }
            let result = try await store.commit(changeSet)
            await store.close()
            output.line("updated \(changeSet.updated.count) of \(objects.count) matching \(entity.name) objects"
                        + (changeSet.isEmpty ? "; nothing changed" : " (transaction \(result.transaction))"))
            return 0
        } catch {
            await store.close()
            throw error
        }
    }

    static let delete = StrataCommand.Command(
        name: "delete", usage: "strata delete STORE --entity E --where PREDICATE",
        summary: "delete the objects that match a predicate, applying delete rules",
        help: """
            Deletes every object of E that matches PREDICATE, in one transaction, applying
            each relationship's delete rule: nullify removes the deleted objects from the
            related objects' inverse, cascade deletes the related objects too (and applies
            their rules), deny refuses the whole delete while the relationship refers to an
            object that is not deleted with it — then exit 1 names the rule, the object and
            the objects in the way, and nothing changes.

            example:
              strata delete songs.strata --entity Artist --where 'name == "Nobody"'
            """,
        options: ["entity", "where"]
    ) { arguments, output in
        let path = try arguments.positional(0, "STORE")
        try arguments.expectPositionals(1)
        let entity = try arguments.requireOption("entity")
        _ = try arguments.requireOption("where")
        let predicate = try predicate(arguments)
        let store = try StrataCommand.openForWriting(path, command: "delete", output)
        do {
            let generation = store.currentGeneration
            let matched = try generation.fetch(FetchRequest(entity: entity, predicate: predicate, sortBy: []))
            let plan = try DeletePlan(deleting: matched.map(\.id), in: generation)
            let result = try await store.commit(plan.changes)
            await store.close()
            output.line("deleted \(plan.deleted.count) objects (\(matched.count) matching, \(plan.deleted.count - matched.count) by cascade), "
                        + "\(plan.changes.updated.count) related objects updated"
                        + (plan.changes.isEmpty ? "" : " (transaction \(result.transaction))"))
            return 0
        } catch {
            await store.close()
            throw error
        }
    }

    // MARK: - Arguments

    static func predicate(_ arguments: Arguments) throws -> ObjectPredicate? {
        guard let format = arguments.option("where") else { return nil }
        return try ObjectPredicate(format: format)
    }

    static func count(_ arguments: Arguments, _ name: String) throws(Arguments.UsageError) -> Int? {
        guard let text = arguments.option(name) else { return nil }
        guard let n = Int(text), n >= 0 else { throw Arguments.UsageError(message: "--\(name) must be a non-negative integer, not '\(text)'") }
        return n
    }

    /// `"key [asc|desc], ..."` as sort keys.
    static func sortKeys(_ text: String?) throws(Arguments.UsageError) -> [SortKey]? {
        guard let text else { return nil }
        var keys: [SortKey] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let words = part.split(separator: " ")
            if words.isEmpty && text.contains(where: { $0 != "," && $0 != " " }) {
                throw Arguments.UsageError(message: "--sort: a key is missing between commas in '\(text)'")
            }
            guard let key = words.first, words.count <= 2 else {
                throw Arguments.UsageError(message: "--sort takes \"key [asc|desc], ...\", not '\(text)'")
            }
            var ascending = true
            if words.count == 2 {
                switch words[1].lowercased() {
                case "asc", "ascending": ascending = true
                case "desc", "descending": ascending = false
                default: throw Arguments.UsageError(message: "--sort: '\(words[1])' after '\(key)' must be asc or desc")
                }
            }
            keys.append(SortKey(String(key), ascending: ascending))
        }
        guard !keys.isEmpty else { throw Arguments.UsageError(message: "--sort needs at least one key") }
        return keys
    }

    /// An `--set` value for an attribute: JSON when it parses, else plain text; `nil`, as
    /// predicates write it, is null too.
    static func value(_ text: String, for attribute: Attribute, of entity: Entity) throws(StoreError) -> Value {
        let json: JSON
        if text == "null" || text == "nil" {
            json = .null
        } else if attribute.type == .string && !text.hasPrefix("\"") {
            json = .string(text)
        } else if let parsed = try? JSON.parse(text), case .string = parsed {
            json = parsed
        } else if attribute.type == .date || attribute.type == .data || attribute.type == .uuid {
            json = .string(text)
        } else {
            json = (try? JSON.parse(text)) ?? .string(text)
        }
        let value: Value
        switch Value.fromJSON(json, as: attribute.type) {
        case .success(let v): value = v
        case .failure(let error): throw StoreError(.invalidValue, "--set \(attribute.name)=\(text): \(error.reason)", key: attribute.name)
        }
        if let problem = attribute.problem(with: value) {
            throw StoreError(value.isNull ? .missingValue : .invalidValue, "\(entity.name).\(attribute.name): \(problem)", key: attribute.name)
        }
        return value
    }
}
