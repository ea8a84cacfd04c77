import Foundation
import Strata

// libFuzzer drives one of `FuzzTargets`'s targets, named by `STRATA_FUZZ_TARGET`: `open`
// (opening the store each input describes), `decode` (decoding each input as a transaction
// payload), `json` (parsing each input as JSON) or `import` (importing each input as JSON
// Lines into a small store). With `STRATA_FUZZ_SEEDS` set, that target's seed inputs are written
// into the directory it names first.
let environment = ProcessInfo.processInfo.environment
let seeds = FuzzTargets.seedInputs()
let (chosen, seedInputs): ((UnsafeRawBufferPointer) -> Void, [[UInt8]])
switch environment["STRATA_FUZZ_TARGET"] {
case "open": (chosen, seedInputs) = (FuzzTargets.openStore, seeds.open)
case "decode": (chosen, seedInputs) = (FuzzTargets.decodeTransaction, seeds.decode)
case "json": (chosen, seedInputs) = (FuzzTargets.parseJSON, seeds.json)
case "import": (chosen, seedInputs) = (FuzzTargets.importLines, seeds.importLines)
default:
    FileHandle.standardError.write(Data("strata-fuzz: set STRATA_FUZZ_TARGET to open, decode, json or import (Tests/Fuzz/run does)\n".utf8))
    exit(2)
}
if let directory = environment["STRATA_FUZZ_SEEDS"] {
    for (index, seed) in seedInputs.enumerated() {
        _ = FileManager.default.createFile(atPath: "\(directory)/seed-\(index)", contents: Data(seed))
    }
}
exit(runFuzzer(chosen))
