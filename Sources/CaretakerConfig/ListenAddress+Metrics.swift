#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ListenAddress {
    /// `[metrics] listen`: an IP literal and a decimal port, `127.0.0.1:9187` or `[::1]:9187`.
    ///
    /// Only literals: a host name would make start-up depend on DNS, and what a
    /// name resolves to can change under a running daemon.
    public init?(metrics text: String) {
        guard let parsed = ListenAddress(parsing: text), let colon = text.lastIndex(of: ":"),
            text[text.index(after: colon)...].allSatisfy({ $0.isASCII && $0.isNumber }),
            parsed.isIPv6 ? Self.ipv6(parsed.host) != nil : Self.ipv4(parsed.host) != nil
        else { return nil }
        self = parsed
    }

    package var isIPv6: Bool { host.contains(":") }

    package static func ipv4(_ host: String) -> in_addr? {
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1 ? address : nil
    }

    package static func ipv6(_ host: String) -> in6_addr? {
        var address = in6_addr()
        return inet_pton(AF_INET6, host, &address) == 1 ? address : nil
    }
}
