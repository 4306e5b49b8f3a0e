import CaretakerMailFormat
import CaretakerSchedule
import CaretakerSupport
import CaretakerTOML

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Finds, reads and validates `jobs.toml`.
public enum ConfigurationLoader {
    /// The file to read: `--config`, else `$CARETAKER_CONFIG`, else
    /// `./jobs.toml`, else `/etc/caretaker/jobs.toml`.
    public static func locate(
        explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let fromEnvironment = environment["CARETAKER_CONFIG"], !fromEnvironment.isEmpty { return fromEnvironment }
        if FileManager.default.fileExists(atPath: "jobs.toml") { return "jobs.toml" }
        return "/etc/caretaker/jobs.toml"
    }

    /// Reads and validates the file. `lowFootprint` (the command-line flag, or a reload
    /// keeping the running mode), when given, wins over the file's `worker.low_footprint`.
    /// `catalogue` is the built-in jobs the file may configure.
    public static func load(
        path: String, lowFootprint: Bool? = nil, catalogue: [BuiltInJob]
    ) throws(ConfigurationError) -> Configuration {
        let text: String
        do {
            text = try TextFile.read(path)
        } catch {
            throw ConfigurationError(
                file: path, line: 0, key: "", message: "cannot read the configuration file (\(error))")
        }
        return try parse(text, file: path, lowFootprint: lowFootprint, catalogue: catalogue)
    }

    /// Validates configuration text; `file` is only used in messages and to resolve `template_file`.
    /// `catalogue` is the built-in jobs the file may configure (a test adds its own job to it).
    public static func parse(
        _ text: String, file: String, lowFootprint: Bool? = nil, catalogue: [BuiltInJob]
    ) throws(ConfigurationError) -> Configuration {
        let document: TOMLDocument
        do {
            document = try TOMLDocument(parsing: text)
        } catch {
            throw ConfigurationError(
                file: file, line: error.line, key: "",
                message: "TOML syntax error at column \(error.column): \(error.message)")
        }
        var root = TableReader(document.root, path: "", file: file)
        let database = try readDatabase(&root)
        let worker = try readWorker(&root, lowFootprintFlag: lowFootprint)
        let mail = try readMail(&root)
        let metrics = try readMetrics(&root)
        let alerts = try readAlerts(&root)
        let jobs = try readJobs(&root, worker: worker, catalogue: catalogue)
        let dashboard = try readDashboard(&root)
        try root.finish()
        return Configuration(
            file: file, database: database, worker: worker, mail: mail,
            metrics: metrics, alerts: alerts, dashboard: dashboard, jobs: jobs)
    }

    // MARK: Sections

    private static func section(_ root: inout TableReader, _ name: String) throws(ConfigurationError) -> TableReader {
        let table = try root.optionalTable(name) ?? TableReader.emptyTable
        return TableReader(table, path: name, file: root.file)
    }

    private static func readDatabase(_ root: inout TableReader) throws(ConfigurationError) -> DatabaseOptions {
        var table = try section(&root, "database")
        var options = DatabaseOptions()
        options.url = try table.string("url", default: options.url)
        options.passwordFile = try table.string("password_file", default: options.passwordFile)
        options.appSchema = try table.string("app_schema", default: options.appSchema)
        if options.appSchema.isEmpty { throw table.error("app_schema", "must not be empty") }
        options.connectTimeout = try table.duration(
            "connect_timeout", default: options.connectTimeout, minimum: .seconds(1))
        try table.finish()
        return options
    }

    private static func readWorker(
        _ root: inout TableReader, lowFootprintFlag: Bool?
    ) throws(ConfigurationError) -> WorkerOptions {
        var table = try section(&root, "worker")
        var options = WorkerOptions()
        let zoneName = try table.string("timezone", default: "UTC")
        guard let zone = ZoneInfo(identifier: zoneName) else {
            throw table.error(
                "timezone", "\"\(zoneName)\" is not an IANA time zone name (e.g. \"UTC\", \"Europe/Berlin\")")
        }
        options.timeZone = zone
        options.timeZoneName = zoneName
        let lowFootprintInFile = try table.bool("low_footprint", default: false)
        options.lowFootprint = lowFootprintFlag ?? lowFootprintInFile
        options.maxConcurrentJobs = try table.integer("max_concurrent_jobs", default: 2, in: 1...64)
        // Low-footprint mode runs jobs one at a time on its single connection.
        if options.lowFootprint { options.maxConcurrentJobs = 1 }
        options.shutdownGrace = try table.duration("shutdown_grace", default: options.shutdownGrace)
        options.idleDisconnect = try table.duration("idle_disconnect", default: options.idleDisconnect)
        options.batchPause = try table.duration(
            "batch_pause", default: options.lowFootprint ? .milliseconds(100) : .zero)
        let format = try table.string("log_format", default: "logfmt")
        guard let logFormat = WorkerOptions.LogFormat(rawValue: format) else {
            throw table.error("log_format", "must be \"logfmt\" or \"json\"")
        }
        options.logFormat = logFormat
        try table.finish()
        return options
    }

    private static func readMail(_ root: inout TableReader) throws(ConfigurationError) -> MailOptions {
        var table = try section(&root, "mail")
        var options = MailOptions()
        let transport = try table.string("transport", default: "smtp")
        guard let kind = MailOptions.Transport(rawValue: transport) else {
            throw table.error("transport", "must be \"smtp\" or \"file\"")
        }
        options.transport = kind
        options.url = try table.string("url", default: options.url)
        if kind == .smtp, !(options.url.hasPrefix("smtp://") || options.url.hasPrefix("smtps://")) {
            throw table.error("url", "must start with smtp:// or smtps://")
        }
        options.starttls = try table.bool("starttls", default: false)
        options.username = try table.string("username", default: "")
        options.passwordFile = try table.string("password_file", default: "")
        options.caFile = try table.string("ca_file", default: "")
        options.allowPlaintextAuth = try table.bool("allow_plaintext_auth", default: false)
        if kind == .smtp, options.sendsPasswordInClear, !options.allowPlaintextAuth {
            throw table.error(
                "username",
                "smtp:// without starttls would send the SMTP password in clear text: "
                    + "set starttls = true or use smtps://; only for a relay on this machine set allow_plaintext_auth = true"
            )
        }
        options.from = try table.string("from", default: options.from)
        do {
            _ = try Mailbox(parsing: options.from)
        } catch {
            throw table.error(
                "from", "\"\(options.from)\" is not one address such as \"Community <no-reply@example.org>\": \(error)")
        }
        options.directory = try table.string("directory", default: "")
        if kind == .file, options.directory.isEmpty {
            throw table.error("directory", "is required when transport = \"file\"")
        }
        try table.finish()
        return options
    }

    private static func readDashboard(_ root: inout TableReader) throws(ConfigurationError) -> DashboardOptions {
        var table = try section(&root, "dashboard")
        var options = DashboardOptions()
        let listen = try table.string("listen", default: options.listen.description)
        guard let address = ListenAddress(parsing: listen) else {
            throw table.error("listen", "\"\(listen)\" is not \(ListenAddress.expectedForm)")
        }
        options.listen = address
        options.username = try table.string("username", default: "")
        if options.username.contains(":") || options.username.contains(where: \.isNewline) {
            throw table.error("username", "must not contain a colon or a line break (HTTP basic auth)")
        }
        options.passwordFile = try table.string("password_file", default: "")
        if !options.passwordFile.isEmpty, options.username.isEmpty {
            throw table.error("password_file", "is set but username is empty: set both, or neither")
        }
        try table.finish()
        return options
    }

    private static func readMetrics(_ root: inout TableReader) throws(ConfigurationError) -> MetricsOptions {
        var table = try section(&root, "metrics")
        var options = MetricsOptions()
        options.listen = try table.string("listen", default: "")
        if !options.listen.isEmpty, ListenAddress(metrics: options.listen) == nil {
            throw table.error("listen", "must be IP:PORT, e.g. \"127.0.0.1:9187\" or \"[::1]:9187\" (empty: off)")
        }
        options.textfile = try table.string("textfile", default: "")
        if !options.textfile.isEmpty, !options.textfile.hasPrefix("/") || options.textfile.hasSuffix("/") {
            throw table.error(
                "textfile",
                "must be an absolute file path, e.g. \"/var/lib/prometheus/node-exporter/caretaker.prom\" (empty: off)")
        }
        try table.finish()
        return options
    }

    private static func readAlerts(_ root: inout TableReader) throws(ConfigurationError) -> AlertOptions {
        var table = try section(&root, "alerts")
        var options = AlertOptions()
        options.mailTo = try table.string("mail_to", default: "")
        if !options.mailTo.isEmpty, let problem = MailAddress.problem(in: options.mailTo) {
            throw table.error("mail_to", "\"\(options.mailTo)\" is not one mail address: \(problem)")
        }
        try table.finish()
        return options
    }
}
