import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Starts programs with `posix_spawn` and reaps them with `waitpid`.
///
/// Foundation's `Process.waitUntilExit` can hang when the child leaves a
/// daemon behind (as `pg_ctl start` does), so test support uses this instead.
public enum ChildProcess {
    /// Adds a spawn action that closes every descriptor from 3 up in the child: without
    /// it, `posix_spawn` passes on every descriptor of this process not marked
    /// close-on-exec (Foundation's file writes, sockets), and a long-lived child (a
    /// cluster's watcher, a daemon) holds them. A script this process is writing then
    /// cannot be run ("Text file busy") until that child exits. glibc 2.34 has the
    /// action, under `_GNU_SOURCE`, which Swift's Glibc does not export: looked up by name.
    public static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        _ = addCloseFrom?(&actions, 3)
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: AddCloseFrom.self)
    }

    /// Runs `arguments[0]` with its output appended to `logPath`; returns the exit status.
    @discardableResult
    public static func run(
        _ arguments: [String], logPath: String? = nil, environment: [String: String]? = nil
    ) throws -> Int32 {
        let pid = try spawn(arguments, logPath: logPath, environment: environment)
        return wait(pid)
    }

    /// Runs `arguments[0]` with standard output and standard error in separate files.
    public static func run(
        _ arguments: [String], stdoutPath: String, stderrPath: String,
        environment: [String: String]? = nil
    ) throws -> Int32 {
        wait(try spawn(arguments, stdoutPath: stdoutPath, stderrPath: stderrPath, environment: environment))
    }

    /// Starts `arguments[0]` and returns its pid without waiting.
    public static func spawn(
        _ arguments: [String], logPath: String? = nil, environment: [String: String]? = nil,
        newSession: Bool = false
    ) throws -> pid_t {
        let output = logPath ?? "/dev/null"
        return try spawn(
            arguments, stdoutPath: output, stderrPath: nil, environment: environment, newSession: newSession)
    }

    /// Starts `arguments[0]` with its output in `stdoutPath` (and `stderrPath`, or the same file).
    public static func spawn(
        _ arguments: [String], stdoutPath: String, stderrPath: String?,
        environment: [String: String]? = nil, newSession: Bool = false
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        if let stderrPath {
            posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        } else {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        closeInheritedDescriptors(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        if newSession {
            posix_spawnattr_setflags(
                &attributes, Int16(0x80) /* POSIX_SPAWN_SETSID, glibc >= 2.26; not exported to Swift */)
        }
        let env = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let status = withCStrings(arguments) { argv in
            withCStrings(env) { envp in
                posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
            }
        }
        guard status == 0 else {
            throw TemporaryPostgresError(message: "cannot start \(arguments[0]): \(String(cString: strerror(status)))")
        }
        return pid
    }

    /// Waits for `pid` and returns its exit status (128 + signal when killed).
    public static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return exitStatus(decoding: status)
    }

    /// What a look at a child without waiting (`waitpid` with `WNOHANG`) found.
    public enum State: Equatable, Sendable {
        case running
        /// It exited and is reaped now: its exit status (128 + signal when killed).
        case exited(Int32)
        /// Not a child of this process (any more): reaped already, or never ours.
        case notAChild
    }

    /// Reaps `pid` if it has exited, without waiting.
    public static func state(of pid: pid_t) -> State {
        var status: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(pid, &status, WNOHANG) } while result < 0 && errno == EINTR
        if result == pid { return .exited(exitStatus(decoding: status)) }
        return result < 0 ? .notAChild : .running
    }

    /// Waits up to `timeout` for `pid` to exit and returns its exit status; when it is
    /// still running then, kills it with SIGKILL, reaps it and returns nil.
    public static func exitStatus(of pid: pid_t, within timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let expired = ContinuousClock.now >= deadline
            switch state(of: pid) {
            case .exited(let status): return status
            case .notAChild: return nil
            case .running: break
            }
            if expired { break }
            try? await Task.sleep(for: .milliseconds(20))
        }
        kill(pid, SIGKILL)
        _ = wait(pid)
        return nil
    }

    /// The exit status in a `waitpid` status word: the code it exited with, or 128 + the signal that ended it.
    public static func exitStatus(decoding status: Int32) -> Int32 {
        status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    private static func withCStrings<R>(
        _ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R
    ) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { pointers.forEach { free($0) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
