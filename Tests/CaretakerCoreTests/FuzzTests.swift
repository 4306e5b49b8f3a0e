import Foundation
import SeededRandom
import Testing

@testable import CaretakerCore

// Deterministic fuzzing of the four parsers that read operator or user input:
// the configuration loader, the cron parser, the duration parser and the mail
// address validator. Every generated input comes from its own 64-bit case seed
// (derived from the test's base seed and the case number), so a failure message
// names the seed and the input, and
//
//     CARETAKER_FUZZ_CASE=0x1234abcd swift test --filter <the failing test>
//
// replays exactly that one case. CARETAKER_FUZZ_SCALE=10 runs ten times as many
// cases (with the same first ones) for a longer local session.
//
// The properties checked, beyond "does not crash":
// - configuration: every failure is a `ConfigurationError` naming this file, a
//   line between 0 and the file's line count, a key (unless it is a TOML syntax
//   error) and a non-empty, single-line message; every success has all built-in
//   jobs, unique names, in-range values and schedules whose next slot is strictly
//   later than the instant asked about;
// - schedules: the next slot is strictly after the date, the previous slot at or
//   before it, no slot lies strictly between a date and its next slot, and a slot
//   is its own "previous slot";
// - durations: `parse(format(d)) == d`, accepted text matches the grammar, and
//   composed durations parse to the sum of their parts;
// - addresses: `isValid` agrees with `MailAddress(_:)` and with `problem(in:)`, and
//   a valid address is plain ASCII with exactly one `@`, at most 254 bytes and none
//   of CR, LF, space, `,`, `<`, `>`.

// MARK: - Seeded generation

/// Runs `count` cases, each with its own generator, and stops recording after a
/// few failures so one bug does not bury the report under thousands of issues.
private struct FuzzRun {
    let name: String
    let baseSeed: UInt64
    private(set) var failures = 0
    private static let maxRecorded = 12

    static var scale: Int {
        ProcessInfo.processInfo.environment["CARETAKER_FUZZ_SCALE"].flatMap(Int.init).map { max(1, $0) } ?? 1
    }

    /// The single case to replay, from `CARETAKER_FUZZ_CASE` (hex, with or without 0x).
    static var replay: UInt64? {
        guard var text = ProcessInfo.processInfo.environment["CARETAKER_FUZZ_CASE"], !text.isEmpty else { return nil }
        if text.hasPrefix("0x") { text.removeFirst(2) }
        return UInt64(text, radix: 16)
    }

    init(_ name: String, seed: UInt64) {
        self.name = name
        self.baseSeed = seed
    }

    /// The seed of case `index`: a SplitMix64 step from the base, so neighbouring cases differ everywhere.
    func caseSeed(_ index: Int) -> UInt64 {
        var mixer = SplitMix64(seed: baseSeed ^ (UInt64(index) &* 0xD6E8_FEB8_6659_FD93))
        return mixer.next()
    }

    /// Calls `body` for each case with a generator and the case seed.
    mutating func run(_ count: Int, _ body: (inout SplitMix64, inout FuzzRun) -> Void) {
        if let replay = Self.replay {
            var random = SplitMix64(seed: replay)
            body(&random, &self)
            return
        }
        for index in 0..<count * Self.scale {
            let seed = caseSeed(index)
            var random = SplitMix64(seed: seed)
            body(&random, &self)
            if failures >= Self.maxRecorded { return }
        }
    }

    /// Records a failure of case `seed` (only the first few are recorded).
    mutating func check(
        _ condition: Bool, seed: UInt64, _ input: @autoclosure () -> String,
        _ message: @autoclosure () -> String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard !condition else { return }
        failures += 1
        guard failures <= Self.maxRecorded else { return }
        Issue.record(
            """
            \(name): \(message())
              case seed: 0x\(String(seed, radix: 16)) (replay with CARETAKER_FUZZ_CASE=0x\(String(seed, radix: 16)))
              input: \(input())
            """, sourceLocation: sourceLocation)
    }
}

/// Byte-level and text-level mutations shared by the fuzzers.
private enum Mutate {
    /// One random edit of `bytes`: flip, insert, delete, duplicate, truncate or splice in a fragment.
    static func bytes(_ bytes: inout [UInt8], fragments: [String], using random: inout SplitMix64) {
        let position = bytes.isEmpty ? 0 : random.int(0...bytes.count)
        switch random.int(0...6) {
        case 0 where !bytes.isEmpty:
            bytes[min(position, bytes.count - 1)] = UInt8.random(in: 0...255, using: &random)
        case 1, 2:
            bytes.insert(contentsOf: Array(random.pick(fragments).utf8), at: position)
        case 3 where !bytes.isEmpty:
            let end = min(bytes.count, position + random.int(1...12))
            bytes.removeSubrange(min(position, end)..<end)
        case 4 where !bytes.isEmpty:
            let end = min(bytes.count, position + random.int(1...40))
            bytes.insert(contentsOf: Array(bytes[min(position, end)..<end]), at: min(position, end))
        case 5 where random.chance(30):
            bytes.removeSubrange(min(position, bytes.count)...)
        default:
            bytes.insert(UInt8.random(in: 0...127, using: &random), at: position)
        }
    }

    /// One random edit at the character level (keeps the text valid Unicode).
    static func characters(_ text: String, fragments: [String], using random: inout SplitMix64) -> String {
        var characters = Array(text)
        let position = characters.isEmpty ? 0 : random.int(0...characters.count)
        switch random.int(0...5) {
        case 0 where !characters.isEmpty:
            characters.remove(at: min(position, characters.count - 1))
        case 1 where !characters.isEmpty:
            characters[min(position, characters.count - 1)] = random.pick(fragments).first ?? "x"
        case 2 where !characters.isEmpty:
            let end = min(characters.count, position + random.int(1...6))
            characters.insert(contentsOf: characters[min(position, end)..<end], at: min(position, end))
        case 3 where !characters.isEmpty:
            let other = random.int(0...characters.count - 1)
            characters.swapAt(min(position, characters.count - 1), other)
        default:
            characters.insert(contentsOf: random.pick(fragments), at: position)
        }
        return String(characters)
    }

    /// A string of random Unicode scalars, biased towards ASCII and awkward characters.
    static func randomText(maxLength: Int, using random: inout SplitMix64) -> String {
        let awkward: [Unicode.Scalar] = [
            "\0", "\r", "\n", "\t", "\u{7F}", "\u{85}", "\u{A0}", "\u{2028}", "\u{FEFF}",
            "\u{301}", "\u{200D}", "é", "日", "\u{1F600}", "\u{0663}", "\u{FF10}", "\u{10FFFF}",
        ]
        var scalars = String.UnicodeScalarView()
        for _ in 0..<random.int(0...maxLength) {
            switch random.int(0...9) {
            case 0: scalars.append(random.pick(awkward))
            case 1: scalars.append(Unicode.Scalar(UInt32(random.int(0x80...0xD7FF)))!)
            default: scalars.append(Unicode.Scalar(UInt8(random.int(0x20...0x7E))))
            }
        }
        return String(scalars)
    }
}

private extension String {
    /// The text as a Swift literal, shortened when long, for failure messages.
    var shown: String {
        let literal = debugDescription
        return literal.count > 600 ? String(literal.prefix(600)) + "… (\(utf8.count) bytes)" : literal
    }
}

/// True when `text` holds a control character (C0, DEL, C1, or a Unicode line/paragraph separator).
private func hasControlCharacter(_ text: String) -> Bool {
    text.unicodeScalars.contains {
        $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\u{2028}" || $0 == "\u{2029}"
    }
}

/// Instants to ask schedules about: ordinary ones, DST changes in several zones, and edges.
private enum Instants {
    static let fixed: [Date] = [
        "1970-01-01T00:00:00Z", "1969-12-31T23:59:59.999Z", "1900-02-28T12:00:00Z", "2000-02-29T23:59:59Z",
        "2026-03-29T00:59:30Z", "2026-03-29T01:00:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z",  // Berlin
        "2026-03-08T06:59:59Z", "2026-11-01T05:30:00Z",  // New York
        "2026-04-04T14:59:00Z", "2026-10-03T15:30:00Z",  // Lord Howe (30-minute DST)
        "2099-12-31T23:59:59.5Z", "2199-06-30T00:00:00Z",
    ].map { text in
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)!
    }

    static let zones: [ZoneInfo] = [
        "UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
        "Pacific/Chatham", "Asia/Kathmandu", "America/Santiago", "Pacific/Apia",
    ]
    .map { ZoneInfo(identifier: $0)! }

    /// A fixed instant, or a random one between 1900 and 2200 with a random sub-second part.
    static func random(using random: inout SplitMix64) -> Date {
        if random.chance(35) { return random.pick(fixed) }
        let seconds = Double(random.int(-2_208_988_800...7_258_118_400))
        let fraction = random.chance(50) ? 0 : Double(random.int(0...999)) / 1000
        return Date(timeIntervalSince1970: seconds + fraction)
    }
}

// MARK: - Configuration loader

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

// MARK: - Cron parser

@Suite("Fuzz: schedules")
struct ScheduleFuzzTests {
    static let utc = ZoneInfo.utc
    static let valid = [
        "*/5 * * * *", "0 3 * * *", "0 3 * * 1-5", "@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly",
        "@annually", "@every 90s", "@every 1s", "@every 1h30m", "@every 7d", "5/15 * * * *", "10-50/10 * * * *",
        "0 0 29 2 *", "0 0 31 * *", "30 2 * * *", "0,30 1-3 * jan-mar mon,wed,fri", "0 0 1 * sat-sun", "59 23 31 12 7",
        "0 0 13 * fri", "* * * * *", "0 2 * * 0", "30 1 * * *", "45 2 * 3,10 sun",
    ]

    static let numbers = [
        "-1", "0", "1", "2", "5", "6", "7", "8", "11", "12", "13", "23", "24", "29", "30", "31", "32",
        "59", "60", "61", "99", "9999", "99999", "00", "007", "1e1", "+1", "٣", "１",
    ]
    static let names = ["jan", "DEC", "Feb", "sun", "SAT", "mon", "tues", "sunday", "x", ""]

    static let fragments = [
        "*", "/", "-", ",", " ", "\t", "  ", "\n", "\u{A0}", "@", "@every", "0", "5", "60", "jan",
        "sun", "ms", "s", "\u{0}", "é", "?", "L", "W", "#", "h", "1.5",
    ]

    /// One cron field: a list of `*`, `N`, `A-B` items with optional steps, values chosen near the bounds.
    fileprivate static func field(using random: inout SplitMix64) -> String {
        (0..<random.int(1...3)).map { _ -> String in
            var item: String
            switch random.int(0...4) {
            case 0: item = "*"
            case 1: item = random.pick(numbers)
            case 2: item = random.pick(names)
            default:
                item =
                    "\(random.chance(70) ? random.pick(numbers) : random.pick(names))-\(random.chance(70) ? random.pick(numbers) : random.pick(names))"
            }
            if random.chance(30) { item += "/" + random.pick(numbers) }
            if random.chance(3) { item += "/" + random.pick(numbers) }
            return item
        }.joined(separator: ",")
    }

    fileprivate static func generated(using random: inout SplitMix64) -> String {
        switch random.int(0...9) {
        case 0:
            let arguments = [
                "", "1s", "0s", "999ms", "1500ms", "1.5s", "0.0001s", "106751d", "106752d", "1 s", "90", "-1s",
                "1h 30m", "1h30m", "\u{0663}s", String(repeating: "9", count: 30) + "ms",
            ]
            return random.pick(["@every", "@EVERY", "@every ", "@every\t"]) + " " + random.pick(arguments)
        case 1:
            return random.pick([
                "@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@reboot", "@", "@@daily", "@Daily",
            ])
                + (random.chance(30) ? " " + field(using: &random) : "")
        default:
            let count = random.chance(80) ? 5 : random.int(0...7)
            let separators = [" ", " ", " ", "\t", "  ", "\n", "\u{A0}", ""]
            return (0..<count).map { _ in field(using: &random) }
                .joined(separator: random.chance(90) ? " " : random.pick(separators))
        }
    }

    /// Parses `text` in `zone` and checks the schedule properties at a few instants.
    fileprivate static func check(
        _ text: String, zone: ZoneInfo, seed: UInt64, run: inout FuzzRun, random: inout SplitMix64
    ) {
        let schedule: Schedule
        do {
            schedule = try Schedule(parsing: text, timeZone: zone)
        } catch {
            // Compared as bytes: a schedule starting with a combining mark joins the quote's grapheme.
            run.check(
                error.message.utf8.starts(with: "invalid schedule \"".utf8) && error.message.utf8.count > 30,
                seed: seed, text.shown, "unhelpful message: \(error.message.shown)")
            return
        }
        let input = "\(text.shown) in \(zone.identifier)"
        for _ in 0..<2 {
            let date = Instants.random(using: &random)
            guard let next = schedule.nextDate(after: date) else { continue }
            run.check(next > date, seed: seed, input, "nextDate(after: \(date)) = \(next) is not later")
            if schedule.fixedInterval == nil {
                // A whole minute of the zone's wall clock (not of UTC: 19th-century offsets have seconds).
                let wall = next.timeIntervalSince1970 + Double(zone.secondsFromGMT(for: next))
                run.check(
                    wall.truncatingRemainder(dividingBy: 60) == 0, seed: seed, input,
                    "cron slot \(next) is not on a whole minute of the wall clock")
            }
            run.check(
                schedule.previousDate(atOrBefore: next) == next, seed: seed, input,
                "the slot \(next) is not its own previous slot (got \(String(describing: schedule.previousDate(atOrBefore: next))))"
            )
            if let before = schedule.previousDate(atOrBefore: next.addingTimeInterval(-0.001)) {
                run.check(
                    before <= date, seed: seed, input,
                    "slot \(before) lies between \(date) and its next slot \(next)")
            }
            if let previous = schedule.previousDate(atOrBefore: date) {
                run.check(
                    previous <= date, seed: seed, input, "previousDate(atOrBefore: \(date)) = \(previous) is later")
            }
        }
    }

    @Test("generated cron expressions, macros and @every: no crash, helpful errors, consistent slots")
    func generatedSchedules() {
        var run = FuzzRun("schedule generation", seed: 0xC202_6000)
        run.run(10000) { random, run in
            let seed = random.state
            let text = Self.generated(using: &random)
            Self.check(text, zone: random.pick(Instants.zones), seed: seed, run: &run, random: &random)
        }
    }

    @Test("mutations of valid schedules")
    func mutatedSchedules() {
        var run = FuzzRun("schedule mutations", seed: 0xC202_6001)
        run.run(6000) { random, run in
            let seed = random.state
            var text = random.pick(Self.valid)
            for _ in 0..<random.int(1...3) {
                text = Mutate.characters(text, fragments: Self.fragments, using: &random)
            }
            Self.check(text, zone: random.pick(Instants.zones), seed: seed, run: &run, random: &random)
        }
    }

    @Test("random text and bytes as a schedule")
    func randomSchedules() {
        var run = FuzzRun("schedule random", seed: 0xC202_6002)
        run.run(6000) { random, run in
            let seed = random.state
            let text =
                random.chance(50)
                ? Mutate.randomText(maxLength: 30, using: &random)
                : String(
                    decoding: (0..<random.int(0...24)).map { _ in UInt8.random(in: 0...255, using: &random) },
                    as: UTF8.self)
            Self.check(text, zone: random.pick(Instants.zones), seed: seed, run: &run, random: &random)
        }
    }

    @Test("every field value at and around its bounds")
    func boundaryValues() throws {
        var run = FuzzRun("schedule bounds", seed: 0xC202_6003)
        var random = SplitMix64(seed: 0xC202_6003)
        let bounds = [0...59, 0...23, 1...31, 1...12, 0...7]
        for (position, range) in bounds.enumerated() {
            for value in [range.lowerBound - 1, range.lowerBound, range.upperBound, range.upperBound + 1] {
                var fields = ["*", "*", "*", "*", "*"]
                fields[position] = String(value)
                let text = fields.joined(separator: " ")
                let accepted = (try? Schedule(parsing: text, timeZone: Self.utc)) != nil
                run.check(accepted == range.contains(value), seed: 0, text.shown, "accepted: \(accepted)")
                for zone in Instants.zones {
                    Self.check(text, zone: zone, seed: 0, run: &run, random: &random)
                }
                for step in ["0", "1", String(range.upperBound), String(range.upperBound + 1), "99999"] {
                    fields[position] = "\(range.lowerBound)-\(range.upperBound)/\(step)"
                    Self.check(fields.joined(separator: " "), zone: Self.utc, seed: 0, run: &run, random: &random)
                }
            }
        }
        // Instants a schedule cannot place: no crash, no slot.
        let schedule = try Schedule(parsing: "*/5 * * * *", timeZone: Self.utc)
        for seconds in [Double.nan, .infinity, -.infinity, 1e11, -1e11, 1e300] {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(schedule.nextDate(after: date) == nil)
            #expect(schedule.previousDate(atOrBefore: date) == nil)
            _ = schedule.period(after: date)
        }
        for date in [
            Date.distantFuture, .distantPast, Date(timeIntervalSince1970: 1e11 - 1),
            Date(timeIntervalSince1970: -1e11 + 1),
        ] {
            if let next = schedule.nextDate(after: date) { #expect(next > date) }
            if let previous = schedule.previousDate(atOrBefore: date) { #expect(previous <= date) }
        }
    }
}

// MARK: - Duration parser

@Suite("Fuzz: durations")
struct DurationFuzzTests {
    static let units: [(symbol: String, nanoseconds: Int128)] = [
        ("d", 86_400_000_000_000), ("h", 3_600_000_000_000), ("m", 60_000_000_000), ("s", 1_000_000_000),
        ("ms", 1_000_000),
    ]
    static let fragments = [
        "0", "1", "9", ".", "d", "h", "m", "s", "ms", "us", "ns", " ", "-", "+", "e", "M", "S", "٣", "١",
        "\u{0}", "_", "00", "5", "99999999999999999999",
    ]

    /// A random duration: log-uniform magnitude, sometimes a whole number of a unit.
    fileprivate static func randomDuration(using random: inout SplitMix64) -> Duration {
        let digits = random.int(0...18)
        var magnitude = Int64.random(in: 0...Int64(pow(10.0, Double(digits))), using: &random)
        if random.chance(40) {
            let unit = random.pick(units).nanoseconds
            magnitude = (magnitude / Int64(unit)) * Int64(unit)
        }
        if random.chance(2) { magnitude = random.pick([0, 1, Int64.max, Int64.max - 1, 999_999, 1_000_000]) }
        return .nanoseconds(magnitude)
    }

    @Test("format then parse gives the same duration, for random durations")
    func roundTrip() {
        var run = FuzzRun("duration round trip", seed: 0xD0_2026)
        run.run(12_000) { random, run in
            let seed = random.state
            let duration = Self.randomDuration(using: &random)
            let text = DurationText.format(duration)
            run.check(
                DurationText.parse(text) == duration, seed: seed, "\(duration)",
                "format gave \(text.shown), which parses to \(String(describing: DurationText.parse(text)))")
        }
    }

    @Test("composed durations parse to the sum of their parts")
    func composedDurations() {
        var run = FuzzRun("duration composition", seed: 0xD0_2027)
        run.run(8000) { random, run in
            let seed = random.state
            var text = ""
            var total: Int128 = 0
            var exact = true
            for index in Self.units.indices where random.chance(45) {
                let unit = Self.units[index]
                let whole = Int128(random.int(0...(random.chance(80) ? 999 : 999_999)))
                text += String(whole)
                var part = whole * unit.nanoseconds
                if random.chance(25) {
                    let fractionDigits = random.int(1...6)
                    let fraction = Int128(random.int(0...Int(pow(10.0, Double(fractionDigits))) - 1))
                    let scale = (0..<fractionDigits).reduce(Int128(1)) { product, _ in product * 10 }
                    let padded = String(fraction)
                    text += "." + String(repeating: "0", count: fractionDigits - padded.count) + padded
                    if (fraction * unit.nanoseconds) % scale != 0 { exact = false }
                    part += fraction * unit.nanoseconds / scale
                }
                text += unit.symbol
                total += part
            }
            guard !text.isEmpty else { return }
            let expected: Duration? = exact && total <= Int128(Int64.max) ? .nanoseconds(Int64(total)) : nil
            run.check(
                DurationText.parse(text) == expected, seed: seed, text.shown,
                "parsed to \(String(describing: DurationText.parse(text))), expected \(String(describing: expected))")
        }
    }

    /// What `parse` may accept: ASCII digits, at most one `.` per number, and the unit letters.
    static func looksLikeDuration(_ text: String) -> Bool {
        text == "0"
            || (text.allSatisfy { "0123456789.dhms".contains($0) } && text.last.map { "dhms".contains($0) } == true
                && text.first?.isNumber == true)
    }

    @Test(
        "random and mutated text: no crash, nothing outside the grammar accepted, results non-negative and round-trip")
    func randomText() {
        var run = FuzzRun("duration random", seed: 0xD0_2028)
        let valid = [
            "0", "500ms", "90s", "10m", "24h", "30d", "1h30m", "1.5h", "0.25ms", "106751d", "1d23h59m59s999ms",
        ]
        run.run(20_000) { random, run in
            let seed = random.state
            let text: String
            switch random.int(0...3) {
            case 0:
                text = Mutate.randomText(maxLength: 16, using: &random)
            case 1:
                text = (0..<random.int(0...8)).map { _ in random.pick(Self.fragments) }.joined()
            default:
                var mutated = random.pick(valid)
                for _ in 0..<random.int(1...3) {
                    mutated = Mutate.characters(mutated, fragments: Self.fragments, using: &random)
                }
                text = mutated
            }
            guard let duration = DurationText.parse(text) else { return }
            run.check(
                Self.looksLikeDuration(text), seed: seed, text.shown, "accepted text outside the grammar as \(duration)"
            )
            run.check(duration >= .zero, seed: seed, text.shown, "negative duration \(duration)")
            run.check(
                DurationText.parse(DurationText.format(duration)) == duration, seed: seed, text.shown,
                "\(duration) formats as \(DurationText.format(duration)), which does not parse back")
        }
    }

    @Test("boundaries: the largest duration, overflow, long digit runs")
    func boundaries() {
        #expect(DurationText.parse("106751d") == .seconds(106_751 * 86_400))
        #expect(DurationText.parse("106752d") == nil)
        #expect(DurationText.parse("9223372036854775807ms") == nil)
        #expect(DurationText.parse("9223372036854.775807ms") == .nanoseconds(Int64.max))
        #expect(DurationText.parse("9223372036854.775808ms") == nil)
        #expect(DurationText.parse(DurationText.format(.nanoseconds(Int64.max))) == .nanoseconds(Int64.max))
        #expect(DurationText.parse(String(repeating: "9", count: 21) + "ms") == nil)
        #expect(DurationText.parse("1." + String(repeating: "0", count: 10_000) + "1s") == nil)
        #expect(DurationText.parse("1." + String(repeating: "0", count: 10_000) + "s") == .seconds(1))
        #expect(DurationText.parse("0.000000001s") == .nanoseconds(1))
        #expect(DurationText.parse("0.0000000001s") == nil)
        #expect(DurationText.parse(String(repeating: "1", count: 100_000)) == nil)
        #expect(DurationText.parse("106750d23h59m59s999ms") != nil)
        #expect(DurationText.parse("") == nil)
        #expect(DurationText.parse("0.") == nil)
        #expect(DurationText.parse(".5s") == nil)
    }
}

// MARK: - Address validator

@Suite("Fuzz: mail addresses")
struct MailAddressFuzzTests {
    static let valid = [
        "alice@example.org", "a@b.co", "first.last+tag@sub.example.com", "x_y-z@xn--bcher-kva.example",
        "!#$%&'*+-/=?^_`{|}~@example.org", "user@123.example.org", "a.b.c@d-e.f-g.h",
    ]
    static let fragments = [
        "@", ".", "-", "+", "..", " ", "\r", "\n", "\r\n", ",", "<", ">", "\"", "(", ")", "[", "]", "\\",
        ":", ";", "\0", "\t", "é", "日", "\u{2028}", "\u{301}", "\u{FEFF}", "\u{1F600}", "a", "Z", "9",
        "xn--", "@@", ".@", "@.", "%", "Bcc: x@y.z", "\u{FF20}",
    ]

    static let forbidden: Set<Character> = [
        "\r", "\n", " ", ",", "<", ">", "\0", "\t", "\"", "(", ")", "[", "]", "\\", ";", ":",
    ]
    static let atext = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-/=?^_`{|}~".utf8)
    static let hostCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-".utf8)

    fileprivate static func check(_ text: String, seed: UInt64, run: inout FuzzRun) {
        let isValid = MailAddress.isValid(text)
        let constructed = try? MailAddress(text)
        let problem = MailAddress.problem(in: text)
        run.check(
            isValid == (constructed != nil) && isValid == (problem == nil), seed: seed, text.shown,
            "isValid \(isValid), init \(constructed != nil), problem \(String(describing: problem))")
        if let problem {
            run.check(
                !problem.isEmpty && !hasControlCharacter(problem), seed: seed, text.shown,
                "problem description is not one line: \(problem.shown)")
        }
        if let address = constructed {
            run.check(
                !text.contains(where: Self.forbidden.contains), seed: seed, text.shown,
                "a valid address contains a forbidden character")
            run.check(
                text.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }, seed: seed,
                text.shown,
                "a valid address is not printable ASCII")
            run.check(
                text.utf8.count <= 254 && text.utf8.count { $0 == UInt8(ascii: "@") } == 1, seed: seed, text.shown,
                "a valid address is too long or has other than one @")
            run.check(
                address.localPart + "@" + address.domain == text && address.address == text, seed: seed, text.shown,
                "local part and domain do not make up the address")
            run.check(
                !address.localPart.isEmpty && address.domain.contains("."), seed: seed, text.shown,
                "empty local part or bare domain")
            // What the mail layer builds from it must stay one header line.
            if let mailbox = try? Mailbox(displayName: "Name", address: address) {
                run.check(
                    !hasControlCharacter(mailbox.description), seed: seed, text.shown, "mailbox has a control character"
                )
            }
        }
        // The configured `from` parser on the same text, and on it as a name-addr.
        let forms = [text, "Name <\(text)>", "\"\(text)\" <a@example.org>", "\(text) <a@example.org>"]
        do {
            let form = forms[Int(seed % UInt64(forms.count))]
            if let mailbox = try? Mailbox(parsing: form) {
                run.check(
                    MailAddress.isValid(mailbox.address.address), seed: seed, form.shown,
                    "Mailbox accepted an invalid address")
                run.check(
                    !hasControlCharacter(mailbox.description), seed: seed, form.shown,
                    "Mailbox with a control character: \(mailbox.description.shown)")
            }
        }
    }

    @Test("mutations of valid addresses")
    func mutatedAddresses() {
        var run = FuzzRun("address mutations", seed: 0xADD2_6000)
        run.run(5000) { random, run in
            let seed = random.state
            var text = random.pick(Self.valid)
            for _ in 0..<random.int(1...3) { text = Mutate.characters(text, fragments: Self.fragments, using: &random) }
            run.check(MailAddress.isValid(text) == Self.model(text), seed: seed, text.shown, "disagrees with the model")
            Self.check(text, seed: seed, run: &run)
        }
    }

    @Test("random text and bytes as an address")
    func randomAddresses() {
        var run = FuzzRun("address random", seed: 0xADD2_6001)
        run.run(5000) { random, run in
            let seed = random.state
            let text: String
            switch random.int(0...2) {
            case 0: text = Mutate.randomText(maxLength: 40, using: &random)
            case 1:
                text = String(
                    decoding: (0..<random.int(0...40)).map { _ in UInt8.random(in: 0...255, using: &random) },
                    as: UTF8.self)
            default:
                text = (0..<random.int(0...12)).map { _ in random.pick(Self.fragments + ["ab", "example", "org", "x"]) }
                    .joined()
            }
            run.check(MailAddress.isValid(text) == Self.model(text), seed: seed, text.shown, "disagrees with the model")
            Self.check(text, seed: seed, run: &run)
        }
    }

    /// An independent statement of the rules in `MailAddress`'s documentation.
    static func model(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        let parts = bytes.split(separator: UInt8(ascii: "@"), omittingEmptySubsequences: false)
        guard bytes.count <= 254, parts.count == 2 else { return false }
        let (local, domain) = (parts[0], parts[1])
        guard (1...64).contains(local.count), (1...253).contains(domain.count) else { return false }
        let atoms = local.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard atoms.allSatisfy({ !$0.isEmpty && $0.allSatisfy(Self.atext.contains) }) else { return false }
        let labels = domain.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard labels.count >= 2 else { return false }
        for label in labels {
            guard (1...63).contains(label.count), label.allSatisfy(Self.hostCharacters.contains),
                label.first != UInt8(ascii: "-"), label.last != UInt8(ascii: "-")
            else { return false }
        }
        return !labels.last!.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    @Test("agrees with an independent model of the rules, with lengths around every limit")
    func lengthBoundariesAgainstModel() {
        var run = FuzzRun("address model", seed: 0xADD2_6002)
        run.run(2000) { random, run in
            let seed = random.state
            let localLength = random.chance(50) ? random.int(62...66) : random.int(0...70)
            var local = String((0..<localLength).map { _ in random.pick(Array("abcXYZ019.+_-'")) })
            if random.chance(50) { local = String(local.map { $0 == "." ? "a" : $0 }) }
            let labelCount = random.int(1...6)
            var labels = (0..<labelCount).map { _ -> String in
                let length = random.chance(40) ? random.int(61...65) : random.int(0...10)
                return String((0..<length).map { _ in random.pick(Array("abcdefxyz0123456789-")) })
            }
            if random.chance(50) { labels = labels.map { String($0.map { $0 == "-" ? "h" : $0 }) } }
            if random.chance(30) { labels[labels.count - 1] = random.pick(["org", "123", "x1", "c"]) }
            let text =
                local + random.pick(["@", "@", "@", "@@", ""])
                + labels.joined(separator: random.chance(95) ? "." : "..")
            run.check(
                MailAddress.isValid(text) == Self.model(text), seed: seed, text.shown,
                "isValid \(MailAddress.isValid(text)), model \(Self.model(text)), problem \(String(describing: MailAddress.problem(in: text)))"
            )
            Self.check(text, seed: seed, run: &run)
        }
        func label(_ count: Int) -> String { String(repeating: "a", count: count) }
        let longest = label(64) + "@" + [label(63), label(63), label(61)].joined(separator: ".")
        #expect(longest.utf8.count == 254 && MailAddress.isValid(longest))
        #expect(!MailAddress.isValid(longest + "a"))
    }
}
