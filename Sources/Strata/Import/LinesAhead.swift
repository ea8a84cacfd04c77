import Dispatch

/// Reads and parses the next chunk of JSON Lines on a worker thread while the importer
/// applies the previous chunk: on two cores, parsing then costs the import no time. A chunk
/// ends early when its input (a pipe) has no more lines to give at once.
///
/// The importer waits for a chunk by suspending, not by blocking its thread (one of Swift's
/// cooperative pool: an import waiting on a quiet pipe held it, and two such imports
/// stopped every task of the process), and stops waiting when its task is cancelled. The
/// read goes on in the background until its input gives it lines or ends, holding the
/// reader — which is why ``JSONLinesImporter/run(_:report:)`` takes the reader for good.
///
/// Unchecked sendability: the reader is touched by one worker at a time (``start()`` is
/// called again only once the chunk before was taken, or never); chunks cross threads
/// under the state's lock.
final class LinesAhead: @unchecked Sendable {
    /// One line: its number, and its JSON (`nil` for a blank line).
    struct Line: Sendable {
        var number: Int
        var json: Result<JSON, JSONParseError>?
    }

    /// What one chunk holds.
    struct Chunk: Sendable {
        var lines: [Line]
        /// The input ended (or failed) with this chunk.
        var finished: Bool
        var failure: JSONLinesReader.ReadError?
        /// Bytes read through the end of this chunk.
        var bytesRead: Int64
    }

    /// Lines per chunk: large enough to amortize the hand-off, small enough to stay in cache.
    static let chunkSize = 2048

    private struct State {
        /// The chunk read and not taken yet.
        var ready: Chunk?
        /// The importer waiting for the chunk being read.
        var waiting: CheckedContinuation<Chunk?, Never>?
    }

    private let reader: JSONLinesReader
    private let state = Locked(State())

    init(_ reader: JSONLinesReader) { self.reader = reader }

    /// Starts reading and parsing the next chunk.
    func start() {
        DispatchQueue.global().async {
            let chunk = self.read()
            let waiting = self.state.withLock { state -> CheckedContinuation<Chunk?, Never>? in
                guard let waiting = state.waiting else {
                    state.ready = chunk
                    return nil
                }
                state.waiting = nil
                return waiting
            }
            waiting?.resume(returning: chunk)
        }
    }

    /// The chunk being read, once it is; `nil` if the calling task is cancelled first.
    func take() async -> Chunk? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Chunk?, Never>) in
                let now = state.withLock { state -> Chunk?? in
                    if let ready = state.ready {
                        state.ready = nil
                        return .some(ready)
                    }
                    if Task.isCancelled { return .some(nil) }
                    state.waiting = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiting = state.withLock { state -> CheckedContinuation<Chunk?, Never>? in
                defer { state.waiting = nil }
                return state.waiting
            }
            waiting?.resume(returning: nil)
        }
    }

    private func read() -> Chunk {
        var lines: [Line] = []
        lines.reserveCapacity(Self.chunkSize)
        do throws(JSONLinesReader.ReadError) {
            while lines.count < Self.chunkSize {
                // A quiet producer's lines are handed over as they come (a batch fills, an
                // error is named) instead of once the chunk fills or the input ends.
                if !lines.isEmpty, reader.mustWaitForInput { break }
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
