import Foundation

/// Runs the built `caretaker` executable, as an operator or a script would.
public enum Caretaker {
    public struct Result: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    /// The binary beside the test bundle (`.build/debug/caretaker`), or `$CARETAKER_BIN`.
    public static var path: String {
        if let explicit = ProcessInfo.processInfo.environment["CARETAKER_BIN"] { return explicit }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [bundle, bundle.deletingLastPathComponent()] {
            let binary = candidate.appendingPathComponent("caretaker").path
            if FileManager.default.isExecutableFile(atPath: binary) { return binary }
        }
        return bundle.appendingPathComponent("caretaker").path
    }

    /// Runs `caretaker ARGUMENTS` to completion and captures its output.
    public static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Result {
        let directory = NSTemporaryDirectory() + "caretaker-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var env = ProcessInfo.processInfo.environment
        env["CARETAKER_CONFIG"] = nil
        env["JOURNAL_STREAM"] = nil
        env.merge(environment) { _, new in new }
        let status = try ChildProcess.run(
            [path] + arguments, stdoutPath: directory + "/out",
            stderrPath: directory + "/err", environment: env)
        return Result(
            status: status,
            stdout: (try? String(contentsOfFile: directory + "/out", encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: directory + "/err", encoding: .utf8)) ?? "")
    }
}
