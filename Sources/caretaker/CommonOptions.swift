import ArgumentParser
import CaretakerCore
import Logging
import Postgres

/// Flags every subcommand shares.
struct CommonOptions: ParsableArguments {
    @Option(name: .long, help: "Path of jobs.toml (else $CARETAKER_CONFIG, ./jobs.toml, /etc/caretaker/jobs.toml).")
    var config: String?

    @Option(name: .long, help: "Log format: logfmt or json (default: worker.log_format).")
    var logFormat: WorkerOptions.LogFormat?

    @Option(name: .long, help: "Least severe log level written: debug, info, notice, warning or error.")
    var logLevel: LogLevel = .info

    /// Loads the configuration or exits 78 naming the file, line and key.
    func loadConfiguration(lowFootprint: Bool? = nil) throws -> Configuration {
        let path = ConfigurationLoader.locate(explicit: config)
        do {
            let configuration = try ConfigurationLoader.load(path: path, lowFootprint: lowFootprint)
            LoggingBootstrap.once(format: logFormat ?? configuration.worker.logFormat, level: logLevel.level)
            return configuration
        } catch {
            LoggingBootstrap.once(format: logFormat ?? .logfmt, level: logLevel.level)
            throw Failure(.configuration, "configuration error: \(error)")
        }
    }

    /// The configuration when it loads, else nil (without logging): for checks made while
    /// parsing the command line, which leave a bad file to `loadConfiguration` (78).
    func configurationIfValid() -> Configuration? {
        try? ConfigurationLoader.load(path: ConfigurationLoader.locate(explicit: config))
    }

    /// Connects or exits 69 after `database.connect_timeout` (78 when the password file cannot be read).
    func connect(_ configuration: Configuration, applicationName: String = "caretaker") throws -> Connection {
        try connect(connector(configuration), applicationName: applicationName)
    }

    /// The connector for `[database]`, for commands that open a second connection
    /// (the pooler check); exits 78 when the password file cannot be read.
    func connector(_ configuration: Configuration) throws -> DatabaseConnector {
        do {
            return try DatabaseConnector(options: configuration.database)
        } catch {
            throw Failure(.configuration, "configuration error: \(error)")
        }
    }

    /// Connects through `connector` or exits 69 after `database.connect_timeout`.
    func connect(_ connector: DatabaseConnector, applicationName: String = "caretaker") throws -> Connection {
        do {
            return try connector.connect(applicationName: applicationName)
        } catch {
            throw Failure(.databaseUnavailable, "database unavailable: \(error)")
        }
    }

    /// Exits 69 when the database is a standby: `command` writes.
    func requirePrimary(_ connection: Connection, for command: String) throws {
        guard try DatabaseRole.isStandby(connection) else { return }
        throw Failure(
            .databaseUnavailable,
            "database unavailable: \(DatabaseRole.standbyMessage); `\(command)` needs the primary: \(DatabaseRole.standbyAdvice)"
        )
    }

    /// Says on stderr when the database is a standby: what a read-only command shows may lag the primary.
    func noteStandby(_ connection: Connection) throws {
        guard try DatabaseRole.isStandby(connection) else { return }
        printError("note: \(DatabaseRole.standbyMessage); showing what it has replayed from the primary so far")
    }
}

extension WorkerOptions.LogFormat: ExpressibleByArgument {}

/// The `--log-level` values (swift-log's levels an operator would pick).
enum LogLevel: String, ExpressibleByArgument, CaseIterable {
    case debug, info, notice, warning, error

    var level: Logger.Level {
        switch self {
        case .debug: .debug
        case .info: .info
        case .notice: .notice
        case .warning: .warning
        case .error: .error
        }
    }
}

/// A command failed in a way that has its own exit code (docs/commands.md); the message goes to stderr.
struct Failure: Error, CustomStringConvertible {
    let status: ExitStatus
    let message: String
    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }
    var description: String { message }
}

extension ParsableCommand {
    /// Runs `body`, turning `Failure` and database errors into their exit codes.
    func exiting(_ body: () throws -> ExitStatus) throws {
        let status: ExitStatus
        do {
            status = try body()
        } catch let failure as Failure {
            printError(failure.message)
            throw ExitCode(failure.status.rawValue)
        } catch let error as ConfigurationError {
            printError("configuration error: \(error)")
            throw ExitCode(ExitStatus.configuration.rawValue)
        } catch let error as PostgresError {
            let failure = Failure(error)
            printError(failure.message)
            throw ExitCode(failure.status.rawValue)
        } catch let error as MigrationError {
            printError(error.description)
            // Gave up waiting for locks: a temporary condition, like a busy job (EX_TEMPFAIL).
            throw ExitCode(error.lockWait != nil ? ExitStatus.busy.rawValue : Failure(error.underlying).status.rawValue)
        } catch let error as UnknownHistoryValue {
            // A row a newer caretaker wrote: exit 1, as for any other error the database answered with.
            printError(error.description)
            throw ExitCode(ExitStatus.jobFailed.rawValue)
        }
        if status != .ok { throw ExitCode(status.rawValue) }
    }
}

extension Failure {
    /// A database error with its exit code (69 for a standby or a lost
    /// connection, else 1) and what to do about it; `context` says what caretaker
    /// was doing ("recording the run of job clean-sessions").
    init(_ error: PostgresError, while context: String? = nil) {
        let during = context.map { " while \($0)" } ?? ""
        if error.isReadOnly {
            self.init(.databaseUnavailable, "database unavailable\(during): \(error) — \(DatabaseRole.standbyAdvice)")
        } else if error.isConnectionLost {
            self.init(.databaseUnavailable, "database unavailable\(during): \(error)")
        } else if error.isUndefinedObject {
            self.init(
                .jobFailed, "database error\(during): \(error) — has `caretaker migrate` been run on this database?")
        } else if error.sqlState == SQLState.insufficientPrivilege {
            self.init(
                .jobFailed,
                "database error\(during): \(error) — the role in [database] url lacks a right: "
                    + "run `caretaker migrate --grant ROLE` as the owner of caretaker's schema")
        } else {
            self.init(.jobFailed, "database error\(during): \(error)")
        }
    }
}

/// "unknown job "X"; valid jobs: …", for `once JOB` and `history --job JOB`.
func unknownJob(_ name: String, in configuration: Configuration) -> String {
    "unknown job \"\(name)\"; valid jobs: \(configuration.jobNames.joined(separator: ", "))"
}

/// Every error caretaker prints starts `caretaker: `, the parser's included (`Caretaker.main`).
func printError(_ message: String) {
    StandardError.write("caretaker: \(message)\n")
}

/// swift-log may be bootstrapped only once per process.
enum LoggingBootstrap {
    nonisolated(unsafe) private static var done = false
    static func once(format: WorkerOptions.LogFormat, level: Logger.Level = .info) {
        guard !done else { return }
        done = true
        LineLogHandler.bootstrap(format: format == .json ? .json : .logfmt, level: level)
    }
}
