import CaretakerCore
import Foundation
import Postgres
import Synchronization

/// A throwaway PostgreSQL cluster for the test run, in a temporary directory,
/// listening only on a Unix socket there.
///
/// Started once per test process (`shared`), as the `postgres` user when the
/// tests run as root (initdb refuses root). A watcher process stops the server
/// and removes the directory when the test process exits, even when it crashes.
public final class TemporaryPostgres: Sendable {
    /// The directory holding `data/`, the socket and the server log.
    public let directory: String
    public let binDirectory: String
    /// The port of the Unix socket, and of TCP on 127.0.0.1 when `tls` was given.
    public let port: Int
    /// With TLS: the server's certificate and key (copied into `directory`, owned by the server).
    private let tls: TestCertificateAuthority?
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
        binDirectory = try Self.findBinDirectory()
        directory = try Self.makeDirectory()
        self.tls = tls
        port = tls == nil ? 5432 : try Self.freePort()
        if let tls {
            for (source, name) in [(tls.serverCertificate, "server.crt"), (tls.serverKey, "server.key")] {
                try FileManager.default.copyItem(atPath: source, toPath: directory + "/" + name)
                try Self.giveToOwner(directory + "/" + name)
            }
        }
        try runAsOwner([binDirectory + "/initdb", "-D", directory + "/data", "-U", "postgres", "--auth=trust",
                        "-E", "UTF8", "--no-sync"], log: "initdb.log")
        try start()
        try startWatcher()
        try connect().query("CREATE ROLE \(quoteIdentifier(Self.workerRole)) LOGIN")
    }

    /// The libpq conninfo for `database`.
    public func conninfo(database: String = "postgres") -> String {
        "host=\(directory) port=\(port) user=postgres dbname=\(database)"
    }

    /// The restricted role the built-in jobs run as in tests: it holds only what
    /// `RuntimeGrants` gives it (in the template, so in every migrated test database).
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

    /// Starts the server (after `stop()`, for outage tests).
    public func start() throws {
        var options = Self.serverOptions(socketDirectory: directory, port: port)
        if tls != nil {
            options += " -c listen_addresses=127.0.0.1 -c ssl=on"
                + " -c ssl_cert_file=\(directory)/server.crt -c ssl_key_file=\(directory)/server.key"
        }
        try runAsOwner([binDirectory + "/pg_ctl", "-D", directory + "/data", "-l", directory + "/server.log",
                        "-o", options, "-w", "start"], log: "pg_ctl.log")
    }

    /// A standby's `max_connections` must be at least its primary's: both use these.
    /// TCP is off (`listen_addresses` empty) unless `start()` adds it for TLS; a later
    /// `-c` of the same setting wins.
    private static func serverOptions(socketDirectory: String, port: Int = 5432) -> String {
        "-k \(socketDirectory) -c port=\(port) -c listen_addresses= -c fsync=off -c synchronous_commit=off "
            + "-c full_page_writes=off -c max_connections=300 -c shared_buffers=64MB"
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
            try runAsOwner(["/bin/mkdir", "-p", standby], log: "mkdir.log")
            try runAsOwner([binDirectory + "/pg_basebackup", "-h", directory, "-p", "\(port)", "-U", "postgres",
                            "-D", standby + "/data", "-R", "-X", "stream", "-c", "fast", "--no-sync"], log: "pg_basebackup.log")
            try runAsOwner([binDirectory + "/pg_ctl", "-D", standby + "/data", "-l", standby + "/server.log",
                            "-o", Self.serverOptions(socketDirectory: standby), "-w", "start"], log: "pg_ctl-standby.log")
            started = true
        }
        return standby
    }

    /// The standby's conninfo for `database`, once the standby has replayed its creation.
    public func standbyConninfo(database: String, timeout: Duration = .seconds(60)) throws -> String {
        let conninfo = "host=\(try standbyDirectory()) port=5432 user=postgres dbname=\(database)"
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
        try runAsOwner([binDirectory + "/pg_ctl", "-D", directory + "/data", "-m", "immediate", "-w", "stop"], log: "pg_ctl.log")
    }

    /// A new, empty database named after the test; `migrated` applies caretaker's migrations first
    /// (copied from a template database, which is much faster than migrating each time).
    public func makeDatabase(_ name: String = #function, migrated: Bool = true) throws -> String {
        let database = "t\(counter.add(1, ordering: .relaxed).newValue)_" + String(name.lowercased()
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

    private static func findBinDirectory() throws -> String {
        let candidates = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        let versions = candidates.compactMap(Int.init).sorted()
        for version in versions.reversed() {
            let path = "/usr/lib/postgresql/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: path + "/initdb") { return path }
        }
        throw TemporaryPostgresError(message: "no PostgreSQL server under /usr/lib/postgresql/*/bin: run scripts/test, which installs it")
    }

    private static var isRoot: Bool { getuid() == 0 }

    private static func makeDirectory() throws -> String {
        var template = Array("/tmp/caretaker-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw TemporaryPostgresError(message: "mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        let path = String(cString: made)
        if isRoot {
            guard let owner = getpwnam("postgres") else {
                throw TemporaryPostgresError(message: "running as root but there is no postgres user to run the server as")
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

    private func runAsOwner(_ arguments: [String], log: String) throws {
        let logPath = directory + "/" + log
        let command = Self.isRoot ? ["/usr/sbin/runuser", "-u", "postgres", "--"] + arguments : arguments
        let status = try ChildProcess.run(command, logPath: logPath)
        guard status == 0 else {
            let output = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            let server = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
            throw TemporaryPostgresError(message: "\(arguments[0]) failed (\(status)): \(output)\n\(server.suffix(2000))")
        }
    }

    /// A detached shell that waits for this process to exit, then stops the standby
    /// (if one was started) and the server, and removes the directory.
    private func startWatcher() throws {
        let pgCtl = (Self.isRoot ? "runuser -u postgres -- " : "") + binDirectory + "/pg_ctl"
        let stop = "{ [ ! -d \(standbyPath)/data ] || \(pgCtl) -D \(standbyPath)/data -m immediate -w stop; "
            + "\(pgCtl) -D \(directory)/data -m immediate -w stop; }"
        let script = "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; \(stop) >/dev/null 2>&1; rm -rf \(directory)"
        _ = try ChildProcess.spawn(["/bin/sh", "-c", script], newSession: true)
    }
}

public struct TemporaryPostgresError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
