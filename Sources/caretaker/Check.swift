import ArgumentParser
import CaretakerCore
import Postgres

extension Caretaker {
    /// `caretaker check`: configuration, database, schema and job health; exit 1 when unhealthy.
    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check configuration, database, schema and job health (a monitoring probe).",
            discussion:
                "Exit status: 0 healthy, 1 a problem was found (each is named), 64 bad usage, 69 database unavailable, 78 bad configuration. "
                + "With --config-only: 0 or 78, reading the file and the secrets it needs as `caretaker run` does at "
                + "start and on SIGHUP, without the database (the unit's ExecReload runs it before signalling)."
        )

        @OptionGroup var common: CommonOptions

        @Flag(help: "Print JSON instead of a table.")
        var json = false

        @Flag(help: "Check jobs.toml and its secrets only, without the database: exit 0, or 78 with the error.")
        var configOnly = false

        struct Finding {
            let check: String
            let ok: Bool
            let detail: String
            /// Worth an operator's attention but not a failure (exit status stays 0).
            var warning = false
        }

        func run() throws {
            try exiting {
                let configuration = try common.loadConfiguration()
                if configOnly {
                    _ = try common.connector(configuration)
                    _ = try MailSetup.transport(for: configuration.jobs.filter(\.enabled), configuration: configuration)
                    print("configuration ok: \(configuration.file)")
                    return .ok
                }
                var findings = [Finding(check: "configuration", ok: true, detail: configuration.file)]
                findings.append(Self.mail(configuration))
                if let address = ListenAddress(metrics: configuration.metrics.listen) {
                    let probe = MetricsProbe.probe(address)
                    findings.append(Finding(check: "metrics listener", ok: probe.ok, detail: probe.detail))
                }
                let connector = try common.connector(configuration)
                let connection = try common.connect(connector)
                findings.append(
                    Finding(check: "database", ok: true, detail: "connected (backend \(connection.backendPID))"))
                if try DatabaseRole.isStandby(connection) {
                    findings.append(
                        Finding(
                            check: "database role", ok: false,
                            detail: "\(DatabaseRole.standbyMessage): \(DatabaseRole.standbyAdvice)"))
                }
                let pooler = try PoolerCheck.probe(connection, connector: connector)
                findings.append(Finding(check: "session pooling", ok: pooler.keepsOwnSessions, detail: "\(pooler)"))
                if let warning = try RoleCheck.warning(
                    connection, appSchema: configuration.database.appSchema,
                    retiresPartitions: RuntimeGrants.retiresPartitions(configuration.jobs))
                {
                    findings.append(Finding(check: "database role", ok: true, detail: warning, warning: true))
                }
                let schemaFindings = try schema(connection, configuration: configuration)
                findings += schemaFindings
                if schemaFindings.allSatisfy(\.ok) {
                    findings += try JobHealth.assess(connection, configuration: configuration).map {
                        Finding(check: "job \($0.job)", ok: $0.healthy, detail: $0.reason)
                    }
                }
                print(json ? Self.json(findings) : Self.table(findings))
                return findings.allSatisfy(\.ok) ? .ok : .jobFailed
            }
        }

        /// The enabled jobs' mail transport, made as `caretaker run` makes it (the SMTP password included).
        static func mail(_ configuration: Configuration) -> Finding {
            do {
                guard
                    try MailSetup.transport(for: configuration.jobs.filter(\.enabled), configuration: configuration)
                        != nil
                else { return Finding(check: "mail", ok: true, detail: "no enabled job sends mail") }
                let auth = configuration.mail.username.isEmpty ? "no AUTH" : "AUTH as \(configuration.mail.username)"
                return Finding(
                    check: "mail", ok: true,
                    detail: configuration.mail.transport == .file
                        ? "files in \(configuration.mail.directory)" : "SMTP, \(auth)")
            } catch {
                return Finding(check: "mail", ok: false, detail: "\(error)")
            }
        }

        private func schema(_ connection: Connection, configuration: Configuration) throws -> [Finding] {
            let readiness = try SchemaReadiness.check(connection, appSchema: configuration.database.appSchema)
            var findings: [Finding] = []
            if readiness.pending.isEmpty {
                findings.append(
                    Finding(
                        check: "schema version", ok: true, detail: "\(Migration.all.last?.version ?? 0) (up to date)"))
            } else {
                findings.append(
                    Finding(
                        check: "schema version", ok: false,
                        detail: SchemaReadiness.Report(pending: readiness.pending).message))
                return findings
            }
            findings += readiness.missing.map { Finding(check: "schema", ok: false, detail: $0) }
            let enabled = Set(configuration.jobs.filter(\.enabled).compactMap(\.builtIn))
            let schema = try SchemaCheck.check(
                connection, appSchema: configuration.database.appSchema, enabled: enabled)
            if schema.problems.isEmpty {
                findings.append(Finding(check: "app schema", ok: true, detail: "every required column present"))
            }
            findings += schema.problems.map { Finding(check: "app schema", ok: false, detail: $0) }
            findings += schema.warnings.map { Finding(check: "app schema", ok: true, detail: $0, warning: true) }
            return findings
        }

        static func table(_ findings: [Finding]) -> String {
            var table = TextTable(["CHECK", "RESULT", "DETAIL"])
            for finding in findings {
                table.append([
                    finding.check, finding.warning ? "WARNING" : finding.ok ? "ok" : "PROBLEM", finding.detail,
                ])
            }
            return table.render()
        }

        static func json(_ findings: [Finding]) -> String {
            let items = findings.map {
                "  {\"check\": \(jsonString($0.check)), \"ok\": \($0.ok), \"detail\": \(jsonString($0.detail))"
                    + ($0.warning ? ", \"warning\": true}" : "}")
            }
            return "{\"healthy\": \(findings.allSatisfy(\.ok)), \"checks\": [\n" + items.joined(separator: ",\n")
                + "\n]}"
        }
    }
}
