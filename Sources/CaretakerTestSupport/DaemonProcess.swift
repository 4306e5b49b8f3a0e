import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A `caretaker run` child process, for tests that send it real signals.
///
/// Its standard output and error go to a file (`logPath`) that the waits read.
/// The waits are `async` and poll with `Task.sleep`, so a test waiting for a
/// daemon does not hold one of the few cooperative threads other tests need.
/// The process is killed (SIGKILL) and reaped when the object goes away.
public final class DaemonProcess: Sendable {
    public let pid: pid_t
    /// Where the daemon's log lines go (stdout and stderr together).
    public let logPath: String
    private let directory: String
    /// The exit status once reaped (128 + signal when killed by one).
    private let exitStatus = Mutex<Int32?>(nil)

    /// How often the waits look again.
    static let pollInterval: Duration = .milliseconds(50)

    /// Starts `caretaker run --config CONFIG [--low-footprint]` with `Self.environment(environment)`.
    public init(config: String, lowFootprint: Bool = false, environment: [String: String] = [:]) throws {
        var template = Array("/tmp/caretaker-daemon-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw TemporaryPostgresError(message: "mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        directory = String(cString: made)
        logPath = directory + "/daemon.log"
        let arguments = [Caretaker.path, "run", "--config", config] + (lowFootprint ? ["--low-footprint"] : [])
        pid = try ChildProcess.spawn(
            arguments, stdoutPath: logPath, stderrPath: nil, environment: Self.environment(environment))
    }

    /// This process's environment without the variables that would change a daemon's
    /// behaviour (`CARETAKER_CONFIG`, `JOURNAL_STREAM`, `NOTIFY_SOCKET`, `WATCHDOG_*`),
    /// then `extra` on top.
    public static func environment(_ extra: [String: String]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in ["CARETAKER_CONFIG", "JOURNAL_STREAM", "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"] {
            environment[name] = nil
        }
        environment.merge(extra) { _, new in new }
        return environment
    }

    deinit {
        kill9()
        try? FileManager.default.removeItem(atPath: directory)
    }

    // MARK: Signals and exit

    /// Sends `number` (SIGTERM, SIGHUP, …) unless the process has already been reaped.
    public func signal(_ number: Int32) {
        guard !hasExited else { return }
        kill(pid, number)
    }

    /// Kills the process with SIGKILL and reaps it: what a crash or the OOM killer looks like.
    public func kill9() {
        guard !hasExited else { return }
        kill(pid, SIGKILL)
        let status = ChildProcess.wait(pid)
        exitStatus.withLock { $0 = status }
    }

    /// True once the process has exited and was reaped (checks without waiting).
    public var hasExited: Bool { reapIfExited() != nil }

    /// Waits up to `timeout` for the process to exit; its exit status (128 + signal
    /// when a signal ended it), or nil when it is still running.
    public func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let status = reapIfExited() { return status }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    private func reapIfExited() -> Int32? {
        exitStatus.withLock { known in
            if let known { return known }
            guard case .exited(let status) = ChildProcess.state(of: pid) else { return nil }
            known = status
            return known
        }
    }

    // MARK: The log

    /// Everything the daemon wrote so far.
    public var log: String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    /// The complete lines the daemon wrote so far.
    public var logLines: [String] {
        let text = log
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        if !text.hasSuffix("\n"), !lines.isEmpty { lines.removeLast() }  // a line still being written
        return lines
    }

    /// The lines that contain every one of `fragments`.
    public func lines(containing fragments: String...) -> [String] {
        logLines.filter { line in fragments.allSatisfy { line.contains($0) } }
    }

    /// Waits until at least `count` log lines contain `fragment`, reading the log
    /// every 50 ms; returns the matching lines, or nil after `timeout` (or when the
    /// process exited without writing them).
    @discardableResult
    public func waitForLog(
        containing fragment: String, count: Int = 1,
        timeout: Duration = .seconds(10)
    ) async -> [String]? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let exited = hasExited
            let matching = logLines.filter { $0.contains(fragment) }
            if matching.count >= count { return matching }
            if exited || ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: Self.pollInterval)
        }
    }

    // MARK: /proc

    /// What `/proc` says about the process (memory, CPU time, status fields).
    public var statistics: ProcessStatistics { ProcessStatistics(pid: pid) }

    /// CPU time (user + system, all threads) the process used so far, from `/proc/PID/stat`.
    public var cpuTime: Duration? { try? statistics.cpuTime() }
}

/// A stand-in for systemd's notification socket: an `AF_UNIX` datagram socket
/// in a temporary directory, read by a thread of its own that timestamps every
/// message on arrival. Pass `NOTIFY_SOCKET=path` to the daemon.
public final class NotifySocket: Sendable {
    public struct Message: Sendable {
        public let text: String
        public let receivedAt: ContinuousClock.Instant
    }

    public let path: String
    private let directory: String
    private let descriptor: Int32
    private let received = Mutex<[Message]>([])

    public init() throws {
        var template = Array("/tmp/caretaker-notify-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw TemporaryPostgresError(message: "mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        directory = String(cString: made)
        NotifySocket.removeAtExit(directory)
        path = directory + "/notify.sock"
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw TemporaryPostgresError(message: "socket() failed") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0 else {
            closeDescriptor(descriptor)
            throw TemporaryPostgresError(message: "bind(\(path)) failed: \(String(cString: strerror(errno)))")
        }
        // The thread holds the socket only while it reads once, so deinit can run between reads.
        let reader = Thread { [weak self] in
            while let socket = self { socket.readOnce() }
        }
        reader.name = "notify-socket"
        reader.start()
    }

    deinit {
        closeDescriptor(descriptor)
        try? FileManager.default.removeItem(atPath: directory)
        Self.leftDirectories.withLock { $0.remove(directory) }
    }

    /// Directories of sockets not yet gone: the reader thread holds its socket while it
    /// reads, so when a test ends just before the process exits, deinit never runs; an
    /// exit handler removes what is left.
    private static let leftDirectories = Mutex<Set<String>>([])

    private static func removeAtExit(_ directory: String) {
        _ = exitHandler
        leftDirectories.withLock { _ = $0.insert(directory) }
    }

    /// Installed once, on first use (a static's initialiser runs once).
    private static let exitHandler: Void = {
        atexit {
            for directory in NotifySocket.leftDirectories.withLock({ $0 }) {
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
    }()

    /// Every message received so far, oldest first.
    public var messages: [Message] { received.withLock { $0 } }

    /// Waits until a message contains `text`; returns it, or nil after `timeout`.
    public func waitFor(_ text: String, timeout: Duration = .seconds(10)) async -> Message? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let found = messages.first(where: { $0.text.contains(text) }) { return found }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits up to 100 ms for one datagram and records it.
    private func readOnce() {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 100) > 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { return }
        let message = Message(text: String(decoding: buffer[0..<count], as: UTF8.self), receivedAt: .now)
        received.withLock { $0.append(message) }
    }
}

/// `close(2)`, under a name that methods called `close` cannot shadow.
private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}
