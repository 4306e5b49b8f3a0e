import CaretakerConfig
import CaretakerSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What `caretaker check` and `caretaker status` say about `[metrics] listen`, seen from
/// outside the daemon: a busy port never stops the jobs (the daemon logs it once and
/// retries the bind), so these commands are where an operator sees it.
public enum MetricsProbe {
    public struct Finding: Sendable, Equatable {
        public let ok: Bool
        public let detail: String
    }

    /// Asks `GET /metrics` at the address: caretaker's own answer is fine; another
    /// program's answer is a problem (caretaker cannot bind while it runs); nothing
    /// listening is fine only when caretaker could bind there now (the daemon is
    /// simply not running), else the bind's reason is the problem.
    public static func probe(_ address: ListenAddress, timeoutMilliseconds: Int32 = 2000) -> Finding {
        switch fetch(address, timeoutMilliseconds: timeoutMilliseconds) {
        case .answered(let body):
            if body.contains("caretaker_build_info") {
                return Finding(ok: true, detail: "caretaker serves GET /metrics on \(address)")
            }
            return Finding(
                ok: false,
                detail: "\(address) is taken by another program (it answers, not with caretaker's metrics): "
                    + "caretaker cannot listen there while it runs; choose another port in [metrics] listen")
        case .failed(let reason):
            do {
                _ = try MetricsHTTPServer(address)
                return Finding(
                    ok: true, detail: "nothing listens on \(address) now; caretaker run can listen there")
            } catch {
                return Finding(
                    ok: false,
                    detail: "\(reason); \(error) (caretaker run keeps its jobs running and retries the bind)")
            }
        }
    }

    enum Fetched {
        case answered(String)
        case failed(String)
    }

    /// One HTTP/1.0 request; what came back, or why nothing did.
    static func fetch(_ address: ListenAddress, timeoutMilliseconds: Int32) -> Fetched {
        let fd = socket(address.socketFamily, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failed("cannot create a socket: \(SystemError.lastMessage())") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: Int(timeoutMilliseconds / 1000), tv_usec: Int(timeoutMilliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = address.withSocketAddress { connect(fd, $0, $1) }
        guard connected == 0 else { return .failed("nothing answers on \(address): \(SystemError.lastMessage())") }
        let request = Array("GET /metrics HTTP/1.0\r\nHost: \(address)\r\n\r\n".utf8)
        guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else {
            return .failed("\(address) closed the connection: \(SystemError.lastMessage())")
        }
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while response.count < 1 << 20 {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { break }
            response += chunk[..<count]
        }
        return .answered(String(decoding: response, as: UTF8.self))
    }
}
