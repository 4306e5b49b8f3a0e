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

    private var isIPv6: Bool { host.contains(":") }

    /// The address family of a socket for this address.
    package var socketFamily: Int32 { isIPv6 ? AF_INET6 : AF_INET }

    /// Calls `body` with this address as a `sockaddr` and its length, and returns what it
    /// returns: `bind(fd, $0, $1)` for the daemon's listener, `connect(fd, $0, $1)` for
    /// `check` and `status`.
    package func withSocketAddress<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        if isIPv6 {
            var socketAddress = sockaddr_in6()
            socketAddress.sin6_family = sa_family_t(AF_INET6)
            socketAddress.sin6_port = UInt16(port).bigEndian
            socketAddress.sin6_addr = Self.ipv6(host) ?? in6_addr()
            return Self.passing(socketAddress, to: body)
        }
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = UInt16(port).bigEndian
        socketAddress.sin_addr = Self.ipv4(host) ?? in_addr()
        return Self.passing(socketAddress, to: body)
    }

    private static func passing<Address, Result>(
        _ address: Address, to body: (UnsafePointer<sockaddr>, socklen_t) -> Result
    ) -> Result {
        withUnsafePointer(to: address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<Address>.size)) }
        }
    }

    private static func ipv4(_ host: String) -> in_addr? {
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1 ? address : nil
    }

    private static func ipv6(_ host: String) -> in6_addr? {
        var address = in6_addr()
        return inet_pton(AF_INET6, host, &address) == 1 ? address : nil
    }
}
