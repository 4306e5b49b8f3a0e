import CaretakerText
import Logging
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One line per event on stderr: logfmt (default) or JSON; under journald
/// (`$JOURNAL_STREAM` set) without timestamps and with `<N>` priority prefixes, or,
/// when stderr is the journal's stream, as a journal entry with fields (`JournalOutput`).
public struct LineLogHandler: LogHandler {
    public enum Format: Sendable { case logfmt, json }

    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public let format: Format
    public let journald: Bool
    private let output: LineOutput
    /// The journal's native socket, when stderr is journald's stream.
    private let journal: JournalOutput?

    /// Keys printed first, in this order, so lines read alike.
    static let leadingKeys = ["job", "run_id", "trigger", "status", "duration_ms"]

    public init(format: Format, journald: Bool, output: LineOutput = .standardError, journal: JournalOutput? = nil) {
        self.format = format
        self.journald = journald || journal != nil
        self.output = output
        self.journal = journal
    }

    /// Bootstraps swift-log once for the process.
    public static func bootstrap(
        format: Format, level: Logger.Level = .info, identifier: String = "caretaker",
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        let journald = !(environment["JOURNAL_STREAM"] ?? "").isEmpty
        let journal = JournalOutput.open(identifier: identifier, environment: environment)
        LoggingSystem.bootstrap { _ in
            var handler = LineLogHandler(format: format, journald: journald, journal: journal)
            handler.logLevel = level
            return handler
        }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let level = event.level
        let message = event.message
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        let ordered = Self.orderedValues(merged)
        let fields = ordered.map { ($0.0, "\($0.1)") }
        let text =
            switch format {
            case .logfmt: logfmtLine(level: level, message: "\(message)", fields: fields)
            case .json: jsonLine(level: level, message: "\(message)", fields: fields)
            }
        if let journal,
            journal.deliver(
                journal.fields(
                    message: text, priority: Self.priority(level), metadata: ordered, file: event.file,
                    line: event.line, function: event.function))
        {
            return
        }
        output.write((journald ? "<\(Self.priority(level))>" : "") + text + "\n")
    }

    private func logfmtLine(level: Logger.Level, message: String, fields: [(String, String)]) -> String {
        var parts: [String] = []
        if !journald { parts.append("time=\(Self.timestamp())") }
        parts.append("level=\(level)")
        parts.append("msg=\(Self.logfmtValue(message))")
        parts += fields.map { "\($0.0)=\(Self.logfmtValue($0.1))" }
        return parts.joined(separator: " ")
    }

    private func jsonLine(level: Logger.Level, message: String, fields: [(String, String)]) -> String {
        var parts: [String] = []
        if !journald { parts.append("\"time\":\(Self.jsonString(Self.timestamp()))") }
        parts.append("\"level\":\"\(level)\"")
        parts.append("\"msg\":\(Self.jsonString(message))")
        parts += fields.map { "\(Self.jsonString($0.0)):\(Self.jsonValue($0.1))" }
        return "{" + parts.joined(separator: ",") + "}"
    }

    static func ordered(_ metadata: Logger.Metadata) -> [(String, String)] {
        orderedValues(metadata).map { ($0.0, "\($0.1)") }
    }

    static func orderedValues(_ metadata: Logger.Metadata) -> [(String, Logger.MetadataValue)] {
        let leading = leadingKeys.compactMap { key in metadata[key].map { (key, $0) } }
        let rest = metadata.filter { !leadingKeys.contains($0.key) }.sorted { $0.key < $1.key }.map {
            ($0.key, $0.value)
        }
        return leading + rest
    }

    static func logfmtValue(_ value: String) -> String {
        let needsQuotes =
            value.isEmpty || value.contains { $0 == " " || $0 == "=" || $0 == "\"" || $0.isNewline || $0 == "\\" }
        guard needsQuotes else { return value }
        return jsonString(value)
    }

    /// Numbers and booleans stay bare in JSON so scripts can sum them.
    static func jsonValue(_ value: String) -> String {
        if value == "true" || value == "false" || (Int64(value) != nil) { return value }
        return jsonString(value)
    }

    public static func jsonString(_ value: String) -> String {
        var escaped = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where scalar.value < 0x20: escaped += "\\u" + scalar.value.hexDigits(width: 4)
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped + "\""
    }

    /// sd-daemon priorities: 3 err, 4 warning, 5 notice, 6 info, 7 debug.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// Wall-clock time for the log line only; no decision is ever made from it.
    static func timestamp() -> String {
        Date().formatted(
            .iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}

/// Where log lines go: stderr, or a buffer in tests. Writes whole lines atomically.
public final class LineOutput: Sendable {
    private let sink: Mutex<Sink>

    private enum Sink { case standardError, buffer([String]) }

    private init(_ sink: Sink) { self.sink = Mutex(sink) }

    public static let standardError = LineOutput(.standardError)
    public static func capturing() -> LineOutput { LineOutput(.buffer([])) }

    func write(_ line: String) {
        sink.withLock { sink in
            switch sink {
            case .standardError: StandardError.write(line)
            case .buffer(var lines):
                lines.append(line)
                sink = .buffer(lines)
            }
        }
    }

    /// Lines written so far (capturing outputs only).
    public var lines: [String] {
        sink.withLock { sink in
            if case .buffer(let lines) = sink { return lines }
            return []
        }
    }
}
