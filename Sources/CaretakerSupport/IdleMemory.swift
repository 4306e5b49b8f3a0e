#if canImport(Glibc)
import CMalloc
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Hands memory back to the kernel while the daemon idles (low-footprint mode).
///
/// Start-up and job runs touch code and read-only data spread over the executable
/// and its shared libraries, and the kernel keeps every such page mapped into the
/// process until it exits, even if nothing runs for an hour. While idle we:
/// - drop our mappings of clean, read-only pages of the executable and shared
///   libraries with `MADV_DONTNEED`. Only mappings that are not writable and hold
///   no anonymous (copied-on-write) page are touched, so nothing is lost: the pages
///   stay in the page cache, shared with other processes, and the next run maps
///   them back with a minor fault each;
/// - page out the clean pages of writable mappings of those files (`.data` that
///   was read but never written). `/proc/self/pagemap` tells them from the pages
///   we wrote, and `MADV_PAGEOUT` never discards data, even if one is written
///   meanwhile;
/// - return free heap memory to the system (`malloc_trim`).
package enum IdleMemory {
    /// Call it last before a long sleep: every code page that runs after it is
    /// mapped back, and the kernel maps a fault's neighbours with it (64 KiB), so
    /// even a little code after the release costs far more than it touches. For the
    /// same reason nothing is freed after the first `madvise`: freeing runs the Swift
    /// runtime's and the allocator's code, spread over the executable.
    package static func release() {
        #if os(Linux)
        withUnsafeTemporaryAllocation(of: Advice.self, capacity: maximumAdvice) { buffer in
            // `plan` returns once every array it made is freed.
            let count = plan(into: buffer)
            #if canImport(Glibc)
            malloc_trim(0)
            #endif
            for index in 0..<count {
                let item = buffer[index]
                _ = madvise(
                    UnsafeMutableRawPointer(bitPattern: item.start), item.length,
                    item.drop ? MADV_DONTNEED : MADV_PAGEOUT)
            }
        }
        #endif
    }

    /// Advice beyond this many ranges is not given: the daemon has about 150 mappings to
    /// drop (they come first) and a few runs of clean pages in each of its 40 writable
    /// ones. The buffer is on the stack, and the calls below it run deeper by its size
    /// (stack pages they dirty count as the daemon's memory too), so it is not larger.
    static let maximumAdvice = 512

    /// Writes the advice into `buffer` and returns how many: drop the releasable
    /// mappings, page out the clean file pages of the writable ones.
    static func plan(into buffer: UnsafeMutableBufferPointer<Advice>) -> Int {
        let mappings = (try? TextFile.read("/proc/self/smaps")).map(ProcessMapping.parse) ?? []
        let advice =
            mappings.filter(\.isReleasable).map { Advice(start: $0.start, length: Int($0.end - $0.start), drop: true) }
            + mappings.filter(\.hasCleanFilePages).flatMap { cleanFilePages(in: $0) }
        let count = min(advice.count, buffer.count)
        for index in 0..<count { buffer[index] = advice[index] }
        return count
    }

    /// One `madvise` call: drop the range from our page tables, or page it out.
    struct Advice {
        var start: UInt
        var length: Int
        var drop: Bool
    }

    /// Runs of present, file-backed (never written) pages of a writable private
    /// mapping, from `/proc/self/pagemap` (bit 63: present, bit 61: file page).
    private static func cleanFilePages(in mapping: ProcessMapping) -> [Advice] {
        let pageSize = UInt(sysconf(Int32(_SC_PAGESIZE)))
        let pages = Int((mapping.end - mapping.start) / pageSize)
        let fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)
        guard fd >= 0, pages > 0 else { return [] }
        defer { close(fd) }
        var entries = [UInt64](repeating: 0, count: pages)
        let offset = off_t(mapping.start / pageSize) * 8
        let read = entries.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
        guard read == pages * 8 else { return [] }
        var runs: [Advice] = []
        for (index, entry) in entries.enumerated() where entry & (1 << 63) != 0 && entry & (1 << 61) != 0 {
            let address = mapping.start + UInt(index) * pageSize
            if let last = runs.last, last.start + UInt(last.length) == address {
                runs[runs.count - 1].length += Int(pageSize)
            } else {
                runs.append(Advice(start: address, length: Int(pageSize), drop: false))
            }
        }
        return runs
    }
}

/// One entry of `/proc/self/smaps`: the header line and the counters we need (the test
/// support's `ProcessStatistics` reads other processes' smaps with it too).
public struct ProcessMapping: Equatable, Sendable {
    var start: UInt
    var end: UInt
    /// `r-xp`, `r--p`, `rw-p`, …
    var permissions: Substring
    /// The file, `[heap]`, `[stack]`, …; empty for anonymous memory.
    public var path: Substring
    public var residentBytes = 0
    var anonymousBytes = 0
    /// `Private_Clean` + `Private_Dirty`: pages no other process maps.
    public var privateBytes = 0

    /// Code and read-only data of an ELF object (the executable or a `.so`) with no
    /// private copy of any page: dropping it loses nothing.
    var isReleasable: Bool {
        (permissions == "r-xp" || permissions == "r--p") && anonymousBytes == 0 && residentBytes > 0 && isObjectFile
    }

    /// A file on disk, not a device, a memfd or a file deleted since it was mapped.
    private var isObjectFile: Bool {
        path.hasPrefix("/") && !path.hasPrefix("/dev/") && !path.hasPrefix("/memfd:") && !path.hasSuffix(" (deleted)")
    }

    /// A writable private mapping of an ELF object that holds pages read from the
    /// file and never written (its `.data`): those can be paged out.
    var hasCleanFilePages: Bool {
        permissions == "rw-p" && residentBytes > anonymousBytes && isObjectFile
    }

    /// Parses `/proc/PID/smaps`: a header per mapping (`start-end perms offset dev
    /// inode [path]`), then `Name: value kB` lines.
    public static func parse(_ text: String) -> [ProcessMapping] {
        var mappings: [ProcessMapping] = []
        for line in text.split(separator: "\n") {
            if let header = header(line) {
                mappings.append(header)
            } else if !mappings.isEmpty, let (name, kilobytes) = counter(line) {
                if name == "Rss" { mappings[mappings.count - 1].residentBytes = kilobytes * 1024 }
                if name == "Anonymous" { mappings[mappings.count - 1].anonymousBytes = kilobytes * 1024 }
                if name == "Private_Clean" || name == "Private_Dirty" {
                    mappings[mappings.count - 1].privateBytes += kilobytes * 1024
                }
            }
        }
        return mappings
    }

    private static func header(_ line: Substring) -> ProcessMapping? {
        let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
        guard fields.count >= 5, !fields[0].hasSuffix(":") else { return nil }
        let bounds = fields[0].split(separator: "-")
        guard bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16) else {
            return nil
        }
        let path = fields.count == 6 ? fields[5].drop { $0 == " " } : ""
        return ProcessMapping(start: start, end: end, permissions: fields[1], path: path)
    }

    private static func counter(_ line: Substring) -> (Substring, Int)? {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count == 3, fields[2] == "kB", fields[0].hasSuffix(":"), let value = Int(fields[1]) else {
            return nil
        }
        return (fields[0].dropLast(), value)
    }
}
