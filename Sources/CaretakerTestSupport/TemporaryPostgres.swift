import CaretakerCore
import Foundation
import Postgres
import Synchronization

/// A throwaway PostgreSQL cluster for the test run, in a temporary directory,
/// listening only on a Unix socket there.
///
/// Started once per test process (`shared`), as the `postgres` user when the
/// tests run as root (initdb refuses root), by `scripts/lib/postgres.sh`: the
/// scripts (soak, bench, demo) start their clusters and standbys with the same
/// functions. A watcher process stops the server and removes the directory when
/// the test process exits, even when it crashes.
public final class TemporaryPostgres: Sendable {
    /// The directory holding `data/`, the socket and the server log.
    public let directory: String
    /// The port of the Unix socket, and of TCP on 127.0.0.1 when `tls` was given.
    public let port: Int
    private let counter = Atomic<Int>(0)
    private let templateLock = Mutex(false)
    private let standbyLock = Mutex(false)

    /// The cluster every test in this process shares; each test gets its own database.
    public static let shared: TemporaryPostgres = {
        do { return try TemporaryPostgres() } catch { fatalError("cannot start the test PostgreSQL: \(error)") }
    }()

    /// A cluster on a Unix socket only; with `tls`, also on 127.0.0.1 at a free port,
    /// offering TLS with the certificate `tls` signed for `localhost`.
    public init(tls: TestCertificateAuthority? = nil) throws {
        directory = try Self.makeDirectory()
        port = tls == nil ? 5432 : try Self.freePort()
        if let tls {  // the certificate and key, copied into `directory` and owned by the server
            for (source, name) in [(tls.serverCertificate, "server.crt"), (tls.serverKey, "server.key")] {
                try FileManager.default.copyItem(atPath: source, toPath: directory + "/" + name)
                try Self.giveToOwner(directory + "/" + name)
            }
        }
        // pg_start's defaults (no TCP, no fsync) and these go into postgresql.conf, so a
        // restart and a standby made from it see them too. A standby's max_connections
        // must be at least its primary's.
        var settings = ["port=\(port)", "max_connections=300", "shared_buffers=64MB"]
        if tls != nil {
            settings += [
                "listen_addresses=127.0.0.1", "ssl=on",
                "ssl_cert_file=\(directory)/server.crt", "ssl_key_file=\(directory)/server.key",
            ]
        }
        try Self.cluster(["start", directory] + settings, log: directory + "/pg_start.log")
        try startWatcher()
        // pg_read_all_stats too, as README asks of an operator whose server has standbys
        // (`migrate --grant` does not give it): once a test has attached the shared
        // standby, a role without it is told on every run that the standby is hidden.
        // GentleExpiryTests.replicaLag runs a role without it on purpose.
        try connect().execute(
            script: """
                CREATE ROLE \(quoteIdentifier(Self.workerRole)) LOGIN;
                GRANT pg_read_all_stats TO \(quoteIdentifier(Self.workerRole));
                """)
    }

    /// The libpq conninfo for `database`.
    public func conninfo(database: String = "postgres") -> String {
        "host=\(directory) port=\(port) user=postgres dbname=\(database)"
    }

    /// The restricted role the built-in jobs run as in tests: it holds only what
    /// `RuntimeGrants` gives it (in the template, so in every migrated test database),
    /// and `pg_read_all_stats`, which README asks for where there are standbys.
    /// The quote and the space in its name exercise identifier quoting.
    public static let workerRole = #"caretaker "worker""#

    /// The libpq conninfo for `database` as `workerRole`.
    public func workerConninfo(database: String) -> String {
        "host=\(directory) port=\(port) user='\(Self.workerRole)' dbname=\(database)"
    }

    /// Connects to `database` as the superuser.
    public func connect(database: String = "postgres") throws -> Connection {
        try Connection(.init(conninfo: conninfo(database: database), applicationName: "caretaker-tests"))
    }

    /// Starts the server again (after `stop()`, for outage tests).
    public func start() throws {
        try Self.cluster(["start-existing", directory], log: directory + "/pg_start.log")
    }

    // MARK: A streaming standby

    /// Where the standby lives, inside `directory` (the watcher stops it first).
    private var standbyPath: String { directory + "/standby" }

    /// The socket directory of a hot standby streaming from this cluster, started on
    /// first use (`pg_basebackup -R`: `standby.signal` and `primary_conninfo`) and
    /// stopped when the test process exits.
    public func standbyDirectory() throws -> String {
        let standby = standbyPath
        try standbyLock.withLock { started in
            guard !started else { return }
            try Self.cluster(
                ["start-standby", directory, standby], log: directory + "/pg_start-standby.log",
                environment: ["PGPORT": "\(port)"])
            started = true
        }
        return standby
    }

    /// The standby's conninfo for `database`, once the standby has replayed its creation.
    public func standbyConninfo(database: String, timeout: Duration = .seconds(60)) throws -> String {
        let conninfo = "host=\(try standbyDirectory()) port=\(port) user=postgres dbname=\(database)"
        let deadline = ContinuousClock.now + timeout
        while true {
            do {
                let connection = try Connection(.init(conninfo: conninfo, applicationName: "caretaker-tests"))
                _ = try connection.query("SELECT 1")
                return conninfo
            } catch {
                if ContinuousClock.now > deadline {
                    throw TemporaryPostgresError(message: "the standby did not replay database \(database): \(error)")
                }
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
    }

    /// Stops the server at once (`-m immediate`): what a crash or power loss looks like to clients.
    public func stop() throws {
        try Self.cluster(["stop", directory, "immediate"], log: directory + "/pg_stop.log")
        // pg_stop never fails (the scripts clean up with it): see that the server is gone.
        guard !FileManager.default.fileExists(atPath: directory + "/data/postmaster.pid") else {
            throw TemporaryPostgresError(message: "pg_ctl stop -m immediate left the server in \(directory) running")
        }
    }

    /// A new, empty database named after the test; `migrated` applies caretaker's migrations first
    /// (copied from a template database, which is much faster than migrating each time).
    public func makeDatabase(_ name: String = #function, migrated: Bool = true) throws -> String {
        let database =
            "t\(counter.add(1, ordering: .relaxed).newValue)_"
            + String(
                name.lowercased()
                    .map { $0.isLetter || $0.isNumber ? $0 : "_" }.prefix(40))
        let admin = try connect()
        if migrated {
            try prepareTemplate(admin)
            try admin.query("CREATE DATABASE \(quoteIdentifier(database)) TEMPLATE caretaker_template")
        } else {
            try admin.query("CREATE DATABASE \(quoteIdentifier(database))")
        }
        return database
    }

    private func prepareTemplate(_ admin: Connection) throws {
        try templateLock.withLock { ready in
            guard !ready else { return }
            try admin.query("CREATE DATABASE caretaker_template")
            let template = try connect(database: "caretaker_template")
            try Migrator(appSchema: "public").migrate(on: template)
            try template.query("CREATE EXTENSION IF NOT EXISTS pgcrypto")
            try Self.grantWorkerDefaults(appSchema: "public", on: template)
            ready = true
        }
    }

    /// Grants `workerRole` what the default configuration's jobs need in `appSchema`
    /// (`migrate --grant`), on a freshly migrated database.
    public static func grantWorkerDefaults(appSchema: String, on connection: Connection) throws {
        let defaults = try ConfigurationLoader.parse("", file: "defaults")
        try RuntimeGrants(appSchema: appSchema, jobs: defaults.jobs).apply(role: workerRole, on: connection)
    }

    // MARK: Process plumbing

    private static var isRoot: Bool { getuid() == 0 }

    private static func makeDirectory() throws -> String {
        var template = Array("/tmp/caretaker-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw TemporaryPostgresError(message: "mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        let path = String(cString: made)
        if isRoot {
            guard let owner = getpwnam("postgres") else {
                throw TemporaryPostgresError(
                    message: "running as root but there is no postgres user to run the server as")
            }
            chown(path, owner.pointee.pw_uid, owner.pointee.pw_gid)
        }
        return path
    }

    /// Hands a file to the `postgres` user when the tests run as root (the server
    /// refuses a key file others could read).
    private static func giveToOwner(_ path: String) throws {
        chmod(path, 0o600)
        guard isRoot else { return }
        guard let owner = getpwnam("postgres") else {
            throw TemporaryPostgresError(message: "running as root but there is no postgres user to run the server as")
        }
        chown(path, owner.pointee.pw_uid, owner.pointee.pw_gid)
    }

    /// A TCP port on 127.0.0.1 that nothing listens on right now.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard fd >= 0, bound else { throw TemporaryPostgresError(message: "no free TCP port on 127.0.0.1") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Runs `scripts/lib/postgres.sh COMMAND ARGUMENTS…` (pg_start, pg_start_standby, …)
    /// with its output in `log`; throws with that output (which ends with the failing
    /// tool's log or the server log's last lines) when it fails.
    private static func cluster(_ arguments: [String], log: String, environment: [String: String] = [:]) throws {
        let command = ["/bin/bash", try Repository.file("scripts/lib/postgres.sh")] + arguments
        let status = try ChildProcess.run(command, logPath: log, environment: libraryEnvironment(environment))
        guard status == 0 else {
            let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw TemporaryPostgresError(
                message: "scripts/lib/postgres.sh \(arguments.joined(separator: " ")) failed (\(status)): \(output)")
        }
    }

    /// This process's environment with `extra`, and `runuser` (in /usr/sbin) on PATH.
    private static func libraryEnvironment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = (environment["PATH"].map { $0 + ":" } ?? "") + "/usr/sbin:/usr/bin:/sbin:/bin"
        environment.merge(extra) { _, new in new }
        return environment
    }

    /// A detached shell that waits for this process to exit, then stops the standby
    /// (if one was started) and the server, and removes the directory.
    private func startWatcher() throws {
        let library = shellQuoted(try Repository.file("scripts/lib/postgres.sh"))
        let stop =
            "/bin/bash \(library) stop \(standbyPath) immediate; /bin/bash \(library) stop \(directory) immediate"
        let script = "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; \(stop); rm -rf \(directory)"
        _ = try ChildProcess.spawn(["/bin/sh", "-c", script], environment: Self.libraryEnvironment(), newSession: true)
    }
}

/// `text` as one word for /bin/sh.
private func shellQuoted(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
}

public struct TemporaryPostgresError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
