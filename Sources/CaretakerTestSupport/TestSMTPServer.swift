import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A message as the test SMTP server received it: the envelope and the raw data.
public struct ReceivedMail: Sendable, Decodable {
    /// The envelope sender (MAIL FROM), without angle brackets.
    public let mailFrom: String
    /// The envelope recipients (RCPT TO) the server accepted.
    public let recipients: [String]
    /// The AUTH user name the client logged in with, if any.
    public let login: String?
    /// The message exactly as sent after DATA (dot-unstuffed), CRLF line ends.
    public let data: String
    /// Whether the message came over TLS (STARTTLS or implicit).
    public let tls: Bool

    enum CodingKeys: String, CodingKey {
        case mailFrom = "mail_from", recipients = "rcpt_tos", login, data, tls
    }

    /// The header lines, unfolded, in order: (name, value).
    public var headers: [(name: String, value: String)] {
        var result: [(name: String, value: String)] = []
        for line in headerSection.components(separatedBy: "\r\n") {
            if line.first == " " || line.first == "\t", !result.isEmpty {
                result[result.count - 1].value += line  // a folded continuation
            } else if let colon = line.firstIndex(of: ":") {
                let value = line[line.index(after: colon)...].drop(while: { $0 == " " })
                result.append((String(line[..<colon]), String(value)))
            }
        }
        return result
    }

    /// The value of the first header called `name` (case-insensitive), unfolded.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Everything after the blank line that ends the header.
    public var body: String {
        guard let end = data.range(of: "\r\n\r\n") else { return "" }
        return String(data[end.upperBound...])
    }

    private var headerSection: String {
        guard let end = data.range(of: "\r\n\r\n") else { return data }
        return String(data[..<end.lowerBound])
    }
}

/// Why the test SMTP server could not start or be read.
public struct TestSMTPServerError: Error, CustomStringConvertible {
    public let description: String
}

/// A real SMTP server for tests: Debian's `/usr/bin/python3` running aiosmtpd on
/// 127.0.0.1 on a free port (`scripts/lib/smtp_server.py`, the server the soak and the
/// benchmark run too), saving each received message as a JSON file in a temporary
/// directory.
///
/// It can refuse every MAIL FROM, RCPT TO or DATA with a given reply code, and
/// can require AUTH with a user name and password. `stop()` (or deinit) kills it;
/// it also exits by itself when the test process dies, because it watches the
/// pipe on its standard input.
public final class TestSMTPServer: Sendable {
    /// What the server should do besides accepting mail.
    public struct Options: Sendable {
        /// Reply code for every MAIL FROM (e.g. 451, 550); nil accepts.
        public var rejectSenderCode: Int?
        /// Reply code for every RCPT TO (e.g. 451, 550); nil accepts.
        public var rejectRecipientCode: Int?
        /// Reply code after every DATA (e.g. 452, 554); nil accepts.
        public var rejectDataCode: Int?
        /// When set, AUTH (PLAIN or LOGIN, without TLS) is required with these.
        public var requiredLogin: (username: String, password: String)?
        /// TLS with the server certificate a test CA signed: STARTTLS (required
        /// before MAIL) on `smtp://`, or implicit TLS on `smtps://`.
        public var tls: TLS?

        public enum TLS: Sendable {
            case starttls(TestCertificateAuthority)
            case implicit(TestCertificateAuthority)
        }

        public init(
            rejectSenderCode: Int? = nil, rejectRecipientCode: Int? = nil, rejectDataCode: Int? = nil,
            requiredLogin: (username: String, password: String)? = nil, tls: TLS? = nil
        ) {
            self.tls = tls
            self.rejectSenderCode = rejectSenderCode
            self.rejectRecipientCode = rejectRecipientCode
            self.rejectDataCode = rejectDataCode
            self.requiredLogin = requiredLogin
        }
    }

    /// `smtp://127.0.0.1:PORT`, or `smtps://…` with implicit TLS
    public let url: String
    /// The port the server listens on.
    public let port: Int
    /// The temporary directory holding the server's log and the received messages.
    public let directory: String

    private struct Child: Sendable {
        var pid: pid_t
        /// The write end of the child's stdin; closing it tells the child to exit.
        var stdinFD: Int32
    }

    private let child: Mutex<Child?>

    private init(url: String, port: Int, directory: String, child: Child) {
        self.url = url
        self.port = port
        self.directory = directory
        self.child = Mutex(child)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts a server and waits until it listens (it prints "ready PORT").
    public static func start(_ options: Options = Options()) throws -> TestSMTPServer {
        let directory = try makeTemporaryDirectory()
        let messages = directory + "/messages"
        try FileManager.default.createDirectory(atPath: messages, withIntermediateDirectories: false)
        let script = try Repository.file("scripts/lib/smtp_server.py")
        let scheme = if case .implicit = options.tls { "smtps" } else { "smtp" }
        let arguments =
            ["/usr/bin/python3", script, "--messages", messages, "--until-stdin-closes"] + serverArguments(options)
        let (pid, stdinFD, stdoutFD) = try spawn(arguments, stderrPath: directory + "/server.log")
        defer { close(stdoutFD) }
        do {
            let port = try readReadyPort(stdoutFD, timeout: .seconds(15))
            return TestSMTPServer(
                url: "\(scheme)://127.0.0.1:\(port)", port: port, directory: directory,
                child: Child(pid: pid, stdinFD: stdinFD))
        } catch {
            kill(pid, SIGKILL)
            _ = ChildProcess.wait(pid)
            close(stdinFD)
            let log = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(atPath: directory)
            throw TestSMTPServerError(description: "\(error); server log:\n\(log)")
        }
    }

    /// Every message received so far, oldest first.
    public func messages() throws -> [ReceivedMail] {
        let folder = directory + "/messages"
        let names = try FileManager.default.contentsOfDirectory(atPath: folder)
            .filter { $0.hasSuffix(".json") }
            .sorted()
        return try names.map { name in
            let data = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))
            return try JSONDecoder().decode(ReceivedMail.self, from: data)
        }
    }

    /// Polls until at least `count` messages arrived; throws after `timeout`.
    public func waitForMessages(count: Int, timeout: Duration) throws -> [ReceivedMail] {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while true {
            let received = try messages()
            if received.count >= count { return received }
            if clock.now >= deadline {
                throw TestSMTPServerError(
                    description: "expected \(count) message(s) within \(timeout), got \(received.count)")
            }
            usleep(20_000)
        }
    }

    /// Kills the server and reaps it; harmless to call twice. Received messages
    /// stay readable until the object goes away.
    public func stop() {
        let running = child.withLock { current -> Child? in
            defer { current = nil }
            return current
        }
        guard let running else { return }
        close(running.stdinFD)
        kill(running.pid, SIGKILL)
        _ = ChildProcess.wait(running.pid)
    }

    // MARK: - Starting the process

    private static func makeTemporaryDirectory() throws -> String {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/caretaker-smtp-XXXXXX".utf8CString)
        guard let result = mkdtemp(&template) else {
            throw TestSMTPServerError(description: "mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        return String(cString: result)
    }

    /// The server's options for `options` (see `scripts/lib/smtp_server.py`).
    private static func serverArguments(_ options: Options) -> [String] {
        var arguments: [String] = []
        if let code = options.rejectSenderCode { arguments += ["--reject", "mail=\(code)"] }
        if let code = options.rejectRecipientCode { arguments += ["--reject", "rcpt=\(code)"] }
        if let code = options.rejectDataCode { arguments += ["--reject", "data=\(code)"] }
        if let login = options.requiredLogin { arguments += ["--auth", login.username, login.password] }
        switch options.tls {
        case .starttls(let ca):
            arguments += ["--tls", "starttls", "--cert", ca.serverCertificate, "--key", ca.serverKey]
        case .implicit(let ca):
            arguments += ["--tls", "implicit", "--cert", ca.serverCertificate, "--key", ca.serverKey]
        case nil:
            break
        }
        return arguments
    }

    /// posix_spawn with stdin and stdout on pipes (the parent's ends close on
    /// exec, so other children do not inherit them) and stderr into a file.
    private static func spawn(_ arguments: [String], stderrPath: String) throws -> (pid_t, Int32, Int32) {
        var stdinPipe: [Int32] = [-1, -1]
        var stdoutPipe: [Int32] = [-1, -1]
        guard pipe(&stdinPipe) == 0, pipe(&stdoutPipe) == 0 else {
            throw TestSMTPServerError(description: "pipe failed: \(String(cString: strerror(errno)))")
        }
        for fd in stdinPipe + stdoutPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        ChildProcess.closeInheritedDescriptors(&actions)

        // A small, fixed environment: a pyenv or virtualenv of the caller must
        // not hide Debian's aiosmtpd from Debian's python.
        let environment = ["PATH=/usr/bin:/bin", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, nil, &argv, &envp)
        close(stdinPipe[0])
        close(stdoutPipe[1])
        guard result == 0 else {
            close(stdinPipe[1])
            close(stdoutPipe[0])
            throw TestSMTPServerError(
                description: "could not start \(arguments[0]): \(String(cString: strerror(result)))")
        }
        return (pid, stdinPipe[1], stdoutPipe[0])
    }

    /// Reads the child's stdout until the line "ready PORT".
    private static func readReadyPort(_ fd: Int32, timeout: Duration) throws -> Int {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var line: [UInt8] = []
        while true {
            let remaining = clock.now.duration(to: deadline)
            guard remaining > .zero else {
                throw TestSMTPServerError(description: "server did not say ready within \(timeout)")
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds =
                remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000
            if poll(&poller, 1, Int32(max(1, milliseconds))) <= 0 { continue }
            var byte: UInt8 = 0
            let count = read(fd, &byte, 1)
            if count == 0 { throw TestSMTPServerError(description: "server exited before it was ready") }
            if count < 0 {
                if errno == EINTR { continue }
                throw TestSMTPServerError(description: "reading the server's output failed")
            }
            if byte != UInt8(ascii: "\n") {
                line.append(byte)
                continue
            }
            let text = String(decoding: line, as: UTF8.self)
            line = []
            if text.hasPrefix("ready "), let port = Int(text.dropFirst(6)) { return port }
        }
    }
}
