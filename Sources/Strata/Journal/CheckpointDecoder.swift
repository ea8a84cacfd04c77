import Foundation

/// Reads a checkpoint's records in order, decoding the rows of each row record: for a
/// large checkpoint on a thread of its own, a few records ahead of the thread that loads
/// the rows, so that decoding (about a third of an open) overlaps loading.
///
/// The consumer calls ``next()`` until it gets something other than rows, and must call
/// ``stop()`` before the buffer goes away (it waits for the thread to leave the buffer).
final class CheckpointDecoder: @unchecked Sendable {
    // @unchecked: `buffer` is only read, by one thread at a time and only until `stop()`
    // returns, which its owner calls before the buffer is freed. `queue`, `cancelled` and
    // `finished` are used only under `lock`; `nextOffset` only by the thread decoding
    // (the consumer's, when there is no decoding thread).

    /// What the decoder read at one record.
    enum Item {
        /// A row record's rows; `offset` is the record's.
        case rows([RowImage], offset: Int)
        /// A record of another type (the checkpoint's end, or one that does not belong);
        /// nothing follows it.
        case other(Frame, offset: Int)
        /// A record that is damaged or cannot be decoded; nothing follows it.
        case failure(StoreError)
    }

    private let buffer: UnsafeRawBufferPointer
    private let codec: RecordCodec
    private let path: String
    private var nextOffset: Int
    private var done = false

    private let lock = Locked(State())
    private let itemsReady = DispatchSemaphore(value: 0)
    private let roomFree: DispatchSemaphore
    private let threadExited = DispatchSemaphore(value: 0)
    private let threaded: Bool

    private struct State {
        var queue: [Item] = []
        var cancelled = false
        var finished = false
    }

    /// Checkpoints at least this large are decoded on a thread of their own.
    static let threadedMinimum = 4 * CheckpointWriter.chunkSize
    /// Records decoded ahead of the consumer, at most (each about a chunk of rows).
    private static let lookahead = 3

    init(_ buffer: UnsafeRawBufferPointer, from offset: Int, codec: RecordCodec, path: String) {
        self.buffer = buffer
        self.codec = codec
        self.path = path
        nextOffset = offset
        // Created empty and then raised: Dispatch traps when a semaphore is freed below
        // the value it was created with, which this one may well be.
        roomFree = DispatchSemaphore(value: 0)
        for _ in 0..<Self.lookahead { roomFree.signal() }
        threaded = buffer.count - offset >= Self.threadedMinimum && ProcessInfo.processInfo.activeProcessorCount > 1
        guard threaded else { return }
        let thread = Thread { [self] in decodeAhead() }
        thread.name = "strata.checkpoint-decode"
        thread.start()
    }

    /// The next record's item, in file order. After ``Item/other(_:offset:)`` or
    /// ``Item/failure(_:)`` there is nothing more to read.
    func next() -> Item {
        guard threaded else {
            precondition(!done, "CheckpointDecoder: read past the checkpoint's last record")
            let item = decodeNext()
            if case .rows = item {} else { done = true }
            return item
        }
        itemsReady.wait()
        let item = lock.withLock { $0.queue.removeFirst() }
        roomFree.signal()
        return item
    }

    /// Stops the decoding thread and waits until it no longer reads the buffer.
    func stop() {
        guard threaded else { return }
        lock.withLock { $0.cancelled = true }
        roomFree.signal()  // wakes the thread if it waits for room
        threadExited.wait()
        // Reading `finished` under the lock orders everything the thread did before it.
        let finished = lock.withLock { $0.finished }
        precondition(finished, "CheckpointDecoder: the decoding thread signalled its exit without finishing")
    }

    private func decodeAhead() {
        defer {
            lock.withLock { $0.finished = true }
            threadExited.signal()
        }
        while true {
            roomFree.wait()
            if lock.withLock({ $0.cancelled }) { return }
            let item = decodeNext()
            lock.withLock { $0.queue.append(item) }
            itemsReady.signal()
            if case .rows = item { continue }
            return
        }
    }

    /// Reads the record at `nextOffset` and moves past it.
    private func decodeNext() -> Item {
        let offset = nextOffset
        switch RecordFormat.frame(in: buffer, at: offset, seed: codec.seed) {
        case .failure(let problem):
            return .failure(StoreError(.corrupted, "checkpoint record damaged: \(problem.explanation); a checkpoint is complete before it is renamed into place, so this is damage. Restore from a backup",
                                       path: path, offset: Int64(offset)))
        case .success(let frame):
            guard frame.type == RecordFormat.RecordType.checkpointRows.rawValue else { return .other(frame, offset: offset) }
            var reader = ByteReader(frame.payload)
            var rows: [RowImage] = []
            do throws(DecodeFailure) {
                while !reader.isAtEnd { rows.append(try codec.readRow(&reader)) }
            } catch {
                return .failure(StoreError(.corrupted, "checkpoint record cannot be decoded: \(error)", path: path,
                                           offset: Int64(offset + RecordFormat.frameHeaderSize + error.offset)))
            }
            nextOffset = frame.end
            return .rows(rows, offset: offset)
        }
    }
}
