import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real HTTP server on loopback (Python's `http.server` under Debian's
/// `/usr/bin/python3`) that answers every GET with 200 and records each path,
/// for ping tests. With `delay`, it records the path at once and answers only
/// after that long (a hanging endpoint).
public final class TestHTTPServer: Sendable {
    public let port: Int
    public let directory: String
    private let pid: pid_t

    /// `http://127.0.0.1:PORT`
    public var url: String { "http://127.0.0.1:\(port)" }

    public static func start(delay: Duration = .zero) throws -> TestHTTPServer {
        let directory = NSTemporaryDirectory() + "caretaker-http-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = directory + "/server.py"
        try pythonScript.write(toFile: script, atomically: true, encoding: .utf8)
        let pid = try ChildProcess.spawn(
            ["/usr/bin/python3", script, directory, "\(delay.seconds)"],
            logPath: directory + "/server.log")
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            if let text = try? String(contentsOfFile: directory + "/port", encoding: .utf8), let port = Int(text) {
                return TestHTTPServer(port: port, directory: directory, pid: pid)
            }
            usleep(20_000)
        }
        kill(pid, SIGKILL)
        _ = ChildProcess.wait(pid)
        throw TemporaryPostgresError(
            message:
                "the test HTTP server did not start: \((try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? "")"
        )
    }

    private init(port: Int, directory: String, pid: pid_t) {
        self.port = port
        self.directory = directory
        self.pid = pid
    }

    deinit {
        kill(pid, SIGKILL)
        _ = ChildProcess.wait(pid)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The paths requested so far, oldest first.
    public var paths: [String] {
        ((try? String(contentsOfFile: directory + "/paths", encoding: .utf8)) ?? "").split(separator: "\n").map(
            String.init)
    }

    /// Polls until `condition` holds on the paths; returns them either way after `timeout`.
    public func waitForPaths(timeout: Duration = .seconds(10), _ condition: ([String]) -> Bool) -> [String] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, !condition(paths) { usleep(20_000) }
        return paths
    }

    private static let pythonScript = #"""
        import http.server, os, sys, time
        directory, delay = sys.argv[1], float(sys.argv[2])
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                with open(os.path.join(directory, "paths"), "a") as f:
                    f.write(self.path + "\n")
                time.sleep(delay)
                body = b"OK"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        with open(os.path.join(directory, "port.tmp"), "w") as f:
            f.write(str(server.server_address[1]))
        os.rename(os.path.join(directory, "port.tmp"), os.path.join(directory, "port"))
        server.serve_forever()
        """#
}

/// A plain HTTP/1.1 GET over loopback, for scraping `/metrics` as Prometheus would.
public enum HTTPGet {
    public struct Response: Sendable {
        public let status: Int
        public let headers: String
        public let body: String
    }

    public static func fetch(
        port: Int, path: String, method: String = "GET", host: String = "127.0.0.1"
    ) throws -> Response {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TemporaryPostgresError(message: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            throw TemporaryPostgresError(message: "connect to \(host):\(port): \(String(cString: strerror(errno)))")
        }
        let request = Array(
            "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nAccept: text/plain\r\nConnection: close\r\n\r\n"
                .utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[..<count]
        }
        let text = String(decoding: received, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else {
            throw TemporaryPostgresError(message: "no HTTP response: \(text)")
        }
        let head = String(text[..<split.lowerBound])
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        return Response(status: status, headers: head, body: String(text[split.upperBound...]))
    }
}
