/// The type of an attribute's values, as the model file spells it.
public enum AttributeType: String, Sendable, Hashable, CaseIterable, Codable {
    /// Text, stored as UTF-8.
    case string
    /// A 64-bit signed integer.
    case int
    /// A 64-bit floating-point number.
    case double
    /// `true` or `false`.
    case bool
    /// A point in time (ISO-8601 in the model and import files).
    case date
    /// Raw bytes (base64 in the model and import files).
    case data
    /// A UUID (its canonical string form in the model and import files).
    case uuid
}
