import Foundation
import Testing
@testable import Strata

/// The paged slot file behind a custom step's bookkeeping, against dictionaries, with caches
/// small enough that pages are written out and read back all the time.
///
/// The long synchronous checks run on threads of their own, not on the concurrency pool,
/// where they would keep other tests' tasks (some waiting on events with timeouts) from running.
@Suite struct PagedSlotsTests {
    @Test(arguments: [2, 3, 17])
    func slotsMatchADictionaryWhateverTheCacheSize(cachedPages: Int) async throws {
        try await onOwnThread { try Self.checkSlots(cachedPages: cachedPages) }
    }

    static func checkSlots(cachedPages: Int) throws {
        let io = InMemoryFileIO()
        try io.createDirectory("/s")
        let slots = try PagedSlots(path: "/s/index.tmp", io: io, cachedPages: cachedPages)
        var rng = SplitMix64(seed: UInt64(cachedPages))
        var models: [[UInt64: PagedSlots.Slot]] = []
        var areas: [Int] = []
        for _ in 0..<4 {
            areas.append(slots.makeArea())
            models.append([:])
        }
        for step in 0..<40_000 {
            let k = Int.random(in: 0..<areas.count, using: &rng)
            // Dense numbers, sparse ones far apart, and a few huge ones.
            let index: UInt64 = switch Int.random(in: 0..<10, using: &rng) {
            case 0: UInt64.random(in: 0..<(1 << 40), using: &rng)
            case 1...3: UInt64.random(in: 0..<200_000, using: &rng)
            default: UInt64.random(in: 0..<3_000, using: &rng)
            }
            switch Int.random(in: 0..<10, using: &rng) {
            case 0...4:
                let slot = PagedSlots.Slot(first: rng.next(), second: rng.next() | 1)
                slots.setSlot(areas[k], index, slot)
                models[k][index] = slot
            case 5...8:
                #expect(slots.slot(areas[k], index) == models[k][index] ?? .empty, "step \(step)")
            default:
                if step % 97 == 0 {
                    // An area emptied and made again gets its pages back, as zeros.
                    slots.clear(areas[k])
                    models[k] = [:]
                    #expect(slots.slot(areas[k], index) == .empty)
                }
            }
        }
        #expect(slots.failure == nil)
        for (k, area) in areas.enumerated() {
            for (index, slot) in models[k] { #expect(slots.slot(area, index) == slot) }
            // Visiting in order finds exactly the model's indexes.
            var visited: [UInt64] = []
            var from: UInt64 = 0
            while let next = slots.nextOccupied(area, from: from, through: UInt64.max - 1) {
                visited.append(next)
                from = next + 1
            }
            #expect(visited == models[k].keys.sorted())
            let bounded = models[k].keys.filter { $0 >= 100 && $0 <= 2_500 }.sorted()
            var inRange: [UInt64] = []
            from = 100
            while let next = slots.nextOccupied(area, from: from, through: 2_500) {
                inRange.append(next)
                from = next + 1
            }
            #expect(inRange == bounded)
        }
        slots.remove()
        #expect(io.kind(of: "/s/index.tmp") == nil)
    }

    @Test func aFailedReadIsRecordedAndReadsAsEmpty() throws {
        let base = InMemoryFileIO()
        try base.createDirectory("/s")
        // Fail the first read of the file: a page written out and needed again.
        let faulty = FaultInjectingFileIO(wrapping: base, faults: [.init(callIndex: 0, kind: .error(EIO), operations: [.read])])
        let slots = try PagedSlots(path: "/s/index.tmp", io: faulty, cachedPages: 2)
        let area = slots.makeArea()
        for page in 0..<3 { slots.setSlot(area, UInt64(page) * PagedSlots.slotsPerPage, .init(first: 1, second: 2)) }
        #expect(slots.failure == nil)
        #expect(slots.slot(area, 0) == .empty)
        let failure = try #require(slots.failure)
        #expect(failure.code == .io && "\(failure)".contains("reading the migration's temporary index file"), "\(failure)")
    }

    @Test func uniqueValuesMatchAMultimapWhateverTheKeys() async throws {
        try await onOwnThread { try Self.checkUniqueValues() }
    }

    static func checkUniqueValues() throws {
        let io = InMemoryFileIO()
        try io.createDirectory("/u")
        let slots = try PagedSlots(path: "/u/index.tmp", io: io, cachedPages: 3)
        var rng = SplitMix64(seed: 7)
        // Each kind of key: ints in order, ints far apart (strided by a power of two), random
        // ints, and strings (compared by hash, confirmed against the model's holder values).
        let makers: [(Int) -> Value] = [
            { .int(Int64($0)) },
            { .int(Int64($0) << 10) },
            { .int(Int64(bitPattern: SplitMix64(seed: UInt64($0)).nextValue)) },
            { .string("key \($0 % 3_000)") },
        ]
        for (kind, make) in makers.enumerated() {
            var index = UniqueValueIndex(slots: slots, expected: 100)  // grows several times
            var holds: [UInt64: Value] = [:]  // object number → the value it holds
            var holders: [Value: Set<UInt64>] = [:]  // and back
            var next: UInt64 = 1
            for step in 0..<12_000 {
                switch Int.random(in: 0..<10, using: &rng) {
                case 0...5:
                    // A new object; one in twenty repeats a value held already.
                    let value = step % 20 == 0 && !holds.isEmpty ? holds.values.randomElement(using: &rng)! : make(step)
                    index.insert(value, next)
                    holds[next] = value
                    holders[value, default: []].insert(next)
                    next += 1
                case 6:
                    // An object's value changes.
                    guard let (number, old) = holds.randomElement(using: &rng) else { continue }
                    let value = make(step + 100_000)
                    index.remove(old, number)
                    index.insert(value, number)
                    holds[number] = value
                    holders[old]!.remove(number)
                    holders[value, default: []].insert(number)
                default:
                    let value = Bool.random(using: &rng) || holds.isEmpty ? make(Int.random(in: 0..<14_000, using: &rng))
                        : holds.values.randomElement(using: &rng)!
                    let expected = (holders[value] ?? []).sorted()
                    let found = index.holders(of: value) { holds[$0] == value }
                    #expect(found.sorted() == expected, "kind \(kind), step \(step), \(value)")
                }
            }
            for (number, value) in holds.prefix(500) {
                #expect(index.holders(of: value, known: number) { holds[$0] == value }.contains(number))
            }
        }
        #expect(slots.failure == nil)
    }
}

private extension SplitMix64 {
    /// The generator's next value.
    var nextValue: UInt64 {
        var copy = self
        return copy.next()
    }
}
