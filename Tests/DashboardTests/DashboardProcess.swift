import CaretakerTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `caretaker dashboard --listen 127.0.0.1:0` as a child process (the main binary execs
/// `caretaker-dashboard`), and a real HTTP client (curl) to ask it things.
final class DashboardProcess {
    let pid: pid_t
    let directory: String
    var logPath: String { directory + "/dashboard.log" }
    /// `http://127.0.0.1:PORT/`, from its "dashboard listening" line.
    private(set) var url = ""

    init(config: String, environment: [String: String] = [:]) throws {
        directory = NSTemporaryDirectory() + "caretaker-dashboard-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var env = ProcessInfo.processInfo.environment
        env["CARETAKER_CONFIG"] = nil
        env["JOURNAL_STREAM"] = nil
        env.merge(environment) { _, new in new }
        pid = try ChildProcess.spawn(
            [Caretaker.path, "dashboard", "--config", config, "--listen", "127.0.0.1:0"],
            stdoutPath: directory + "/dashboard.log", stderrPath: nil, environment: env)
    }

    /// Waits (polling its log) until it listens; throws with the log when it exits or takes too long.
    /// The log is read once more after the deadline: a test task that the parallel suite's
    /// blocking tests kept off the cooperative pool past the deadline still sees a
    /// dashboard that listened meanwhile.
    func waitUntilListening(timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            let late = ContinuousClock.now >= deadline
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            if let range = log.range(of: "url=http://") {
                url = String(log[range.lowerBound...].dropFirst(4).prefix { $0 != " " && $0 != "\n" })
                return
            }
            if case .exited = ChildProcess.state(of: pid) {
                throw DashboardTestError(message: "the dashboard exited: \(log)")
            }
            if late { throw DashboardTestError(message: "the dashboard did not listen within \(timeout)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    deinit {
        kill(pid, SIGTERM)
        _ = ChildProcess.wait(pid)
        try? FileManager.default.removeItem(atPath: directory)
    }

    struct HTTPResult {
        let status: Int
        let headers: String
        let body: String
    }

    /// `curl -X METHOD` (or `--head`) against `path`, with `user:password` when given.
    func request(_ path: String, method: String = "GET", user: String? = nil) throws -> HTTPResult {
        let name = UUID().uuidString
        let (bodyPath, headerPath, codePath) = (
            "\(directory)/\(name).body", "\(directory)/\(name).headers", "\(directory)/\(name).code"
        )
        var arguments = [
            "/usr/bin/curl", "-s", "-o", bodyPath, "-D", headerPath, "-w", "%{http_code}", "--max-time", "30",
        ]
        arguments += method == "HEAD" ? ["--head"] : ["-X", method]
        if let user { arguments += ["-u", user] }
        arguments.append(url.dropLast() + path)
        _ = try ChildProcess.run(arguments, stdoutPath: codePath, stderrPath: "/dev/null")
        return HTTPResult(
            status: Int((try? String(contentsOfFile: codePath, encoding: .utf8)) ?? "") ?? 0,
            headers: (try? String(contentsOfFile: headerPath, encoding: .utf8)) ?? "",
            body: (try? String(contentsOfFile: bodyPath, encoding: .utf8)) ?? "")
    }
}

struct DashboardTestError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
