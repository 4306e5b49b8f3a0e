import CaretakerMailFormat
import Foundation
import SeededRandom
import Testing

// Deterministic fuzzing of the mail address validator (the harness, its seeds and
// replay: SeededRandom's FuzzRun). Beyond "does not crash": `isValid` agrees with
// `MailAddress(_:)` and with `problem(in:)`, and a valid address is plain ASCII
// with exactly one `@`, at most 254 bytes and none of CR, LF, space, `,`, `<`, `>`.

@Suite("Fuzz: mail addresses")
struct MailAddressFuzzTests {
    static let valid = [
        "alice@example.org", "a@b.co", "first.last+tag@sub.example.com", "x_y-z@xn--bcher-kva.example",
        "!#$%&'*+-/=?^_`{|}~@example.org", "user@123.example.org", "a.b.c@d-e.f-g.h",
    ]
    static let fragments = [
        "@", ".", "-", "+", "..", " ", "\r", "\n", "\r\n", ",", "<", ">", "\"", "(", ")", "[", "]", "\\",
        ":", ";", "\0", "\t", "é", "日", "\u{2028}", "\u{301}", "\u{FEFF}", "\u{1F600}", "a", "Z", "9",
        "xn--", "@@", ".@", "@.", "%", "Bcc: x@y.z", "\u{FF20}",
    ]

    static let forbidden: Set<Character> = [
        "\r", "\n", " ", ",", "<", ">", "\0", "\t", "\"", "(", ")", "[", "]", "\\", ";", ":",
    ]
    static let atext = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-/=?^_`{|}~".utf8)
    static let hostCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-".utf8)

    fileprivate static func check(_ text: String, seed: UInt64, run: inout FuzzRun) {
        let isValid = MailAddress.isValid(text)
        let constructed = try? MailAddress(text)
        let problem = MailAddress.problem(in: text)
        run.check(
            isValid == (constructed != nil) && isValid == (problem == nil), seed: seed, text.shown,
            "isValid \(isValid), init \(constructed != nil), problem \(String(describing: problem))")
        if let problem {
            run.check(
                !problem.isEmpty && !hasControlCharacter(problem), seed: seed, text.shown,
                "problem description is not one line: \(problem.shown)")
        }
        if let address = constructed {
            run.check(
                !text.contains(where: Self.forbidden.contains), seed: seed, text.shown,
                "a valid address contains a forbidden character")
            run.check(
                text.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }, seed: seed,
                text.shown,
                "a valid address is not printable ASCII")
            run.check(
                text.utf8.count <= 254 && text.utf8.count { $0 == UInt8(ascii: "@") } == 1, seed: seed, text.shown,
                "a valid address is too long or has other than one @")
            run.check(
                address.localPart + "@" + address.domain == text && address.address == text, seed: seed, text.shown,
                "local part and domain do not make up the address")
            run.check(
                !address.localPart.isEmpty && address.domain.contains("."), seed: seed, text.shown,
                "empty local part or bare domain")
            // What the mail layer builds from it must stay one header line.
            if let mailbox = try? Mailbox(displayName: "Name", address: address) {
                run.check(
                    !hasControlCharacter(mailbox.description), seed: seed, text.shown, "mailbox has a control character"
                )
            }
        }
        // The configured `from` parser on the same text, and on it as a name-addr.
        let forms = [text, "Name <\(text)>", "\"\(text)\" <a@example.org>", "\(text) <a@example.org>"]
        do {
            let form = forms[Int(seed % UInt64(forms.count))]
            if let mailbox = try? Mailbox(parsing: form) {
                run.check(
                    MailAddress.isValid(mailbox.address.address), seed: seed, form.shown,
                    "Mailbox accepted an invalid address")
                run.check(
                    !hasControlCharacter(mailbox.description), seed: seed, form.shown,
                    "Mailbox with a control character: \(mailbox.description.shown)")
            }
        }
    }

    @Test("mutations of valid addresses")
    func mutatedAddresses() {
        var run = FuzzRun("address mutations", seed: 0xADD2_6000)
        run.run(5000) { random, run in
            let seed = random.state
            var text = random.pick(Self.valid)
            for _ in 0..<random.int(1...3) { text = Mutate.characters(text, fragments: Self.fragments, using: &random) }
            run.check(MailAddress.isValid(text) == Self.model(text), seed: seed, text.shown, "disagrees with the model")
            Self.check(text, seed: seed, run: &run)
        }
    }

    @Test("random text and bytes as an address")
    func randomAddresses() {
        var run = FuzzRun("address random", seed: 0xADD2_6001)
        run.run(5000) { random, run in
            let seed = random.state
            let text: String
            switch random.int(0...2) {
            case 0: text = Mutate.randomText(maxLength: 40, using: &random)
            case 1:
                text = String(
                    decoding: (0..<random.int(0...40)).map { _ in UInt8.random(in: 0...255, using: &random) },
                    as: UTF8.self)
            default:
                text = (0..<random.int(0...12)).map { _ in random.pick(Self.fragments + ["ab", "example", "org", "x"]) }
                    .joined()
            }
            run.check(MailAddress.isValid(text) == Self.model(text), seed: seed, text.shown, "disagrees with the model")
            Self.check(text, seed: seed, run: &run)
        }
    }

    /// An independent statement of the rules in `MailAddress`'s documentation.
    static func model(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        let parts = bytes.split(separator: UInt8(ascii: "@"), omittingEmptySubsequences: false)
        guard bytes.count <= 254, parts.count == 2 else { return false }
        let (local, domain) = (parts[0], parts[1])
        guard (1...64).contains(local.count), (1...253).contains(domain.count) else { return false }
        let atoms = local.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard atoms.allSatisfy({ !$0.isEmpty && $0.allSatisfy(Self.atext.contains) }) else { return false }
        let labels = domain.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard labels.count >= 2 else { return false }
        for label in labels {
            guard (1...63).contains(label.count), label.allSatisfy(Self.hostCharacters.contains),
                label.first != UInt8(ascii: "-"), label.last != UInt8(ascii: "-")
            else { return false }
        }
        return !labels.last!.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    @Test("agrees with an independent model of the rules, with lengths around every limit")
    func lengthBoundariesAgainstModel() {
        var run = FuzzRun("address model", seed: 0xADD2_6002)
        run.run(2000) { random, run in
            let seed = random.state
            let localLength = random.chance(50) ? random.int(62...66) : random.int(0...70)
            var local = String((0..<localLength).map { _ in random.pick(Array("abcXYZ019.+_-'")) })
            if random.chance(50) { local = String(local.map { $0 == "." ? "a" : $0 }) }
            let labelCount = random.int(1...6)
            var labels = (0..<labelCount).map { _ -> String in
                let length = random.chance(40) ? random.int(61...65) : random.int(0...10)
                return String((0..<length).map { _ in random.pick(Array("abcdefxyz0123456789-")) })
            }
            if random.chance(50) { labels = labels.map { String($0.map { $0 == "-" ? "h" : $0 }) } }
            if random.chance(30) { labels[labels.count - 1] = random.pick(["org", "123", "x1", "c"]) }
            let text =
                local + random.pick(["@", "@", "@", "@@", ""])
                + labels.joined(separator: random.chance(95) ? "." : "..")
            run.check(
                MailAddress.isValid(text) == Self.model(text), seed: seed, text.shown,
                "isValid \(MailAddress.isValid(text)), model \(Self.model(text)), problem \(String(describing: MailAddress.problem(in: text)))"
            )
            Self.check(text, seed: seed, run: &run)
        }
        func label(_ count: Int) -> String { String(repeating: "a", count: count) }
        let longest = label(64) + "@" + [label(63), label(63), label(61)].joined(separator: ".")
        #expect(longest.utf8.count == 254 && MailAddress.isValid(longest))
        #expect(!MailAddress.isValid(longest + "a"))
    }
}
