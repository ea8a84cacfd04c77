import Foundation

/// The checks a single attribute value must pass: type, presence and the declared limits.
enum AttributeCheck {
    /// What is wrong with `value` for `attribute`, or `nil` when it is acceptable.
    static func problem(with value: Value, for attribute: Attribute) -> String? {
        if value.isNull {
            return attribute.isOptional ? nil : "a value is required (the attribute is not optional)"
        }
        guard value.attributeType == attribute.type else {
            return "\(value) is not a \(attribute.type.rawValue)"
        }
        if case .date(let date) = value, !ISO8601.canRepresent(date) {
            return ISO8601.unrepresentable(date)
        }
        if attribute.isUnique, case .double(let number) = value, number.isNaN {
            return "NaN cannot be a unique value: it equals no value, itself included"
        }
        if value.isNaN, attribute.minimum != nil || attribute.maximum != nil {
            return "NaN is outside every range (the attribute has a minimum or a maximum)"
        }
        if let minimum = attribute.minimum, Value.compare(value, minimum) == .orderedAscending {
            return "\(value) is less than the minimum \(minimum)"
        }
        if let maximum = attribute.maximum, Value.compare(value, maximum) == .orderedDescending {
            return "\(value) is greater than the maximum \(maximum)"
        }
        guard attribute.minLength != nil || attribute.maxLength != nil else { return nil }
        let length: Int? =
            switch value {
            case .string(let s): s.count
            case .data(let d): d.count
            default: nil
            }
        if let length {
            let unit = attribute.type == .string ? "characters" : "bytes"
            if let minLength = attribute.minLength, length < minLength {
                return "\(length) \(unit) is shorter than the minimum length \(minLength)"
            }
            if let maxLength = attribute.maxLength, length > maxLength {
                return "\(length) \(unit) is longer than the maximum length \(maxLength)"
            }
        }
        return nil
    }
}

extension Attribute {
    /// What is wrong with `value` for this attribute (a missing required value, the wrong
    /// type, a broken limit), or `nil` when it is acceptable.
    public func problem(with value: Value) -> String? {
        AttributeCheck.problem(with: value, for: self)
    }
}
