import CaretakerCore
import Foundation

/// What `/proc` says about a running process (Linux): the one reader of the tests
/// (`DaemonProcess.cpuTime`, the daemon tests' RSS and wake-ups) and of the scripts,
/// which run it as `caretaker-testkit` (the bench's M1 and W1, the soak's RSS).
/// Sizes are in KiB, as `/proc` gives them.
public struct ProcessStatistics: Sendable {
    public let pid: pid_t

    public init(pid: pid_t) {
        self.pid = pid
    }

    /// The number after `name:` in `/proc/PID/status` (`VmRSS`, `voluntary_ctxt_switches`, …).
    public func status(_ name: String) throws -> Int {
        guard let value = Self.field(name, in: try read("status")) else {
            throw ProcessStatisticsError(description: "no \(name) in /proc/\(pid)/status")
        }
        return value
    }

    /// The number after `name:` in a `status` file (a unit such as `kB` after it is ignored).
    private static func field(_ name: String, in status: String) -> Int? {
        let line = status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
        return line?.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
    }

    /// CPU time (user + system, all threads) the process used so far, from `/proc/PID/stat`.
    public func cpuTime() throws -> Duration {
        let stat = try read("stat")
        // Fields after "(comm)": state is field 3; utime and stime are fields 14 and 15.
        guard let afterName = stat.lastIndex(of: ")") else {
            throw ProcessStatisticsError(description: "/proc/\(pid)/stat has no command name")
        }
        let fields = stat[stat.index(after: afterName)...].split(separator: " ")
        guard fields.count > 12, let user = Int64(fields[11]), let system = Int64(fields[12]) else {
            throw ProcessStatisticsError(description: "/proc/\(pid)/stat has no utime and stime")
        }
        let ticks = Int64(sysconf(Int32(_SC_CLK_TCK)))
        return .microseconds((user + system) * 1_000_000 / max(ticks, 1))
    }

    /// A process's memory, in KiB.
    public struct Memory: Sendable {
        /// Resident, proportional (shared pages split among their users) and unique
        /// (`Private_Clean` + `Private_Dirty`) set sizes, from `smaps_rollup`.
        public var rss, pss, uss: Int
        public var privateDirty, anonymous: Int
        /// The peak resident size (`VmHWM` in `status`).
        public var peakRSS: Int
        public var threads: Int
    }

    /// The process's memory now (`smaps_rollup`, `status` and the thread count).
    public func memory() throws -> Memory {
        var fields: [Substring: Int] = [:]
        for line in try read("smaps_rollup").split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            if parts.count >= 3, parts[0].hasSuffix(":"), parts[2] == "kB", let value = Int(parts[1]) {
                fields[parts[0].dropLast()] = value
            }
        }
        let threads = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").count
        return Memory(
            rss: fields["Rss", default: 0], pss: fields["Pss", default: 0],
            uss: fields["Private_Clean", default: 0] + fields["Private_Dirty", default: 0],
            privateDirty: fields["Private_Dirty", default: 0], anonymous: fields["Anonymous", default: 0],
            peakRSS: try status("VmHWM"), threads: threads)
    }

    /// The `count` files (or `[heap]`, `[anonymous]`, …) whose mappings hold the most
    /// resident memory, most first (equal sizes in the order of their first mapping),
    /// with how much of it no other process maps.
    public func largestMappings(_ count: Int) throws -> [(name: String, residentKiB: Int, privateKiB: Int)] {
        var totals: [(name: String, residentKiB: Int, privateKiB: Int)] = []
        var position: [String: Int] = [:]
        for mapping in ProcessMapping.parse(try read("smaps")) {
            let name = mapping.path.isEmpty ? "[anonymous]" : String(mapping.path)
            if position[name] == nil {
                position[name] = totals.count
                totals.append((name, 0, 0))
            }
            totals[position[name]!].residentKiB += mapping.residentBytes / 1024
            totals[position[name]!].privateKiB += mapping.privateBytes / 1024
        }
        let ranked = totals.enumerated().sorted {
            ($0.element.residentKiB, $1.offset) > ($1.element.residentKiB, $0.offset)
        }
        return ranked.prefix(count).map(\.element)
    }

    /// `voluntary_ctxt_switches` of each thread, by thread id (a thread that ends while
    /// they are read is left out).
    public func voluntarySwitchesByThread() throws -> [String: Int] {
        var switches: [String: Int] = [:]
        for thread in try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") {
            guard let text = try? read("task/\(thread)/status") else { continue }
            if let value = Self.field("voluntary_ctxt_switches", in: text) { switches[thread] = value }
        }
        return switches
    }

    /// The whole file, read to its end (`/proc` files claim size 0, so a reader that
    /// trusts the size gets only the first page).
    private func read(_ file: String) throws -> String {
        let path = "/proc/\(pid)/\(file)"
        guard let handle = FileHandle(forReadingAtPath: path), let data = try? handle.readToEnd() else {
            throw ProcessStatisticsError(description: "cannot read \(path) (has the process exited?)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}

public struct ProcessStatisticsError: Error, CustomStringConvertible {
    public let description: String
}
