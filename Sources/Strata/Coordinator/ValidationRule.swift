/// A custom rule that every inserted or changed object of an entity must satisfy when it is
/// saved, in every tier (into a parent context as well as to the store).
///
/// ```swift
/// let rule = ValidationRule(entity: "Album") { album throws(StoreError) in
///     if case .string(let title) = album["title"], title.hasPrefix(" ") {
///         throw album.validationError("titles do not start with a space", key: "title")
///     }
/// }
/// let coordinator = Coordinator(store: store, validationRules: [rule])
/// ```
///
/// Model classes can also override ``ManagedObject/validateForSave()``.
public struct ValidationRule: Sendable {
    /// The entity whose objects the rule checks.
    public var entity: String
    /// The check; it runs in the saving context, with that context's object.
    public var check: @Sendable (ManagedObject) throws(StoreError) -> Void

    /// Creates a rule.
    public init(entity: String, _ check: @escaping @Sendable (ManagedObject) throws(StoreError) -> Void) {
        self.entity = entity
        self.check = check
    }
}
