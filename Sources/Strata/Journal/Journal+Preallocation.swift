import Foundation

// MARK: - Zero-filled space ahead of appends

extension Journal {
    /// Whether the writer should fill more of `current` with zeros before the next appends
    /// (see ``Configuration/preallocation``): under `.full`, when less than half a chunk of
    /// written space is left and the segment has not yet reached its size.
    func needsSpace(_ current: CurrentSegment) -> Bool {
        let chunk = Int64(configuration.preallocation)
        return configuration.durability == .full && chunk > 0 && !current.preallocationFailed
            && current.allocated - current.size < chunk / 2
            && current.allocated < Int64(configuration.segmentSize)
    }

    /// Writes zeros from the end of `current`'s file to at least one chunk past its records
    /// (never past the segment size) and syncs them, so the syncs of the
    /// appends that overwrite them write only data.
    ///
    /// Runs on the writer's queue, between batches. A write that fails (say for want of
    /// space) only stops the writing ahead for this segment: zeros past the records are
    /// read as the segment's clean end, however many landed. A sync that fails poisons the
    /// journal, as any failed sync does.
    func preallocate(_ current: inout CurrentSegment) throws(StoreError) {
        let chunk = Int64(configuration.preallocation)
        let target = min((current.size + 2 * chunk - 1) / chunk * chunk, Int64(configuration.segmentSize))
        guard target > current.allocated else { return }
        let piece = Int(min(chunk, 1 << 20))
        guard let zeros = calloc(1, piece) else { return }
        defer { free(zeros) }
        let path = current.segment.path
        var offset = current.allocated
        do throws(FileIOError) {
            while offset < target {
                let count = Int(min(Int64(piece), target - offset))
                try io.writeAll(current.descriptor, UnsafeRawBufferPointer(start: zeros, count: count), at: offset, path: path)
                offset += Int64(count)
            }
        } catch {
            current.allocated = max(current.allocated, offset)
            current.preallocationFailed = true
            let failed = current
            state.withLock { $0.current = failed }
            return
        }
        do throws(FileIOError) {
            try io.sync(current.descriptor, path: current.segment.path)
        } catch {
            throw StoreError(.io, "syncing zero-filled space ahead of appends failed: \(error)",
                             path: path, offset: current.allocated, underlying: error)
        }
        let written = target - current.allocated
        current.allocated = target
        let done = current
        state.withLock { s in
            s.current = done
            s.statistics.bytesPreallocated += written
        }
    }

    /// ``preallocate(_:)`` for the segment being appended to, run from the writer's queue
    /// after an appender wrote its own batch (see ``writeAsLeader()``).
    func preallocateCurrentSegment() {
        let current = state.withLock { s -> CurrentSegment? in
            guard !s.isClosed, s.failure == nil, let current = s.current, needsSpace(current) else { return nil }
            return current
        }
        guard var current else { return }
        do throws(StoreError) { try preallocate(&current) } catch { poison(error) }
    }

    /// Cuts the zeros past `segment`'s records when the journal moves on from it or closes,
    /// so that a finished segment holds just its records. Not synced: either size reads back
    /// the same records.
    func trimPreallocation(_ segment: CurrentSegment) {
        guard segment.allocated > segment.size || segment.preallocationFailed else { return }
        try? io.retryingInterrupts { () throws(FileIOError) in try io.truncate(segment.descriptor, to: segment.size) }
    }
}
