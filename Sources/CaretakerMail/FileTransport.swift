import CaretakerMailFormat
import CaretakerSupport

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes each message as an RFC 5322 `.eml` file into a directory, for
/// development and demos (`[mail] transport = "file"`).
///
/// Files are named `<UTC timestamp>-<message-id>.eml`, have mode 0600 (they hold
/// temporary passwords), and appear atomically: the message is written to a
/// hidden temporary name, flushed, then renamed, so a reader never sees half a
/// message.
public struct FileTransport: MailTransport {
    /// The directory the `.eml` files go to; created (mode 0700) if missing.
    public let directory: String

    public init(directory: String) {
        self.directory = directory
    }

    public func send(_ message: MailMessage) throws(MailError) {
        try revalidateAddresses(of: message)
        try ensureDirectory()
        let name = Self.fileName(for: message)
        let temporary = "\(directory)/.\(name).tmp"
        let final = "\(directory)/\(name)"
        try writeFile(message.rendered(), to: temporary)
        guard rename(temporary, final) == 0 else {
            let error = Self.ioError("could not rename \(temporary) to \(final)")
            unlink(temporary)
            throw error
        }
    }

    /// `20240305T090405.123Z-<message-id>.eml`, with characters that do not
    /// belong in a file name replaced by `_`.
    static func fileName(for message: MailMessage) -> String {
        let milliseconds = Int64((message.date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        let stamp =
            pad(Int64(parts.tm_year) + 1900, 4) + pad(Int64(parts.tm_mon) + 1, 2) + pad(Int64(parts.tm_mday), 2)
            + "T" + pad(Int64(parts.tm_hour), 2) + pad(Int64(parts.tm_min), 2) + pad(Int64(parts.tm_sec), 2)
            + "." + pad(milliseconds % 1000, 3) + "Z"
        let safeID = String(
            message.messageID.map { character -> Character in
                character.isASCII && (character.isLetter || character.isNumber || "@.-_+".contains(character))
                    ? character : "_"
            })
        return "\(stamp)-\(safeID).eml"
    }

    private func ensureDirectory() throws(MailError) {
        var info = stat()
        if stat(directory, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw MailError(.io, "mail directory \(directory) is not a directory")
            }
            return
        }
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw MailError(.io, "could not create mail directory \(directory)")
        }
    }

    /// Creates `path` exclusively with mode 0600, writes all of `bytes`, fsyncs.
    private func writeFile(_ bytes: [UInt8], to path: String) throws(MailError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.ioError("could not create \(path)") }
        // The umask can only remove bits, but be explicit: these files hold passwords.
        fchmod(fd, 0o600)
        var written = 0
        var failure: MailError?
        bytes.withUnsafeBytes { buffer in
            while written < buffer.count {
                let result = write(fd, buffer.baseAddress! + written, buffer.count - written)
                if result < 0 {
                    if errno == EINTR { continue }
                    failure = Self.ioError("could not write \(path)")
                    return
                }
                written += result
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = Self.ioError("could not flush \(path)") }
        close(fd)
        if let failure {
            unlink(path)
            throw failure
        }
    }

    private static func ioError(_ what: String) -> MailError {
        MailError(.io, "\(what): \(SystemError.lastMessage())")
    }
}
