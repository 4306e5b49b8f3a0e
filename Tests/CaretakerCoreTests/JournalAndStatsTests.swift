import Foundation
import Logging
import Testing

@testable import CaretakerConfig
@testable import CaretakerCore
@testable import CaretakerDatabase
@testable import CaretakerJobs
@testable import CaretakerMonitoring
@testable import CaretakerSupport

#if canImport(Glibc)
import Glibc
#endif

/// The journal's native entries and the split of run counters into metric series.
@Suite struct JournalAndStatsTests {
    @Test("a journal entry: NAME=value lines, a value with a newline as NAME, 64-bit LE length, value")
    func encoding() {
        let entry = JournalOutput.encode([("MESSAGE", "level=info msg=x"), ("ERROR", "a\nb")])
        var expected = Array("MESSAGE=level=info msg=x\nERROR\n".utf8)
        expected += [3, 0, 0, 0, 0, 0, 0, 0]
        expected += Array("a\nb\n".utf8)
        #expect(entry == expected)
    }

    @Test("field names: capitals, _ for anything else, never a leading _ or digit")
    func fieldNames() {
        #expect(JournalOutput.fieldName("run_id") == "RUN_ID")
        #expect(JournalOutput.fieldName("duration_ms") == "DURATION_MS")
        #expect(JournalOutput.fieldName("dry-run") == "DRY_RUN")
        #expect(JournalOutput.fieldName("_pid") == "F_PID")
        #expect(JournalOutput.fieldName("9x") == "F9X")
        #expect(JournalOutput.fieldName(String(repeating: "a", count: 80)).count == 64)
    }

    @Test("entries reach a journal socket with the line as MESSAGE, each key a field, counters as STAT_")
    func entriesReachTheSocket() throws {
        let directory = NSTemporaryDirectory() + "caretaker-journal-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/socket"
        let server = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(server) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8))
            raw[path.utf8.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(server, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0)
        var status = stat()
        #expect(fstat(2, &status) == 0)
        let stream = "\(status.st_dev):\(status.st_ino)"
        // stderr is not the named stream: no journal (a shell's redirection under the service).
        #expect(JournalOutput.open(identifier: "t", environment: ["JOURNAL_STREAM": "1:2"], socketPath: path) == nil)
        let journal = try #require(
            JournalOutput.open(identifier: "caretaker", environment: ["JOURNAL_STREAM": stream], socketPath: path))
        let output = LineOutput.capturing()
        let logger = Logger(label: "test") { _ in
            LineLogHandler(format: .logfmt, journald: false, output: output, journal: journal)
        }
        logger.error(
            "run finished",
            metadata: [
                "job": "expire-content", "run_id": "7", "status": "failed",
                "posts_deleted": .stringConvertible(JobStatValue(12)),
            ])
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = recv(server, &buffer, buffer.count, 0)
        let text = String(decoding: buffer[..<max(0, count)], as: UTF8.self)
        let fields = Dictionary(
            text.split(separator: "\n").map { line in
                let parts = line.split(separator: "=", maxSplits: 1)
                return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
            }, uniquingKeysWith: { first, _ in first })
        #expect(
            fields["MESSAGE"]
                == "level=error msg=\"run finished\" job=expire-content run_id=7 status=failed posts_deleted=12")
        #expect(fields["PRIORITY"] == "3")
        #expect(fields["SYSLOG_IDENTIFIER"] == "caretaker")
        #expect(fields["JOB"] == "expire-content")
        #expect(fields["RUN_ID"] == "7")
        #expect(fields["STATUS"] == "failed")
        #expect(fields["STAT_POSTS_DELETED"] == "12")
        #expect(fields["POSTS_DELETED"] == nil)
        #expect(fields["CODE_FILE"]?.hasSuffix("JournalAndStatsTests.swift") == true)
        #expect(Int(fields["CODE_LINE"] ?? "") != nil)
        // Sent to the journal, not written to stderr as well.
        #expect(output.lines.isEmpty)
    }

    /// The declarations the metrics read: `rows`, then the pacing's.
    static let declared: [StatDeclaration] = OperatorSQL.stats + WritePacer.stats

    @Test("a stat's kind is the one its job declares, whatever its name; a counter no one declares has none")
    func statKinds() {
        let declared: [StatDeclaration] = [
            .count("posts_deleted"), .bytes("wal_bytes"), .milliseconds("throttled_ms"), .figure("batch_p99_ms"),
            .figure("wal_rate_lowest_kbps"), .count("odd_ms"),
        ]
        #expect(declared.kind(of: "posts_deleted") == .count)
        #expect(declared.kind(of: "wal_bytes") == .bytes)
        #expect(declared.kind(of: "throttled_ms") == .milliseconds)
        #expect(declared.kind(of: "batch_p99_ms") == .figure)
        #expect(declared.kind(of: "wal_rate_lowest_kbps") == .figure)
        // Declared a count although named like a time: a count.
        #expect(declared.kind(of: "odd_ms") == .count)
        #expect(declared.kind(of: "batches") == nil)
        let reported = JobStats([("posts_deleted", 1), ("batches", 2), ("wal_bytes", 3), ("surprise", 0)])
        #expect(declared.undeclared(in: reported) == ["batches", "surprise"])
        #expect(declared.undeclared(in: JobStats([("posts_deleted", 1)])).isEmpty)
    }

    @Test("every job's declarations: names unique, time named _ms, only counts charted; the pacing's on every job")
    func declarationsHoldTogether() throws {
        let configuration = try ConfigurationLoader.parse(
            "[jobs.clean]\nschedule = \"@hourly\"\nsql = \"SELECT 1\"\n", file: "jobs.toml")
        #expect(!configuration.jobs.isEmpty)
        for job in configuration.jobs {
            let declared = job.declaredStats
            let names = declared.map(\.name)
            #expect(Set(names).count == names.count, "\(job.name) declares a stat twice: \(names)")
            for stat in declared {
                if stat.kind == .milliseconds { #expect(stat.name.hasSuffix("_ms"), "\(job.name): \(stat.name)") }
                if stat.chart != nil { #expect(stat.kind == .count, "\(job.name) charts \(stat.name), not a count") }
            }
            for stat in WritePacer.stats { #expect(declared.contains(stat), "\(job.name) lacks \(stat.name)") }
            #expect(declared.contains { $0.chart != nil }, "\(job.name) charts nothing")
        }
    }

    @Test(
        "caretaker_job_stat_total holds counts only; bytes and seconds have their own series; figures and undeclared none"
    )
    func statSeries() {
        let metrics = CaretakerMetrics(version: "1")
        metrics.recordRun(
            job: "a", status: .succeeded,
            stats: JobStats([
                ("rows", 3), ("wal_bytes", 4096), ("throttled_ms", 1500), ("batch_p99_ms", 40),
                ("wal_rate_lowest_kbps", 900), ("undeclared", 5), ("undeclared_ms", 6),
            ]), declared: Self.declared + [.bytes("wal_bytes"), .figure("batch_p99_ms")], duration: 0.2)
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(text.contains("caretaker_job_stat_total{job=\"a\",stat=\"rows\"} 3\n"), "\(text)")
        #expect(text.contains("caretaker_job_stat_bytes_total{job=\"a\",stat=\"wal_bytes\"} 4096\n"), "\(text)")
        #expect(text.contains("caretaker_job_stat_seconds_total{job=\"a\",stat=\"throttled\"} 1.5\n"), "\(text)")
        #expect(!text.contains("batch_p99"), "\(text)")
        #expect(!text.contains("kbps"), "\(text)")
        #expect(!text.contains("stat_total{job=\"a\",stat=\"wal_bytes\"}"), "\(text)")
        // Not declared: no kind, so not exported.
        #expect(!text.contains("undeclared"), "\(text)")
    }
}
