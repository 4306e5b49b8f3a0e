#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The user and password of `[dashboard]`, and the check of an `Authorization` header against them.
public struct BasicCredentials: Sendable {
    public let username: String
    public let password: String

    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    /// True when `header` is `Basic base64(username:password)` with these credentials.
    /// Compares in time that does not depend on where the first difference is.
    public func accepts(authorization header: String?) -> Bool {
        guard let header else { return false }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "basic",
            let decoded = Data(base64Encoded: String(parts[1].filter { $0 != " " }))
        else { return false }
        let expected = Array("\(username):\(password)".utf8)
        let given = Array(decoded)
        var difference = UInt8(expected.count == given.count ? 0 : 1)
        for index in 0..<expected.count {
            difference |= expected[index] ^ (index < given.count ? given[index] : 0)
        }
        return difference == 0
    }

    /// The `WWW-Authenticate` value of a 401.
    public static let challenge = "Basic realm=\"caretaker dashboard\", charset=\"UTF-8\""
}
