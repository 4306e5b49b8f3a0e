import Foundation
import SeededRandom
import Testing

@testable import CaretakerConfig
@testable import CaretakerCore
@testable import CaretakerJobs

// Deterministic fuzzing of the configuration loader (the harness, its seeds and
// replay: SeededRandom's FuzzRun; the schedule, duration and address parsers have
// fuzz tests of their own in their test targets). Beyond "does not crash": every
// failure is a `ConfigurationError` naming this file, a line between 0 and the
// file's line count, a key (unless it is a TOML syntax error) and a non-empty,
// single-line message; every success has all built-in jobs, unique names, in-range
// values and schedules whose next slot is strictly later than the instant asked about.

@Suite("Fuzz: configuration loader")
struct ConfigurationFuzzTests {
    /// The annotated default configuration at the top of the repository.
    static let annotated: String = {
        let root = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent("jobs.toml"), encoding: .utf8)) ?? ""
    }()

    /// A directory with a valid and a broken mail template, so `template_file` mutations reach both paths.
    /// Removed when the test process exits (a static outlives every test).
    static let directory: String = {
        let path = directoryPath
        atexit { try? FileManager.default.removeItem(atPath: ConfigurationFuzzTests.directoryPath) }
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try? "Subject: Hi\n\nYour password: {{password}}\n".write(
            toFile: path + "/good.txt", atomically: true, encoding: .utf8)
        try? "Subject: {{password}}\n\nbody\n".write(toFile: path + "/bad.txt", atomically: true, encoding: .utf8)
        return path
    }()

    /// One per test process; a name the exit handler can work out again (it captures nothing).
    static var directoryPath: String { NSTemporaryDirectory() + "caretaker-fuzz-\(getpid())" }

    static var file: String { directory + "/jobs.toml" }

    /// The annotated file with its commented-out operator jobs enabled, and a few small files.
    static var corpus: [String] {
        let uncommented = annotated.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            for prefix in ["# [jobs.", "# schedule", "# sql", "# repeat_until_zero"] where line.hasPrefix(prefix) {
                return line.dropFirst(2)
            }
            return line
        }.joined(separator: "\n")
        return [
            annotated, annotated, annotated, uncommented,
            "",
            "[database]\nurl = \"host=/tmp dbname=x\"\n",
            "[worker]\ntimezone = \"Europe/Berlin\"\nlow_footprint = true\n[jobs.prune]\nschedule = \"0 3 * * *\"\ntimezone = \"Asia/Kathmandu\"\n",
            "[mail]\ntransport = \"file\"\ndirectory = \"/tmp/mail\"\n[jobs.send-temp-passwords]\ntemplate_file = \"good.txt\"\nschedule = \"@every 1s\"\n",
            "jobs.clean.sql = \"DELETE FROM t WHERE x < now()\"\njobs.clean.schedule = \"*/10 * * * *\"\njobs.clean.repeat_until_zero = true\n",
            "[jobs.a]\nsql = 'UPDATE t SET x = 1 WHERE y'\nschedule = \"@every 90s\"\n[jobs.expire-content]\nmin_lifetime = \"1h\"\nmax_lifetime = \"1h\"\n",
        ]
    }

    static let sections = [
        "database", "worker", "mail", "jobs.expire-content", "jobs.logout-inactive",
        "jobs.send-temp-passwords", "jobs.leader-succession", "jobs.prune", "jobs.custom", "jobs",
        "jobs.prune.extra", "nope", "jobs.bad name", "jobs.\"q\\n\"", "Database",
        "jobs.\(String(repeating: "x", count: 60))",
    ]

    static let keys = [
        "url", "password_file", "app_schema", "connect_timeout",
        "timezone", "low_footprint", "max_concurrent_jobs", "shutdown_grace", "idle_disconnect", "batch_pause",
        "log_format",
        "transport", "starttls", "username", "from", "directory",
        "enabled", "schedule", "statement_timeout", "lock_timeout", "max_runtime", "batch_size", "catch_up",
        "max_retries", "stale_after", "min_lifetime", "max_lifetime", "post_full_popularity", "pack_full_popularity",
        "idle_timeout", "max_per_hour", "temp_password_length", "temp_password_ttl", "bcrypt_cost", "max_attempts",
        "template_file", "leader_inactive_after", "keep_history", "keep_revoked_sessions", "keep_reset_requests",
        "sql", "repeat_until_zero", "unknown_key", "\"quoted key\"", "'lit'", "a.b", "\"new\\nline\"", "database.url",
        "jobs.x.sql",
    ]

    static let values = [
        // durations
        "\"0\"", "\"0s\"", "\"1ms\"", "\"999ms\"", "\"1s\"", "\"1.5h\"", "\"1h30m\"", "\"30m1h\"", "\"10\"", "\"-1s\"",
        "\"1 s\"",
        "\"106751d\"", "\"106752d\"", "\"0.0000000001s\"", "\"\"", "\"24h\"", "\"48h\"", "\"1d\"", "\"5m\"", "\"٣s\"",
        // schedules
        "\"*/5 * * * *\"", "\"@every 1s\"", "\"@every 0s\"", "\"@every 1ms\"", "\"61 * * * *\"", "\"* * * *\"",
        "\"0 0 30 2 *\"", "\"@yearly\"", "\"@every\"", "\"@bogus\"", "\"0 0 * * sun-sat\"", "\"0 0 * * 7-0\"",
        "\"*/0 * * * *\"",
        "\"0 0 29 2 mon\"", "\"@hourly now\"", "\"0\\n0 * * * *\"",
        // zones
        "\"UTC\"", "\"Europe/Berlin\"", "\"Mars/Olympus\"", "\"../../etc/passwd\"", "\"EST\"", "\"GMT+5\"",
        "\"+01:00\"",
        // integers and other types
        "0", "1", "-1", "2", "4", "11", "12", "31", "32", "64", "65", "128", "129", "1000000", "1000001", "2147483647",
        "2147483648", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "0x7F", "0o17", "0b101",
        "1.5", "inf", "nan", "-0.0", "true", "false", "True", "[]", "[1, \"a\"]", "{}", "{ a = 1 }", "1979-05-27",
        // strings
        "\"smtp://127.0.0.1:25\"", "\"smtps://mail.example.org\"", "\"http://x\"", "\"file\"", "\"smtp\"", "\"json\"",
        "\"logfmt\"",
        "\"Community <no-reply@example.org>\"", "\"a\\nb\"", "\"\\u0000\"", "\"日本\"", "'literal'",
        "\"\"\"\nmulti\"\"\"",
        "\"good.txt\"", "\"bad.txt\"", "\"missing.txt\"", "\"/dev/null\"", "\"/\"",
        // SQL
        "\"DELETE FROM t WHERE id IN (SELECT id FROM t LIMIT 10)\"", "\"SELECT 1\"", "\"SELECT 1; SELECT 2\"",
        "\"DELETE FROM t;\"", "\"'unterminated\"", "\"$$ ; $$\"", "\"-- only a comment\"",
        "\"/* ; */ UPDATE t SET x = 1\"",
        "\"WITH a AS (SELECT 1) SELECT 1\"", "\"WITH d AS (DELETE FROM t RETURNING 1) SELECT count(*) FROM d\"",
        "\"$a$ x $a$; DELETE FROM t\"", "\";\"",
    ]

    static let fragments = [
        "[", "]", "[[", "]]", "{", "}", "\"", "'", "\"\"\"", "'''", "=", ".", ",", "#", "\n", "\r\n", "\r", "\\", "\\u",
        " ", "\t", "\u{0}", "é", "日", "\u{FEFF}", "\u{2028}", "jobs.", "[jobs.", "schedule = ", "sql = ", "@every ",
        "*/",
        "ms", "d", "-", "0", "9", ":", "true",
    ]

    /// Edits one `key = value` line, or the lines themselves.
    fileprivate static func mutateLines(_ text: String, using random: inout SplitMix64) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.isEmpty { lines = [""] }
        let index = random.int(0...lines.count - 1)
        switch random.int(0...8) {
        case 0, 1:  // a new value for an existing key
            if let equals = lines[index].firstIndex(of: "=") {
                lines[index] = String(lines[index][..<equals]) + "= " + random.pick(values)
            } else {
                lines.insert("\(random.pick(keys)) = \(random.pick(values))", at: index)
            }
        case 2:  // another key for an existing value
            if let equals = lines[index].firstIndex(of: "=") {
                lines[index] = random.pick(keys) + " " + lines[index][equals...]
            }
        case 3:
            lines.insert("\(random.pick(keys)) = \(random.pick(values))", at: random.int(0...lines.count))
        case 4:
            lines.insert("[\(random.pick(sections))]", at: random.int(0...lines.count))
        case 5:
            lines.remove(at: index)
        case 6:
            lines.insert(lines[index], at: random.int(0...lines.count))
        case 7:
            lines.swapAt(index, random.int(0...lines.count - 1))
        default:  // uncomment a line
            if lines[index].hasPrefix("# ") { lines[index].removeFirst(2) } else { lines[index] = "# " + lines[index] }
        }
        return lines.joined(separator: random.chance(10) ? "\r\n" : "\n")
    }

    /// A configuration built from known sections, keys and values, mostly in the right places.
    fileprivate static func generated(using random: inout SplitMix64) -> String {
        var text = ""
        for _ in 0..<random.int(0...6) {
            text += "[\(random.pick(sections))]\n"
            for _ in 0..<random.int(0...5) {
                text += "\(random.pick(keys)) = \(random.pick(values))\n"
            }
        }
        return text
    }

    /// Parses `text` and checks the properties in the file's header.
    fileprivate static func check(_ text: String, seed: UInt64, run: inout FuzzRun) {
        let lineCount = text.utf8.count { $0 == 0x0A } + 1
        let configuration: Configuration
        do {
            configuration = try ConfigurationLoader.parse(text, file: file)
        } catch {
            // `parse` throws only `ConfigurationError` (typed throws); check what it says.
            run.check(error.file == file, seed: seed, text.shown, "error names \(error.file)")
            run.check(
                error.line >= 0 && error.line <= lineCount, seed: seed, text.shown,
                "line \(error.line) outside 0…\(lineCount): \(error)")
            run.check(!error.message.isEmpty, seed: seed, text.shown, "empty message: \(error)")
            run.check(
                !error.key.isEmpty || error.message.hasPrefix("TOML syntax error"), seed: seed, text.shown,
                "a non-syntax error names no key: \(error)")
            run.check(
                !hasControlCharacter(error.description), seed: seed, text.shown,
                "message is not one line of text: \(error.description.shown)")
            return
        }
        let names = configuration.jobNames
        run.check(Set(names).count == names.count, seed: seed, text.shown, "duplicate job names \(names)")
        run.check(
            Array(names.prefix(BuiltInJob.allCases.count)) == BuiltInJob.allCases.map(\.rawValue),
            seed: seed, text.shown, "built-in jobs missing: \(names)")
        run.check(
            (1...64).contains(configuration.worker.maxConcurrentJobs), seed: seed, text.shown, "max_concurrent_jobs")
        run.check(
            !configuration.worker.lowFootprint || configuration.worker.maxConcurrentJobs == 1, seed: seed, text.shown,
            "low-footprint mode runs more than one job at a time")
        run.check(
            configuration.database.connectTimeout >= .seconds(1), seed: seed, text.shown, "connect_timeout below 1s")
        run.check(!configuration.database.appSchema.isEmpty, seed: seed, text.shown, "empty app_schema")
        run.check(
            !configuration.mail.from.contains(where: { $0 == "\r" || $0 == "\n" }), seed: seed, text.shown,
            "from has a line break")
        var random = SplitMix64(seed: seed ^ 0xC0FFEE)
        for job in configuration.jobs {
            run.check(
                job.batchSize >= 1 && job.maxRetries >= 0 && job.statementTimeout > .zero && job.lockTimeout > .zero
                    && job.maxRuntime > .zero && job.batchPause >= .zero,
                seed: seed, text.shown, "job \(job.name) has out-of-range common settings")
            let date = Instants.random(using: &random)
            if let next = job.schedule.nextDate(after: date) {
                run.check(
                    next > date, seed: seed, text.shown, "\(job.name): nextDate(after: \(date)) = \(next) is not later")
            }
            if let settings = job.settings(as: ExpireContentSettings.self) {
                run.check(
                    settings.maxLifetime >= settings.minLifetime && settings.minLifetime >= .zero,
                    seed: seed, text.shown, "max_lifetime < min_lifetime")
                run.check(
                    settings.postFullPopularity >= 1 && settings.packFullPopularity >= 1, seed: seed, text.shown,
                    "full popularity below 1 (division by zero)")
            }
            if let settings = job.settings(as: SendTempPasswordsSettings.self) {
                run.check(settings.tempPasswordLength >= 12, seed: seed, text.shown, "temp_password_length below 12")
                run.check(
                    settings.template.body.contains("{{password}}")
                        && !settings.template.subject.contains("{{password}}"),
                    seed: seed, text.shown, "template without {{password}} in its body")
            }
            if case .sql(let settings) = job.settings {
                run.check(
                    !settings.sql.isEmpty && BuiltInJob(rawValue: job.name) == nil, seed: seed, text.shown,
                    "operator job \(job.name) without SQL")
            }
            if let settings = job.settings(as: LogoutInactiveSettings.self) {
                run.check(settings.idleTimeout >= .seconds(1), seed: seed, text.shown, "idle_timeout below 1s")
            }
        }
    }

    @Test("the annotated jobs.toml is found and valid (it seeds the corpus)")
    func annotatedFileParses() throws {
        #expect(Self.annotated.contains("[jobs.send-temp-passwords]"), "jobs.toml not found next to Package.swift")
        let configuration = try ConfigurationLoader.parse(Self.annotated, file: Self.file)
        #expect(configuration.jobNames == BuiltInJob.allCases.map(\.rawValue))
        let uncommented = Self.corpus[3]
        #expect(
            try ConfigurationLoader.parse(uncommented, file: Self.file).jobNames.count == BuiltInJob.allCases.count + 2)
    }

    @Test("mutations of jobs.toml: no crash, every error names a line within the file, a key and a message")
    func mutatedConfigurations() {
        var run = FuzzRun("config mutations", seed: 0xC0F1_6000)
        let corpus = Self.corpus
        run.run(1200) { random, run in
            let seed = random.state
            var text = random.pick(corpus)
            for _ in 0..<random.int(1...4) {
                if random.chance(60) {
                    text = Self.mutateLines(text, using: &random)
                } else {
                    var bytes = Array(text.utf8)
                    Mutate.bytes(&bytes, fragments: Self.fragments, using: &random)
                    text = String(decoding: bytes, as: UTF8.self)
                }
            }
            Self.check(text, seed: seed, run: &run)
        }
    }

    @Test("generated configurations from known sections, keys and values")
    func generatedConfigurations() {
        var run = FuzzRun("config generation", seed: 0xC0F1_6001)
        run.run(2000) { random, run in
            let seed = random.state
            Self.check(Self.generated(using: &random), seed: seed, run: &run)
        }
    }

    @Test("random bytes and text as a configuration")
    func randomConfigurations() {
        var run = FuzzRun("config random", seed: 0xC0F1_6002)
        run.run(2000) { random, run in
            let seed = random.state
            let text: String
            if random.chance(50) {
                text = String(
                    decoding: (0..<random.int(0...200)).map { _ in UInt8.random(in: 0...255, using: &random) },
                    as: UTF8.self)
            } else {
                text = (0..<random.int(0...30)).map { _ in random.pick(Self.fragments + Self.keys + Self.values) }
                    .joined()
            }
            Self.check(text, seed: seed, run: &run)
        }
    }

    @Test("pathological configurations")
    func pathologicalConfigurations() {
        var run = FuzzRun("config pathological", seed: 0)
        let inputs = [
            String(repeating: "[jobs.a]\n", count: 500),
            (0..<400).map { "[jobs.j\($0)]\nsql = \"DELETE FROM t\"\nschedule = \"@every 1s\"\n" }.joined(),
            "[jobs]\n" + String(repeating: "x", count: 100_000) + " = 1\n",
            "[database]\nurl = \"" + String(repeating: "a", count: 200_000) + "\"\n",
            String(repeating: "\n", count: 20_000) + "[nope]",
            String(repeating: "# comment\n", count: 5_000) + "[jobs.prune]\nkeep_history = \"1s\"",
            "jobs = 1",
            "jobs.prune = 1",
            "database = \"x\"",
            "[jobs.expire-content]\nschedule = \"" + String(repeating: "1,", count: 10_000) + "1 * * * *\"",
            "[jobs.expire-content]\nmin_lifetime = \"" + String(repeating: "9", count: 10_000) + "d\"",
            "[jobs.prune]\nschedule = \"@every " + String(repeating: "1", count: 10_000) + "ms\"",
        ]
        for input in inputs {
            Self.check(input, seed: 0, run: &run)
        }
    }
}
