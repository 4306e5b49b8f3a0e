import Foundation
import Testing

// The harness the deterministic fuzz tests share: every generated input comes from
// its own 64-bit case seed (derived from the test's base seed and the case number),
// so a failure message names the seed and the input, and
//
//     CARETAKER_FUZZ_CASE=0x1234abcd swift test --filter <the failing test>
//
// replays exactly that one case. CARETAKER_FUZZ_SCALE=10 runs ten times as many
// cases (with the same first ones) for a longer local session.

/// Runs `count` cases, each with its own generator, and stops recording after a
/// few failures so one bug does not bury the report under thousands of issues.
public struct FuzzRun {
    public let name: String
    public let baseSeed: UInt64
    public private(set) var failures = 0
    private static let maxRecorded = 12

    public static var scale: Int {
        ProcessInfo.processInfo.environment["CARETAKER_FUZZ_SCALE"].flatMap(Int.init).map { max(1, $0) } ?? 1
    }

    /// The single case to replay, from `CARETAKER_FUZZ_CASE` (hex, with or without 0x).
    public static var replay: UInt64? {
        guard var text = ProcessInfo.processInfo.environment["CARETAKER_FUZZ_CASE"], !text.isEmpty else { return nil }
        if text.hasPrefix("0x") { text.removeFirst(2) }
        return UInt64(text, radix: 16)
    }

    public init(_ name: String, seed: UInt64) {
        self.name = name
        self.baseSeed = seed
    }

    /// The seed of case `index`: a SplitMix64 step from the base, so neighbouring cases differ everywhere.
    public func caseSeed(_ index: Int) -> UInt64 {
        var mixer = SplitMix64(seed: baseSeed ^ (UInt64(index) &* 0xD6E8_FEB8_6659_FD93))
        return mixer.next()
    }

    /// Calls `body` for each case with a generator and the case seed.
    public mutating func run(_ count: Int, _ body: (inout SplitMix64, inout FuzzRun) -> Void) {
        if let replay = Self.replay {
            var random = SplitMix64(seed: replay)
            body(&random, &self)
            return
        }
        for index in 0..<count * Self.scale {
            let seed = caseSeed(index)
            var random = SplitMix64(seed: seed)
            body(&random, &self)
            if failures >= Self.maxRecorded { return }
        }
    }

    /// Records a failure of case `seed` (only the first few are recorded).
    public mutating func check(
        _ condition: Bool, seed: UInt64, _ input: @autoclosure () -> String,
        _ message: @autoclosure () -> String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard !condition else { return }
        failures += 1
        guard failures <= Self.maxRecorded else { return }
        Issue.record(
            """
            \(name): \(message())
              case seed: 0x\(String(seed, radix: 16)) (replay with CARETAKER_FUZZ_CASE=0x\(String(seed, radix: 16)))
              input: \(input())
            """, sourceLocation: sourceLocation)
    }
}

/// Byte-level and text-level mutations shared by the fuzzers.
public enum Mutate {
    /// One random edit of `bytes`: flip, insert, delete, duplicate, truncate or splice in a fragment.
    public static func bytes(_ bytes: inout [UInt8], fragments: [String], using random: inout SplitMix64) {
        let position = bytes.isEmpty ? 0 : random.int(0...bytes.count)
        switch random.int(0...6) {
        case 0 where !bytes.isEmpty:
            bytes[min(position, bytes.count - 1)] = UInt8.random(in: 0...255, using: &random)
        case 1, 2:
            bytes.insert(contentsOf: Array(random.pick(fragments).utf8), at: position)
        case 3 where !bytes.isEmpty:
            let end = min(bytes.count, position + random.int(1...12))
            bytes.removeSubrange(min(position, end)..<end)
        case 4 where !bytes.isEmpty:
            let end = min(bytes.count, position + random.int(1...40))
            bytes.insert(contentsOf: Array(bytes[min(position, end)..<end]), at: min(position, end))
        case 5 where random.chance(30):
            bytes.removeSubrange(min(position, bytes.count)...)
        default:
            bytes.insert(UInt8.random(in: 0...127, using: &random), at: position)
        }
    }

    /// One random edit at the character level (keeps the text valid Unicode).
    public static func characters(_ text: String, fragments: [String], using random: inout SplitMix64) -> String {
        var characters = Array(text)
        let position = characters.isEmpty ? 0 : random.int(0...characters.count)
        switch random.int(0...5) {
        case 0 where !characters.isEmpty:
            characters.remove(at: min(position, characters.count - 1))
        case 1 where !characters.isEmpty:
            characters[min(position, characters.count - 1)] = random.pick(fragments).first ?? "x"
        case 2 where !characters.isEmpty:
            let end = min(characters.count, position + random.int(1...6))
            characters.insert(contentsOf: characters[min(position, end)..<end], at: min(position, end))
        case 3 where !characters.isEmpty:
            let other = random.int(0...characters.count - 1)
            characters.swapAt(min(position, characters.count - 1), other)
        default:
            characters.insert(contentsOf: random.pick(fragments), at: position)
        }
        return String(characters)
    }

    /// A string of random Unicode scalars, biased towards ASCII and awkward characters.
    public static func randomText(maxLength: Int, using random: inout SplitMix64) -> String {
        let awkward: [Unicode.Scalar] = [
            "\0", "\r", "\n", "\t", "\u{7F}", "\u{85}", "\u{A0}", "\u{2028}", "\u{FEFF}",
            "\u{301}", "\u{200D}", "é", "日", "\u{1F600}", "\u{0663}", "\u{FF10}", "\u{10FFFF}",
        ]
        var scalars = String.UnicodeScalarView()
        for _ in 0..<random.int(0...maxLength) {
            switch random.int(0...9) {
            case 0: scalars.append(random.pick(awkward))
            case 1: scalars.append(Unicode.Scalar(UInt32(random.int(0x80...0xD7FF)))!)
            default: scalars.append(Unicode.Scalar(UInt8(random.int(0x20...0x7E))))
            }
        }
        return String(scalars)
    }
}

extension String {
    /// The text as a Swift literal, shortened when long, for failure messages.
    public var shown: String {
        let literal = debugDescription
        return literal.count > 600 ? String(literal.prefix(600)) + "… (\(utf8.count) bytes)" : literal
    }
}

/// True when `text` holds a control character (C0, DEL, C1, or a Unicode line/paragraph separator).
public func hasControlCharacter(_ text: String) -> Bool {
    text.unicodeScalars.contains {
        $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\u{2028}" || $0 == "\u{2029}"
    }
}

/// Instants to ask schedules about: ordinary ones, DST changes in several zones, and edges.
public enum Instants {
    public static let fixed: [Date] = [
        "1970-01-01T00:00:00Z", "1969-12-31T23:59:59.999Z", "1900-02-28T12:00:00Z", "2000-02-29T23:59:59Z",
        "2026-03-29T00:59:30Z", "2026-03-29T01:00:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z",  // Berlin
        "2026-03-08T06:59:59Z", "2026-11-01T05:30:00Z",  // New York
        "2026-04-04T14:59:00Z", "2026-10-03T15:30:00Z",  // Lord Howe (30-minute DST)
        "2099-12-31T23:59:59.5Z", "2199-06-30T00:00:00Z",
    ].map { text in
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)!
    }

    /// A fixed instant, or a random one between 1900 and 2200 with a random sub-second part.
    public static func random(using random: inout SplitMix64) -> Date {
        if random.chance(35) { return random.pick(fixed) }
        let seconds = Double(random.int(-2_208_988_800...7_258_118_400))
        let fraction = random.chance(50) ? 0 : Double(random.int(0...999)) / 1000
        return Date(timeIntervalSince1970: seconds + fraction)
    }
}
