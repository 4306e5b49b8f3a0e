#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Failures of C library calls, described the way the OS does ("No such file or directory").
public enum SystemError {
    /// The C library's text for the error number `code` (`strerror`).
    public static func message(_ code: Int32) -> String {
        String(cString: strerror(code))
    }

    /// The text for the current `errno`; call it right after the failing call.
    public static func lastMessage() -> String {
        message(errno)
    }
}

/// Reads whole text files with POSIX calls (FoundationEssentials' readers report
/// errors as `CocoaError`s whose text is not the OS's).
package enum TextFile {
    /// Why a file could not be read: the OS's reason, or "not valid UTF-8".
    package struct ReadError: Error, CustomStringConvertible {
        package let description: String
    }

    /// The contents of the regular file at `path` as UTF-8 text.
    /// - Throws: `ReadError` with the OS's reason ("No such file or directory"), or
    ///   "not a regular file" for a FIFO, device or directory, which could block or never end.
    package static func read(_ path: String) throws(ReadError) -> String {
        // O_NONBLOCK: opening a FIFO would otherwise wait for a writer. It changes nothing for regular files.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw ReadError(description: SystemError.lastMessage()) }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw ReadError(description: SystemError.lastMessage()) }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw ReadError(description: "not a regular file (a FIFO, device or directory)")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ReadError(description: SystemError.lastMessage())
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[..<count])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ReadError(description: "the file is not valid UTF-8 text")
        }
        return text
    }
}

/// The C library's `read(2)`, named apart from `TextFile.read(_:)`.
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}
