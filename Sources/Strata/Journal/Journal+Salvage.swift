
// MARK: - Salvage

extension Journal {
    /// What ``salvage(from:to:schema:configuration:)`` copied and where it stopped.
    public struct SalvageReport: Sendable, CustomStringConvertible {
        /// The last transaction copied.
        public var lastTransaction: UInt64
        /// Objects in the copy.
        public var objects: Int
        /// The damage where reading stopped, or `nil` if the whole store was readable.
        public var stoppedAt: StoreError?

        public var description: String {
            var text = "copied \(objects) objects through transaction \(lastTransaction)"
            if let stoppedAt { text += "; stopped at damage: \(stoppedAt)" }
            return text
        }
    }

    /// Copies the readable prefix of a damaged store into a new store, leaving the damaged
    /// one untouched.
    ///
    /// Reading stops at the first damage; everything before it — the newest checkpoint and
    /// every intact transaction after it — is written to a new store at `destination`, as a
    /// checkpoint. Check the report, then replace the damaged store by hand if the copy
    /// holds what you need.
    /// - Throws: ``StoreError`` if the source cannot be read at all (no intact header or
    ///   checkpoint) or the destination cannot be created.
    public static func salvage(
        from source: String, to destination: String, schema: Schema? = nil, configuration: Configuration = Configuration()
    ) throws(StoreError) -> SalvageReport {
        let io = configuration.fileIO
        guard io.kind(of: source) == .directory else {
            throw StoreError(.notFound, "no store directory at \(source)", path: source)
        }
        var state = ReplayedState()
        var replay = StoreReplay(directory: source, io: io, expected: schema, mode: .prefix)
        try replay.run(into: &state)
        guard let stored = replay.schema else {
            // The first file's header is unreadable: without the store's ID no record's
            // checksum can be checked, so nothing can be copied.
            let cause = replay.stoppedAt
            throw StoreError(.corrupted, "nothing can be salvaged: the first file's header cannot be read (\(cause?.message ?? "no header")), so no record of the store can be checked",
                             path: cause?.path ?? source, offset: cause?.offset)
        }
        let copy = try create(at: destination, schema: schema ?? stored, configuration: configuration, initialContents: state)
        copy.closeSynchronously()
        return SalvageReport(lastTransaction: state.lastTransaction, objects: state.rows.count, stoppedAt: replay.stoppedAt)
    }

    /// Closes a journal that has nothing pending (used right after creating a copy).
    func closeSynchronously() {
        let (wasOpen, current) = state.withLock { s -> (Bool, CurrentSegment?) in
            defer { s.isClosed = true }
            return (!s.isClosed, s.current)
        }
        guard wasOpen else { return }
        if let current { io.close(current.descriptor) }
        lock?.release(io: io)
    }
}
