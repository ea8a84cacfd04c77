import Foundation
import Testing
@testable import Strata

/// JSONParser.maximumDepth (512) is meant to refuse nesting "rather than risking the stack",
/// and the JSON Lines importer parses on a DispatchQueue.global() worker (512 KiB stacks on
/// Darwin). In a debug build each level costs > 2 KiB, so the deepest accepted document
/// overflows a 512 KiB stack: SIGSEGV. (PredicateFormatTests holds the predicate parser to
/// the same 512 KiB standard.) NOTE: on failure this crashes the test process; run alone.
@Suite struct JSONSmallStackTests {
    @Test("the deepest JSON the parser accepts parses on a thread with a 512 KiB stack")
    func smallStack() async {
        let half = JSONParser.maximumDepth / 2
        let text = String(repeating: #"{"a":["#, count: half) + String(repeating: "]}", count: half)
        let parsed = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let thread = Thread {
                continuation.resume(returning: (try? JSON.parse(text)) != nil)
            }
            thread.stackSize = 512 * 1024
            thread.start()
        }
        #expect(parsed)
    }
}
