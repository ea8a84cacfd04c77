#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch

/// The single-writer lock of a store directory: an `flock` on its `lock` file, which
/// records the holder's PID for the error a second writer gets.
///
/// `flock` locks belong to the open file, not the process, so a second handle in the same
/// process is refused too, and a killed holder's lock disappears with its descriptors.
struct StoreLock {
    let descriptor: FileDescriptor
    let path: String

    /// Takes the lock or throws ``StoreError/Code/locked`` within 100 ms, naming the lock file and
    /// the holder's PID.
    static func acquire(directory: String, io: any FileIO, create: Bool) throws(StoreError) -> StoreLock {
        let path = StoreLayout.join(directory, StoreLayout.lockFile)
        let fd: FileDescriptor
        do {
            fd = try io.open(path, access: .readWrite, creation: create ? .createIfMissing : .mustExist)
        } catch {
            if error.errno == ENOENT {
                throw StoreError(.notAStore, "\(directory) has no lock file, so it is not a Strata store; create one with `strata create`", path: path, underlying: error)
            }
            throw StoreError.io(error, "opening the lock file")
        }
        // A lock held only for a moment is retried for up to 100 ms: a process that starts a
        // child copies its descriptors — the lock's included — until the child's exec closes
        // them, so a store closed and reopened while another thread spawns a process can find
        // its own old lock still held. The copy usually lives microseconds, but on a loaded
        // machine the child can wait tens of milliseconds for a processor before its exec. A
        // real second writer still gets `locked` within a blink.
        var acquired = false
        let deadline = DispatchTime.now().uptimeNanoseconds + 100_000_000
        while true {
            do {
                acquired = try io.tryLock(fd)
            } catch {
                io.close(fd)
                throw StoreError.io(error, "locking the store")
            }
            if acquired || DispatchTime.now().uptimeNanoseconds >= deadline { break }
            usleep(2_000)
        }
        guard acquired else {
            let holder = (try? io.readAll(fd, path: path)).map { String(decoding: $0, as: UTF8.self) } ?? ""
            io.close(fd)
            let pid = holder.split(separator: "\n").first.map(String.init) ?? "unknown"
            throw StoreError(
                .locked,
                "the store is locked by another writer (process \(pid)); only one process may write a store at a time. Close the other handle, or open read-only",
                path: path)
        }
        return StoreLock(descriptor: fd, path: path)
    }

    /// Records this process's PID in the lock file (for the message other writers get).
    func recordHolder(io: any FileIO) {
        let text = Array("\(getpid())\n".utf8)
        // Only over an emptied file: never write into the middle of an old record.
        guard (try? io.truncate(descriptor, to: 0)) != nil else { return }
        try? io.writeAll(descriptor, text, at: 0, path: path)
    }

    func release(io: any FileIO) { io.close(descriptor) }
}
