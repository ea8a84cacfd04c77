import Foundation
@testable import Strata

/// What a context or a generation holds, object by object and key by key (to-many lists
/// sorted: their order is not compared), for comparing the two.
enum WorkloadSnapshot {
    typealias Snap = [ObjectID: [String: Value]]

    static func norm(_ v: Value, toMany: Bool) -> Value {
        toMany ? .objects(v.referencedObjects.sorted()) : v
    }

    static func of(_ c: isolated ObjectContext) throws -> Snap {
        var out: Snap = [:]
        for e in c.schema.entities {
            for o in try c.fetch(FetchRequest(entity: e.name)) {
                var d: [String: Value] = [:]
                for a in e.attributes { d[a.name] = o[a.name] }
                for r in e.relationships { d[r.name] = norm(o[r.name], toMany: r.isToMany) }
                out[o.objectID] = d
            }
        }
        return out
    }

    static func of(_ g: Generation) -> Snap {
        var out: Snap = [:]
        for e in g.schema.entities {
            for o in g.objects(of: e.name) {
                var d: [String: Value] = [:]
                for (i, a) in e.attributes.enumerated() { d[a.name] = o.values[i] }
                for (j, r) in e.relationships.enumerated() { d[r.name] = norm(o.values[e.attributes.count + j], toMany: r.isToMany) }
                out[o.id] = d
            }
        }
        return out
    }

    static func diff(_ a: Snap, _ b: Snap, _ label: String) -> [String] {
        var p: [String] = []
        for id in Set(a.keys).union(b.keys).sorted() {
            let x = a[id], y = b[id]
            if x == y { continue }
            guard let x, let y else { p.append("\(label): \(id) \(x == nil ? "missing in context" : "missing in store") (ctx \(String(describing: x)), store \(String(describing: y)))"); continue }
            for k in Set(x.keys).union(y.keys).sorted() where x[k] != y[k] {
                p.append("\(label): \(id).\(k) context \(String(describing: x[k])) store \(String(describing: y[k]))")
            }
        }
        return p
    }
}
