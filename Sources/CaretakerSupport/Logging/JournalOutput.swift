import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// journald's native protocol: one datagram per entry to `/run/systemd/journal/socket`,
/// each field `NAME=value\n` (or `NAME\n`, a 64-bit little-endian length and the value
/// when it spans lines), so that `journalctl JOB=NAME STATUS=failed` finds runs.
///
/// Used only when stderr is the journal's stream (`$JOURNAL_STREAM` names stderr's
/// device and inode, as systemd.exec(5) says to check); a message the socket refuses
/// (too large, journald gone) goes to stderr as a line instead, so nothing is lost.
public final class JournalOutput: Sendable {
    public static let socketPath = "/run/systemd/journal/socket"
    private let descriptor: Int32
    /// `SYSLOG_IDENTIFIER`: the program's name (`caretaker`, `caretaker-dashboard`).
    let identifier: String

    private init(descriptor: Int32, identifier: String) {
        self.descriptor = descriptor
        self.identifier = identifier
    }

    deinit { close(descriptor) }

    /// The journal's socket when stderr goes to the journal, else nil.
    public static func open(
        identifier: String, environment: [String: String], socketPath: String = socketPath
    ) -> JournalOutput? {
        guard let stream = environment["JOURNAL_STREAM"], stderrIsStream(stream) else { return nil }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(socketPath.utf8)
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            return nil
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path)
            raw[path.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return JournalOutput(descriptor: fd, identifier: identifier)
    }

    /// `JOURNAL_STREAM` is `DEVICE:INODE` of the stream journald reads; stderr may have
    /// been redirected since (a shell under the service), then it is not the journal.
    static func stderrIsStream(_ value: String) -> Bool {
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var status = stat()
        guard fstat(2, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }

    /// Sends one entry; false when the journal did not take it.
    func deliver(_ fields: [(String, String)]) -> Bool {
        let entry = Self.encode(fields)
        let sent = entry.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return sent == entry.count
    }

    static func encode(_ fields: [(String, String)]) -> [UInt8] {
        var entry: [UInt8] = []
        entry.reserveCapacity(fields.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + 2 })
        for (name, value) in fields {
            entry += name.utf8
            if value.utf8.contains(10) {
                entry.append(10)
                var length = UInt64(value.utf8.count).littleEndian
                withUnsafeBytes(of: &length) { entry += $0 }
            } else {
                entry.append(UInt8(ascii: "="))
            }
            entry += value.utf8
            entry.append(10)
        }
        return entry
    }

    /// The entry's fields: `MESSAGE` (the line as on stderr, without time: `-o cat` reads
    /// as before), `PRIORITY`, `SYSLOG_IDENTIFIER`, `CODE_FILE`/`CODE_LINE`/`CODE_FUNC`, and
    /// each key of the line as a field of its name in capitals (`job` → `JOB`,
    /// `run_id` → `RUN_ID`, `duration_ms` → `DURATION_MS`), a run's counters with
    /// `STAT_` in front (`posts_deleted` → `STAT_POSTS_DELETED`).
    func fields(
        message: String, priority: Int, metadata: [(String, Logger.MetadataValue)], file: String, line: UInt,
        function: String
    ) -> [(String, String)] {
        var fields: [(String, String)] = [
            ("MESSAGE", message), ("PRIORITY", "\(priority)"), ("SYSLOG_IDENTIFIER", identifier),
            ("CODE_FILE", file), ("CODE_LINE", "\(line)"), ("CODE_FUNC", function),
        ]
        for (key, value) in metadata {
            var isStat = false
            if case .stringConvertible(let convertible) = value, convertible is JobStatValue { isStat = true }
            fields.append(((isStat ? "STAT_" : "") + Self.fieldName(key), "\(value)"))
        }
        return fields
    }

    /// A journal field name: capitals, digits and `_`, not starting with `_` (those are
    /// journald's trusted fields) or a digit, at most 64 characters.
    static func fieldName(_ key: String) -> String {
        var name = String(
            key.uppercased().unicodeScalars.map {
                ("A"..."Z").contains($0) || ("0"..."9").contains($0) ? Character($0) : "_"
            })
        if let first = name.unicodeScalars.first, first == "_" || ("0"..."9").contains(first) {
            name = "F" + name
        }
        return String(name.prefix(64))
    }
}

/// A run's counter in a log entry's metadata: printed as the number, and sent to the
/// journal as `STAT_<NAME>`, apart from the entry's other keys.
public struct JobStatValue: CustomStringConvertible, Sendable {
    public let value: Int
    public init(_ value: Int) { self.value = value }
    public var description: String { "\(value)" }
}
