#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A time zone read from the system tz database (`/usr/share/zoneinfo/NAME`), with
/// just what the scheduler needs: the UTC offset in force at an instant.
///
/// FoundationEssentials' `TimeZone` knows only fixed offsets (the real zones live in
/// ICU, which the shipped binary does not link), so caretaker reads the TZif files
/// itself: version 1 files with 32-bit transition times, version 2 and later with
/// 64-bit ones and the POSIX TZ footer (`CET-1CEST,M3.5.0,M10.5.0/3`) that gives the
/// offsets after the last listed transition. See RFC 8536.
///
/// Two values are equal when they have the same identifier.
public struct ZoneInfo: Sendable, Hashable, CustomStringConvertible {
    /// The IANA name the zone was loaded as ("Europe/Berlin", "UTC").
    public let identifier: String
    /// Instants (seconds since the Unix epoch, ascending) at which the offset changes.
    let transitions: [Int64]
    /// The UTC offset in seconds in force from `transitions[i]` on.
    let offsetsAfterTransition: [Int]
    /// The UTC offset before the first transition (or always, when there is none).
    let initialOffset: Int
    /// The rule for instants after the last transition, when the file has one.
    let footer: PosixTimeZoneRule?

    /// Coordinated Universal Time, which needs no tz database.
    public static let utc = ZoneInfo(identifier: "UTC", fixedOffset: 0)

    /// Names that mean UTC and work even on hosts without tzdata installed.
    static let utcNames: Set<String> = [
        "UTC", "Etc/UTC", "GMT", "Etc/GMT", "UCT", "Etc/UCT",
        "Zulu", "Etc/Zulu", "Universal", "Etc/Universal",
    ]

    /// Directories searched for TZif files, after `$TZDIR`.
    static let databaseDirectories = ["/usr/share/zoneinfo", "/usr/lib/zoneinfo", "/usr/share/lib/zoneinfo"]

    /// Loads the zone called `identifier` from the tz database; nil when the name is
    /// not a zone there (or is not a plain relative name such as "Europe/Berlin").
    public init?(identifier: String) {
        if Self.utcNames.contains(identifier) {
            self.init(identifier: identifier, fixedOffset: 0)
            return
        }
        guard Self.isPlausibleName(identifier), let bytes = Self.readDatabaseFile(identifier) else {
            return nil
        }
        try? self.init(identifier: identifier, tzif: bytes)
    }

    /// A zone that is always `fixedOffset` seconds east of UTC.
    init(identifier: String, fixedOffset: Int) {
        self.identifier = identifier
        transitions = []
        offsetsAfterTransition = []
        initialOffset = fixedOffset
        footer = nil
    }

    /// Parses the contents of a TZif file.
    /// - Throws: `ZoneInfoError` when the data is not a well-formed TZif file.
    init(identifier: String, tzif bytes: [UInt8]) throws(ZoneInfoError) {
        var reader = TZifReader(bytes: bytes)
        let data = try reader.readZone()
        self.identifier = identifier
        transitions = data.transitions
        offsetsAfterTransition = data.offsetsAfterTransition
        initialOffset = data.initialOffset
        footer = data.footer
    }

    /// The UTC offset in seconds in force at `date`, as `TimeZone.secondsFromGMT(for:)`.
    public func secondsFromGMT(for date: Date = Date()) -> Int {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds.isFinite else { return initialOffset }
        return secondsFromGMT(at: Int64(max(min(seconds, 1e15), -1e15)))
    }

    /// The UTC offset in seconds in force at `instant` (seconds since the Unix epoch).
    func secondsFromGMT(at instant: Int64) -> Int {
        guard let last = transitions.last else {
            return footer?.utcOffset(at: instant) ?? initialOffset
        }
        if instant >= last, let footer {
            return footer.utcOffset(at: instant)
        }
        // The last transition at or before `instant`.
        var low = 0, high = transitions.count
        while low < high {
            let mid = (low + high) / 2
            if transitions[mid] <= instant { low = mid + 1 } else { high = mid }
        }
        return low == 0 ? initialOffset : offsetsAfterTransition[low - 1]
    }

    public var description: String { identifier }

    public static func == (lhs: ZoneInfo, rhs: ZoneInfo) -> Bool { lhs.identifier == rhs.identifier }

    public func hash(into hasher: inout Hasher) { hasher.combine(identifier) }

    /// True for names made of tz database characters with no absolute or parent paths,
    /// so that a configured name cannot read an arbitrary file.
    static func isPlausibleName(_ name: String) -> Bool {
        guard !name.isEmpty, !name.hasPrefix("/"), name.utf8.count < 256 else { return false }
        let allowed = name.unicodeScalars.allSatisfy { scalar in
            switch scalar {
            case "A"..."Z", "a"..."z", "0"..."9", "/", "_", "-", "+", ".": true
            default: false
            }
        }
        return allowed && !name.split(separator: "/").contains { $0 == ".." || $0 == "." }
    }

    /// The bytes of `name` in the first tz database directory that has it.
    static func readDatabaseFile(_ name: String) -> [UInt8]? {
        var directories = databaseDirectories
        if let custom = ProcessInfo.processInfo.environment["TZDIR"], !custom.isEmpty {
            directories.insert(custom, at: 0)
        }
        for directory in directories {
            if let data = FileManager.default.contents(atPath: directory + "/" + name) {
                return [UInt8](data)
            }
        }
        return nil
    }
}

/// Why TZif data could not be read.
struct ZoneInfoError: Error, Equatable {
    var message: String
}

/// Reads the blocks of a TZif file (RFC 8536) in order.
private struct TZifReader {
    let bytes: [UInt8]
    var position = 0

    /// The transition table of a zone, as stored in the file.
    struct Zone {
        var transitions: [Int64] = []
        var offsetsAfterTransition: [Int] = []
        var initialOffset = 0
        var footer: PosixTimeZoneRule?
    }

    /// The six counts of a TZif header.
    struct Header {
        var version: UInt8
        var isUTCCount, isStandardCount, leapCount, timeCount, typeCount, charCount: Int
    }

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Reads the whole file: the version 1 block, and for version 2+ the 64-bit block
    /// and footer that replace it.
    mutating func readZone() throws(ZoneInfoError) -> Zone {
        let first = try readHeader()
        if first.version == 0 {
            return try readBlock(first, timeSize: 4)
        }
        try skipBlock(first, timeSize: 4)
        let second = try readHeader()
        var zone = try readBlock(second, timeSize: 8)
        zone.footer = try readFooter()
        return zone
    }

    private mutating func readHeader() throws(ZoneInfoError) -> Header {
        guard Array(try take(4)) == Array("TZif".utf8) else { throw ZoneInfoError(message: "not a TZif file") }
        let versionByte = try take(1).first ?? 0
        let version: UInt8 = versionByte == 0 ? 0 : versionByte &- UInt8(ascii: "0")
        _ = try take(15)
        var counts: [Int] = []
        for _ in 0..<6 { counts.append(Int(try readInteger(size: 4, signed: false))) }
        guard counts[4] > 0 else { throw ZoneInfoError(message: "TZif file without local time types") }
        return Header(
            version: version, isUTCCount: counts[0], isStandardCount: counts[1], leapCount: counts[2],
            timeCount: counts[3], typeCount: counts[4], charCount: counts[5])
    }

    private static func blockSize(_ header: Header, timeSize: Int) -> Int {
        header.timeCount * (timeSize + 1) + header.typeCount * 6 + header.charCount
            + header.leapCount * (timeSize + 4) + header.isStandardCount + header.isUTCCount
    }

    private mutating func skipBlock(_ header: Header, timeSize: Int) throws(ZoneInfoError) {
        _ = try take(Self.blockSize(header, timeSize: timeSize))
    }

    private mutating func readBlock(_ header: Header, timeSize: Int) throws(ZoneInfoError) -> Zone {
        let blockEnd = position + Self.blockSize(header, timeSize: timeSize)
        guard blockEnd <= bytes.count else { throw ZoneInfoError(message: "truncated TZif file") }
        var times: [Int64] = []
        for _ in 0..<header.timeCount { times.append(try readInteger(size: timeSize, signed: true)) }
        let typeIndices = try take(header.timeCount).map(Int.init)
        var typeOffsets: [Int] = []
        for _ in 0..<header.typeCount {
            typeOffsets.append(Int(try readInteger(size: 4, signed: true)))
            _ = try take(2)  // isdst, abbreviation index
        }
        guard typeIndices.allSatisfy({ $0 < header.typeCount }) else {
            throw ZoneInfoError(message: "TZif transition names an unknown local time type")
        }
        position = blockEnd
        return Zone(
            transitions: times, offsetsAfterTransition: typeIndices.map { typeOffsets[$0] },
            initialOffset: typeOffsets[0])
    }

    /// The footer between two newlines; nil when it is empty.
    private mutating func readFooter() throws(ZoneInfoError) -> PosixTimeZoneRule? {
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\n") else { return nil }
        guard let end = bytes[(position + 1)...].firstIndex(of: UInt8(ascii: "\n")) else {
            throw ZoneInfoError(message: "TZif footer is not terminated")
        }
        let text = String(decoding: bytes[(position + 1)..<end], as: UTF8.self)
        position = end + 1
        if text.isEmpty { return nil }
        guard let rule = PosixTimeZoneRule(parsing: text) else {
            throw ZoneInfoError(message: "TZif footer \"\(text)\" is not a POSIX TZ string")
        }
        return rule
    }

    private mutating func take(_ count: Int) throws(ZoneInfoError) -> ArraySlice<UInt8> {
        guard count >= 0, position + count <= bytes.count else { throw ZoneInfoError(message: "truncated TZif file") }
        defer { position += count }
        return bytes[position..<(position + count)]
    }

    /// A big-endian integer of `size` bytes.
    private mutating func readInteger(size: Int, signed: Bool) throws(ZoneInfoError) -> Int64 {
        var value: UInt64 = 0
        for byte in try take(size) { value = value << 8 | UInt64(byte) }
        guard signed, size < 8 else { return Int64(bitPattern: value) }
        let bits = UInt64(size * 8)
        let signBit: UInt64 = 1 << (bits - 1)
        return value & signBit == 0 ? Int64(value) : Int64(value) - (Int64(1) << Int64(bits))
    }
}
