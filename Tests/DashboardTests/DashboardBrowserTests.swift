import CaretakerCore
import CaretakerTestSupport
import Foundation
import Testing

/// Headless Chromium (Debian's `chromium`) loads the overview from `caretaker dashboard`.
@Suite struct DashboardBrowserTests {
    static let chromium = "/usr/bin/chromium"

    /// Chromium as root needs --no-sandbox; a profile of its own keeps runs apart; scripting
    /// is off (`--disable-javascript`), as the dashboard must work without it.
    static func chromiumArguments(profile: String) -> [String] {
        [
            chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--disable-javascript", "--user-data-dir=\(profile)",
        ]
    }

    @Test(
        "the rendered DOM holds the jobs, the timeline's marks and the charts; the screenshot is a PNG (scripting off)")
    func overviewInChromium() async throws {
        #expect(
            FileManager.default.isExecutableFile(atPath: Self.chromium),
            "install Debian's chromium (scripts/lib/install-deps.sh)")
        let fixture = try DashboardFixture()
        let dashboard = try DashboardProcess(
            config: try fixture.db.writeConfiguration(DashboardFixture.extraConfiguration))
        try await dashboard.waitUntilListening()
        let work = dashboard.directory

        let domPath = work + "/dom.html"
        let dumped = try ChildProcess.run(
            Self.chromiumArguments(profile: work + "/profile-dom") + ["--dump-dom", dashboard.url],
            stdoutPath: domPath, stderrPath: work + "/chromium-dom.log")
        #expect(dumped == 0)
        let dom = try String(contentsOfFile: domPath, encoding: .utf8)
        for name in fixture.configuration.jobNames {
            #expect(dom.contains("<tr data-job=\"\(name)\">"), "\(name) missing from the DOM")
        }
        #expect(dom.contains("<svg class=\"timeline\""))
        #expect(DashboardFixture.count("class=\"mark ", in: dom) == DashboardFixture.marksInDay)
        #expect(DashboardFixture.count("<div class=\"chart\"", in: dom) == 8)
        #expect(!dom.contains("<script"))
        #expect(dom.contains("&lt;script&gt;alert"))

        let screenshot = work + "/overview.png"
        let shot = try ChildProcess.run(
            Self.chromiumArguments(profile: work + "/profile-shot") + [
                "--hide-scrollbars", "--window-size=1280,1400",
                "--screenshot=\(screenshot)", dashboard.url,
            ], stdoutPath: work + "/chromium-shot.out", stderrPath: work + "/chromium-shot.log")
        #expect(shot == 0)
        let png = try Data(contentsOf: URL(fileURLWithPath: screenshot))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), "not a PNG")
        // IHDR: width and height, big-endian, at bytes 16…23.
        let width = png.count > 24 ? png[16..<20].reduce(0) { $0 << 8 | Int($1) } : 0
        let height = png.count > 24 ? png[20..<24].reduce(0) { $0 << 8 | Int($1) } : 0
        #expect(width == 1280 && height == 1400)
        // A blank page compresses to a few kilobytes; the overview does not.
        #expect(png.count > 30_000, "\(png.count) bytes")
        if let keep = ProcessInfo.processInfo.environment["CARETAKER_KEEP_SCREENSHOT"] {
            try png.write(to: URL(fileURLWithPath: keep))
        }
    }
}
