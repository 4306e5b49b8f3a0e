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

    /// The rows a plain `scripts/bench` runs; `--only` accepts these and ST, which runs only when named.
    static let defaultBenchRows = "E1 E2 E2p C1 M1 W1 L1 P1 S1 SIZE D1"
    static let benchRows = defaultBenchRows + " ST"

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

    @Test("scripts/bench --app-workload refuses a workload it does not have, naming the ones it has")
    func benchUnknownWorkload() async throws {
        let result = try await refusal("bench", ["--app-workload", "writes"])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(
            result.stderr
                == "scripts/bench: --app-workload: unknown workload 'writes'; the workloads are: write, read, mixed\n",
            "\(result.stderr)")
    }

    @Test(
        "scripts/bench --st-layouts refuses anything but part, flat or part,flat, naming them",
        arguments: ["", "parts", "flat,part", "part,flat,", "part flat"])
    func benchUnknownStreamLayouts(layouts: String) async throws {
        let result = try await refusal("bench", ["--st-layouts", layouts])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(
            result.stderr == "scripts/bench: --st-layouts: '\(layouts)' is not one of: part, flat, part,flat\n",
            "\(result.stderr)")
    }

    @Test(
        "scripts/bench --after and --window take a whole number of seconds of 1 or more",
        arguments: ["--after", "--window"], ["0", "2.5", "5s", ""])
    func benchBadSeconds(option: String, seconds: String) async throws {
        let result = try await refusal("bench", [option, seconds])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(
            result.stderr
                == "scripts/bench: \(option): '\(seconds)' is not a whole number of seconds of 1 or more\n",
            "\(result.stderr)")
    }

    @Test(
        "scripts/bench's C1 windows: a transaction counts where it started (its end minus its latency): before (in the baseline's first or second half), during (its end included) or after the expiry (its end included), and per script",
        arguments: [
            // A baseline of [100, 110): its halves are 102 (500 ms) and 105 (250 ms); script 0
            // took 250 ms before and 500 ms at p99 during, script 1 500 ms and 750 ms.
            ("110", "500.00 750.00 2 3 750.00 250.00 750.00 2 0.50 500.00 2.00 750.00 1.50\n"),
            // A baseline of [100, 104): its first half is empty, and script 0 has none of it.
            ("104", "500.00 750.00 1 3 750.00 500.00 750.00 2 nan 500.00 nan 750.00 1.50\n"),
        ])
    func pgbenchWindows(baselineEnd: String, expected: String) throws {
        let directory = NSTemporaryDirectory() + "caretaker-windows-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // client, transaction, latency µs, script, end s, end µs: starts at 102 and 105
        // (before: the first half of [100, 110) and the second), 112, 115.25 and 120
        // (during, 120 its last instant), 123 and 125 (after, 125 its last instant), 126
        // (past every window). Quarter seconds keep the sums exact.
        try """
        1 0 500000 1 102 500000
        0 1 250000 0 105 250000
        0 2 500000 0 112 500000
        1 4 750000 1 116 0
        0 3 250000 0 120 250000
        1 1 750000 1 123 750000
        1 2 250000 1 125 250000
        1 3 1000000 0 127 0

        """.write(toFile: directory + "/log.1", atomically: true, encoding: .utf8)
        let status = try ChildProcess.run(
            [
                "/usr/bin/python3", try Repository.file("scripts/bench.d/pgbench_p99.py"),
                "100", baselineEnd, "110", "120", "120", "125", directory + "/log.1",
            ], logPath: directory + "/out")
        #expect(status == 0)
        let output = try String(contentsOfFile: directory + "/out", encoding: .utf8)
        // BASE_P99 RUN_P99 BASE_N RUN_N RUN_MAX BASE_P50 AFTER_P99 AFTER_N BASE_HALVES_RATIO
        // RUN_P99_0 RATIO_0 RUN_P99_1 RATIO_1
        #expect(output == expected, "\(output)")
    }

    @Test(
        "scripts/bench.d/timeline.py: a kept C1 attempt's app p99 by bucket from the expiry's start, with the server log's checkpoints, posts' autovacuum and the app's wait events"
    )
    func timeline() throws {
        let directory = NSTemporaryDirectory() + "caretaker-timeline-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/pg", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The expiry ran from 1800000000 (2027-01-15 08:00:00 UTC) for 10 s. The app's
        // transactions started at -5 s (2 ms), +1 s (40 ms) and +6 s (3 ms); the .out
        // file is not a log. The vacuum's line comes at its end, +9 s, after 6.5 s.
        try "default 1799999980 1800000000 1800000010\n".write(
            toFile: directory + "/c1-spans", atomically: true, encoding: .utf8)
        try "0 1 2000 0 1799999995 2000\n0 2 40000 0 1800000001 40000\n1 1 3000 1 1800000006 3000\n".write(
            toFile: directory + "/c1-c1_default.123", atomically: true, encoding: .utf8)
        try "not a pgbench log\n".write(toFile: directory + "/c1-c1_default.out", atomically: true, encoding: .utf8)
        try """
        2027-01-15 08:00:01.500 UTC [10] LOG:  checkpoint starting: wal
        2027-01-15 08:00:07.000 UTC [10] LOG:  checkpoint complete: wrote 1 buffers (0.0%); write=1.000 s, sync=0.250 s, total=1.300 s
        2027-01-15 08:00:09.000 UTC [11] LOG:  automatic vacuum of table "c1_default.public.posts": index scans: 1
        \tsystem usage: CPU: user: 0.10 s, system: 0.00 s, elapsed: 6.50 s

        """.write(toFile: directory + "/pg/server.log", atomically: true, encoding: .utf8)
        // Wait-event samples (--wait-events): before the first bucket, none counted; in
        // +0, three events of active backends (an idle one is left out); in +5 one; in
        // +10, where no transaction started, one on a CPU.
        try """
        1799999985.0|active|IO:DataFileRead
        1800000001.0|active|LWLock:WALWrite
        1800000001.0|active|IO:WALInitWrite
        1800000001.0|idle|Client:ClientRead

        1800000001.5|active|LWLock:WALWrite
        1800000002.0|active|
        1800000007.0|active|IO:DataFileWrite
        1800000012.0|active|

        """.write(toFile: directory + "/c1-c1_default.waits", atomically: true, encoding: .utf8)
        let status = try ChildProcess.run(
            ["/usr/bin/python3", try Repository.file("scripts/bench.d/timeline.py"), directory, "5", "5"],
            logPath: directory + "/out")
        #expect(status == 0)
        let output = try String(contentsOfFile: directory + "/out", encoding: .utf8)
        #expect(
            output == """
                default: expiry 10.0 s, baseline p99 2.00 ms
                     -5.0     1     2.00     2.00
                     +0.0     1    40.00    40.00  checkpoint start; autovacuum of posts starts; waits LWLock:WALWrite 2, IO:WALInitWrite 1, CPU 1
                     +5.0     1     3.00     3.00  checkpoint end (sync 0.250 s); autovacuum of posts ends; waits IO:DataFileWrite 1
                    +10.0     0      nan      nan  waits CPU 1

                """, "\(output)")
    }

    @Test(
        "scripts/bench.d/service_time.py: a kept C1 attempt's latencies split into schedule lag and service time, before, during and after the expiry"
    )
    func serviceTime() throws {
        let directory = NSTemporaryDirectory() + "caretaker-service-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The expiry ran from 1800000000 for 10 s. Before it (from -9 s): 4 ms of which
        // 1 ms lag, and 2 ms with none. During: 10 ms of which 6 ms lag, and 5 ms on a
        // line without a lag (pgbench without --rate). After (5 s by default): 3 ms of
        // which 0.5 ms lag. At +20 s: past every window. The .out file is not a log.
        try "default 1799999980 1800000000 1800000010\n".write(
            toFile: directory + "/c1-spans", atomically: true, encoding: .utf8)
        try """
        0 1 4000 0 1799999995 4000 1000
        1 1 2000 0 1799999996 2000 0
        0 2 10000 0 1800000001 10000 6000
        1 2 5000 0 1800000002 5000
        0 3 3000 0 1800000012 3000 500
        1 3 9000 0 1800000020 9000 8000

        """.write(toFile: directory + "/c1-c1_default.123", atomically: true, encoding: .utf8)
        try "not a pgbench log\n".write(toFile: directory + "/c1-c1_default.out", atomically: true, encoding: .utf8)
        let status = try ChildProcess.run(
            ["/usr/bin/python3", try Repository.file("scripts/bench.d/service_time.py"), directory],
            logPath: directory + "/out")
        #expect(status == 0)
        let output = try String(contentsOfFile: directory + "/out", encoding: .utf8)
        #expect(
            output == """
                variant window n p99_latency_ms p99_lag_ms p50_service_ms p99_service_ms
                default before 2 4.00 1.00 2.00 3.00
                default during 2 10.00 6.00 4.00 5.00
                default after 1 3.00 0.50 2.50 2.50

                """, "\(output)")
    }

    @Test(
        "scripts/bench.d/stalls.py: moments every app client was active at once, the longest streak, and who did what in streaks of 50 ms or more"
    )
    func stalls() throws {
        let directory = NSTemporaryDirectory() + "caretaker-stalls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Two clients. 99.99 is before the window. From 100.00, six samples with both
        // active (a 60 ms streak): the WAL writer syncing in every other one, idle in
        // its main loop in the rest; caretaker flushing in all; the background writer
        // idle. At 100.06 one client waits for pgbench. 100.50 and 100.51: a 20 ms
        // streak, too short for the waits. 101.50 is past the window.
        var lines = ["99.99|app|active|LWLock:WALWrite", "99.99|app|active|"]
        for sample in 0..<6 {
            let stamp = String(format: "%.2f", 100 + Double(sample) / 100)
            lines += [
                "\(stamp)|app|active|LWLock:WALWrite", "\(stamp)|app|active|IO:WALSync",
                "\(stamp)|walwriter||" + (sample.isMultiple(of: 2) ? "IO:WALSync" : "Activity:WalWriterMain"),
                "\(stamp)|caretaker|active|IO:DataFileFlush", "\(stamp)|background writer||Activity:BgWriterMain", "",
            ]
        }
        lines += [
            "100.06|app|active|", "100.06|app|idle|Client:ClientRead", "100.06|caretaker|active|", "",
            "100.50|app|active|", "100.50|app|active|IO:DataFileRead", "100.51|app|active|", "100.51|app|active|", "",
            "100.60|app|idle|Client:ClientRead", "101.50|app|active|", "101.50|app|active|",
        ]
        try (lines.joined(separator: "\n") + "\n").write(
            toFile: directory + "/samples", atomically: true, encoding: .utf8)
        func stalls(_ from: String, _ to: String) throws -> String {
            let status = try ChildProcess.run(
                [
                    "/usr/bin/python3", try Repository.file("scripts/bench.d/stalls.py"), directory + "/samples", "2",
                    from, to,
                ], logPath: directory + "/out-\(from)")
            #expect(status == 0)
            return try String(contentsOfFile: directory + "/out-\(from)", encoding: .utf8)
        }
        #expect(
            try stalls("100", "101")
                == "stalled in 8 samples of 10, the longest 60 ms from +0.00 s; in the 6 samples of streaks of 50 ms or more: app LWLock:WALWrite 50%, IO:WALSync 50%; caretaker IO:DataFileFlush 100%; walwriter IO:WALSync 50%\n"
        )
        #expect(try stalls("100.50", "100.51") == "stalled in 2 samples of 2, the longest 20 ms from +0.00 s\n")
        #expect(try stalls("100.55", "101") == "no stall\n")
    }

    @Test(
        "scripts/bench --pg-setting takes NAME=VALUE",
        arguments: ["shared_buffers", "=1GB", "shared_buffers=", "shared buffers=1GB"])
    func benchBadPgSetting(setting: String) async throws {
        let result = try await refusal("bench", ["--pg-setting", setting])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(
            result.stderr
                == "scripts/bench: --pg-setting: '\(setting)' is not NAME=VALUE (e.g. shared_buffers=1GB)\n",
            "\(result.stderr)")
    }

    @Test(
        "scripts/bench's wait-event summary: active backends only, shares of 2 % or more, and C1's three windows with their boundaries"
    )
    func waitEventWindows() throws {
        let directory = NSTemporaryDirectory() + "caretaker-waits-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Before [100, 110): 60 samples of one backend on a CPU, and at 100.5 a second
        // one reading a temporary file: 1 of 61, under 2 %. 99.9 is before every window.
        var lines = ["99.9|active|IO:DataFileRead"]
        for tenth in 0..<60 { lines.append(String(format: "%.1f|active|", 100 + Double(tenth) / 10)) }
        lines.append("100.5|active|IO:BufFileRead")
        // During [110, 120]: two samples, three active backends; one backend waiting for
        // pgbench is not active. After (120, 125]: 125 its last instant, 126 past it.
        lines += [
            "110.0|active|IO:DataFileWrite", "110.0|idle in transaction|Client:ClientRead",
            "120.0|active|LWLock:WALWrite", "120.0|active|", "",
            "123.0|active|IO:DataFileRead", "125.0|idle|Client:ClientRead", "126.0|active|IO:DataFileWrite",
        ]
        try (lines.joined(separator: "\n") + "\n").write(
            toFile: directory + "/waits", atomically: true, encoding: .utf8)
        let status = try ChildProcess.run(
            [
                "/usr/bin/python3", try Repository.file("scripts/bench.d/wait_events.py"), directory + "/waits",
                "100", "110", "120", "125",
            ], logPath: directory + "/out")
        #expect(status == 0)
        let output = try String(contentsOfFile: directory + "/out", encoding: .utf8)
        #expect(
            output == """
                before: 1.02 active backends per sample (60 samples); CPU 98%
                during: 1.50 active backends per sample (2 samples); IO:DataFileWrite 33%, LWLock:WALWrite 33%, CPU 33%
                after: 0.50 active backends per sample (2 samples); IO:DataFileRead 100%

                """, "\(output)")
    }

    @Test("scripts/bench --help lists the rows --only accepts")
    func benchHelp() async throws {
        let output = NSTemporaryDirectory() + "caretaker-script-\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let status = try ChildProcess.run([try Repository.file("scripts/bench"), "--help"], logPath: output)
        #expect(status == 0)
        let usage = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(usage.contains("--only LIST         rows to run, e.g. E1,E2,C1 (default: \(Self.defaultBenchRows);"))
        #expect(usage.contains("ST, the sustained stream, runs only when named"))
    }

    @Test(
        "scripts/bench's C1 chart: one colour and legend line per way of expiring (more than four runs summed up), the target at half the median DELETE"
    )
    func tradeoffChart() throws {
        let directory = NSTemporaryDirectory() + "caretaker-chart-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try """
        single DELETE\t40\t1000000
        caretaker (defaults)\t1.5\t500000
        single DELETE\t50\t1400000
        caretaker (defaults)\t2.5\t600000
        single DELETE\t60\t1200000
        rate=256MB\t1.6\t400000
        rate=256MB\t1.0\t410000
        rate=256MB\t3.0\t420000
        rate=256MB\t1.2\t430000
        rate=256MB\t1.4\t440000

        """.write(toFile: directory + "/points.tsv", atomically: true, encoding: .utf8)
        let status = try ChildProcess.run(
            [
                "/usr/bin/python3", try Repository.file("scripts/bench.d/tradeoff_svg.py"), directory + "/points.tsv",
                directory + "/chart.svg", "a title",
            ], logPath: directory + "/log")
        #expect(status == 0)
        let svg = try String(contentsOfFile: directory + "/chart.svg", encoding: .utf8)
        #expect(svg.contains(">single DELETE: 40.00×, 50.00×, 60.00×; 1000–1400k/s</text>"))
        #expect(svg.contains(">caretaker (defaults): 1.50×, 2.50×; 500–600k/s</text>"))
        #expect(svg.contains(">rate=256MB: 5 runs: median 1.40×, 1.00–3.00×; 400–440k/s</text>"), "\(svg)")
        #expect(svg.components(separatedBy: "fill=\"#1f77b4\"").count - 1 == 3, "two points and one legend mark")
        // The median DELETE went at 1200k rows/s: the line stands at 600k, drawn where
        // the 600k point is (x_max is 1.1 × 1400k over a plot 480 px wide from x = 70).
        let x = 70 + 480 * 600.0 / (1400.0 * 1.1)
        #expect(svg.contains("<line x1=\"\(String(format: "%.1f", x))\" x2=\"\(String(format: "%.1f", x))\""), "\(svg)")
        #expect(svg.contains("½ DELETE rows/s (median)"))
    }

    @Test("scripts/soak --faults refuses an unknown fault kind")
    func soakUnknownFault() async throws {
        let result = try await refusal("soak", ["--faults", "kill-9,power-cut"])
        #expect(result.status == 64, "\(result.stderr)")
        let expected = "scripts/soak: unknown fault kind power-cut\nusage: scripts/soak"
        #expect(result.stderr.hasPrefix(expected), "\(result.stderr)")
    }
}
