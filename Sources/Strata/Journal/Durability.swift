/// When a save (a journal append) is acknowledged, and so what a crash can take away.
public enum Durability: String, Sendable, Hashable, CaseIterable {
    /// Acknowledged after the data is on stable storage (`fsync` of the file, and of the
    /// directory whenever a file is created or renamed). Survives power loss. The default.
    case full
    /// Acknowledged after the data is handed to the operating system (`write`), never
    /// synced. Survives a process crash, not power loss or a kernel crash.
    case relaxed
    /// Acknowledged as soon as the transaction is queued; written in the background. A
    /// process crash can lose the latest acknowledged transactions (never corrupt earlier
    /// ones). For tests and benchmarks.
    case none
}
