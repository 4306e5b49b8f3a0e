#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Lets go of the executable's code pages while the daemon idles (low-footprint mode).
///
/// Start-up and a job run touch code spread over the whole binary, and the
/// kernel keeps those pages mapped into the process for good, even if nothing
/// runs for an hour. `MADV_DONTNEED` on the read-only, executable mapping of our
/// own binary drops them from this process; they stay in the page cache and are
/// mapped back on the next use (a minor fault each). Only `r-xp` mappings of the
/// executable are touched: code is never written, so nothing is lost.
enum ResidentCode {
    /// Releases the executable's code pages; returns how many bytes were advised.
    @discardableResult
    static func release() -> Int {
        #if os(Linux)
        guard let executable = executablePath(), let maps = try? TextFile.read("/proc/self/maps") else { return 0 }
        var released = 0
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "r-xp", fields[5] == executable else { continue }
            let bounds = fields[0].split(separator: "-")
            guard bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16),
                  let address = UnsafeMutableRawPointer(bitPattern: start) else { continue }
            if madvise(address, Int(end - start), MADV_DONTNEED) == 0 { released += Int(end - start) }
        }
        return released
        #else
        return 0
        #endif
    }

    private static func executablePath() -> Substring? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return Substring(String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}
