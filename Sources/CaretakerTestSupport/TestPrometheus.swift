import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Debian's `promtool` (package `prometheus`).
public enum Promtool {
    public static let path = "/usr/bin/promtool"

    /// `promtool check metrics < file`: its exit status and what it printed.
    public static func checkMetrics(file: String) throws -> (status: Int32, output: String) {
        try run("\(path) check metrics < '\(file)'")
    }

    /// `promtool check rules file`.
    public static func checkRules(file: String) throws -> (status: Int32, output: String) {
        try run("\(path) check rules '\(file)'")
    }

    /// `text` written to a temporary file, checked as metrics.
    public static func checkMetrics(text: String) throws -> (status: Int32, output: String) {
        let file = NSTemporaryDirectory() + "caretaker-metrics-\(UUID().uuidString).prom"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        return try checkMetrics(file: file)
    }

    private static func run(_ command: String) throws -> (status: Int32, output: String) {
        let log = NSTemporaryDirectory() + "caretaker-promtool-\(UUID().uuidString).log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        let status = try ChildProcess.run(["/bin/sh", "-c", command], logPath: log)
        return (status, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
    }
}

/// A real Prometheus server (`/usr/bin/prometheus`) on a loopback port, scraping
/// `targets` every second, with its storage in a temporary directory.
public final class TestPrometheusServer: Sendable {
    public let port: Int
    public let directory: String
    private let pid: pid_t

    public init(targets: [String]) throws {
        directory = NSTemporaryDirectory() + "caretaker-prometheus-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        let list = targets.map { "'\($0)'" }.joined(separator: ", ")
        try """
        global:
          scrape_interval: 1s
          evaluation_interval: 1s
        scrape_configs:
          - job_name: caretaker
            # caretaker's series carry their own `job` label (the caretaker job's name).
            honor_labels: true
            static_configs:
              - targets: [\(list)]
        """.write(toFile: directory + "/prometheus.yml", atomically: true, encoding: .utf8)
        port = try TemporaryPostgres.freePort()
        pid = try ChildProcess.spawn(
            [
                "/usr/bin/prometheus", "--config.file=\(directory)/prometheus.yml",
                "--storage.tsdb.path=\(directory)/data", "--web.listen-address=127.0.0.1:\(port)",
            ],
            logPath: directory + "/prometheus.log")
    }

    deinit {
        kill(pid, SIGTERM)
        _ = ChildProcess.wait(pid)
        try? FileManager.default.removeItem(atPath: directory)
    }

    public var log: String { (try? String(contentsOfFile: directory + "/prometheus.log", encoding: .utf8)) ?? "" }

    /// The instant vector's values of `query` (PromQL, URL-safe), by instance label; empty while not ready.
    public func query(_ query: String) -> [String: String] {
        guard let response = try? HTTPGet.fetch(port: port, path: "/api/v1/query?query=\(query)"),
            response.status == 200,
            let json = try? JSONSerialization.jsonObject(with: Data(response.body.utf8)) as? [String: Any],
            let data = json["data"] as? [String: Any], let result = data["result"] as? [[String: Any]]
        else { return [:] }
        var values: [String: String] = [:]
        for sample in result {
            let instance = (sample["metric"] as? [String: String])?["instance"] ?? ""
            values[instance] = (sample["value"] as? [Any])?.last as? String
        }
        return values
    }
}
