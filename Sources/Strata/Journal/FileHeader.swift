import Foundation

/// The header record at the start of every segment and checkpoint file.
struct FileHeader: Equatable {
    enum Kind: UInt8 {
        case segment = 1
        case checkpoint = 2
    }

    var kind: Kind
    var formatVersion: UInt16
    var storeID: UUID
    var fingerprint: SchemaFingerprint
    /// For a segment, its first transaction; for a checkpoint, the last transaction it covers.
    var transaction: UInt64

    func encode(into writer: inout ByteWriter) {
        writer.write(kind == .segment ? RecordFormat.segmentMagic : RecordFormat.checkpointMagic)
        let start = writer.beginFrame(.header)
        writer.writeUInt16(formatVersion)
        writer.write(kind.rawValue)
        writer.writeUUID(storeID)
        writer.write(fingerprint.bytes)
        writer.writeUInt64(transaction)
        // The header is checked before the store's UUID is known, so its seed is 0.
        writer.finishFrame(at: start, seed: 0)
    }

    /// Decodes the magic and header at the start of `buffer`; returns the header and the
    /// offset after it.
    static func decode(_ buffer: UnsafeRawBufferPointer, expecting kind: Kind) -> Result<(FileHeader, Int), HeaderProblem> {
        let magic = kind == .segment ? RecordFormat.segmentMagic : RecordFormat.checkpointMagic
        guard buffer.count >= RecordFormat.magicSize else { return .failure(.truncated) }
        guard buffer.prefix(RecordFormat.magicSize).elementsEqual(magic) else { return .failure(.badMagic) }
        let frame: Frame
        switch RecordFormat.frame(in: buffer, at: RecordFormat.magicSize, seed: 0) {
        case .success(let f): frame = f
        case .failure(.truncated): return .failure(.truncated)
        case .failure(let problem): return .failure(.damaged(problem.explanation))
        }
        guard frame.type == RecordFormat.RecordType.header.rawValue else { return .failure(.damaged("the first record is not a header")) }
        var reader = ByteReader(frame.payload)
        do throws(DecodeFailure) {
            let version = try reader.readUInt16()
            guard version <= RecordFormat.version else { return .failure(.futureVersion(version)) }
            let rawKind = try reader.readByte()
            guard rawKind == kind.rawValue else { return .failure(.damaged("the header is for another kind of file")) }
            let storeID = try reader.readUUID()
            let fingerprint = SchemaFingerprint(bytes: Array(try reader.readRaw(32, "a fingerprint")))
            let transaction = try reader.readUInt64()
            return .success((FileHeader(kind: kind, formatVersion: version, storeID: storeID, fingerprint: fingerprint,
                                        transaction: transaction), frame.end))
        } catch {
            return .failure(.damaged("the header is malformed: \(error)"))
        }
    }

    enum HeaderProblem: Error, Equatable {
        case truncated
        case badMagic
        case futureVersion(UInt16)
        case damaged(String)
    }
}
