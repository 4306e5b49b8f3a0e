import CaretakerTestSupport
import Foundation
import Testing

/// The units in `systemd/` pass `systemd-analyze verify`, and the services stay hardened.
@Suite struct SystemdUnitTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Copies of the units whose ExecStart points at the binaries under test (verify checks they exist):
    /// `caretaker-dashboard` is built beside `caretaker`. The caller removes the directory.
    func unitCopies() throws -> String {
        let directory = NSTemporaryDirectory() + "caretaker-units-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for name in [
            "caretaker.service", "caretaker-dashboard.service", "caretaker-once@.service", "caretaker-once@.timer",
        ] {
            let text = try String(
                contentsOf: Self.repository.appendingPathComponent("systemd/\(name)"), encoding: .utf8)
            try text.replacingOccurrences(of: "/usr/local/bin/caretaker", with: Caretaker.path)
                .write(toFile: "\(directory)/\(name)", atomically: true, encoding: .utf8)
        }
        return directory
    }

    func systemdAnalyze(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let log = NSTemporaryDirectory() + "systemd-analyze-\(UUID().uuidString).log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        let status = try ChildProcess.run(["/usr/bin/systemd-analyze"] + arguments, logPath: log)
        return (status, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
    }

    @Test("every unit passes systemd-analyze verify")
    func verify() throws {
        let directory = try unitCopies()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try systemdAnalyze([
            "verify", "\(directory)/caretaker.service", "\(directory)/caretaker-dashboard.service",
            "\(directory)/caretaker-once@.service", "\(directory)/caretaker-once@.timer",
        ])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.isEmpty, "\(result.output)")
    }

    @Test(
        "the services' exposure scores stay at 2.0 or lower",
        arguments: ["caretaker.service", "caretaker-dashboard.service"])
    func exposure(unit: String) throws {
        let directory = try unitCopies()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try systemdAnalyze(["security", "--offline=true", "--no-pager", "\(directory)/\(unit)"])
        let line = result.output.split(separator: "\n").first { $0.contains("Overall exposure level") }
        let score = line.flatMap { $0.split(separator: ":").last?.split(separator: " ").first }.flatMap { Double($0) }
        #expect(score != nil, "\(result.output)")
        #expect((score ?? 10) <= 2.0, "\(unit): exposure \(score ?? -1)")
    }

    @Test("the dashboard's service runs caretaker-dashboard as caretaker, with its credentials")
    func dashboardContract() throws {
        let text = try String(
            contentsOf: Self.repository.appendingPathComponent("systemd/caretaker-dashboard.service"), encoding: .utf8)
        for directive in [
            "Type=exec", "ExecStart=/usr/local/bin/caretaker-dashboard --config /etc/caretaker/jobs.toml\n",
            "User=caretaker", "Restart=on-failure", "RestartPreventExitStatus=64 78",
            "LoadCredential=db-password:", "LoadCredential=dashboard-password:", "WantedBy=multi-user.target",
        ] {
            #expect(text.contains(directive), "missing \(directive)")
        }
    }

    @Test("the service is Type=notify with watchdog, restart policy and a stop timeout above the grace")
    func serviceContract() throws {
        let text = try String(
            contentsOf: Self.repository.appendingPathComponent("systemd/caretaker.service"), encoding: .utf8)
        for directive in [
            "Type=notify", "WatchdogSec=", "Restart=on-failure", "RestartPreventExitStatus=78",
            "NoNewPrivileges=yes", "ProtectSystem=strict", "CapabilityBoundingSet=\n", "LoadCredential=db-password",
        ] {
            #expect(text.contains(directive), "missing \(directive)")
        }
        let stop = text.split(separator: "\n").first { $0.hasPrefix("TimeoutStopSec=") }
            .flatMap { Int($0.dropFirst("TimeoutStopSec=".count).dropLast()) }
        #expect((stop ?? 0) > 20 + 3, "TimeoutStopSec must exceed shutdown_grace (20s) plus the cancel margin")
        let dropIn = try String(
            contentsOf: Self.repository.appendingPathComponent("systemd/caretaker-low-footprint.conf"), encoding: .utf8)
        for directive in ["--low-footprint", "MemoryMax=", "CPUQuota=", "Nice=", "IOSchedulingClass=idle"] {
            #expect(dropIn.contains(directive), "drop-in misses \(directive)")
        }
    }
}
