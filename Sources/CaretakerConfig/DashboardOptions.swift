/// `[dashboard]`: the read-only web dashboard (`caretaker dashboard`).
public struct DashboardOptions: Sendable {
    /// Where it listens unless `--listen` says otherwise. Defaults to loopback.
    public var listen: ListenAddress = .defaultDashboard
    /// HTTP basic auth user; empty: no authentication (fine on loopback).
    public var username: String = ""
    /// File holding the basic auth password (else the systemd credential `dashboard-password`).
    public var passwordFile: String = ""

    /// Name of the systemd credential read when `password_file` is empty.
    public static let passwordCredential = "dashboard-password"

    /// What `caretaker-dashboard --help` says beyond its options, and `caretaker dashboard
    /// --help` too, which becomes it (`execv`); `launcher` adds what the launcher itself
    /// may fail on.
    public static func helpDiscussion(launcher: Bool = false) -> String {
        """
        Listens on \(ListenAddress.defaultDashboard) unless --listen or [dashboard] listen says otherwise. \
        Set [dashboard] username and password_file before listening beyond loopback. \
        Exit status: 0 after SIGTERM/SIGINT, 1 cannot listen\
        \(launcher ? " (or the caretaker-dashboard binary is missing)" : ""), 64 bad usage, \
        69 database unavailable at start, 78 bad configuration.
        """
    }
}

/// A `HOST:PORT` to listen on: `127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:8080`.
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public static let defaultDashboard = ListenAddress(host: "127.0.0.1", port: 8080)

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` (an IPv6 host in brackets); nil when it is not one.
    public init?(parsing text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            guard host.contains(":") else { return nil }
        } else if host.contains(":") {
            return nil
        }
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "/" || $0 == "[" || $0 == "]" }) else {
            return nil
        }
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The form a `--listen` flag or `listen` key takes, for messages.
    public static let expectedForm = "HOST:PORT, e.g. \"127.0.0.1:8080\" or \"[::1]:8080\""
}
