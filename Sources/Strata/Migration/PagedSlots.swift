/// Numbered 16-byte slots kept in a temporary file behind a cache of a fixed number of pages:
/// the bookkeeping of a migration step (where each new row's newest record is, what each
/// source object became, the unique values) in memory that does not grow with the store.
///
/// Slots are grouped into *areas*, one per table; an area's slots are addressed by an index
/// (an object number, a position). A page of ``pageSize`` bytes (``slotsPerPage`` slots) gets
/// a place in the file the first time one of its slots is written; a slot of a page never
/// written reads as zero, which every user takes as "empty". At most `cachedPages` pages are
/// in memory; when another is needed, one not used since the clock hand last passed it is
/// written back (if changed) and reused. What grows with the number of slots is one
/// page-table entry per page — a few bytes per 256 slots.
///
/// Failures of the file are *sticky*: a read or write that fails records ``failure`` and the
/// access goes on with a page of zeros, so the readers that cannot throw (lookups a custom
/// transform makes) never see an error they cannot report. The step checks ``failure`` after
/// every transform and link and before it writes anything, so a failure fails the step.
///
/// The file is never synced, and is removed with the step; one left by a crash is removed when
/// the store is next opened for writing (``StoreLayout/migrationIndexName``).
///
/// Not `Sendable`: it belongs to one migration step, used by one thread at a time. Its state
/// is therefore exempt from the runtime's exclusivity checks, which took a quarter of a
/// step's processor time when every slot access paid for them.
final class PagedSlots {
    /// A slot's two words; all zeros is an empty slot.
    struct Slot: Equatable {
        var first: UInt64
        var second: UInt64

        static let empty = Slot(first: 0, second: 0)
        var isEmpty: Bool { first == 0 && second == 0 }
    }

    /// Bytes per page: small, since unique values are looked up at random.
    static let pageSize = 4 << 10
    /// Slots per page.
    static let slotsPerPage = UInt64(pageSize / MemoryLayout<Slot>.stride)
    /// Pages held in memory by default: 16 MiB.
    static let defaultCachedPages = 4_096

    let io: any FileIO
    let path: String
    private let fd: FileDescriptor
    private var isClosed = false
    /// The first failure of the file (see the type's comment).
    private(set) var failure: StoreError?

    /// Per area: page number → the page's place in the file.
    @exclusivity(unchecked) private var pageTables: [[UInt64: Int32]] = []
    /// Per area: its page numbers, in order (for visiting slots in index order).
    @exclusivity(unchecked) private var sortedPages: [[UInt64]] = []
    /// Per area: the page last looked up and its place (most accesses stay on one page).
    @exclusivity(unchecked) private var lastPage: [(page: UInt64, place: Int32)] = []
    /// Places in the file given back by dropped areas.
    @exclusivity(unchecked) private var freePlaces: [Int32] = []
    @exclusivity(unchecked) private var placeCount: Int32 = 0

    /// The cache: page frames, and for each the place it holds (-1: none), whether it changed
    /// since it was read, and whether it was used since the clock hand last passed it.
    private let cachedPages: Int
    @exclusivity(unchecked) private var frames: [UnsafeMutableRawPointer] = []
    @exclusivity(unchecked) private var frameOwner: [Int32] = []
    @exclusivity(unchecked) private var frameDirty: [Bool] = []
    @exclusivity(unchecked) private var frameUsed: [Bool] = []
    /// Per place: the frame holding it, or -1.
    @exclusivity(unchecked) private var frameOfPlace: [Int32] = []
    @exclusivity(unchecked) private var clockHand = 0

    /// Creates the file at `path` (replacing one an interrupted run left).
    /// - Throws: ``StoreError`` (`io`) when the file cannot be created.
    init(path: String, io: any FileIO, cachedPages: Int = PagedSlots.defaultCachedPages) throws(StoreError) {
        precondition(cachedPages >= 2, "a paged slot file needs at least two cached pages, not \(cachedPages)")
        self.io = io
        self.path = path
        self.cachedPages = cachedPages
        fd = try io.createMigrationFile(path, describedAs: "temporary index file")
    }

    /// A new, empty area.
    func makeArea() -> Int {
        pageTables.append([:])
        sortedPages.append([])
        lastPage.append((UInt64.max, -1))
        return pageTables.count - 1
    }

    /// Empties an area and gives its pages back for reuse.
    func clear(_ area: Int) {
        for place in pageTables[area].values {
            let frame = frameOfPlace[Int(place)]
            if frame >= 0 {
                frameOwner[Int(frame)] = -1
                frameDirty[Int(frame)] = false
                frameUsed[Int(frame)] = false
                frameOfPlace[Int(place)] = -1
            }
            freePlaces.append(place)
        }
        pageTables[area] = [:]
        sortedPages[area] = []
        lastPage[area] = (UInt64.max, -1)
    }

    // MARK: - Slots

    /// A slot's contents (empty when its page was never written).
    func slot(_ area: Int, _ index: UInt64) -> Slot {
        guard let place = place(area, index / Self.slotsPerPage, creating: false) else { return .empty }
        return frame(for: place).load(fromByteOffset: Int(index % Self.slotsPerPage) * 16, as: Slot.self)
    }

    /// Sets a slot.
    func setSlot(_ area: Int, _ index: UInt64, _ slot: Slot) {
        let place = place(area, index / Self.slotsPerPage, creating: true)!
        let frame = frame(for: place)
        frame.storeBytes(of: slot, toByteOffset: Int(index % Self.slotsPerPage) * 16, as: Slot.self)
        frameDirty[Int(frameOfPlace[Int(place)])] = true
    }

    /// The lowest index in `from...through` whose slot is not empty, or `nil`. Slots may be
    /// set between calls: a caller visiting an area in order asks again from the next index.
    func nextOccupied(_ area: Int, from: UInt64, through: UInt64) -> UInt64? {
        guard from <= through else { return nil }
        // Most calls find the next slot on the page of `from` (the page looked up last).
        let page = from / Self.slotsPerPage
        if let place = place(area, page, creating: false), let found = occupied(in: place, page: page, from: from, through: through) {
            return found
        }
        let pages = sortedPages[area]
        var k = lowerBound(pages, page + 1)
        while k < pages.count, pages[k] <= through / Self.slotsPerPage {
            if let found = occupied(in: pageTables[area][pages[k]]!, page: pages[k], from: from, through: through) { return found }
            k += 1
        }
        return nil
    }

    /// The lowest index in `from...through` on a page whose slot is not empty.
    private func occupied(in place: Int32, page: UInt64, from: UInt64, through: UInt64) -> UInt64? {
        let first = max(from, page * Self.slotsPerPage), last = min(through, page * Self.slotsPerPage + Self.slotsPerPage - 1)
        guard first <= last else { return nil }
        let frame = frame(for: place)
        var index = first
        while index <= last {
            if !frame.load(fromByteOffset: Int(index % Self.slotsPerPage) * 16, as: Slot.self).isEmpty { return index }
            index += 1
        }
        return nil
    }

    private func lowerBound(_ pages: [UInt64], _ page: UInt64) -> Int {
        var low = 0, high = pages.count
        while low < high {
            let middle = (low + high) / 2
            if pages[middle] < page { low = middle + 1 } else { high = middle }
        }
        return low
    }

    // MARK: - Pages

    /// The place in the file of an area's page; a page not yet placed gets a place when
    /// `creating` (its frame starts as zeros), and is `nil` otherwise.
    @inline(__always)
    private func place(_ area: Int, _ page: UInt64, creating: Bool) -> Int32? {
        if lastPage[area].page == page { return lastPage[area].place }
        if let place = pageTables[area][page] {
            lastPage[area] = (page, place)
            return place
        }
        guard creating else { return nil }
        let place: Int32
        if let reused = freePlaces.popLast() {
            place = reused
        } else {
            precondition(placeCount < Int32.max, "the migration's temporary index file outgrew \(Int32.max) pages")
            place = placeCount
            placeCount += 1
            frameOfPlace.append(-1)
        }
        pageTables[area][page] = place
        let pages = sortedPages[area]
        if pages.last.map({ $0 < page }) ?? true {
            sortedPages[area].append(page)
        } else {
            sortedPages[area].insert(page, at: lowerBound(pages, page))
        }
        lastPage[area] = (page, place)
        // A new page starts as zeros, whatever a reused place held before.
        let frame = takeFrame(for: place)
        frame.initializeMemory(as: UInt8.self, repeating: 0, count: Self.pageSize)
        frameDirty[Int(frameOfPlace[Int(place)])] = true
        return place
    }

    /// The frame holding a placed page, reading the page in when it is not cached.
    @inline(__always)
    private func frame(for place: Int32) -> UnsafeMutableRawPointer {
        let cached = frameOfPlace[Int(place)]
        if cached >= 0 {
            frameUsed[Int(cached)] = true
            return frames[Int(cached)]
        }
        let frame = takeFrame(for: place)
        let read: Result<Int, FileIOError> = Result { () throws(FileIOError) -> Int in
            try io.readFully(fd, into: UnsafeMutableRawBufferPointer(start: frame, count: Self.pageSize), at: offset(of: place))
        }
        switch read {
        case .success(let count) where count == Self.pageSize:
            break
        case .success(let count):
            // Only a failed write can leave a page short; that failure is already recorded.
            (frame + count).initializeMemory(as: UInt8.self, repeating: 0, count: Self.pageSize - count)
            if failure == nil {
                failure = StoreError(.corrupted, "the migration's temporary index file ends inside page \(place)", path: path,
                                     offset: offset(of: place) + Int64(count))
            }
        case .failure(let error):
            frame.initializeMemory(as: UInt8.self, repeating: 0, count: Self.pageSize)
            if failure == nil { failure = StoreError.io(error, "reading the migration's temporary index file") }
        }
        return frame
    }

    private func offset(of place: Int32) -> Int64 { Int64(place) * Int64(Self.pageSize) }

    /// A frame for `place`: a new one while the cache has room, otherwise the first the clock
    /// hand finds unused since it last passed (written back first if it changed).
    private func takeFrame(for place: Int32) -> UnsafeMutableRawPointer {
        let frame: Int
        if frames.count < cachedPages {
            frames.append(UnsafeMutableRawPointer.allocate(byteCount: Self.pageSize, alignment: 16))
            frameOwner.append(-1)
            frameDirty.append(false)
            frameUsed.append(false)
            frame = frames.count - 1
        } else {
            while frameUsed[clockHand] {
                frameUsed[clockHand] = false
                clockHand = (clockHand + 1) % frames.count
            }
            frame = clockHand
            clockHand = (clockHand + 1) % frames.count
            evict(frame)
        }
        frameOwner[frame] = place
        frameOfPlace[Int(place)] = Int32(frame)
        frameUsed[frame] = true
        frameDirty[frame] = false
        return frames[frame]
    }

    private func evict(_ frame: Int) {
        let owner = frameOwner[frame]
        guard owner >= 0 else { return }
        if frameDirty[frame] {
            do throws(FileIOError) {
                try io.writeAll(fd, UnsafeRawBufferPointer(start: frames[frame], count: Self.pageSize), at: offset(of: owner), path: path)
            } catch {
                if failure == nil { failure = StoreError.io(error, "writing the migration's temporary index file") }
            }
        }
        frameOfPlace[Int(owner)] = -1
        frameOwner[frame] = -1
    }

    /// Closes and removes the file (best effort: a file left behind is removed when the store
    /// is next opened for writing) and frees the cache.
    func remove() {
        guard !isClosed else { return }
        isClosed = true
        io.close(fd)
        try? io.remove(path)
        for frame in frames { frame.deallocate() }
        frames = []
        pageTables = []
        sortedPages = []
    }

    deinit { remove() }
}

extension FileIO {
    /// Creates one of a migration step's temporary files for reading and writing, first
    /// removing one an interrupted run left at `path`.
    /// - Throws: ``StoreError`` (`io`) naming the file by `what`.
    func createMigrationFile(_ path: String, describedAs what: String) throws(StoreError) -> FileDescriptor {
        if kind(of: path) != nil {
            do throws(FileIOError) { try remove(path) } catch {
                throw StoreError.io(error, "removing the \(what) of an interrupted migration")
            }
        }
        do throws(FileIOError) {
            return try open(path, access: .readWrite, creation: .createExclusive)
        } catch {
            throw StoreError.io(error, "creating the migration's \(what)")
        }
    }
}
