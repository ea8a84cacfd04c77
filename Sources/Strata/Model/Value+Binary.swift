import Foundation

/// The tag byte in front of every encoded value.
enum ValueTag: UInt8 {
    case null = 0, string, int, double, boolFalse, boolTrue, date, data, uuid, object, objects
}

extension ByteWriter {
    /// Encodes a value with its tag. Object IDs are written as (entity index, number);
    /// `entityIndexes` maps entity names to storage indexes.
    mutating func writeValue(_ value: Value, entityIndexes: [String: Int] = [:]) {
        switch value {
        case .null: write(ValueTag.null.rawValue)
        case .string(let s): write(ValueTag.string.rawValue); writeString(s)
        case .int(let i): write(ValueTag.int.rawValue); writeSignedVarint(i)
        case .double(let d): write(ValueTag.double.rawValue); writeDouble(d)
        case .bool(let b): write(b ? ValueTag.boolTrue.rawValue : ValueTag.boolFalse.rawValue)
        case .date(let d): write(ValueTag.date.rawValue); writeDouble(d.timeIntervalSinceReferenceDate)
        case .data(let d): write(ValueTag.data.rawValue); writeBytes(d)
        case .uuid(let u): write(ValueTag.uuid.rawValue); writeUUID(u)
        case .object(let id): write(ValueTag.object.rawValue); writeObjectID(id, entityIndexes: entityIndexes)
        case .objects(let ids):
            write(ValueTag.objects.rawValue)
            writeVarint(ids.count)
            for id in ids { writeObjectID(id, entityIndexes: entityIndexes) }
        }
    }

    /// Writes an object ID as (entity index, number). The entity must be in `entityIndexes`
    /// (records are validated before they are encoded).
    mutating func writeObjectID(_ id: ObjectID, entityIndexes: [String: Int]) {
        guard let index = entityIndexes[id.entity] else {
            preconditionFailure("object ID \(id) encoded, but its entity is not in the schema; validate records before encoding")
        }
        writeVarint(index)
        writeVarint(id.number)
    }
}

extension ByteReader {
    /// Decodes a tagged value. `names` maps an entity's storage index to its name; an index
    /// past its end is a decoding failure.
    mutating func readValue(names: [EntityName]) throws(DecodeFailure) -> Value {
        let tagOffset = offset
        let raw = try readByte()
        guard let tag = ValueTag(rawValue: raw) else {
            throw DecodeFailure(offset: tagOffset, reason: "unknown value tag \(raw)")
        }
        switch tag {
        case .null: return .null
        case .string: return .string(try readString())
        case .int: return .int(try readSignedVarint())
        case .double: return .double(try readDouble())
        case .boolFalse: return .bool(false)
        case .boolTrue: return .bool(true)
        case .date: return .date(Date(timeIntervalSinceReferenceDate: try readDouble()))
        case .data: return .data(try readData())
        case .uuid: return .uuid(try readUUID())
        case .object: return .object(try readObjectID(names: names))
        case .objects:
            // Each ID takes at least two bytes, which bounds the count before allocating.
            let count = try readCount("a to-many count", limit: remaining / 2)
            var ids: [ObjectID] = []
            ids.reserveCapacity(count)
            for _ in 0..<count { ids.append(try readObjectID(names: names)) }
            return .objects(ids)
        }
    }

    mutating func readObjectID(names: [EntityName]) throws(DecodeFailure) -> ObjectID {
        let at = offset
        let index = try readCount("an entity index", limit: Int(Int32.max))
        guard index < names.count else {
            throw DecodeFailure(offset: at, reason: "unknown entity index \(index) (the schema has \(names.count) entities)")
        }
        let name = names[index]
        let numberOffset = offset
        let number = try readVarint()
        guard number > 0 else { throw DecodeFailure(offset: numberOffset, reason: "object number 0 of \(name.string)") }
        return ObjectID(entityName: name, number: number)
    }
}
