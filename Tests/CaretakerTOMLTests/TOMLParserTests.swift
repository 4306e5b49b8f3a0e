import SeededRandom
import Testing

@testable import CaretakerTOML

// Tests for the TOML parser behind jobs.toml (TOMLDocument.swift and friends).

/// Parses `text`, returning the root table.
private func parse(_ text: String) throws -> TOMLTable {
    try TOMLDocument(parsing: text).root
}

/// The syntax error `text` produces, or nil when it parses.
private func syntaxError(_ text: String) -> TOMLSyntaxError? {
    do {
        _ = try TOMLDocument(parsing: text)
        return nil
    } catch {
        return error
    }
}

/// The table at `path` below `table`.
private func table(_ table: TOMLTable, _ path: String...) -> TOMLTable? {
    var current = table
    for key in path {
        guard let next = current[key]?.tableValue else { return nil }
        current = next
    }
    return current
}

// MARK: - Values

@Suite("TOML values")
struct TOMLValueTests {
    @Test func basicStringsAndEscapes() throws {
        let root = try parse(
            #"""
            plain = "hello, world"
            empty = ""
            escapes = "quote \" backslash \\ newline \n tab \t return \r backspace \b formfeed \f"
            unicode = "\u00E9t\u00E9 \U0001F600"
            utf8 = "gâteau 日本"
            tab = "a	b"
            """#)
        #expect(root["plain"] == .string("hello, world"))
        #expect(root["empty"] == .string(""))
        #expect(
            root["escapes"]
                == .string("quote \" backslash \\ newline \n tab \t return \r backspace \u{8} formfeed \u{C}"))
        #expect(root["unicode"] == .string("été 😀"))
        #expect(root["utf8"] == .string("gâteau 日本"))
        #expect(root["tab"] == .string("a\tb"))
    }

    @Test func literalStrings() throws {
        let root = try parse(
            #"""
            path = 'C:\Users\nodejs\templates'
            regex = '<\i\c*\s*>'
            quoted = 'Tom "Dubs" Preston-Werner'
            empty = ''
            """#)
        #expect(root["path"] == .string(#"C:\Users\nodejs\templates"#))
        #expect(root["regex"] == .string(#"<\i\c*\s*>"#))
        #expect(root["quoted"] == .string(#"Tom "Dubs" Preston-Werner"#))
        #expect(root["empty"] == .string(""))
    }

    @Test func multiLineBasicStrings() throws {
        let root = try parse(
            #"""
            trimmed = """
            Roses are red
            Violets are blue"""
            continued = """\
                The quick brown \
                fox jumps over \

                the lazy dog.\
                """
            quotes = """Here are two quotation marks: "". Simple enough."""
            ending = """She said "hi"."""" 
            escapes = """tab\there \u00E9"""
            blank = """
            """
            """#)
        #expect(root["trimmed"] == .string("Roses are red\nViolets are blue"))
        #expect(root["continued"] == .string("The quick brown fox jumps over the lazy dog."))
        #expect(root["quotes"] == .string(#"Here are two quotation marks: "". Simple enough."#))
        #expect(root["ending"] == .string(#"She said "hi".""#))
        #expect(root["escapes"] == .string("tab\there é"))
        #expect(root["blank"] == .string(""))
    }

    @Test func multiLineLiteralStrings() throws {
        let root = try parse(
            #"""
            sql = '''
            DELETE FROM invitations
             WHERE event_at < now() - '1 day'::interval
               AND note !~ '\d+'
            '''
            ends = '''two quotes at the end'''''
            """#)
        #expect(
            root["sql"]
                == .string(
                    "DELETE FROM invitations\n WHERE event_at < now() - '1 day'::interval\n   AND note !~ '\\d+'\n"))
        #expect(root["ends"] == .string("two quotes at the end''"))
    }

    @Test func integers() throws {
        let root = try parse(
            """
            a = 42
            b = +17
            c = -5
            d = 0
            e = -0
            f = 1_000_000
            g = 9223372036854775807
            h = -9223372036854775808
            hex = 0xDEAD_beef
            oct = 0o755
            bin = 0b1101
            leadingZeroAfterPrefix = 0x00ff
            """)
        #expect(root["a"] == .integer(42))
        #expect(root["b"] == .integer(17))
        #expect(root["c"] == .integer(-5))
        #expect(root["d"] == .integer(0))
        #expect(root["e"] == .integer(0))
        #expect(root["f"] == .integer(1_000_000))
        #expect(root["g"] == .integer(Int64.max))
        #expect(root["h"] == .integer(Int64.min))
        #expect(root["hex"] == .integer(0xDEAD_BEEF))
        #expect(root["oct"] == .integer(0o755))
        #expect(root["bin"] == .integer(0b1101))
        #expect(root["leadingZeroAfterPrefix"] == .integer(255))
    }

    @Test func floats() throws {
        let root = try parse(
            """
            a = 1.5
            b = -0.01
            c = 5e+22
            d = 1e06
            e = -2E-2
            f = 6.626e-34
            g = 224_617.445_991_228
            h = 0.0
            i = inf
            j = -inf
            k = +inf
            l = nan
            m = -nan
            """)
        #expect(root["a"] == .float(1.5))
        #expect(root["b"] == .float(-0.01))
        #expect(root["c"] == .float(5e22))
        #expect(root["d"] == .float(1e6))
        #expect(root["e"] == .float(-2e-2))
        #expect(root["f"] == .float(6.626e-34))
        #expect(root["g"] == .float(224_617.445_991_228))
        #expect(root["h"] == .float(0))
        #expect(root["i"] == .float(.infinity))
        #expect(root["j"] == .float(-.infinity))
        #expect(root["k"] == .float(.infinity))
        #expect(root["l"]?.floatValue?.isNaN == true)
        #expect(root["m"]?.floatValue?.isNaN == true)
    }

    @Test func booleans() throws {
        let root = try parse("yes = true\nno = false\n")
        #expect(root["yes"] == .boolean(true))
        #expect(root["no"] == .boolean(false))
        #expect(root["yes"]?.booleanValue == true)
    }

    @Test func arrays() throws {
        let root = try parse(
            """
            empty = []
            numbers = [1, 2, 3]
            nested = [[1, 2], ["a", 'b'], []]
            mixed = [1, "two", 3.0, true, { x = 1 }]
            multi = [
              "first",   # a comment
              # a comment line

              "second",  # trailing comma next
            ]
            after = 1
            """)
        #expect(root["empty"] == .array([]))
        #expect(root["numbers"] == .array([.integer(1), .integer(2), .integer(3)]))
        #expect(
            root["nested"]
                == .array([.array([.integer(1), .integer(2)]), .array([.string("a"), .string("b")]), .array([])]))
        #expect(root["mixed"]?.arrayValue?.count == 5)
        #expect(root["mixed"]?.arrayValue?.last?.tableValue?["x"] == .integer(1))
        #expect(root["multi"] == .array([.string("first"), .string("second")]))
        #expect(root.line(of: "after") == 11)
    }

    @Test func inlineTables() throws {
        let root = try parse(
            """
            name = { first = "Tom", last = "Preston-Werner" }
            point = { x = 1, y = 2 }
            nested = { inner = { deep = true }, list = [1, 2] }
            dotted = { a.b = 1, a.c = 2 }
            empty = {}
            """)
        #expect(table(root, "name")?["first"] == .string("Tom"))
        #expect(table(root, "name")?.keys == ["first", "last"])
        #expect(table(root, "point")?["y"] == .integer(2))
        #expect(table(root, "nested", "inner")?["deep"] == .boolean(true))
        #expect(table(root, "dotted", "a")?["c"] == .integer(2))
        #expect(table(root, "empty")?.isEmpty == true)
        #expect(table(root, "name")?.line(of: "last") == 1)
        #expect(table(root, "name")?.headerLine == 0)
    }

    @Test func typeNamesAndAccessors() throws {
        let root = try parse(
            """
            s = "x"
            i = 1
            f = 1.0
            b = true
            a = []
            t = {}
            """)
        #expect(root.keys.map { root[$0]?.typeName } == ["string", "integer", "float", "boolean", "array", "table"])
        #expect(root["s"]?.stringValue == "x")
        #expect(root["i"]?.integerValue == 1)
        #expect(root["i"]?.floatValue == nil)
        #expect(root["f"]?.floatValue == 1.0)
        #expect(root["a"]?.arrayValue == [])
        #expect(root["t"]?.tableValue?.count == 0)
        #expect(root["missing"] == nil)
        #expect(root.line(of: "missing") == nil)
    }

    @Test func commentsAndWhitespace() throws {
        let root = try parse(
            "# leading comment\n\n  \tkey = \"value\"   # trailing\n\t# indented comment\nother=1#tight\n")
        #expect(root.keys == ["key", "other"])
        #expect(root["other"] == .integer(1))
    }

    @Test func byteOrderMarkIsSkipped() throws {
        let root = try parse("\u{FEFF}a = 1")
        #expect(root["a"] == .integer(1))
        #expect(syntaxError("\u{FEFF}a = ?")?.column == 5)
    }
}

// MARK: - Keys, tables and lines

@Suite("TOML keys, tables and lines")
struct TOMLStructureTests {
    @Test func keysKeepSourceOrder() throws {
        let root = try parse("zeta = 1\nalpha = 2\nmid = 3\n")
        #expect(root.keys == ["zeta", "alpha", "mid"])
        #expect(root.entries.map(\.key) == ["zeta", "alpha", "mid"])
        #expect(root.entries.map(\.line) == [1, 2, 3])
        #expect(root.entries[1].value == .integer(2))
    }

    @Test func quotedKeys() throws {
        let root = try parse(
            #"""
            "quoted key" = 1
            'literal key' = 2
            "" = 3
            "é\u0041" = 4
            1234 = 5
            bare-key_2 = 6
            """#)
        #expect(root.keys == ["quoted key", "literal key", "", "éA", "1234", "bare-key_2"])
    }

    @Test func dottedKeys() throws {
        let root = try parse(
            """
            name = "Orange"
            physical.color = "orange"
            physical.shape = "round"
            site."google.com" = true
            a . b . c = 1
            """)
        #expect(table(root, "physical")?["shape"] == .string("round"))
        #expect(table(root, "physical")?.keys == ["color", "shape"])
        #expect(table(root, "site")?["google.com"] == .boolean(true))
        #expect(table(root, "a", "b")?["c"] == .integer(1))
        #expect(root.line(of: "physical") == 2)
        #expect(table(root, "physical")?.line(of: "shape") == 3)
        #expect(table(root, "physical")?.headerLine == 0)
    }

    @Test func tables() throws {
        let root = try parse(
            """
            top = 1

            [database]
            url = "x"

            [jobs.expire-content]
            schedule = "*/5 * * * *"

            [jobs."quoted name"]
            sql = "SELECT 1"

            [ jobs . 'literal' ]
            a = 1
            """)
        #expect(root.keys == ["top", "database", "jobs"])
        #expect(table(root, "database")?.headerLine == 3)
        #expect(root.line(of: "database") == 3)
        #expect(table(root, "jobs")?.keys == ["expire-content", "quoted name", "literal"])
        #expect(table(root, "jobs")?.headerLine == 0)
        #expect(table(root, "jobs", "expire-content")?.headerLine == 6)
        #expect(table(root, "jobs", "expire-content")?.line(of: "schedule") == 7)
        #expect(table(root, "jobs", "quoted name")?["sql"] == .string("SELECT 1"))
        #expect(table(root, "jobs", "quoted name")?.headerLine == 9)
        #expect(table(root, "jobs")?.line(of: "quoted name") == 9)
        #expect(table(root, "jobs", "literal")?.headerLine == 12)
        #expect(root.headerLine == 0)
    }

    @Test func superTableDefinedAfterSubTable() throws {
        let root = try parse(
            """
            [x.y.z]
            a = 1
            [x]
            b = 2
            """)
        #expect(table(root, "x")?.headerLine == 3)
        #expect(table(root, "x")?.keys == ["y", "b"])
        #expect(root.line(of: "x") == 1)
        #expect(table(root, "x", "y", "z")?["a"] == .integer(1))
    }

    @Test func subTableOfDottedKeyTable() throws {
        let root = try parse(
            """
            [fruit]
            apple.color = "red"
            apple.taste.sweet = true
            [fruit.apple.texture]
            smooth = true
            """)
        #expect(table(root, "fruit", "apple", "taste")?["sweet"] == .boolean(true))
        #expect(table(root, "fruit", "apple", "texture")?["smooth"] == .boolean(true))
        #expect(table(root, "fruit", "apple", "texture")?.headerLine == 4)
    }

    @Test func dottedKeysMayFillAnImplicitTable() throws {
        let root = try parse(
            """
            [a.b.c]
            x = 1
            [a]
            b.d = 2
            """)
        #expect(table(root, "a", "b")?.keys == ["c", "d"])
        #expect(table(root, "a", "b")?.line(of: "d") == 4)
        // …which then counts as defined by dotted keys.
        #expect(syntaxError("[a.b.c]\n[a]\nb.d = 2\n[a.b]")?.message.contains("already defined by dotted keys") == true)
    }

    @Test func linesAfterMultiLineStrings() throws {
        let root = try parse(
            #"""
            [jobs.cleanup]
            sql = """
              DELETE FROM a
              WHERE b < now()
            """
            after_basic = 1
            literal = '''
            one
            two'''
            after_literal = 2
            continued = """\
               x \
               y"""
            after_continued = 3

            [jobs.next]
            schedule = "@daily"
            """#)
        let cleanup = try #require(table(root, "jobs", "cleanup"))
        #expect(cleanup.line(of: "sql") == 2)
        #expect(cleanup.line(of: "after_basic") == 6)
        #expect(cleanup.line(of: "literal") == 7)
        #expect(cleanup.line(of: "after_literal") == 10)
        #expect(cleanup.line(of: "continued") == 11)
        #expect(cleanup.line(of: "after_continued") == 14)
        #expect(table(root, "jobs", "next")?.headerLine == 16)
        #expect(table(root, "jobs", "next")?.line(of: "schedule") == 17)
        #expect(syntaxError(#"sql = """\#na\#nb\#n"""\#nbad = ?"#)?.line == 5)
    }

    @Test func linesAfterCommentsAndBlankLines() throws {
        let root = try parse(
            """
            # comment 1
            # comment 2

            a = 1 # trailing

            [t] # header comment
            # comment
            b = [
              1, # in array
            ]
            c = 2
            """)
        #expect(root.line(of: "a") == 4)
        #expect(table(root, "t")?.headerLine == 6)
        #expect(table(root, "t")?.line(of: "b") == 8)
        #expect(table(root, "t")?.line(of: "c") == 11)
    }

    @Test func crlfLineEndings() throws {
        let root = try parse("a = 1\r\n\r\n[t]\r\nb = \"\"\"\r\nx\r\ny\"\"\"\r\nc = '''\r\nz'''\r\nd = 2 # c\r\n")
        #expect(root.line(of: "a") == 1)
        #expect(table(root, "t")?.headerLine == 3)
        #expect(table(root, "t")?["b"] == .string("x\ny"))
        #expect(table(root, "t")?["c"] == .string("z"))
        #expect(table(root, "t")?.line(of: "d") == 9)
        #expect(syntaxError("a = 1\r\nb = ?\r\n")?.line == 2)
    }

    @Test func emptyDocuments() throws {
        #expect(try parse("").isEmpty)
        #expect(try parse("\n\n# only a comment\n   \n").isEmpty)
        #expect(TOMLTable() == (try parse("")))
        #expect(TOMLTable().headerLine == 0)
    }

    @Test func errorDescription() {
        let error = TOMLSyntaxError(line: 12, column: 5, message: "unterminated string")
        #expect(error.description == "line 12, column 5: unterminated string")
        #expect(String(describing: error) == "line 12, column 5: unterminated string")
    }
}

// MARK: - The SPEC §8 example

@Suite("SPEC §8 jobs.toml")
struct TOMLSpecExampleTests {
    static let example = #"""
        [database]
        url = "postgresql:///community?host=/run/postgresql"  # libpq URI or key=value; empty: libpq defaults and PG* variables
        password_file = ""          # optional
        app_schema = "public"
        connect_timeout = "10s"

        [worker]
        timezone = "UTC"
        low_footprint = false
        max_concurrent_jobs = 2
        shutdown_grace = "20s"
        idle_disconnect = "60s"     # low-footprint mode
        batch_pause = "0ms"         # "100ms" in low-footprint mode
        log_format = "logfmt"       # or "json"

        [mail]
        transport = "smtp"          # or "file"
        url = "smtp://127.0.0.1:25" # smtps://… for implicit TLS
        starttls = false
        username = ""
        password_file = ""
        from = "Community <no-reply@example.org>"
        directory = ""              # for transport = "file"

        [jobs.expire-content]
        schedule = "*/5 * * * *"
        min_lifetime = "24h"
        max_lifetime = "48h"
        post_full_popularity = 100
        pack_full_popularity = 100
        batch_size = 1000

        [jobs.logout-inactive]
        schedule = "@every 1m"
        idle_timeout = "10m"

        [jobs.send-temp-passwords]
        schedule = "@every 1m"
        max_per_hour = 3
        temp_password_length = 16
        temp_password_ttl = "24h"
        bcrypt_cost = 12
        max_attempts = 5
        template_file = ""

        [jobs.leader-succession]
        schedule = "*/5 * * * *"
        leader_inactive_after = ""  # e.g. "90d"; empty: off

        [jobs.prune]
        schedule = "@daily"
        keep_history = "30d"
        keep_revoked_sessions = "30d"
        keep_reset_requests = "30d"

        [jobs.expire-invitations]   # an operator SQL job
        schedule = "@hourly"
        sql = "DELETE FROM invitations WHERE id IN (SELECT id FROM invitations WHERE event_at < now() LIMIT 1000)"
        repeat_until_zero = true
        """#

    @Test func parsesTheSpecExample() throws {
        let root = try parse(Self.example)
        #expect(root.keys == ["database", "worker", "mail", "jobs"])
        let database = try #require(table(root, "database"))
        #expect(database.headerLine == 1)
        #expect(database["url"] == .string("postgresql:///community?host=/run/postgresql"))
        #expect(database.line(of: "url") == 2)
        #expect(database["password_file"] == .string(""))

        let worker = try #require(table(root, "worker"))
        #expect(worker.headerLine == 7)
        #expect(worker["low_footprint"] == .boolean(false))
        #expect(worker["max_concurrent_jobs"] == .integer(2))
        #expect(worker.line(of: "log_format") == 14)

        #expect(table(root, "mail")?["url"] == .string("smtp://127.0.0.1:25"))
        #expect(table(root, "mail")?["from"] == .string("Community <no-reply@example.org>"))

        let jobs = try #require(table(root, "jobs"))
        #expect(
            jobs.keys == [
                "expire-content", "logout-inactive", "send-temp-passwords",
                "leader-succession", "prune", "expire-invitations",
            ])
        #expect(jobs.headerLine == 0)
        let expire = try #require(table(jobs, "expire-content"))
        #expect(expire.headerLine == 25)
        #expect(expire["schedule"] == .string("*/5 * * * *"))
        #expect(expire.line(of: "schedule") == 26)
        #expect(expire["batch_size"] == .integer(1000))
        #expect(table(jobs, "send-temp-passwords")?["bcrypt_cost"] == .integer(12))
        let sqlJob = try #require(table(jobs, "expire-invitations"))
        #expect(sqlJob.headerLine == 56)
        #expect(sqlJob.line(of: "sql") == 58)
        #expect(sqlJob["repeat_until_zero"] == .boolean(true))
        #expect(sqlJob["sql"]?.stringValue?.hasPrefix("DELETE FROM invitations WHERE id IN") == true)
    }
}

// MARK: - Errors

/// One invalid document and where its error must be reported.
struct ErrorCase: Sendable, CustomTestStringConvertible {
    let name: String
    let text: String
    let line: Int
    let column: Int
    /// A fragment the message must contain.
    let message: String

    var testDescription: String { name }
}

@Suite("TOML syntax errors")
struct TOMLErrorTests {
    static let cases: [ErrorCase] = [
        // Keys and tables defined twice.
        ErrorCase(
            name: "duplicate key", text: "a = 1\n\nschedule = 1\nschedule = 2",
            line: 4, column: 1, message: #"duplicate key "schedule" (first defined on line 3)"#),
        ErrorCase(
            name: "duplicate key in table", text: "[t]\nx = 1\n# c\n  x = 2",
            line: 4, column: 3, message: #"duplicate key "x" (first defined on line 2)"#),
        ErrorCase(
            name: "duplicate quoted key", text: "a = 1\n\"a\" = 2",
            line: 2, column: 1, message: #"duplicate key "a""#),
        ErrorCase(
            name: "duplicate dotted key", text: "a.b = 1\na.b = 2",
            line: 2, column: 3, message: #"duplicate key "a.b" (first defined on line 1)"#),
        ErrorCase(
            name: "duplicate key in inline table", text: "t = { a = 1, a = 2 }",
            line: 1, column: 14, message: #"duplicate key "a""#),
        ErrorCase(
            name: "table redefined", text: "[a]\nx = 1\n[b]\n[a]",
            line: 4, column: 1, message: "table [a] is already defined on line 1"),
        ErrorCase(
            name: "nested table redefined", text: "[jobs.prune]\n[jobs.prune]",
            line: 2, column: 1, message: "table [jobs.prune] is already defined on line 1"),
        ErrorCase(
            name: "super-table redefined", text: "[x.y]\n[x]\n[x]",
            line: 3, column: 1, message: "table [x] is already defined on line 2"),
        ErrorCase(
            name: "value then table", text: "a = 1\n[a]",
            line: 2, column: 2, message: #"key "a" is already defined as an integer on line 1"#),
        ErrorCase(
            name: "value then sub-table", text: "a = \"x\"\n[a.b]",
            line: 2, column: 2, message: #"key "a" is already defined as a string on line 1"#),
        ErrorCase(
            name: "value then dotted key", text: "a = [1]\na.b = 2",
            line: 2, column: 1, message: #"key "a" is already defined as an array on line 1"#),
        ErrorCase(
            name: "table then value", text: "[a.b]\n[a]\nb = 1",
            line: 3, column: 1, message: #"key "b" is already defined as a table (on line 1)"#),
        ErrorCase(
            name: "dotted table then value", text: "a.b = 1\na = 2",
            line: 2, column: 1, message: #"key "a" is already defined as a table"#),
        ErrorCase(
            name: "dotted-key table reopened by header", text: "[fruit]\napple.color = 1\n[fruit.apple]",
            line: 3, column: 1, message: "table [fruit.apple] was already defined by dotted keys on line 2"),
        ErrorCase(
            name: "header table extended by dotted keys", text: "[a.b]\nx = 1\n[a]\nb.y = 2",
            line: 4, column: 1,
            message: "cannot add keys to table [a.b] with dotted keys: it has its own header on line 1"),
        ErrorCase(
            name: "inline table extended by header", text: "a = { x = 1 }\n[a.b]",
            line: 2, column: 2, message: "inline table on line 1 and cannot be extended"),
        ErrorCase(
            name: "inline table extended by dotted key", text: "a = { x = 1 }\na.y = 2",
            line: 2, column: 1, message: "inline table on line 1 and cannot be extended"),
        ErrorCase(
            name: "inline table reopened", text: "a = {}\n[a]",
            line: 2, column: 2, message: "cannot be extended"),
        ErrorCase(
            name: "array of tables", text: "x = 1\n[[jobs]]",
            line: 2, column: 1, message: "arrays of tables ([[...]]) are not supported"),

        // Strings.
        ErrorCase(
            name: "control character in basic string", text: "a = \"x\u{1}y\"",
            line: 1, column: 7, message: "control character U+0001 is not allowed in a string"),
        ErrorCase(
            name: "control character in literal string", text: "\na = 'x\u{7F}'",
            line: 2, column: 7, message: "control character U+007F is not allowed in a string"),
        ErrorCase(
            name: "control character in multi-line string", text: "a = \"\"\"\nok\nx\u{0}\"\"\"",
            line: 3, column: 2, message: "control character U+0000"),
        ErrorCase(
            name: "lone carriage return in string", text: "a = '''x\ry'''",
            line: 1, column: 9, message: "control character U+000D"),
        ErrorCase(
            name: "control character in comment", text: "a = 1 # x\u{1B}",
            line: 1, column: 10, message: "control character U+001B is not allowed in a comment"),
        ErrorCase(
            name: "invalid escape", text: "\n\na = \"C:\\temp\\x\"",
            line: 3, column: 13, message: #"invalid escape '\x'"#),
        ErrorCase(
            name: "invalid escape in multi-line string", text: "a = \"\"\"\nline\n\\q\"\"\"",
            line: 3, column: 1, message: #"invalid escape '\q'"#),
        ErrorCase(
            name: "short unicode escape", text: "a = \"\\u12\"",
            line: 1, column: 6, message: "needs exactly 4 hexadecimal digits"),
        ErrorCase(
            name: "surrogate escape", text: "a = \"\\uD800\"",
            line: 1, column: 6, message: "U+D800 is not a Unicode scalar value"),
        ErrorCase(
            name: "escape out of range", text: "a = \"\\U00110000\"",
            line: 1, column: 6, message: "U+110000 is not a Unicode scalar value"),
        ErrorCase(
            name: "backslash then spaces mid-line", text: "a = \"\"\"x\\  y\"\"\"",
            line: 1, column: 9, message: "backslash followed by spaces must end the line"),
        ErrorCase(
            name: "unterminated basic string", text: "a = 1\nb = \"abc\nc = 2",
            line: 2, column: 5, message: "unterminated string"),
        ErrorCase(
            name: "unterminated basic string at end of file", text: "b = \"abc",
            line: 1, column: 5, message: "unterminated string"),
        ErrorCase(
            name: "unterminated literal string", text: "b = 'abc\n",
            line: 1, column: 5, message: "unterminated string"),
        ErrorCase(
            name: "unterminated multi-line basic string", text: "x = 1\nsql = \"\"\"\nSELECT 1\n",
            line: 2, column: 7, message: "unterminated multi-line string"),
        ErrorCase(
            name: "unterminated multi-line literal string", text: "sql = '''\nSELECT 1\n''",
            line: 1, column: 7, message: "unterminated multi-line string"),
        ErrorCase(
            name: "too many closing quotes", text: "a = \"\"\"x\"\"\"\"\"\"",
            line: 1, column: 9, message: "too many quotes"),
        ErrorCase(
            name: "multi-line key", text: "\"\"\"a\"\"\" = 1",
            line: 1, column: 1, message: "multi-line strings cannot be used as keys"),

        // Arrays and inline tables.
        ErrorCase(
            name: "unterminated array", text: "a = [\n  1,\n  2,\n",
            line: 1, column: 5, message: "unterminated array"),
        ErrorCase(
            name: "array missing comma", text: "a = [1 2]",
            line: 1, column: 8, message: "expected ',' or ']' after an array element, found '2'"),
        ErrorCase(
            name: "array with empty element", text: "a = [1,,2]",
            line: 1, column: 8, message: "expected a value"),
        ErrorCase(
            name: "unterminated inline table", text: "a = { x = 1",
            line: 1, column: 5, message: "unterminated inline table"),
        ErrorCase(
            name: "inline table over two lines", text: "a = { x = 1,\n y = 2 }",
            line: 1, column: 13, message: "on the line where it starts"),
        ErrorCase(
            name: "inline table trailing comma", text: "a = { x = 1, }",
            line: 1, column: 14, message: "trailing comma"),
        ErrorCase(
            name: "inline table missing comma", text: "a = { x = 1 y = 2 }",
            line: 1, column: 13, message: "expected ',' or '}'"),

        // Garbage and structure.
        ErrorCase(
            name: "garbage after value", text: "a = 1\nb = \"x\" y",
            line: 2, column: 9, message: #"unexpected 'y' after the value of "b"; expected a line break or a comment"#),
        ErrorCase(
            name: "second value on a line", text: "a = 1 2",
            line: 1, column: 7, message: "unexpected '2'"),
        ErrorCase(
            name: "garbage after header", text: "[t] x = 1",
            line: 1, column: 5, message: "unexpected 'x' after the table header"),
        ErrorCase(
            name: "unclosed header", text: "[t\nx = 1",
            line: 1, column: 3, message: "expected ']' to close the table header, found end of line"),
        ErrorCase(
            name: "empty header", text: "[]",
            line: 1, column: 2, message: "expected a key, found ']'"),
        ErrorCase(
            name: "missing equals", text: "a 1",
            line: 1, column: 3, message: #"expected '=' after the key "a", found '1'"#),
        ErrorCase(
            name: "missing value", text: "a =\nb = 1",
            line: 1, column: 4, message: "expected a value after '=', found end of line"),
        ErrorCase(
            name: "missing value at end of file", text: "a = ",
            line: 1, column: 5, message: "found end of file"),
        ErrorCase(
            name: "missing key", text: "= 1",
            line: 1, column: 1, message: "expected a key, found '='"),
        ErrorCase(
            name: "empty dotted key part", text: "a..b = 1",
            line: 1, column: 3, message: "expected a key, found '.'"),
        ErrorCase(
            name: "unquoted string", text: "timezone = UTC",
            line: 1, column: 12, message: #"strings must be quoted, e.g. "UTC""#),
        ErrorCase(
            name: "unquoted schedule", text: "schedule = */5 * * * *",
            line: 1, column: 12, message: "expected a value"),
        ErrorCase(
            name: "capitalised boolean", text: "a = True",
            line: 1, column: 5, message: "booleans are written in lowercase: true"),
        ErrorCase(
            name: "date", text: "a = 1979-05-27",
            line: 1, column: 5, message: "dates and times are not supported"),
        ErrorCase(
            name: "offset date-time", text: "a = 1979-05-27T07:32:00Z",
            line: 1, column: 5, message: "dates and times are not supported"),
        ErrorCase(
            name: "local time", text: "a = 07:32:00",
            line: 1, column: 5, message: "dates and times are not supported"),

        // Numbers.
        ErrorCase(
            name: "leading zero", text: "a = 1\nb = 007",
            line: 2, column: 5, message: "leading zeros are not allowed"),
        ErrorCase(
            name: "leading zero with sign", text: "b = -01",
            line: 1, column: 5, message: "leading zeros are not allowed"),
        ErrorCase(
            name: "leading zero in float", text: "b = 03.14",
            line: 1, column: 5, message: "leading zeros are not allowed"),
        ErrorCase(
            name: "integer overflow", text: "\nn = 9223372036854775808",
            line: 2, column: 5, message: "integer 9223372036854775808 is out of range"),
        ErrorCase(
            name: "negative integer overflow", text: "n = -9223372036854775809",
            line: 1, column: 5, message: "is out of range"),
        ErrorCase(
            name: "hex overflow", text: "n = 0x8000000000000000",
            line: 1, column: 5, message: "is out of range"),
        ErrorCase(
            name: "float overflow", text: "n = 1e400",
            line: 1, column: 5, message: "float 1e400 is out of range"),
        ErrorCase(
            name: "signed hex", text: "n = -0x1",
            line: 1, column: 5, message: "cannot have a sign"),
        ErrorCase(
            name: "bad hex digit", text: "n = 0xG1",
            line: 1, column: 5, message: "invalid hexadecimal integer"),
        ErrorCase(
            name: "bad trailing hex digit", text: "n = 0x1G",
            line: 1, column: 5, message: "invalid hexadecimal integer 0x1G"),
        ErrorCase(
            name: "bad octal digit", text: "n = 0o8",
            line: 1, column: 5, message: "invalid octal integer 0o8: expected octal digits"),
        ErrorCase(
            name: "double underscore", text: "n = 1__000",
            line: 1, column: 5, message: "an underscore must sit between two digits"),
        ErrorCase(
            name: "trailing underscore", text: "n = 1_",
            line: 1, column: 5, message: "an underscore must sit between two digits"),
        ErrorCase(
            name: "trailing decimal point", text: "n = 1.",
            line: 1, column: 5, message: "invalid number 1.: a digit must follow the decimal point"),
        ErrorCase(
            name: "leading decimal point", text: "n = .5",
            line: 1, column: 5, message: "expected a value"),
        ErrorCase(
            name: "empty exponent", text: "n = 1e",
            line: 1, column: 5, message: "invalid number 1e: the exponent needs digits"),
        ErrorCase(
            name: "two decimal points", text: "n = 1.2.3",
            line: 1, column: 5, message: "invalid number 1.2.3"),
        ErrorCase(
            name: "sign only", text: "n = +",
            line: 1, column: 5, message: "invalid number +: expected digits"),
        ErrorCase(
            name: "letters after digits", text: "n = 10x",
            line: 1, column: 5, message: "invalid number 10x"),
    ]

    @Test(arguments: cases)
    func reportsLineAndColumn(_ errorCase: ErrorCase) throws {
        let error = try #require(syntaxError(errorCase.text), "expected a syntax error")
        #expect(error.line == errorCase.line, "\(error)")
        #expect(error.column == errorCase.column, "\(error)")
        #expect(error.message.contains(errorCase.message), "\(error)")
    }

    @Test func columnsCountCharactersNotBytes() throws {
        let error = try #require(syntaxError("s = \"日本\" x"))
        #expect(error.column == 10)
    }

    @Test func nestingIsCapped() throws {
        let deepArray = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(syntaxError("a = " + deepArray)?.message.contains("nested more than 64 levels") == true)
        let fineArray = String(repeating: "[", count: 63) + String(repeating: "]", count: 63)
        #expect(syntaxError("a = " + fineArray) == nil)

        let deepTables = String(repeating: "{a=", count: 100) + "1" + String(repeating: "}", count: 100)
        #expect(syntaxError("a = " + deepTables)?.message.contains("nested more than 64 levels") == true)

        let longKey = (0..<65).map { "k\($0)" }.joined(separator: ".")
        #expect(syntaxError(longKey + " = 1")?.message.contains("more than 64 dotted parts") == true)
        #expect(syntaxError("[" + longKey + "]")?.message.contains("more than 64 dotted parts") == true)

        let header64 = (0..<64).map { "k\($0)" }.joined(separator: ".")
        #expect(syntaxError("[\(header64)]\nx = 1\ny.z = 2")?.message.contains("nested more than 64 levels") == true)
        #expect(syntaxError("[\(header64)]\nx = 1") == nil)
    }
}

// MARK: - Robustness

@Suite("TOML robustness")
struct TOMLRobustnessTests {
    static let seeds: [String] = [
        TOMLSpecExampleTests.example,
        #"a = "x\"y\u00e9" # c"# + "\nb = 'lit'\nc = \"\"\"\nm\\\n  l\"\"\"\nd = '''\nx'''",
        "[t.'q'.\"r\"]\nn = [1, -2_0, +0x1F, 0o7, 0b1, 1.5e-3, inf, -nan, true, { a.b = [ [], {} ] },]\n",
        "x = { a = 1, b = { c = \"d\" } }\r\n[y]\r\nz = 1979-05-27\r\n[[arr]]\n",
        "a.b.c = 1\n[a.d]\ne = 9223372036854775807\nf = -9223372036854775808\n",
    ]

    static let fragments: [String] = [
        "[", "]", "[[", "{", "}", "\"", "'", "\"\"\"", "'''", "=", ".", ",", "#", "\n", "\r\n", "\r",
        "\\", "\\u", "\\U0010FFFF", "a", "1", "0x", "_", "-", "+", "e", " ", "\t", "\u{0}", "é", "日",
        "true", "inf", "nan", ":", "\u{FEFF}",
    ]

    /// Mutates `bytes` in one of a few ways.
    private static func mutate(_ bytes: inout [UInt8], using random: inout SplitMix64) {
        let position = bytes.isEmpty ? 0 : Int.random(in: 0...bytes.count, using: &random)
        switch Int.random(in: 0..<6, using: &random) {
        case 0 where !bytes.isEmpty:  // flip a byte
            let index = min(position, bytes.count - 1)
            bytes[index] = UInt8.random(in: 0...255, using: &random)
        case 1:  // insert a fragment
            let fragment = fragments.randomElement(using: &random) ?? ""
            bytes.insert(contentsOf: Array(fragment.utf8), at: position)
        case 2 where !bytes.isEmpty:  // delete a range
            let end = min(bytes.count, position + Int.random(in: 1...8, using: &random))
            bytes.removeSubrange(min(position, end)..<end)
        case 3 where !bytes.isEmpty:  // duplicate a range
            let end = min(bytes.count, position + Int.random(in: 1...32, using: &random))
            bytes.insert(contentsOf: Array(bytes[min(position, end)..<end]), at: min(position, end))
        case 4:  // truncate
            bytes.removeSubrange(min(position, bytes.count)...)
        default:  // insert an ASCII byte
            bytes.insert(UInt8.random(in: 0...127, using: &random), at: position)
        }
    }

    /// Parses `text`; an error must point inside the text.
    private static func check(_ text: String) {
        guard let error = syntaxError(text) else { return }
        let lineCount = text.utf8.count { $0 == 0x0A } + 1
        #expect(error.line >= 1 && error.line <= lineCount, "\(error) for \(text.debugDescription)")
        #expect(error.column >= 1, "\(error) for \(text.debugDescription)")
        #expect(!error.message.isEmpty)
    }

    @Test func mutatedDocumentsNeverCrash() {
        var random = SplitMix64(seed: 0x5EED)
        for _ in 0..<3000 {
            var bytes = Array((Self.seeds.randomElement(using: &random) ?? "").utf8)
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                Self.mutate(&bytes, using: &random)
            }
            Self.check(String(decoding: bytes, as: UTF8.self))
        }
    }

    @Test func randomFragmentSoupNeverCrashes() {
        var random = SplitMix64(seed: 42)
        for _ in 0..<2000 {
            let count = Int.random(in: 0...40, using: &random)
            let text = (0..<count).map { _ in Self.fragments.randomElement(using: &random) ?? "" }.joined()
            Self.check(text)
        }
    }

    @Test func pathologicalInputsNeverCrash() {
        let inputs = [
            String(repeating: "[", count: 100_000),
            "a = " + String(repeating: "[", count: 100_000),
            "a = " + String(repeating: "{a=", count: 50_000),
            String(repeating: "a.", count: 50_000) + "a = 1",
            "[" + String(repeating: "a.", count: 50_000) + "a]",
            "a = \"" + String(repeating: "\\", count: 10_001),
            "a = \"\"\"" + String(repeating: "\"", count: 1000),
            String(repeating: "#", count: 100_000),
            String(repeating: "\n", count: 100_000) + "x",
            String(repeating: "a = 1\n", count: 2) + String(repeating: "9", count: 10_000),
        ]
        for input in inputs {
            Self.check(input)
        }
    }
}
