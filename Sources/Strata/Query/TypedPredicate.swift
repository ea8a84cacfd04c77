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

    public static func && (lhs: TypedPredicate, rhs: TypedPredicate) -> TypedPredicate {
        TypedPredicate { namer in lhs.build(namer) && rhs.build(namer) }
    }

    public static func || (lhs: TypedPredicate, rhs: TypedPredicate) -> TypedPredicate {
        TypedPredicate { namer in lhs.build(namer) || rhs.build(namer) }
    }

    public static prefix func ! (predicate: TypedPredicate) -> TypedPredicate {
        TypedPredicate { namer in !predicate.build(namer) }
    }
}

public func == <Root: ManagedObject, V: ValueConvertible & Sendable>(lhs: any KeyPath<Root, V> & Sendable, rhs: V) -> TypedPredicate<Root> {
    .compare(lhs, .equal, rhs)
}

public func != <Root: ManagedObject, V: ValueConvertible & Sendable>(lhs: any KeyPath<Root, V> & Sendable, rhs: V) -> TypedPredicate<Root> {
    .compare(lhs, .notEqual, rhs)
}

public func < <Root: ManagedObject, V: ValueConvertible & Sendable>(lhs: any KeyPath<Root, V> & Sendable, rhs: V) -> TypedPredicate<Root> {
    .compare(lhs, .lessThan, rhs)
}

public func <= <Root: ManagedObject, V: ValueConvertible & Sendable>(lhs: any KeyPath<Root, V> & Sendable, rhs: V) -> TypedPredicate<Root> {
    .compare(lhs, .lessThanOrEqual, rhs)
}

public func > <Root: ManagedObject, V: ValueConvertible & Sendable>(lhs: any KeyPath<Root, V> & Sendable, rhs: V) -> TypedPredicate<Root> {
    .compare(lhs, .greaterThan, rhs)
}

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

    func name(of keyPath: AnyKeyPath) -> String {
        guard let root = graph.probe(ofType: type(of: keyPath).rootType) else {
            preconditionFailure("\(keyPath): its root is not a ManagedObject subclass")
        }
        graph.recordedKeys = []
        _ = root[keyPath: keyPath]
        let keys = graph.recordedKeys ?? []
        graph.recordedKeys = nil
        guard !keys.isEmpty else {
            preconditionFailure("\(keyPath) reads no @Managed or @ToOne property; typed predicates take key paths of stored properties")
        }
        return keys.joined(separator: ".")
    }
}

extension ObjectContext {
    /// The objects of a model class matching a typed predicate, in the given order.
    public func fetch<T: ManagedObject>(_ type: T.Type, where predicate: TypedPredicate<T>, sortedBy sort: [SortKey]? = nil, limit: Int? = nil) throws(StoreError) -> [T] {
        try fetch(type, where: resolve(predicate), sortedBy: sort, limit: limit)
    }

    /// The format-string predicate a typed one stands for.
    public func resolve<T: ManagedObject>(_ predicate: TypedPredicate<T>) -> ObjectPredicate {
        _ = graph.register(T.self)
        return predicate.build(KeyNamer(graph: graph))
    }
}
