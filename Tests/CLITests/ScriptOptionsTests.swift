import CaretakerTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The scripts refuse a name they do not know with exit 64 and the names they do,
/// before any work (installing, building, seeding). These run only the refusal:
/// CI never runs the bench itself.
@Suite struct ScriptOptionsTests {
    struct Refusal: Sendable {
        let status: Int32
        let stderr: String
    }

    /// Runs `scripts/NAME ARGUMENTS` and returns its exit status and stderr. A script
    /// that went on to work past the options (it would build for minutes) is killed
    /// with its process group after 60 s and the test fails.
    func refusal(_ script: String, _ arguments: [String]) async throws -> Refusal {
        let directory = NSTemporaryDirectory() + "caretaker-script-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pid = try ChildProcess.spawn(
            [try Repository.file("scripts/\(script)")] + arguments, stdoutPath: directory + "/out",
            stderrPath: directory + "/err", newSession: true)
        let status = await ChildProcess.exitStatus(of: pid, within: .seconds(60))
        kill(-pid, SIGKILL)
        let stderr = (try? String(contentsOfFile: directory + "/err", encoding: .utf8)) ?? ""
        try #require(status != nil, "scripts/\(script) \(arguments) was still running after 60 s: \(stderr)")
        return Refusal(status: status!, stderr: stderr)
    }

    static let benchRows = "E1 E2 E2p C1 M1 W1 L1 P1 S1 SIZE D1"

    @Test(
        "scripts/bench --only refuses an unknown row, naming it and the rows",
        arguments: [("E1,X9", "'X9'"), ("e1", "'e1'"), ("E1,,E2", "''"), ("E1,", "''"), ("C1,E2P", "'E2P'")])
    func benchUnknownRow(only: String, named: String) async throws {
        let result = try await refusal("bench", ["--only", only])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(
            result.stderr == "scripts/bench: --only: unknown row \(named); the rows are: \(Self.benchRows)\n",
            "\(result.stderr)")
    }

    @Test("scripts/bench --only refuses an empty list")
    func benchNoRow() async throws {
        let result = try await refusal("bench", ["--only", ""])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(
            result.stderr == "scripts/bench: --only needs at least one row of: \(Self.benchRows)\n", "\(result.stderr)")
    }

    @Test("scripts/bench --help lists the rows --only accepts")
    func benchHelp() async throws {
        let output = NSTemporaryDirectory() + "caretaker-script-\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let status = try ChildProcess.run([try Repository.file("scripts/bench"), "--help"], logPath: output)
        #expect(status == 0)
        let usage = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(usage.contains("--only LIST         rows to run, e.g. E1,E2,C1 (default: all of \(Self.benchRows))"))
    }

    @Test("scripts/soak --faults refuses an unknown fault kind")
    func soakUnknownFault() async throws {
        let result = try await refusal("soak", ["--faults", "kill-9,power-cut"])
        #expect(result.status == 64, "\(result.stderr)")
        let expected = "scripts/soak: unknown fault kind power-cut\nusage: scripts/soak"
        #expect(result.stderr.hasPrefix(expected), "\(result.stderr)")
    }
}
