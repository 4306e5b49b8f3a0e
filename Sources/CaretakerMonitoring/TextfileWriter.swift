import CaretakerSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Replaces a file atomically: writes a temporary file beside it, then renames
/// it over the old one, so node_exporter's textfile collector never reads half a file.
enum TextfileWriter {
    static func write(_ bytes: [UInt8], to path: String) throws(MonitoringError) {
        let slash = path.lastIndex(of: "/") ?? path.startIndex
        let temporary = String(path[...slash]) + ".caretaker-\(getpid()).prom.tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw MonitoringError("cannot write [metrics] textfile \(path): \(temporary): \(SystemError.lastMessage())")
        }
        // Readable by node_exporter whatever the umask (the unit sets 0077): metrics hold no secret.
        fchmod(fd, 0o644)
        var offset = 0
        let complete = bytes.withUnsafeBytes { raw -> Bool in
            while offset < raw.count {
                let written = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
        let reason = SystemError.lastMessage()
        close(fd)
        guard complete, rename(temporary, path) == 0 else {
            let problem = complete ? SystemError.lastMessage() : reason
            unlink(temporary)
            throw MonitoringError("cannot write [metrics] textfile \(path): \(problem)")
        }
    }
}
