// swift-tools-version: 6.2
import PackageDescription

// libFuzzer over the journal's reading side (`FuzzTargets`), built apart from the
// main package because it links libFuzzer's driver. Build and run them with
// `Tests/Fuzz/run`, which instruments every module (Strata's too) for the fuzzer.

let package = Package(
    name: "StrataFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "Strata", path: "../..")],
    targets: [
        .executableTarget(name: "strata-fuzz", dependencies: [.product(name: "Strata", package: "Strata")], path: "Sources/StrataFuzz"),
    ],
    swiftLanguageModes: [.v6]
)
