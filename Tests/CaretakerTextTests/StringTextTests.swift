import Testing

@testable import CaretakerText

/// The text helpers that stand in for full Foundation's, on their own.
@Suite struct StringTextTests {
    @Test("trimmed drops whitespace and newlines at both ends only, and all of a blank text")
    func trimmedWhitespace() {
        #expect("  a b \n".trimmed() == "a b")
        #expect("\t\r\na\u{00A0}".trimmed() == "a")
        #expect("a".trimmed() == "a")
        #expect(" \n\t ".trimmed() == "")
        #expect("".trimmed() == "")
        #expect("a \n b"[...].trimmed() == "a \n b")
    }

    @Test("trimmed with a rule drops only the characters it names")
    func trimmedByRule() {
        #expect("--x-y--".trimmed { $0 == "-" } == "x-y")
        #expect(" -x- ".trimmed { $0 == "-" } == " -x- ")
        #expect("---".trimmed { $0 == "-" } == "")
    }

    @Test(
        "leftPadded pads to the length, never cuts",
        arguments: [
            ("7", 3, "007"), ("123", 3, "123"), ("1234", 3, "1234"), ("", 2, "00"), ("5", 0, "5"), ("5", -1, "5"),
        ])
    func leftPadded(text: String, length: Int, expected: String) {
        #expect(text.leftPadded(to: length, with: "0") == expected)
    }

    @Test("rightPadded adds spaces up to the length, never cuts")
    func rightPadded() {
        #expect("ab".rightPadded(to: 4) == "ab  ")
        #expect("abcd".rightPadded(to: 4) == "abcd")
        #expect("abcde".rightPadded(to: 4) == "abcde")
        #expect("".rightPadded(to: 1) == " ")
    }

    @Test("hexDigits: lowercase, zero-padded to the width, never cut")
    func hexDigits() {
        #expect(0x1f.hexDigits(width: 4) == "001f")
        #expect(UInt8(255).hexDigits(width: 2) == "ff")
        #expect(0.hexDigits(width: 1) == "0")
        #expect(0xABCDE.hexDigits(width: 2) == "abcde")
        #expect(UInt64.max.hexDigits(width: 0) == "ffffffffffffffff")
    }
}
