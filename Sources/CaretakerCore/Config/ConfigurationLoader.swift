#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Finds, reads and validates `jobs.toml`.
public enum ConfigurationLoader {
    /// The file SPEC §2 says to use: `--config`, else `$CARETAKER_CONFIG`, else
    /// `./jobs.toml`, else `/etc/caretaker/jobs.toml`.
    public static func locate(explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let fromEnvironment = environment["CARETAKER_CONFIG"], !fromEnvironment.isEmpty { return fromEnvironment }
        if FileManager.default.fileExists(atPath: "jobs.toml") { return "jobs.toml" }
        return "/etc/caretaker/jobs.toml"
    }

    /// Reads and validates the file. `lowFootprint` (the command-line flag, or a reload
    /// keeping the running mode), when given, wins over the file's `worker.low_footprint`.
    public static func load(path: String, lowFootprint: Bool? = nil) throws(ConfigurationError) -> Configuration {
        let text: String
        do {
            text = try TextFile.read(path)
        } catch {
            throw ConfigurationError(file: path, line: 0, key: "", message: "cannot read the configuration file (\(error))")
        }
        return try parse(text, file: path, lowFootprint: lowFootprint)
    }

    /// Validates configuration text; `file` is only used in messages and to resolve `template_file`.
    public static func parse(_ text: String, file: String, lowFootprint: Bool? = nil) throws(ConfigurationError) -> Configuration {
        let document: TOMLDocument
        do {
            document = try TOMLDocument(parsing: text)
        } catch {
            throw ConfigurationError(file: file, line: error.line, key: "", message: "TOML syntax error at column \(error.column): \(error.message)")
        }
        var root = TableReader(document.root, path: "", file: file)
        let database = try readDatabase(&root)
        let worker = try readWorker(&root, lowFootprintFlag: lowFootprint)
        let mail = try readMail(&root)
        let jobs = try readJobs(&root, worker: worker)
        try root.finish()
        return Configuration(file: file, database: database, worker: worker, mail: mail, jobs: jobs)
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
        options.connectTimeout = try table.duration("connect_timeout", default: options.connectTimeout, minimum: .seconds(1))
        try table.finish()
        return options
    }

    private static func readWorker(_ root: inout TableReader, lowFootprintFlag: Bool?) throws(ConfigurationError) -> WorkerOptions {
        var table = try section(&root, "worker")
        var options = WorkerOptions()
        let zoneName = try table.string("timezone", default: "UTC")
        guard let zone = ZoneInfo(identifier: zoneName) else {
            throw table.error("timezone", "\"\(zoneName)\" is not an IANA time zone name (e.g. \"UTC\", \"Europe/Berlin\")")
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
        options.batchPause = try table.duration("batch_pause", default: options.lowFootprint ? .milliseconds(100) : .zero)
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
            throw table.error("username", "smtp:// without starttls would send the SMTP password in clear text: "
                + "set starttls = true or use smtps://; only for a relay on this machine set allow_plaintext_auth = true")
        }
        options.from = try table.string("from", default: options.from)
        do {
            _ = try Mailbox(parsing: options.from)
        } catch {
            throw table.error("from", "\"\(options.from)\" is not one address such as \"Community <no-reply@example.org>\": \(error)")
        }
        options.directory = try table.string("directory", default: "")
        if kind == .file, options.directory.isEmpty {
            throw table.error("directory", "is required when transport = \"file\"")
        }
        try table.finish()
        return options
    }
}

