import Foundation
import Testing
@testable import Strata

/// A weak reference that tests hand between tasks, to see whether something was freed.
// @unchecked Sendable: the reference is set once, in `init`; loading a weak reference is
// thread-safe in the Swift runtime.
final class WeakReference<T: AnyObject>: @unchecked Sendable {
    private(set) weak var object: T?
    init(_ object: T?) { self.object = object }
    var isGone: Bool { object == nil }
}

/// The descriptors this process has open on files under `directory` (Linux: read from
/// `/proc/self/fd`; elsewhere empty). Counted by where they lead rather than in total, so
/// that tests running alongside, opening and closing files of their own, do not count.
func openDescriptors(under directory: String) -> [String] {
    #if os(Linux)
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    let prefix = URL(fileURLWithPath: directory).resolvingSymlinksInPath().path + "/"
    return fds.compactMap { fd in
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)") else { return nil }
        return target.hasPrefix(prefix) ? target : nil
    }
    #else
    return []
    #endif
}

/// Artists that count their live instances per context (by context name), to see that a
/// context's objects are freed with it. Made for the entity "Artist" by the coordinators
/// of ``LifetimeFixture``.
final class CountedArtist: ManagedObject {
    override class var entityName: String { "Artist" }

    private static let live = Locked<[String: Int]>([:])

    /// How many instances made by the context named `context` are alive.
    static func alive(in context: String) -> Int { live.withLock { $0[context] ?? 0 } }

    private let contextName: String

    required init(_ token: ObjectToken) {
        contextName = token.graph.link.name
        super.init(token)
        Self.live.withLock { $0[contextName, default: 0] += 1 }
    }

    deinit {
        Self.live.withLock { $0[contextName, default: 0] -= 1 }
    }
}

/// A store and a coordinator making ``CountedArtist``s, with the songbook seeded.
struct LifetimeFixture {
    let directory: TemporaryDirectory
    let store: Store
    let coordinator: Coordinator
    let objects: ConstraintTests.Objects

    init(durability: Durability = .none) async throws {
        directory = TemporaryDirectory("strata-lifetime")
        store = try StoreTesting.create(in: directory, durability: durability)
        coordinator = Coordinator(store: store, modelClasses: [CountedArtist.self, Album.self, Song.self])
        objects = try await seedSongbook(store)
    }

    func close() async {
        await store.close()
        directory.remove()
    }
}
