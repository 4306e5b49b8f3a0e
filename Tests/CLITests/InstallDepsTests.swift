import CaretakerTestSupport
import Foundation
import Testing

/// `scripts/lib/install-deps.sh`: which Debian packages each script asks for. The
/// tests put stand-ins for `dpkg` (every package missing, or every one there),
/// `apt-get` (records its arguments) and `sudo` first on PATH, so nothing is
/// installed.
@Suite struct InstallDepsTests {
    /// What a run asked `apt-get` for, one line per call, and its exit status.
    struct Asked {
        let status: Int32
        let aptCalls: [String]
        let stderr: String
    }

    static let buildAndPostgres = [
        "libpq-dev", "libcurl4-openssl-dev", "libcrypt-dev", "pkg-config", "postgresql", "postgresql-contrib",
        "util-linux",
    ]
    static let test = [
        "python3-aiosmtpd", "systemd", "pgbouncer", "openssl", "dpkg-dev", "binutils", "lintian", "man-db", "curl",
        "chromium", "prometheus", "faketime", "libfaketime", "systemd-container", "debootstrap",
    ]

    /// Runs `command` (bash) with the stand-ins first on PATH. With `installed`,
    /// `dpkg -s` says every package is there; otherwise none is. `apt-get install`
    /// fails when `failInstall` is set, which stops a script under `set -e` right
    /// after it asked.
    func asking(_ command: [String], installed: Bool = false, failInstall: Bool = false) throws -> Asked {
        let directory = NSTemporaryDirectory() + "caretaker-install-deps-\(UUID().uuidString)"
        let bin = directory + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stubs = [
            "dpkg": "#!/bin/sh\nexit \(installed ? 0 : 1)\n",
            "apt-get": """
            #!/bin/sh
            echo "$*" >> "\(directory)/apt-calls"
            case "$*" in *install*) exit \(failInstall ? 1 : 0) ;; esac
            exit 0

            """,
            "sudo": "#!/bin/sh\nexec \"$@\"\n",
        ]
        for (name, text) in stubs {
            try text.write(toFile: "\(bin)/\(name)", atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: "\(bin)/\(name)")
        }
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = bin + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        let status = try ChildProcess.run(
            command, stdoutPath: directory + "/out", stderrPath: directory + "/err", environment: environment)
        let calls = (try? String(contentsOfFile: directory + "/apt-calls", encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOfFile: directory + "/err", encoding: .utf8)) ?? ""
        return Asked(
            status: status, aptCalls: calls.split(separator: "\n").map(String.init), stderr: stderr)
    }

    func sourcing(_ call: String) throws -> [String] {
        ["/bin/bash", "-c", "source \"$1\" && \(call)", "bash", try Repository.file("scripts/lib/install-deps.sh")]
    }

    func installLine(_ packages: [String]) -> String {
        "install -y -qq --no-install-recommends " + packages.joined(separator: " ")
    }

    @Test("install_deps with no set asks for every package the tests use, after an apt-get update")
    func everything() throws {
        let asked = try asking(try sourcing("install_deps"))
        #expect(asked.status == 0, "\(asked.stderr)")
        #expect(asked.aptCalls == ["update -qq", installLine(Self.buildAndPostgres + Self.test)])
    }

    @Test("install_deps build postgres asks for the build's libraries and the server only")
    func buildAndPostgres() throws {
        let asked = try asking(try sourcing("install_deps build postgres"))
        #expect(asked.status == 0, "\(asked.stderr)")
        #expect(asked.aptCalls == ["update -qq", installLine(Self.buildAndPostgres)])
    }

    @Test("install_deps asks apt-get for nothing when every package is there")
    func nothingMissing() throws {
        let asked = try asking(try sourcing("install_deps"), installed: true)
        #expect(asked.status == 0, "\(asked.stderr)")
        #expect(asked.aptCalls.isEmpty)
    }

    @Test("install_deps refuses a set it does not know with 64, naming the sets, before apt-get")
    func unknownSet() throws {
        let asked = try asking(try sourcing("install_deps build browser"))
        #expect(asked.status == 64)
        #expect(asked.stderr == "install_deps: unknown set 'browser'; the sets are: build, postgres, test\n")
        #expect(asked.aptCalls.isEmpty)
    }

    @Test("scripts/demo installs what it builds and runs with, and no browser, SMTP server or packaging tools")
    func demo() throws {
        let asked = try asking([try Repository.file("scripts/demo")], failInstall: true)
        #expect(asked.status != 0, "the stand-in apt-get failed its install, so the demo should have stopped")
        #expect(asked.aptCalls == ["update -qq", installLine(Self.buildAndPostgres)], "\(asked.stderr)")
    }
}
