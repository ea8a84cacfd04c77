import Foundation

/// A Swift type that an attribute's ``Value`` converts to and from, for typed properties
/// of model classes (``Managed``).
public protocol ValueConvertible {
    /// The value read when the stored value is `nil` or of another type (a new object's
    /// required attribute before it is set; saving then fails naming the key).
    static var emptyValue: Self { get }
    /// Converts a stored value; `nil` if it is not of this type.
    init?(value: Value)
    /// The stored form.
    var value: Value { get }
}

extension String: ValueConvertible {
    public static var emptyValue: String { "" }
    public init?(value: Value) { if case .string(let v) = value { self = v } else { return nil } }
    public var value: Value { .string(self) }
}

extension Int: ValueConvertible {
    public static var emptyValue: Int { 0 }
    public init?(value: Value) { if case .int(let v) = value, let i = Int(exactly: v) { self = i } else { return nil } }
    public var value: Value { .int(Int64(self)) }
}

extension Int64: ValueConvertible {
    public static var emptyValue: Int64 { 0 }
    public init?(value: Value) { if case .int(let v) = value { self = v } else { return nil } }
    public var value: Value { .int(self) }
}

extension Double: ValueConvertible {
    public static var emptyValue: Double { 0 }
    public init?(value: Value) { if case .double(let v) = value { self = v } else { return nil } }
    public var value: Value { .double(self) }
}

extension Bool: ValueConvertible {
    public static var emptyValue: Bool { false }
    public init?(value: Value) { if case .bool(let v) = value { self = v } else { return nil } }
    public var value: Value { .bool(self) }
}

extension Date: ValueConvertible {
    public static var emptyValue: Date { Date(timeIntervalSince1970: 0) }
    public init?(value: Value) { if case .date(let v) = value { self = v } else { return nil } }
    public var value: Value { .date(self) }
}

extension Data: ValueConvertible {
    public static var emptyValue: Data { Data() }
    public init?(value: Value) { if case .data(let v) = value { self = v } else { return nil } }
    public var value: Value { .data(self) }
}

extension UUID: ValueConvertible {
    public static var emptyValue: UUID { UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
    public init?(value: Value) { if case .uuid(let v) = value { self = v } else { return nil } }
    public var value: Value { .uuid(self) }
}

extension Optional: ValueConvertible where Wrapped: ValueConvertible {
    public static var emptyValue: Wrapped? { nil }
    public init?(value: Value) {
        if value.isNull {
            self = .none
        } else if let wrapped = Wrapped(value: value) {
            self = .some(wrapped)
        } else {
            return nil
        }
    }
    public var value: Value { self?.value ?? .null }
}

/// The built-in value types: stored as one attribute type, exactly (no conversion of the
/// application's own). A property wrapper of one of them must match its attribute's type, and
/// a typed key path giving something else than the stored value is known to compute it
/// (see ``KeyNamer/name(of:)``).
protocol ExactlyStored {
    /// The attribute type the value is stored as.
    static var storedType: AttributeType { get }
}
extension String: ExactlyStored { static var storedType: AttributeType { .string } }
extension Int: ExactlyStored { static var storedType: AttributeType { .int } }
extension Int64: ExactlyStored { static var storedType: AttributeType { .int } }
extension Double: ExactlyStored { static var storedType: AttributeType { .double } }
extension Bool: ExactlyStored { static var storedType: AttributeType { .bool } }
extension Date: ExactlyStored { static var storedType: AttributeType { .date } }
extension Data: ExactlyStored { static var storedType: AttributeType { .data } }
extension UUID: ExactlyStored { static var storedType: AttributeType { .uuid } }
extension Optional: ExactlyStored where Wrapped: ExactlyStored { static var storedType: AttributeType { Wrapped.storedType } }

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

/// A typed attribute of a model class, stored under `key`.
///
/// ```swift
/// final class Artist: ManagedObject {
///     @Managed("name") var name: String
///     @Managed("founded") var founded: Date?
/// }
/// ```
@propertyWrapper
public struct Managed<T: ValueConvertible> {
    let key: String
    var index = -1

    /// Declares the attribute stored under `key`.
    public init(_ key: String) { self.key = key }

    /// Not available: the property is read and written through its object (below).
    @available(*, unavailable, message: "@Managed properties are only available on ManagedObject subclasses")
    public var wrappedValue: T {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }

    /// The value, read from and written to the object's storage (loading a fault; a value
    /// of another type reads as ``ValueConvertible/emptyValue``; writing keeps change tracking).
    public static subscript<Object: ManagedObject>(
        _enclosingInstance object: Object, wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, T>,
        storage storageKeyPath: ReferenceWritableKeyPath<Object, Self>
    ) -> T {
        get {
            let index = object.graph.cachedIndex(&object[keyPath: storageKeyPath].index, key: object[keyPath: storageKeyPath].key, in: object, declaring: .attribute(T.self))
            // (A typed key path being named: whether this property can give nil.)
            if object.graph.recordedKeys != nil { object.graph.lastReadHoldsNil = T(value: .null) != nil }
            return T(value: object.graph.read(object, index: index)) ?? T.emptyValue
        }
        set {
            let index = object.graph.cachedIndex(&object[keyPath: storageKeyPath].index, key: object[keyPath: storageKeyPath].key, in: object, declaring: .attribute(T.self))
            object.graph.writeOrTrap(object, index: index, value: newValue.value)
        }
    }
}

/// A typed to-one relationship of a model class, stored under `key`. Setting it updates the
/// inverse relationship of the old and new destinations.
///
/// ```swift
/// @ToOne("artist") var artist: Artist?
/// ```
@propertyWrapper
public struct ToOne<Destination: ManagedObject> {
    let key: String
    var index = -1

    /// Declares the relationship stored under `key`.
    public init(_ key: String) { self.key = key }

    /// Not available: the property is read and written through its object (below).
    @available(*, unavailable, message: "@ToOne properties are only available on ManagedObject subclasses")
    public var wrappedValue: Destination? {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }

    /// The destination, read from and written to the object's storage; setting it updates
    /// the inverse relationship of the old and new destinations.
    public static subscript<Object: ManagedObject>(
        _enclosingInstance object: Object, wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, Destination?>,
        storage storageKeyPath: ReferenceWritableKeyPath<Object, Self>
    ) -> Destination? {
        get {
            let index = object.graph.cachedIndex(&object[keyPath: storageKeyPath].index, key: object[keyPath: storageKeyPath].key, in: object, declaring: .toOne)
            guard case .object(let id) = object.graph.read(object, index: index) else { return nil }
            return object.graph.object(with: id, as: Destination.self)
        }
        set {
            let key = object[keyPath: storageKeyPath].key
            let index = object.graph.cachedIndex(&object[keyPath: storageKeyPath].index, key: key, in: object, declaring: .toOne)
            object.graph.writeOrTrap(object, index: index, value: object.graph.reference(to: newValue, from: object, key: key))
        }
    }
}

/// A typed to-many relationship of a model class (an ordered list), stored under `key`.
/// Setting it updates the inverse relationship of every object added or removed.
///
/// ```swift
/// @ToMany("songs") var songs: [Song]
/// artist.songs.append(song)
/// ```
@propertyWrapper
public struct ToMany<Destination: ManagedObject> {
    let key: String
    var index = -1

    /// Declares the relationship stored under `key`.
    public init(_ key: String) { self.key = key }

    /// Not available: the property is read and written through its object (below).
    @available(*, unavailable, message: "@ToMany properties are only available on ManagedObject subclasses")
    public var wrappedValue: [Destination] {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }

    /// The destinations, in order, read from and written to the object's storage; setting
    /// them updates the inverse relationship of every object added or removed.
    public static subscript<Object: ManagedObject>(
        _enclosingInstance object: Object, wrapped wrappedKeyPath: ReferenceWritableKeyPath<Object, [Destination]>,
        storage storageKeyPath: ReferenceWritableKeyPath<Object, Self>
    ) -> [Destination] {
        get {
            let index = object.graph.cachedIndex(&object[keyPath: storageKeyPath].index, key: object[keyPath: storageKeyPath].key, in: object, declaring: .toMany)
            guard case .objects(let ids) = object.graph.read(object, index: index) else { return [] }
            return ids.map { object.graph.object(with: $0, as: Destination.self) }
        }
        set {
            let key = object[keyPath: storageKeyPath].key
            let index = object.graph.cachedIndex(&object[keyPath: storageKeyPath].index, key: key, in: object, declaring: .toMany)
            let ids = newValue.map { object.graph.reference(to: $0, from: object, key: key).objectID! }
            object.graph.writeOrTrap(object, index: index, value: .objects(ids))
        }
    }
}
