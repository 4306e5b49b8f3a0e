import Foundation
import Testing

@testable import CaretakerConfig
@testable import CaretakerCore
@testable import CaretakerDatabase
@testable import CaretakerJobs
@testable import CaretakerMonitoring
@testable import CaretakerSupport

/// The reference pages are held to the code, both ways: every configuration key
/// the loader reads, every metric the daemon exposes, every stat a job declares and
/// every exit code is documented, and nothing documented is gone from the code.
/// docs/configuration.md is also the source of `caretaker.toml(5)`.
@Suite struct ReferenceTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func text(_ relative: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relative), encoding: .utf8)
    }

    /// The first cell of every table row under each `## ` heading, without backticks
    /// (header and separator rows left out).
    static func tableKeys(_ page: String) -> [String: [String]] {
        var sections: [String: [String]] = [:]
        var heading = ""
        for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("## ") {
                heading = String(line.dropFirst(3))
                continue
            }
            guard line.hasPrefix("|") else { continue }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard cells.count > 2 else { continue }
            let first = cells[1]
            if first.allSatisfy({ $0 == "-" }) || ["key", "metric", "code", "stat"].contains(first) { continue }
            sections[heading, default: []].append(first.replacingOccurrences(of: "`", with: ""))
        }
        return sections
    }

    /// The keys the loader accepts in a table: what its "unknown key" message lists.
    static func validKeys(_ header: String, _ body: String = "") throws -> Set<String> {
        let text = (header.isEmpty ? "" : header + "\n") + body + "zz_not_a_key = 1\n"
        do {
            _ = try ConfigurationLoader.parse(text, file: "jobs.toml")
        } catch {
            let marker = "valid keys: "
            guard let range = error.message.range(of: marker) else {
                Issue.record("no list of valid keys for \(header): \(error)")
                return []
            }
            return Set(error.message[range.upperBound...].split(separator: ", ").map(String.init))
        }
        Issue.record("the loader accepted an unknown key in \(header)")
        return []
    }

    @Test("every configuration key the loader reads is in docs/configuration.md, and every key there is read")
    func configurationKeys() throws {
        let documented = Self.tableKeys(try Self.text("docs/configuration.md"))
        let common = Set(try #require(documented["[jobs.NAME]: keys of every job"]))
        for section in ["database", "worker", "mail", "metrics", "alerts", "dashboard"] {
            let keys = try Self.validKeys("[\(section)]")
            #expect(keys == Set(documented["[\(section)]"] ?? []), "[\(section)]: the code reads \(keys.sorted())")
        }
        for job in BuiltInJob.allCases {
            let keys = try Self.validKeys("[jobs.\(job.rawValue)]")
            let own = Set(documented["[jobs.\(job.rawValue)]"] ?? [])
            #expect(keys == common.union(own), "[jobs.\(job.rawValue)]: the code reads \(keys.sorted())")
        }
        let sqlKeys = try Self.validKeys("[jobs.clean]", "schedule = \"@hourly\"\nsql = \"SELECT 1\"\n")
        let sqlOwn = Set(documented["[jobs.NAME] with sql: operator SQL jobs"] ?? [])
        #expect(sqlKeys == common.union(sqlOwn), "operator SQL job: the code reads \(sqlKeys.sorted())")
        let topLevel = try Self.validKeys("")
        let sections = Set(
            documented.keys.compactMap { $0.firstMatch(of: /^\[([a-z]+)[.\]]/)?.output.1 }.map(String.init))
        #expect(topLevel == sections, "the top level: the code reads \(topLevel.sorted())")
    }

    @Test("every metric the daemon exposes is in docs/monitoring.md with its type and labels, and the reverse")
    func metrics() throws {
        let metrics = CaretakerMetrics(version: "1.0")
        metrics.declare(jobs: ["j"])
        // A stat of each kind (a count, bytes, time spent, a one-run figure), so that every
        // series a run can create is exposed.
        metrics.recordRun(
            job: "j", status: .succeeded,
            stats: JobStats([("rows", 1), ("wal_bytes", 2), ("throttled_ms", 3), ("batch_p99_ms", 4)]),
            declared: [.count("rows"), .bytes("wal_bytes"), .milliseconds("throttled_ms"), .figure("batch_p99_ms")],
            duration: 0.2)
        metrics.recordSkipped([HistoryReadings.SkippedSlots(job: "j", reason: "missed while no worker ran", slots: 1)])
        metrics.update(
            HistoryReadings(jobs: [
                HistoryReadings.Job(
                    name: "j",
                    health: JobHealth(job: "j", healthy: true, reason: "", lastStatus: nil, lastSuccessAt: nil),
                    lastSuccess: 1, lastRun: 1)
            ]))
        let exposition = String(decoding: metrics.exposition(), as: UTF8.self)
        var exposed: [String: (type: String, labels: Set<String>)] = [:]
        for line in exposition.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let parts = line.split(separator: " ")
            exposed[String(parts[2])] = (String(parts[3]), [])
        }
        for line in exposition.split(separator: "\n") where !line.hasPrefix("#") {
            let name = String(line.prefix { $0 != "{" && $0 != " " })
            let base = exposed[name] != nil ? name : name.replacing(/_(bucket|sum|count)$/, with: "")
            let labels =
                line.firstMatch(of: /\{(.*)\}/).map {
                    Set($0.output.1.split(separator: ",").map { String($0.prefix { $0 != "=" }) })
                } ?? []
            exposed[base]?.labels.formUnion(labels.subtracting(["le"]))
        }
        var documented: [String: (type: String, labels: Set<String>)] = [:]
        for line in try Self.text("docs/monitoring.md").split(separator: "\n") where line.hasPrefix("| `caretaker_") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let labels = Set(
                cells[2].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                    .map { $0.replacingOccurrences(of: "`", with: "") }.filter { !$0.isEmpty })
            documented[cells[0].replacingOccurrences(of: "`", with: "")] = (cells[1], labels)
        }
        #expect(Set(exposed.keys) == Set(documented.keys), "exposed: \(exposed.keys.sorted())")
        for (name, series) in exposed {
            #expect(documented[name]?.type == series.type, "\(name) is a \(series.type)")
            #expect(documented[name]?.labels == series.labels, "\(name) has the labels \(series.labels.sorted())")
        }
    }

    @Test("every exit code is in the table of docs/commands.md, and the reverse")
    func exitCodes() throws {
        let page = try Self.text("docs/commands.md")
        let codes = Self.tableKeys(page)["Exit codes"] ?? []
        #expect(Set(codes.compactMap(Int32.init)) == Set(ExitStatus.allCases.map(\.rawValue)), "documented: \(codes)")
    }

    /// The stat names the jobs' code records: the literals it passes as counter names.
    static func statsInCode() throws -> Set<String> {
        let directory = root.appendingPathComponent("Sources/CaretakerJobs/Jobs")
        var names: Set<String> = []
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".swift") {
            let source = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            let patterns = [
                /\.add\("([a-z0-9_]+)"/, /\bset\("([a-z0-9_]+)"/, /[cC]ounter: "([a-z0-9_]+)"/,
                /blockedIDs\("([a-z0-9_]+)"/, /case \.[A-Za-z]+: "([a-z0-9_]+)"/,
            ]
            for pattern in patterns {
                for match in source.matches(of: pattern) { names.insert(String(match.output.1)) }
            }
            // JobStats([("sent", 0), ("ignored", 0), …]): the counters a run starts with.
            for list in source.matches(of: /JobStats\(\[([^\]]*)\]/) {
                for match in list.output.1.matches(of: /\("([a-z0-9_]+)",/) { names.insert(String(match.output.1)) }
            }
        }
        // Notification channels are not stats (a definition's `notifyChannel`: "caretaker_…").
        names = names.filter { !$0.hasPrefix("caretaker_") }
        // prune's blocked counters are named after its deleted ones (PruneQueries.Target.blockedCounter).
        for name in names where name.hasSuffix("_deleted") && name != "posts_deleted" && name != "packs_deleted" {
            names.insert(name.replacing("_deleted", with: "_blocked"))
        }
        return names
    }

    /// The stats table of each page of docs/jobs/, by the page's name (`expire-content`).
    static func documentedStats() throws -> [String: Set<String>] {
        let directory = Self.root.appendingPathComponent("docs/jobs")
        var documented: [String: Set<String>] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".md") {
            let page = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            documented[String(file.dropLast(3))] = Set(Self.tableKeys(page)["Stats"] ?? [])
        }
        return documented
    }

    @Test("each job's page of docs/jobs/ lists the stats the job declares, and nothing it does not")
    func stats() throws {
        let documented = try Self.documentedStats()
        let pacing = Set(WritePacer.stats.map(\.name))
        var declaredByJob = Dictionary(uniqueKeysWithValues: BuiltInJob.allCases.map { ($0.rawValue, $0.stats) })
        declaredByJob["operator-sql"] = OperatorSQL.stats
        for (job, stats) in declaredByJob {
            let declared = Set(stats.map(\.name))
            let page = try #require(documented[job], "docs/jobs/\(job).md has no stats table")
            #expect(
                declared.subtracting(page).isEmpty,
                "\(job): declared but not documented: \(declared.subtracting(page).sorted())")
            // The pacing's stats (any job's) are documented once, on one job's page.
            let extra = page.subtracting(declared).subtracting(pacing)
            #expect(extra.isEmpty, "docs/jobs/\(job).md documents stats \(job) does not declare: \(extra.sorted())")
        }
        let everyDocumented = documented.values.reduce(into: Set<String>()) { $0.formUnion($1) }
        #expect(
            pacing.subtracting(everyDocumented).isEmpty,
            "pacing stats not documented: \(pacing.subtracting(everyDocumented).sorted())")
    }

    @Test("every stat the jobs' code records is declared by a job or the pacing, and every declaration is recorded")
    func statsDeclared() throws {
        let declared = Set(
            (BuiltInJob.allCases.flatMap(\.stats) + OperatorSQL.stats + WritePacer.stats).map(\.name))
        let inCode = try Self.statsInCode()
        #expect(inCode.count > 40, "the scan of the jobs' code found too few stats: \(inCode.sorted())")
        #expect(
            inCode.subtracting(declared).isEmpty,
            "recorded but not declared: \(inCode.subtracting(declared).sorted())")
        #expect(
            declared.subtracting(inCode).isEmpty,
            "declared but never recorded: \(declared.subtracting(inCode).sorted())")
    }

    /// Runs a program, returning its exit status and its output (stdout and stderr).
    static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        process.currentDirectoryURL = root
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test("caretaker.toml(5), generated from docs/configuration.md, is mandoc -T lint clean and lists every key")
    func manPage() throws {
        let page = NSTemporaryDirectory() + "caretaker.toml-\(UUID().uuidString).5"
        defer { try? FileManager.default.removeItem(atPath: page) }
        let generated = try Self.run([
            "/bin/sh", "-c",
            "/usr/bin/python3 scripts/lib/config_manual.py docs/configuration.md 1.0 2026-01-01 > \(page)",
        ])
        #expect(generated.status == 0, "\(generated.output)")
        let lint = try Self.run(["/usr/bin/mandoc", "-T", "lint", page])
        #expect(lint.status == 0 && lint.output.isEmpty, "\(lint.output)")
        let source = try String(contentsOfFile: page, encoding: .utf8)
        for keys in Self.tableKeys(try Self.text("docs/configuration.md")).values {
            for key in keys { #expect(source.contains("\n\\fB\(key)\\fR\n"), "\(key) is not in the man page") }
        }
    }

    @Test("every link in the documents the package ships resolves among them")
    func links() throws {
        let shipped = NSTemporaryDirectory() + "caretaker-doc-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: shipped) }
        let result = try Self.run([
            "/bin/bash", "-c",
            """
            set -e; source scripts/lib/docs.sh; ship_docs \(shipped)
            find \(shipped) -name '*.md' -print0 | xargs -0 /usr/bin/python3 scripts/lib/check_links.py --within \(shipped)
            """,
        ])
        #expect(result.status == 0, "\(result.output)")
        #expect(FileManager.default.fileExists(atPath: shipped + "/docs/configuration.md"))
    }
}
