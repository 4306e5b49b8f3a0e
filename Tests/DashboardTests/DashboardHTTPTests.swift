import CaretakerCore
import CaretakerTestSupport
import Foundation
import Testing

/// `caretaker dashboard` end to end over HTTP: the built binaries, a real PostgreSQL, curl.
@Suite struct DashboardHTTPTests {
    @Test("GET and HEAD serve the pages; every other method is 405 with Allow")
    func methods() async throws {
        let fixture = try DashboardFixture()
        let dashboard = try DashboardProcess(
            config: try fixture.db.writeConfiguration(DashboardFixture.extraConfiguration))
        try await dashboard.waitUntilListening()
        let overview = try dashboard.request("/")
        #expect(overview.status == 200)
        #expect(overview.headers.lowercased().contains("content-type: text/html; charset=utf-8"))
        #expect(overview.headers.contains("Content-Security-Policy: default-src 'none'"))
        #expect(overview.body.contains("<tr data-job=\"expire-content\">"))
        #expect(DashboardFixture.count("class=\"mark ", in: overview.body) == DashboardFixture.marksInDay)
        let head = try dashboard.request("/", method: "HEAD")
        #expect(head.status == 200)
        // curl --head writes what it got, the headers only, to the body file too.
        #expect(head.headers.contains("Content-Type: text/html; charset=utf-8"))
        #expect(!head.body.contains("<!DOCTYPE"))
        for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
            let refused = try dashboard.request("/", method: method)
            #expect(refused.status == 405, "\(method)")
            #expect(refused.headers.contains("Allow: GET, HEAD"), "\(method)")
        }
        #expect(try dashboard.request("/runs/1", method: "DELETE").status == 405)
        #expect(try dashboard.request("/no/such/page", method: "POST").status == 405)
        let missing = try dashboard.request("/no/such/page")
        #expect(missing.status == 404)
        #expect(missing.headers.contains("Content-Security-Policy: default-src 'none'"))
        #expect(try dashboard.request("/?window=7d").body.contains("<span class=\"current\">7 days</span>"))
        #expect(try dashboard.request("/?window=1y").status == 400)
        #expect(try dashboard.request("/jobs/prune?page=3").body.contains("page 3"))
        #expect(try dashboard.request("/jobs/expire-content?status=exploded").status == 400)
        #expect(try dashboard.request("/jobs/nosuch").status == 404)
        let hostile = try dashboard.request("/jobs/%3Cscript%3Ealert(1)%3C%2Fscript%3E")
        #expect(hostile.status == 404 && !hostile.body.contains("<script"))
        let hostilePath = try dashboard.request("/%3Cscript%3E/x")
        #expect(hostilePath.status == 404 && !hostilePath.body.contains("<script"))
        #expect(try dashboard.request("/runs/abc").status == 404)
        let run = try dashboard.request("/runs/1")
        #expect(run.status == 200 && run.body.contains("<dt>Host</dt><dd>host-a</dd>"))
        #expect(!run.body.contains(fixture.db.conninfo), "the page shows the database URL")
    }

    @Test("with [dashboard] username and password_file: no or wrong credentials 401, right ones 200")
    func basicAuth() async throws {
        let fixture = try DashboardFixture()
        let passwordFile = NSTemporaryDirectory() + "dashboard-password-\(UUID().uuidString)"
        try "s3cret-Pass\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: passwordFile) }
        let config = try fixture.db.writeConfiguration(
            DashboardFixture.extraConfiguration + """
                [dashboard]
                username = "operator"
                password_file = "\(passwordFile)"

                """)
        let dashboard = try DashboardProcess(config: config)
        try await dashboard.waitUntilListening()
        let anonymous = try dashboard.request("/")
        #expect(anonymous.status == 401)
        #expect(anonymous.headers.contains("WWW-Authenticate: Basic realm=\"caretaker dashboard\""))
        #expect(!anonymous.body.contains("expire-content"))
        #expect(try dashboard.request("/runs/1").status == 401)
        #expect(try dashboard.request("/", user: "operator:wrong").status == 401)
        #expect(try dashboard.request("/", user: "other:s3cret-Pass").status == 401)
        let allowed = try dashboard.request("/", user: "operator:s3cret-Pass")
        #expect(allowed.status == 200)
        #expect(allowed.body.contains("<tr data-job=\"expire-content\">"))
        #expect(try dashboard.request("/", method: "POST", user: "operator:s3cret-Pass").status == 405)
        let log = try String(contentsOfFile: dashboard.logPath, encoding: .utf8)
        #expect(!log.contains("s3cret-Pass"))
    }

    @Test("a lost database connection gives a 503 page, and the next request reconnects")
    func reconnects() async throws {
        let fixture = try DashboardFixture()
        let dashboard = try DashboardProcess(
            config: try fixture.db.writeConfiguration(DashboardFixture.extraConfiguration))
        try await dashboard.waitUntilListening()
        #expect(try dashboard.request("/").status == 200)
        let terminated = try fixture.db.count(
            """
            SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                                  WHERE application_name = 'caretaker/dashboard' AND datname = current_database()) AS t
            """)
        #expect(terminated == 1)
        let failed = try dashboard.request("/")
        #expect(failed.status == 503)
        #expect(failed.body.contains("Database unavailable"))
        #expect(!failed.body.contains(fixture.db.conninfo))
        #expect(try dashboard.request("/").status == 200)
    }

    @Test("an unmigrated database gives a 503 page that names `caretaker migrate`; a port in use exits 1")
    func unmigratedAndPortInUse() async throws {
        let db = try TestDatabase(migrated: false)
        let config = try db.writeConfiguration()
        let dashboard = try DashboardProcess(config: config)
        try await dashboard.waitUntilListening()
        let page = try dashboard.request("/")
        #expect(page.status == 503)
        #expect(page.body.contains("has `caretaker migrate` been run on this database?"))
        let taken = String(dashboard.url.dropFirst("http://".count).dropLast())
        let second = try Caretaker.run(["dashboard", "--listen", taken, "--config", config])
        #expect(second.status == 1, "\(second.stderr)")
        #expect(second.stderr.contains("cannot serve on \(taken)"))
    }

    @Test("bad usage is 64, bad configuration 78, an unreachable database 69")
    func exitCodes() throws {
        let db = try TestDatabase()
        let badListen = try Caretaker.run([
            "dashboard", "--listen", "localhost", "--config", try db.writeConfiguration(),
        ])
        #expect(badListen.status == 64, "\(badListen.stderr)")
        #expect(badListen.stderr.contains("HOST:PORT"))
        let noPassword = try Caretaker.run([
            "dashboard", "--config", try db.writeConfiguration("[dashboard]\nusername = \"operator\"\n"),
        ])
        #expect(noPassword.status == 78, "\(noPassword.stderr)")
        #expect(noPassword.stderr.contains("dashboard.username is set but there is no password"))
        let badKey = try Caretaker.run([
            "dashboard", "--config", try db.writeConfiguration("[dashboard]\nlisten = \"8080\"\n"),
        ])
        #expect(badKey.status == 78, "\(badKey.stderr)")
        #expect(badKey.stderr.contains("dashboard.listen"))
        let path = NSTemporaryDirectory() + "caretaker-unreachable-\(UUID().uuidString).toml"
        try "[database]\nurl = \"host=/nonexistent-socket-dir dbname=x\"\nconnect_timeout = \"2s\"\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let unreachable = try Caretaker.run(["dashboard", "--config", path])
        #expect(unreachable.status == 69, "\(unreachable.stderr)")
        #expect(unreachable.stderr.contains("database unavailable"))
    }

    @Test(
        "caretaker dashboard without caretaker-dashboard beside it exits 1 (not 69: the database is fine) and says to install the package"
    )
    func missingBinary() throws {
        let directory = NSTemporaryDirectory() + "caretaker-alone-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // cp in a child: a copy written by this process could be open in a child another test is spawning (ETXTBSY).
        #expect(try ChildProcess.run(["/bin/cp", Caretaker.path, directory + "/caretaker"]) == 0)
        let status = try ChildProcess.run(
            [directory + "/caretaker", "dashboard"], stdoutPath: directory + "/out",
            stderrPath: directory + "/err")
        let stderr = try String(contentsOfFile: directory + "/err", encoding: .utf8)
        #expect(status == 1, "\(stderr)")
        #expect(stderr.hasPrefix("caretaker: cannot run \(directory)/caretaker-dashboard"), "\(stderr)")
        #expect(stderr.contains("install the package (apt install caretaker)"), "\(stderr)")
        #expect(stderr.contains("swift build -c release --product caretaker-dashboard"), "\(stderr)")
        #expect(!stderr.contains("database"), "\(stderr)")
    }
}
