// swift-tools-version: 6.2
import PackageDescription

/// Settings every target shares: Swift 6 language mode (complete strict
/// concurrency) plus the upcoming features the project has adopted.
let sharedSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "Strata",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Strata", targets: ["Strata"]),
        .executable(name: "strata", targets: ["strata"]),
        .executable(name: "sandbox", targets: ["sandbox"]),
    ],
    targets: [
        .target(name: "Strata"),
        .target(name: "StrataCommand", dependencies: ["Strata"]),
        .executableTarget(name: "strata", dependencies: ["StrataCommand"]),
        .executableTarget(name: "sandbox", dependencies: ["Strata"], path: "Sandbox"),
        .executableTarget(
            name: "strata-journal-writer", dependencies: ["Strata"], path: "Tests/JournalWriter"),
        .executableTarget(
            name: "strata-benchmarks", dependencies: ["Strata"], path: "Benchmarks",
            exclude: ["README.md", "Queries/sqlite_compare.py", "Store/sqlite_bulk_commit.py", "import_compare.py", "Journal/group_commit_model.c",
                      "Store/sqlite_bulk_commit.c", "Queries/sqlite_fetch.c"]),
        .testTarget(
            name: "StrataTests",
            dependencies: ["Strata", "StrataCommand"],
            resources: [.copy("Fixtures")]),
        // The public API as an application sees it: `import Strata`, nothing more.
        .testTarget(name: "StrataAPITests", dependencies: ["Strata"]),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + sharedSettings
}
