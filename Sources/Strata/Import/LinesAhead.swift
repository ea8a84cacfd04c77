import Dispatch

/// Reads and parses the next chunk of JSON Lines on a worker thread while the importer
/// applies the previous chunk: on two cores, parsing then costs the import no time.
///
/// Unchecked sendability: one thread at a time touches the state — the worker from
/// ``start()`` until it leaves the dispatch group, the importer only in ``take()`` after the
/// group's wait (which orders the worker's writes before the importer's reads).
final class LinesAhead: @unchecked Sendable {
    /// One line: its number, and its JSON (`nil` for a blank line).
    struct Line: Sendable {
        var number: Int
        var json: Result<JSON, JSONParseError>?
    }

    /// What one chunk holds.
    struct Chunk {
        var lines: [Line]
        /// The input ended (or failed) with this chunk.
        var finished: Bool
        var failure: JSONLinesReader.ReadError?
        /// Bytes read through the end of this chunk.
        var bytesRead: Int64
    }

    /// Lines per chunk: large enough to amortize the hand-off, small enough to stay in cache.
    static let chunkSize = 2048

    private let reader: JSONLinesReader
    private let group = DispatchGroup()
    private var chunk = Chunk(lines: [], finished: false, failure: nil, bytesRead: 0)

    init(_ reader: JSONLinesReader) { self.reader = reader }

    /// Starts reading and parsing the next chunk.
    func start() {
        group.enter()
        DispatchQueue.global().async {
            self.chunk = self.read()
            self.group.leave()
        }
    }

    /// Waits for the chunk being read and returns it.
    func take() -> Chunk {
        group.wait()
        return chunk
    }

    /// Waits for a chunk still being read (an import that stops early leaves none behind).
    func finish() { group.wait() }

    private func read() -> Chunk {
        var lines: [Line] = []
        lines.reserveCapacity(Self.chunkSize)
        do throws(JSONLinesReader.ReadError) {
            while lines.count < Self.chunkSize {
                let number = reader.lineNumber + 1
                guard let line = try reader.nextLine({ (bytes) -> Line in
                    if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return Line(number: number, json: nil) }
                    return Line(number: number, json: Result { () throws(JSONParseError) -> JSON in try JSON.parse(bytes) })
                }) else {
                    return Chunk(lines: lines, finished: true, failure: nil, bytesRead: reader.bytesRead)
                }
                lines.append(line.get())
            }
        } catch {
            return Chunk(lines: lines, finished: true, failure: error, bytesRead: reader.bytesRead)
        }
        return Chunk(lines: lines, finished: false, failure: nil, bytesRead: reader.bytesRead)
    }
}
