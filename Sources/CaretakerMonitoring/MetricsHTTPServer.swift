import CaretakerConfig
import CaretakerSupport
import Postgres

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A listening socket that answers `GET /metrics` and nothing else.
///
/// Deliberately small (see docs/monitoring.md and docs/design/how-we-got-here.md for the measurement behind it):
/// one request per connection. The daemon's event loop polls `descriptor` with
/// its other sockets, takes a waiting client with `acceptWaiting` and answers it
/// on a short-lived thread, so the daemon gains no event loop. A client gets
/// `requestTimeout` to send its request line and headers; a slow or silent one
/// is dropped, so it cannot hold that thread.
final class MetricsHTTPServer {
    let address: ListenAddress
    /// The bound port (the configured one, or the kernel's pick for port 0).
    let port: UInt16
    let descriptor: Int32
    static let requestTimeoutMilliseconds: Int32 = 2000
    static let maximumRequestBytes = 8192

    /// Binds and listens; throws naming the address and the system's reason.
    init(_ address: ListenAddress) throws(MonitoringError) {
        self.address = address
        let fd = socket(address.socketFamily, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            throw MonitoringError(
                "cannot create a socket for [metrics] listen \(address): \(SystemError.lastMessage())")
        }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        let bound = address.withSocketAddress { bind(fd, $0, $1) }
        guard bound == 0, listen(fd, 16) == 0 else {
            let reason = SystemError.lastMessage()
            close(fd)
            throw MonitoringError("cannot listen on \(address) ([metrics] listen): \(reason)")
        }
        // Non-blocking, so that `acceptWaiting` returns at once when the client left again.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        descriptor = fd
        port = Self.localPort(of: fd) ?? UInt16(address.port)
    }

    deinit { close(descriptor) }

    /// The address with the bound port, as a scrape config names it.
    var boundAddress: String { ListenAddress(host: address.host, port: Int(port)).description }

    /// Accepts one waiting connection (call when `descriptor` is readable) and
    /// answers it with `body()` for `GET /metrics`, 404 or 405 otherwise.
    func serveOne(body: () -> [UInt8]) {
        if let client = acceptWaiting() { Self.answer(client, body: body) }
    }

    /// A client connection waiting to be answered, or nil when none is (without waiting).
    func acceptWaiting() -> Int32? {
        let client = accept(descriptor, nil, nil)
        guard client >= 0 else { return nil }
        _ = fcntl(client, F_SETFD, FD_CLOEXEC)
        return client
    }

    /// Reads `client`'s request and answers it with `body()` for `GET /metrics`,
    /// 404 or 405 otherwise; closes it. Blocks for at most `requestTimeoutMilliseconds`
    /// for the request and as long again for the answer's send.
    static func answer(_ client: Int32, body: () -> [UInt8]) {
        defer { close(client) }
        var timeout = timeval(tv_sec: Int(Self.requestTimeoutMilliseconds / 1000), tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let head = readHead(client) else { return }
        let response = Self.response(to: head, body: body)
        response.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = send(client, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if written <= 0 { return }
                offset += written
            }
        }
    }

    /// The request line and headers, or nil when the client was too slow, closed, or sent too much.
    private static func readHead(_ client: Int32) -> [UInt8]? {
        var head: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        let terminator: [UInt8] = [13, 10, 13, 10]
        let deadline = ContinuousClock.now + .milliseconds(Int(Self.requestTimeoutMilliseconds))
        while head.count < Self.maximumRequestBytes {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return nil }
            var poller = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left.microseconds / 1000)) > 0 else { return nil }
            let count = recv(client, &chunk, chunk.count, 0)
            guard count > 0 else { return nil }
            head += chunk[..<count]
            if head.firstRange(of: terminator) != nil { return head }
        }
        return nil
    }

    /// The whole response for a request head; pure, so tests can call it directly.
    static func response(to head: [UInt8], body: () -> [UInt8]) -> [UInt8] {
        let line = head.prefix { $0 != 13 && $0 != 10 }
        let parts = line.split(separator: UInt8(ascii: " "))
        guard parts.count == 3 else { return reply("400 Bad Request", text: "bad request line\n") }
        let method = String(decoding: parts[0], as: UTF8.self)
        let target = String(decoding: parts[1], as: UTF8.self)
        let path =
            target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
            ?? target
        guard path == "/metrics" else { return reply("404 Not Found", text: "only /metrics is served here\n") }
        guard method == "GET" || method == "HEAD" else {
            return reply("405 Method Not Allowed", text: "use GET\n", extraHeaders: "Allow: GET, HEAD\r\n")
        }
        let content = body()
        var response = Array(
            ("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                + "Content-Length: \(content.count)\r\nConnection: close\r\n\r\n").utf8)
        if method == "GET" { response += content }
        return response
    }

    private static func reply(_ status: String, text: String, extraHeaders: String = "") -> [UInt8] {
        Array(
            ("HTTP/1.1 \(status)\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(text.utf8.count)\r\n"
                + extraHeaders + "Connection: close\r\n\r\n" + text).utf8)
    }

    /// The port `fd` is bound to (the one the system chose for port 0).
    private static func localPort(of fd: Int32) -> UInt16? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard ok else { return nil }
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { pointer in
            if family == AF_INET6 {
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    UInt16(bigEndian: $0.pointee.sin6_port)
                }
            } else {
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
            }
        }
    }
}

/// A monitoring part could not start or work; the message names what and why.
public struct MonitoringError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
