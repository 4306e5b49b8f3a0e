import Foundation
import Postgres
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A real PgBouncer (Debian's `pgbouncer`) in front of the shared
/// `TemporaryPostgres`, in the pool mode a test asks for.
///
/// It listens only on a Unix socket in a temporary directory of its own (no
/// port to collide with other tests) and reaches PostgreSQL through the
/// cluster's socket directory; every database of the cluster is served under
/// its own name, as user `postgres` without a password. A client waits for a
/// free server connection as long as it takes (`query_wait_timeout = 0`), so
/// tests see caretaker's own time limits, not PgBouncer's. Started as the
/// `postgres` user when the tests run as root (PgBouncer refuses root).
/// `stop()` (or deinit) ends it; a watcher ends it when the test process dies.
public final class TestPgBouncer: Sendable {
    /// PgBouncer's `pool_mode`.
    public enum PoolMode: String, Sendable {
        case session, transaction, statement
    }

    /// The directory holding the socket, the configuration and the log.
    public let directory: String
    /// The port in the socket's name (`.s.PGSQL.6432`); nothing listens on TCP.
    public static let port = 6432
    private let pid: Mutex<pid_t?>

    /// Starts PgBouncer and waits until it accepts connections.
    ///
    /// - Parameters:
    ///   - poolMode: `pool_mode` for every database.
    ///   - poolSize: `default_pool_size`: server connections per database and user.
    public init(poolMode: PoolMode, poolSize: Int = 4, server: TemporaryPostgres = .shared) throws {
        directory = try Self.makeDirectory()
        let configuration = """
            [databases]
            * = host=\(server.directory) port=5432

            [pgbouncer]
            listen_addr =
            unix_socket_dir = \(directory)
            listen_port = \(Self.port)
            auth_type = trust
            auth_file = \(directory)/userlist.txt
            pool_mode = \(poolMode.rawValue)
            default_pool_size = \(poolSize)
            max_client_conn = 200
            query_wait_timeout = 0
            logfile = \(directory)/pgbouncer.log
            pidfile = \(directory)/pgbouncer.pid

            """
        try configuration.write(toFile: directory + "/pgbouncer.ini", atomically: true, encoding: .utf8)
        try "\"postgres\" \"\"\n".write(toFile: directory + "/userlist.txt", atomically: true, encoding: .utf8)
        let command = ["/usr/sbin/pgbouncer", "--quiet", directory + "/pgbouncer.ini"]
        let asOwner =
            getuid() == 0
            ? ["/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"] + command
            : command
        // setpriv execs PgBouncer, so this is PgBouncer's own pid.
        pid = Mutex(try ChildProcess.spawn(asOwner, logPath: directory + "/output.log"))
        do {
            try startWatcher()
            try waitUntilAccepting(timeout: .seconds(15))
        } catch {
            stop()
            let log = (try? String(contentsOfFile: directory + "/output.log", encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(atPath: directory)
            throw TemporaryPostgresError(message: "PgBouncer did not start: \(error)\n\(log.suffix(2000))")
        }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The libpq conninfo for `database` through PgBouncer.
    public func conninfo(database: String) -> String {
        "host=\(directory) port=\(Self.port) user=postgres dbname=\(database)"
    }

    /// Ends PgBouncer at once and reaps it; harmless to call twice. SIGKILL: a child
    /// spawned from a dispatch thread inherits its blocked signals, SIGTERM included.
    public func stop() {
        let running = pid.withLock { current -> pid_t? in
            defer { current = nil }
            return current
        }
        guard let running else { return }
        kill(running, SIGKILL)
        _ = ChildProcess.wait(running)
    }

    /// What PgBouncer logged so far, for failure messages.
    public var log: String {
        (try? String(contentsOfFile: directory + "/pgbouncer.log", encoding: .utf8)) ?? ""
    }

    private func waitUntilAccepting(timeout: Duration) throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            do {
                _ = try Connection(.init(conninfo: conninfo(database: "postgres"), applicationName: "caretaker-tests"))
                    .query("SELECT 1")
                return
            } catch {
                if ContinuousClock.now >= deadline { throw error }
                if hasExited { throw TemporaryPostgresError(message: "PgBouncer exited: \(error)") }
                usleep(50_000)
            }
        }
    }

    /// Reaps PgBouncer if it has exited (it then is no longer ours to signal).
    private var hasExited: Bool {
        pid.withLock { current in
            guard let running = current else { return true }
            guard ChildProcess.state(of: running) != .running else { return false }
            current = nil
            return true
        }
    }

    private static func makeDirectory() throws -> String {
        var template = Array("/tmp/caretaker-pgbouncer-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw TemporaryPostgresError(message: "mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        let path = String(cString: made)
        if getuid() == 0 {
            guard let owner = getpwnam("postgres") else {
                throw TemporaryPostgresError(
                    message: "running as root but there is no postgres user to run PgBouncer as")
            }
            chown(path, owner.pointee.pw_uid, owner.pointee.pw_gid)
        }
        return path
    }

    /// A detached shell that ends PgBouncer (by its pidfile, which it removes on a
    /// clean exit) and removes the directory once this process is gone; it leaves
    /// by itself when `stop()` and deinit got there first.
    private func startWatcher() throws {
        let script =
            "while kill -0 \(getpid()) 2>/dev/null && [ -d \(directory) ]; do sleep 1; done; "
            + "[ -f \(directory)/pgbouncer.pid ] && kill -9 $(cat \(directory)/pgbouncer.pid) 2>/dev/null; rm -rf \(directory)"
        _ = try ChildProcess.spawn(["/bin/sh", "-c", script], newSession: true)
    }
}
