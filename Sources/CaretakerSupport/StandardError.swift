#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Unbuffered writes to file descriptor 2 (Foundation's `FileHandle.standardError`
/// is not in FoundationEssentials).
public enum StandardError {
    /// Writes `text` whole, retrying after interrupts and partial writes; a failure
    /// (a closed stderr) is ignored, as there is nowhere left to report it.
    public static func write(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { systemWrite(2, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            bytes = bytes.dropFirst(written)
        }
    }
}

/// The C library's `write(2)`, named apart from `StandardError.write(_:)`.
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    write(fd, buffer, count)
}
