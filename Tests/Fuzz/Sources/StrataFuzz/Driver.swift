import Foundation

/// libFuzzer's driver (the fuzzer runtime's `main`, callable).
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The target libFuzzer calls with each input; set once, before the driver runs.
nonisolated(unsafe) private var fuzzedTarget: ((UnsafeRawBufferPointer) -> Void)?

/// Runs libFuzzer over `body` with the process's arguments; returns its exit status.
func runFuzzer(_ body: @escaping (UnsafeRawBufferPointer) -> Void) -> Int32 {
    fuzzedTarget = body
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in
        fuzzedTarget?(UnsafeRawBufferPointer(start: data, count: size))
        return 0
    }
}
