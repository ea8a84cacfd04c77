/// A SHA-256 digest of a schema's shape; see ``Schema/fingerprint``.
public struct SchemaFingerprint: Sendable, Hashable, CustomStringConvertible {
    /// The 32 digest bytes.
    public let bytes: [UInt8]

    /// Wraps 32 digest bytes read from a file.
    init(bytes: [UInt8]) {
        precondition(bytes.count == 32, "a schema fingerprint is 32 bytes, not \(bytes.count)")
        self.bytes = bytes
    }

    /// The fingerprint of a list of entities, from a canonical binary encoding of everything
    /// that affects storage and checking (not names of the schema, versions or rename hints).
    init(of entities: [Entity]) {
        var w = ByteWriter()
        w.write(Array("strata-schema-fingerprint-1".utf8))
        w.writeVarint(entities.count)
        for entity in entities {
            w.writeString(entity.name)
            w.writeVarint(entity.attributes.count)
            for a in entity.attributes {
                w.writeString(a.name)
                w.writeString(a.type.rawValue)
                w.write(a.isOptional ? 1 : 0)
                w.write(a.isUnique ? 1 : 0)
                w.write(a.isIndexed ? 1 : 0)
                for value in [a.defaultValue, a.minimum, a.maximum] {
                    if let value { w.write(1); w.writeValue(value) } else { w.write(0) }
                }
                for length in [a.minLength, a.maxLength] {
                    if let length { w.write(1); w.writeSignedVarint(Int64(length)) } else { w.write(0) }
                }
            }
            w.writeVarint(entity.relationships.count)
            for r in entity.relationships {
                w.writeString(r.name)
                w.writeString(r.destination)
                w.writeString(r.inverse)
                w.write(r.isToMany ? 1 : 0)
                w.write(r.isOptional ? 1 : 0)
                w.writeString(r.deleteRule.rawValue)
            }
            w.writeVarint(entity.defaultSort.count)
            for key in entity.defaultSort {
                w.writeString(key.key)
                w.write(key.ascending ? 1 : 0)
            }
        }
        bytes = SHA256.hash(w.bytes)
    }

    /// The digest in lowercase hexadecimal.
    public var description: String {
        bytes.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }
}

extension String {
    func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
