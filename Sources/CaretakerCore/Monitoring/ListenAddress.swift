#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `[metrics] listen`: an IP literal and a port, `127.0.0.1:9187` or `[::1]:9187`.
///
/// Only literals: a host name would make start-up depend on DNS, and what a
/// name resolves to can change under a running daemon.
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    public let host: String
    public let port: UInt16
    public let isIPv6: Bool

    public init?(_ text: String) {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
            isIPv6 = true
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            isIPv6 = false
        }
        // Port 0 is allowed: the kernel picks a free port (tests read it from the log).
        guard portText.allSatisfy({ $0.isASCII && $0.isNumber }), let port = UInt16(portText) else { return nil }
        self.host = String(host)
        self.port = port
        guard isIPv6 ? Self.ipv6(self.host) != nil : Self.ipv4(self.host) != nil else { return nil }
    }

    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    static func ipv4(_ host: String) -> in_addr? {
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1 ? address : nil
    }

    static func ipv6(_ host: String) -> in6_addr? {
        var address = in6_addr()
        return inet_pton(AF_INET6, host, &address) == 1 ? address : nil
    }
}
