import Foundation

/// A predicate on a model class built from its key paths, checked by the compiler:
///
/// ```swift
/// let long: TypedPredicate<Song> = \.milliseconds > 300_000 && !(\.title == "Intro")
/// let songs = try context.fetch(Song.self, where: long)
/// let byArtist: TypedPredicate<Song> = \.album?.artist?.name == "AC/DC"   // through to-one relationships
/// ```
///
/// Key paths name `@Managed` and `@ToOne` properties; the context turns them into key
/// names (by reading them on a probe object) when the predicate is used, giving the same
/// ``ObjectPredicate`` a format string would.
public struct TypedPredicate<Root: ManagedObject>: Sendable {
    let build: @Sendable (KeyNamer) -> ObjectPredicate

    init(_ build: @escaping @Sendable (KeyNamer) -> ObjectPredicate) { self.build = build }

    /// A comparison of a key path with a value: any operator, with string options.
    public static func compare<V: ValueConvertible & Sendable>(
        _ keyPath: any KeyPath<Root, V> & Sendable, _ op: Comparison.Operator, _ value: V, options: Comparison.Options = []
    ) -> TypedPredicate {
        TypedPredicate { namer in .comparison(Comparison(.key(namer.name(of: keyPath)), op, .value(value.value), options: options)) }
    }

    /// `key IN {values}`.
    public static func isIn<V: ValueConvertible & Sendable>(_ keyPath: any KeyPath<Root, V> & Sendable, _ values: [V]) -> TypedPredicate {
        TypedPredicate { namer in .comparison(Comparison(.key(namer.name(of: keyPath)), .in, .list(values.map(\.value)))) }
    }

    /// Both predicates.
    public static func && (lhs: TypedPredicate, rhs: TypedPredicate) -> TypedPredicate {
        TypedPredicate { namer in lhs.build(namer) && rhs.build(namer) }
    }

    /// Either predicate.
    public static func || (lhs: TypedPredicate, rhs: TypedPredicate) -> TypedPredicate {
        TypedPredicate { namer in lhs.build(namer) || rhs.build(namer) }
    }

    /// Not the predicate.
    public static prefix func ! (predicate: TypedPredicate) -> TypedPredicate {
        TypedPredicate { namer in !predicate.build(namer) }
    }
}

/// The key path's value equals `rhs` (`nil` matches a missing value or relationship).
public func == <Root: ManagedObject, V: ValueConvertible & Sendable>(lhs: any KeyPath<Root, V> & Sendable, rhs: V) -> TypedPredicate<Root> {
    .compare(lhs, .equal, rhs)
}

/// The key path's value differs from `rhs`.
public func != <Root: ManagedObject, V: ValueConvertible & Sendable>(lhs: any KeyPath<Root, V> & Sendable, rhs: V) -> TypedPredicate<Root> {
    .compare(lhs, .notEqual, rhs)
}

/// The key path's value is less than `rhs` (in the store's order: strings by their UTF-8
/// bytes, NaN ordered against nothing).
public func < <Root: ManagedObject, V: ValueConvertible & Sendable>(lhs: any KeyPath<Root, V> & Sendable, rhs: V) -> TypedPredicate<Root> {
    .compare(lhs, .lessThan, rhs)
}

/// The key path's value is at most `rhs`.
public func <= <Root: ManagedObject, V: ValueConvertible & Sendable>(lhs: any KeyPath<Root, V> & Sendable, rhs: V) -> TypedPredicate<Root> {
    .compare(lhs, .lessThanOrEqual, rhs)
}

/// The key path's value is greater than `rhs`.
public func > <Root: ManagedObject, V: ValueConvertible & Sendable>(lhs: any KeyPath<Root, V> & Sendable, rhs: V) -> TypedPredicate<Root> {
    .compare(lhs, .greaterThan, rhs)
}

/// The key path's value is at least `rhs`.
public func >= <Root: ManagedObject, V: ValueConvertible & Sendable>(lhs: any KeyPath<Root, V> & Sendable, rhs: V) -> TypedPredicate<Root> {
    .compare(lhs, .greaterThanOrEqual, rhs)
}

/// Turns key paths of model classes into key names, by reading them on probe objects that
/// record which stored properties are read.
final class KeyNamer: @unchecked Sendable {
    // @unchecked: a namer is made for one fetch and used only inside it, in the context's
    // isolation; it never crosses threads although the predicate closures are @Sendable.
    let graph: ObjectGraph

    init(graph: ObjectGraph) { self.graph = graph }

    /// The key name of a key path to a stored attribute, possibly through to-one
    /// relationships (`album.artist.name`). Traps for a key path that is not one: one that
    /// reads no stored property, reads several that do not form such a path, or computes
    /// something from what it reads (`title.uppercased()` would otherwise silently become
    /// `title`). Probes hold distinctive values in every attribute — several in turn, and nil
    /// for an optional, so that no common computation gives them all back — so a computed
    /// property of a built-in type gives a value other than the stored one; a computed
    /// property of a type of the application's own cannot be told from a stored one this way.
    func name<Root: ManagedObject, V: ValueConvertible>(of keyPath: KeyPath<Root, V>) -> String {
        guard let root = graph.probe(ofType: Root.self) as? Root else {
            preconditionFailure("\(keyPath): its root \(Root.self) does not model its entity in this context")
        }
        graph.recordedKeys = []
        let result = root[keyPath: keyPath]
        let keys = graph.recordedKeys ?? []
        graph.recordedKeys = nil
        guard !keys.isEmpty else {
            preconditionFailure("\(keyPath) reads no @Managed or @ToOne property; typed predicates take key paths of stored properties")
        }
        let name = keys.joined(separator: ".")
        // Every key but the last is a to-one relationship leading to the next entity; the
        // last is an attribute of the entity reached.
        let layout = graph.schema.layout
        var entity = root.entityIndex
        walk: for (position, key) in keys.enumerated() {
            guard let index = layout.entities[entity].propertyNames.firstIndex(of: key) else { break }
            switch layout.entities[entity].kinds[index] {
            case .toOne(let destination) where position < keys.count - 1:
                entity = destination
            case .attribute where position == keys.count - 1:
                if V.self is any ExactlyStored.Type {
                    checkReadsStoredValue(keyPath, root: root, first: result.value, entity: entity, attribute: index, name: name)
                }
                return name
            default:
                break walk
            }
        }
        preconditionFailure("\(keyPath) reads \(keys.map { "\"\($0)\"" }.joined(separator: ", ")), which is not a path of to-one relationships to an attribute; typed predicates take key paths of @Managed and @ToOne properties, not computed ones")
    }

    /// Traps unless the key path gives the attribute's stored value for every probe value
    /// (and for nil, where it gives an optional): one distinctive value is a fixed point of
    /// common computations — lower-casing, trimming, `min(x, 0)`, `b ?? false` — which then
    /// silently became predicates on the stored property.
    private func checkReadsStoredValue<Root: ManagedObject, V: ValueConvertible>(
        _ keyPath: KeyPath<Root, V>, root: Root, first: Value, entity: Int, attribute index: Int, name: String
    ) {
        let probe = graph.probe(entity: entity)
        let original = probe.storage[index]
        defer { probe.storage[index] = original }
        let attribute = graph.schema.entities[entity].attributes[index]
        var values = [original] + ObjectGraph.otherProbeValues(of: attribute.type, at: index)
        // Nil where both the attribute and the property declared for it can hold it (one
        // declared as a plain type gives its empty value for nil, and so does a computation
        // such as `year ?? 0`, which then gives something else than the property's nil).
        if attribute.isOptional, graph.lastReadHoldsNil { values.append(.null) }
        for (position, stored) in values.enumerated() {
            var given = first
            if position > 0 {
                probe.storage[index] = stored
                graph.recordedKeys = []
                given = root[keyPath: keyPath].value
                graph.recordedKeys = nil
            }
            if given != stored {
                preconditionFailure("\(keyPath) computes its value from \(name) (on a probe it gives \(given), where \(name) holds \(stored)); typed predicates take key paths of @Managed and @ToOne properties, not computed ones")
            }
        }
    }
}

