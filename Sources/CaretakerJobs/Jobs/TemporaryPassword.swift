import CCrypt

/// Temporary passwords for `send-temp-passwords`: generation from the
/// system CSPRNG, and the bcrypt hash stored in `users.temp_password_hash`.
public enum TemporaryPassword {
    /// Upper-case letters without the look-alikes `O` and `I`.
    public static let uppercase = Array("ABCDEFGHJKLMNPQRSTUVWXYZ")
    /// Lower-case letters without the look-alikes `o` and `l`.
    public static let lowercase = Array("abcdefghijkmnpqrstuvwxyz")
    /// Digits without the look-alikes `0` and `1`.
    public static let digits = Array("23456789")
    /// The symbols a password may hold, one of which it always holds.
    public static let symbols = Array("!@#$%^&*-_=+?")
    /// Every character a temporary password may contain (69 of them).
    public static let alphabet = uppercase + lowercase + digits + symbols

    /// The shortest password `generate` returns (the documented minimum, 12).
    public static let minimumLength = 12
    /// The longest: bcrypt ignores everything after 72 bytes, so longer
    /// passwords would only pretend to be stronger.
    public static let maximumLength = 72

    /// A new temporary password of `length` characters, clamped to
    /// `minimumLength...maximumLength` (configuration validation should have
    /// refused other values; clamping keeps a running worker from crashing).
    ///
    /// It holds at least one character of each class (upper, lower, digit,
    /// symbol) and no look-alikes. One character of each class and the rest from
    /// the whole alphabet are drawn uniformly with the system CSPRNG
    /// (`getrandom`/`arc4random`; `random(in:using:)` has no modulo bias), then a
    /// Fisher–Yates shuffle with the same CSPRNG puts the four required
    /// characters at uniformly random positions. No draw is ever rejected, so
    /// the time taken does not depend on the password.
    public static func generate(length: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return generate(length: length, using: &generator)
    }

    /// `generate(length:)` with an explicit generator; only tests should pass
    /// anything but `SystemRandomNumberGenerator`.
    public static func generate<G: RandomNumberGenerator>(length: Int, using generator: inout G) -> String {
        let length = min(max(length, minimumLength), maximumLength)
        var characters = [uppercase, lowercase, digits, symbols].map { $0.randomElement(using: &generator)! }
        for _ in characters.count..<length {
            characters.append(alphabet.randomElement(using: &generator)!)
        }
        characters.shuffle(using: &generator)  // Swift's shuffle is Fisher–Yates
        return String(characters)
    }

    /// Why hashing failed; never contains the password.
    public enum HashError: Error, Sendable, Equatable, CustomStringConvertible {
        case costOutOfRange(Int)
        case passwordContainsNUL
        case libcryptFailed(String)

        public var description: String {
            switch self {
            case .costOutOfRange(let cost): return "bcrypt cost \(cost) is outside 4...31"
            case .passwordContainsNUL: return "password contains a NUL byte"
            case .libcryptFailed(let step): return "libcrypt could not \(step)"
            }
        }
    }

    /// The bcrypt hash of `password` with `cost` (4...31), as
    /// `$2a$<cost>$<salt><hash>`, through libxcrypt.
    ///
    /// `$2a$`, not libxcrypt's default `$2b$`: PostgreSQL's pgcrypto (checked
    /// against PostgreSQL 15) does not know `$2b$` and silently treats such a
    /// setting as a DES salt, so `crypt(pw, hash) = hash` would be false.
    /// `$2a$` and `$2b$` differ only for passwords over 255 bytes; ours have
    /// at most 72 ASCII characters. libxcrypt's `$2a$` is the corrected
    /// Openwall variant, the same code pgcrypto carries.
    public static func bcryptHash(_ password: String, cost: Int) throws -> String {
        guard (4...31).contains(cost) else { throw HashError.costOutOfRange(cost) }
        guard !password.utf8.contains(0) else { throw HashError.passwordContainsNUL }
        let setting = try makeSetting(cost: cost)
        return try hash(password, setting: setting)
    }

    /// Whether `password` matches a bcrypt (or any libxcrypt) `hash` — the check
    /// pgcrypto's `crypt(pw, hash) = hash` makes, done locally for tests and tools.
    public static func bcryptVerify(_ password: String, hash: String) -> Bool {
        guard !password.utf8.contains(0), let computed = try? self.hash(password, setting: hash) else { return false }
        // Compare every byte: no early exit that would time the mismatch.
        let a = Array(computed.utf8), b = Array(hash.utf8)
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// `crypt_gensalt_rn("$2a$", cost, …)`: a setting string with 16 bytes of
    /// salt that libxcrypt draws from the OS CSPRNG.
    private static func makeSetting(cost: Int) throws -> String {
        var output = [CChar](repeating: 0, count: Int(CRYPT_GENSALT_OUTPUT_SIZE))
        let result = output.withUnsafeMutableBufferPointer { buffer in
            crypt_gensalt_rn("$2a$", UInt(cost), nil, 0, buffer.baseAddress, Int32(buffer.count))
        }
        guard result != nil, output[0] != CChar(UInt8(ascii: "*")) else {
            throw HashError.libcryptFailed("make a bcrypt salt")
        }
        return output.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// `crypt_rn` with a zeroed, heap-allocated `struct crypt_data` (about
    /// 32 KiB, too big for a thread's stack), wiped again afterwards because it
    /// held password-derived state.
    private static func hash(_ password: String, setting: String) throws -> String {
        let data = UnsafeMutablePointer<crypt_data>.allocate(capacity: 1)
        let size = MemoryLayout<crypt_data>.size
        UnsafeMutableRawPointer(data).initializeMemory(as: UInt8.self, repeating: 0, count: size)
        defer {
            UnsafeMutableRawPointer(data).initializeMemory(as: UInt8.self, repeating: 0, count: size)
            data.deallocate()
        }
        guard let result = crypt_rn(password, setting, data, Int32(size)), result.pointee != CChar(UInt8(ascii: "*"))
        else {
            throw HashError.libcryptFailed("hash the password")
        }
        return String(cString: result)
    }
}
