import Foundation
import Strata

/// `schema`: a model file's or a store's schema as text, Graphviz DOT or Mermaid.
enum SchemaCommand {
    static let command = StrataCommand.Command(
        name: "schema", usage: "strata schema MODEL.json|STORE [--format text|dot|mermaid]",
        summary: "print a schema as text, Graphviz DOT or a Mermaid diagram",
        help: """
            Prints the schema of a model file, or the schema a store was written with: every
            entity with its attributes (type and options) and relationships (destination,
            inverse, to-one or to-many, delete rule). --format dot prints a Graphviz graph
            (render with `dot -Tsvg`), mermaid an erDiagram for Markdown.

            example:
              strata schema songs.strata --format dot | dot -Tsvg > songs.svg
            """,
        options: ["format"]
    ) { arguments, output in
        let path = try arguments.positional(0, "MODEL.json or STORE")
        try arguments.expectPositionals(1)
        let format = try arguments.choice("format", of: ["text", "dot", "mermaid"], default: "text")
        var isDirectory: ObjCBool = false
        let schema: Schema
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            let store = try StrataCommand.openForReading(path, command: "schema", output)
            schema = store.schema
            await store.close()
        } else {
            schema = try Schema(contentsOfModelFile: path)
        }
        let out = BufferedLines(output)
        switch format {
        case "dot": dot(schema, out)
        case "mermaid": mermaid(schema, out)
        default: text(schema, out)
        }
        out.flush()
        return 0
    }

    static func options(_ attribute: Attribute) -> [String] {
        var options: [String] = []
        if attribute.isOptional { options.append("optional") }
        if attribute.isUnique { options.append("unique") }
        if attribute.isIndexed { options.append("indexed") }
        if let value = attribute.defaultValue { options.append("default \(value)") }
        if let value = attribute.minimum { options.append("min \(value)") }
        if let value = attribute.maximum { options.append("max \(value)") }
        if let value = attribute.minLength { options.append("minLength \(value)") }
        if let value = attribute.maxLength { options.append("maxLength \(value)") }
        return options
    }

    static func text(_ schema: Schema, _ out: BufferedLines) {
        out.line("schema \(schema.name) version \(schema.version) (fingerprint \(schema.fingerprint))")
        for entity in schema.entities {
            out.line("")
            out.line("entity \(entity.name)")
            var rows: [[String]] = entity.attributes.map { a in ["  " + a.name, a.type.rawValue, options(a).joined(separator: ", ")] }
            rows += entity.relationships.map { r in
                ["  " + r.name, (r.isToMany ? "to-many " : "to-one ") + r.destination,
                 (["inverse \(r.inverse)", "delete rule \(r.deleteRule.rawValue)"] + (r.isOptional ? [] : ["required"])).joined(separator: ", ")]
            }
            for line in columns(rows) { out.line(line.trimmingTrailingSpaces) }
            if !entity.defaultSort.isEmpty {
                out.line("  sorted by " + entity.defaultSort.map { "\($0.key) \($0.ascending ? "asc" : "desc")" }.joined(separator: ", "))
            }
        }
    }

    static func dot(_ schema: Schema, _ out: BufferedLines) {
        out.line("digraph \(quoted(schema.name)) {")
        out.line("  node [shape=record, fontname=\"Helvetica\"];")
        for entity in schema.entities {
            let fields = entity.attributes.map { a in "\(a.name): \(a.type.rawValue)\(a.isUnique ? " (unique)" : "")\(a.isOptional ? "?" : "")" }
            let label = "{" + ([entity.name] + fields).map(recordEscaped).joined(separator: "|") + "}"
            out.line("  \(quoted(entity.name)) [label=\(quoted(label))];")
        }
        // Each pair of inverse relationships once, as one edge with both names.
        for entity in schema.entities {
            for r in entity.relationships {
                guard let inverse = schema.entity(named: r.destination)?.relationships.first(where: { $0.name == r.inverse }) else { continue }
                let key = (entity.name, r.name), other = (r.destination, inverse.name)
                guard key <= other else { continue }
                let head = r.isToMany ? "crow" : "tee", tail = inverse.isToMany ? "crow" : "tee"
                out.line("  \(quoted(entity.name)) -> \(quoted(r.destination)) [dir=both, arrowhead=\(head), arrowtail=\(tail), "
                         + "headlabel=\(quoted(r.name + (r.deleteRule == .nullify ? "" : " (\(r.deleteRule.rawValue))"))), "
                         + "taillabel=\(quoted(inverse.name + (inverse.deleteRule == .nullify ? "" : " (\(inverse.deleteRule.rawValue))")))];")
            }
        }
        out.line("}")
    }

    static func mermaid(_ schema: Schema, _ out: BufferedLines) {
        out.line("erDiagram")
        for entity in schema.entities {
            out.line("    \(entity.name) {")
            for a in entity.attributes {
                let keys = a.isUnique ? " UK" : ""
                let comment = options(a).isEmpty ? "" : " \"" + options(a).joined(separator: ", ").replacingOccurrences(of: "\"", with: "'") + "\""
                out.line("        \(a.type.rawValue) \(a.name)\(keys)\(comment)")
            }
            out.line("    }")
        }
        for entity in schema.entities {
            for r in entity.relationships {
                guard let inverse = schema.entity(named: r.destination)?.relationships.first(where: { $0.name == r.inverse }) else { continue }
                guard (entity.name, r.name) <= (r.destination, inverse.name) else { continue }
                // Left: how many of this entity one destination has; right: how many destinations one of these has.
                let left = inverse.isToMany ? (inverse.isOptional ? "}o" : "}|") : (inverse.isOptional ? "|o" : "||")
                let right = r.isToMany ? (r.isOptional ? "o{" : "|{") : (r.isOptional ? "o|" : "||")
                out.line("    \(entity.name) \(left)--\(right) \(r.destination) : \"\(r.name) / \(inverse.name)\"")
            }
        }
    }

    static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    static func recordEscaped(_ text: String) -> String {
        var escaped = ""
        for c in text {
            if "{}|<> ".contains(c) && c != " " { escaped.append("\\") }
            escaped.append(c)
        }
        return escaped
    }
}

extension String {
    var trimmingTrailingSpaces: String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
