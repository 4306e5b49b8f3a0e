import Testing

@testable import CaretakerCore
@testable import CaretakerJobs

@Suite struct TemporaryPasswordTests {
    static let lookAlikes: Set<Character> = ["0", "O", "o", "1", "l", "I"]

    func checkPolicy(_ password: String, length: Int) {
        #expect(password.count == length)
        #expect(password.contains(where: { TemporaryPassword.uppercase.contains($0) }))
        #expect(password.contains(where: { TemporaryPassword.lowercase.contains($0) }))
        #expect(password.contains(where: { TemporaryPassword.digits.contains($0) }))
        #expect(password.contains(where: { "!@#$%^&*-_=+?".contains($0) }))
        #expect(password.allSatisfy { TemporaryPassword.alphabet.contains($0) })
        #expect(!password.contains(where: { Self.lookAlikes.contains($0) }))
    }

    @Test func alphabetHasNoLookAlikesAndAllSymbols() {
        #expect(Set(TemporaryPassword.alphabet).isDisjoint(with: Self.lookAlikes))
        #expect(String(TemporaryPassword.symbols) == "!@#$%^&*-_=+?")
        #expect(TemporaryPassword.alphabet.count == 69)
        #expect(Set(TemporaryPassword.alphabet).count == 69)
    }

    @Test(arguments: [12, 13, 16, 24, 72])
    func manyPasswordsFollowThePolicy(length: Int) {
        for _ in 0..<2_000 {
            checkPolicy(TemporaryPassword.generate(length: length), length: length)
        }
    }

    @Test func lengthIsClampedToTwelveThroughSeventyTwo() {
        checkPolicy(TemporaryPassword.generate(length: 0), length: 12)
        checkPolicy(TemporaryPassword.generate(length: 11), length: 12)
        checkPolicy(TemporaryPassword.generate(length: -5), length: 12)
        checkPolicy(TemporaryPassword.generate(length: 500), length: 72)
    }

    @Test func passwordsDoNotRepeat() {
        let passwords = (0..<5_000).map { _ in TemporaryPassword.generate(length: 12) }
        #expect(Set(passwords).count == passwords.count)
    }

    /// Every character turns up, and the required classes are not stuck at
    /// fixed positions: the first character is sometimes each class.
    @Test func charactersAndPositionsAreSpread() {
        var seen = Set<Character>()
        var firstClasses = Set<Int>()
        let classes = [
            TemporaryPassword.uppercase, TemporaryPassword.lowercase, TemporaryPassword.digits,
            TemporaryPassword.symbols,
        ]
        for _ in 0..<3_000 {
            let password = TemporaryPassword.generate(length: 12)
            seen.formUnion(password)
            let first = password.first!
            firstClasses.insert(classes.firstIndex { $0.contains(first) }!)
        }
        #expect(seen == Set(TemporaryPassword.alphabet))
        #expect(firstClasses == [0, 1, 2, 3])
    }

    @Test func bcryptHashHasCostInPrefixAndVerifies() throws {
        let password = TemporaryPassword.generate(length: 16)
        let hash = try TemporaryPassword.bcryptHash(password, cost: 4)
        #expect(hash.hasPrefix("$2a$04$"))
        #expect(hash.count == 60)
        #expect(!hash.contains(password))
        #expect(TemporaryPassword.bcryptVerify(password, hash: hash))
        #expect(!TemporaryPassword.bcryptVerify(password + "x", hash: hash))
        #expect(!TemporaryPassword.bcryptVerify("", hash: hash))
    }

    @Test func defaultCostTwelveIsInThePrefix() throws {
        let hash = try TemporaryPassword.bcryptHash("Ab3$defGhjkmnp", cost: 12)
        #expect(hash.hasPrefix("$2a$12$"))
        #expect(TemporaryPassword.bcryptVerify("Ab3$defGhjkmnp", hash: hash))
    }

    @Test func saltsDiffer() throws {
        let a = try TemporaryPassword.bcryptHash("same-Password-2", cost: 4)
        let b = try TemporaryPassword.bcryptHash("same-Password-2", cost: 4)
        #expect(a != b)
    }

    /// The same hash pgcrypto produced for this password and salt (computed once
    /// with PostgreSQL 15: `crypt('Abc-def_ghj2?x', '$2a$12$1UGolFUZf4/vIxv/biuCMe')`).
    @Test func matchesAHashPgcryptoAccepts() {
        let hash = "$2a$12$1UGolFUZf4/vIxv/biuCMeV/8G/Upsxaijm4F4p4JC6eiLa4DlNYq"
        #expect(TemporaryPassword.bcryptVerify("Abc-def_ghj2?x", hash: hash))
    }

    @Test(arguments: [3, 32, -1])
    func rejectsCostsOutsideBcryptsRange(cost: Int) {
        #expect(throws: TemporaryPassword.HashError.costOutOfRange(cost)) {
            try TemporaryPassword.bcryptHash("Ab3$defGhjkmnp", cost: cost)
        }
    }

    @Test func rejectsNULInPassword() {
        #expect(throws: TemporaryPassword.HashError.passwordContainsNUL) {
            try TemporaryPassword.bcryptHash("Ab3$\u{0}defGhjkmnp", cost: 4)
        }
    }
}
