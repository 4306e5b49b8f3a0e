import ArgumentParser
import CaretakerCore
import CaretakerDashboard
import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `caretaker-dashboard` (also run as `caretaker dashboard`): the read-only web dashboard.
///
/// A binary of its own so that `caretaker run` never links SwiftNIO or Hummingbird.
@main
struct DashboardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "caretaker dashboard",
        abstract: "Serve a read-only web dashboard of the jobs and their run history.",
        discussion: DashboardOptions.helpDiscussion(),
        version: caretakerVersion)

    @Option(name: .long, help: "Path of jobs.toml (else $CARETAKER_CONFIG, ./jobs.toml, /etc/caretaker/jobs.toml).")
    var config: String?

    @Option(name: .long, help: "HOST:PORT to listen on (default: [dashboard] listen, 127.0.0.1:8080).")
    var listen: String?

    @Option(name: .long, help: "Log format: logfmt or json (default: worker.log_format).")
    var logFormat: String?

    func validate() throws {
        if let listen, ListenAddress(parsing: listen) == nil {
            throw ValidationError("--listen \"\(listen)\" is not \(ListenAddress.expectedForm)")
        }
        if let logFormat, WorkerOptions.LogFormat(rawValue: logFormat) == nil {
            throw ValidationError("--log-format must be logfmt or json")
        }
    }

    func run() async throws {
        let path = ConfigurationLoader.locate(explicit: config)
        let configuration: Configuration
        do {
            configuration = try ConfigurationLoader.load(path: path)
        } catch {
            throw fail(.configuration, "configuration error: \(error)")
        }
        let format = logFormat.flatMap(WorkerOptions.LogFormat.init(rawValue:)) ?? configuration.worker.logFormat
        LineLogHandler.bootstrap(
            format: format == .json ? .json : .logfmt, level: .info, identifier: "caretaker-dashboard")
        let logger = Logger(label: "caretaker.dashboard")

        let credentials: BasicCredentials?
        let connector: DatabaseConnector
        do {
            connector = try DatabaseConnector(options: configuration.database)
            credentials = try Self.credentials(configuration.dashboard)
        } catch {
            throw fail(.configuration, "configuration error: \(error)")
        }
        let database = DashboardDatabase(connector: connector)
        do {
            // Fail fast, as `check` and `history` do, when the database is not there at start.
            _ = try await database.read { try $0.query("SELECT 1") }
        } catch {
            throw fail(.databaseUnavailable, "database unavailable: \(error)")
        }
        let address = listen.flatMap(ListenAddress.init(parsing:)) ?? configuration.dashboard.listen
        let server = DashboardServer(configuration: configuration, database: database, credentials: credentials)
        let app = server.application(address: address, logger: logger) { port in
            var bound = address
            bound.port = port
            logger.notice(
                "dashboard listening",
                metadata: [
                    "url": "http://\(bound)/", "auth": "\(credentials == nil ? "none" : "basic")",
                ])
        }
        do {
            try await app.runService()
        } catch {
            throw fail(.jobFailed, "cannot serve on \(address): \(error)")
        }
    }

    /// `[dashboard]`'s credentials, or nil when no username is set.
    static func credentials(_ options: DashboardOptions) throws -> BasicCredentials? {
        guard !options.username.isEmpty else { return nil }
        let password = try Secrets.read(
            file: options.passwordFile, credential: DashboardOptions.passwordCredential,
            environment: ProcessInfo.processInfo.environment, purpose: "dashboard.password_file")
        guard let password, !password.isEmpty else {
            throw MissingPassword(
                description: "dashboard.username is set but there is no password: set dashboard.password_file "
                    + "or the systemd credential \(DashboardOptions.passwordCredential)")
        }
        return BasicCredentials(username: options.username, password: password)
    }

    private func fail(_ status: ExitStatus, _ message: String) -> ExitCode {
        StandardError.write("caretaker dashboard: \(message)\n")
        return ExitCode(status.rawValue)
    }
}

/// `[dashboard] username` without a password to go with it.
struct MissingPassword: Error, CustomStringConvertible {
    let description: String
}
