import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What the figures were measured on.
struct MachineDescription: Codable {
    var processors: Int
    var cpuModel: String
    var memoryGiB: Double
    var operatingSystem: String
    /// The file system and device holding the test directory (from `/proc/self/mountinfo`).
    var testFileSystem: String
    /// Whether the test directory is on the same file system as the working directory.
    var sameFileSystemAsWorkingDirectory: Bool
    var compiler: String

    static func describe(testDirectory: String) -> MachineDescription {
        MachineDescription(
            processors: ProcessInfo.processInfo.activeProcessorCount,
            cpuModel: cpuModel(),
            memoryGiB: (Double(ProcessInfo.processInfo.physicalMemory) / Double(1 << 30) * 10).rounded() / 10,
            operatingSystem: ProcessInfo.processInfo.operatingSystemVersionString,
            testFileSystem: fileSystem(of: testDirectory),
            sameFileSystemAsWorkingDirectory: device(of: testDirectory) == device(of: FileManager.default.currentDirectoryPath),
            compiler: compilerVersion)
    }

    var summary: String {
        """
        machine: \(processors) processors, \(cpuModel), \(memoryGiB) GiB memory, \(operatingSystem)
        test file system: \(testFileSystem) (same as the working directory: \(sameFileSystemAsWorkingDirectory ? "yes" : "no"))
        compiler: \(compiler)
        """
    }

    private static func cpuModel() -> String {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "unknown CPU" }
        for line in text.split(separator: "\n") where line.hasPrefix("model name") {
            if let colon = line.firstIndex(of: ":") {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return "unknown CPU"
    }

    private static func device(of path: String) -> UInt64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return UInt64(info.st_dev)
    }

    /// "ext4 on /dev/vda (mounted at /)" for the mount holding `path`, found by device number.
    private static func fileSystem(of path: String) -> String {
        guard let dev = device(of: path),
              let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
        else { return "unknown" }
        let major = ((dev >> 8) & 0xFFF) | ((dev >> 32) & ~UInt64(0xFFF))
        let minor = (dev & 0xFF) | ((dev >> 12) & ~UInt64(0xFF))
        for line in text.split(separator: "\n") {
            // id parent major:minor root mountpoint options [optional...] - fstype source superoptions
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count > 4, fields[2] == "\(major):\(minor)", let dash = fields.firstIndex(of: "-"),
                  dash + 2 < fields.count
            else { continue }
            return "\(fields[dash + 1]) on \(fields[dash + 2]) (mounted at \(fields[4]))"
        }
        return "device \(major):\(minor)"
    }

    private static var compilerVersion: String {
        #if compiler(>=6.4)
        "Swift 6.4 or later"
        #elseif compiler(>=6.3)
        "Swift 6.3"
        #elseif compiler(>=6.2)
        "Swift 6.2"
        #else
        "Swift before 6.2"
        #endif
    }
}

/// The 1-, 5- and 15-minute load averages, as `/proc/loadavg` gives them.
func loadAverage() -> String {
    guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "unknown" }
    return text.split(separator: " ").prefix(3).joined(separator: " ")
}
