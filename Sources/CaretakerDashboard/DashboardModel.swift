import CaretakerCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The span of time the overview's timeline and charts show.
public enum TimeWindow: String, Sendable, CaseIterable {
    case day = "24h", week = "7d"

    public var seconds: Double { self == .day ? 86_400 : 7 * 86_400 }
    /// Width of one bar of the counter charts: an hour over a day, six over a week.
    public var bucketSeconds: Double { self == .day ? 3_600 : 6 * 3_600 }
    public var bucketCount: Int { Int(seconds / bucketSeconds) }
    /// The time one pixel of the timeline covers: runs of a job and status closer than this share a mark.
    public var timelinePixelSeconds: Double { seconds / TimelineChart.plotWidth }
    public var label: String { self == .day ? "last 24 hours" : "last 7 days" }
}

/// Consecutive slots of a job that were due and nobody claimed (no caretaker was running).
public struct MissedSpan: Sendable, Equatable {
    public var first: Date
    public var last: Date
    public var slots: Int
}

/// One job's line on the overview.
public struct JobOverview: Sendable {
    public var name: String
    public var enabled: Bool
    public var schedule: String
    public var scheduleWords: String
    public var timeZone: String
    /// `check`'s verdict; nil for a disabled job (check does not judge those).
    public var health: JobHealth?
    /// The latest run that ran (skipped slots are not runs).
    public var lastRun: RunRecord?
    public var nextSlot: Date?
    /// The runs and skipped slots in the window as the timeline draws them, oldest
    /// first: one mark per run, or one per pixel where runs crowd (`RunHistory.timelineMarks`).
    public var marks: [TimelineMark]
    public var missed: [MissedSpan]
    /// Per main counter, the sums per bucket of the window.
    public var series: [CounterSeries]
}

/// A job's counter summed per bucket of the window, for a small chart.
public struct CounterSeries: Sendable, Equatable {
    public var counter: String
    public var buckets: [Int64]
    /// How the chart colours it, as the job declares the counter.
    public var tone: ChartedCounter.Tone = .work
    public var total: Int64 { buckets.reduce(0, +) }
}

/// Everything the overview page shows, read in one read-only transaction.
public struct Overview: Sendable {
    /// The database clock when the page was read: every "ago" and the window end.
    public var now: Date
    public var window: TimeWindow
    public var jobs: [JobOverview]

    public var windowStart: Date { now.addingTimeInterval(-window.seconds) }
}

/// Filters of the job page (`/jobs/NAME?status=…&trigger=…&range=…&page=…`).
public struct RunFilter: Sendable, Equatable {
    public enum Range: String, Sendable, CaseIterable {
        case day = "24h", week = "7d", month = "30d", all
        public var seconds: Double? {
            switch self {
            case .day: 86_400
            case .week: 7 * 86_400
            case .month: 30 * 86_400
            case .all: nil
            }
        }
    }

    public var status: RunStatus?
    public var trigger: RunTrigger?
    public var range: Range = .all
    /// 1-based.
    public var page: Int = 1

    public static let pageSize = 50

    public init(status: RunStatus? = nil, trigger: RunTrigger? = nil, range: Range = .all, page: Int = 1) {
        self.status = status
        self.trigger = trigger
        self.range = range
        self.page = page
    }

    /// Reads the query parameters; a value that is not one of the choices is an error naming them.
    public init(query: [String: String]) throws(DashboardError) {
        func value<T: RawRepresentable & CaseIterable>(_ key: String, _ type: T.Type) throws(DashboardError) -> T?
        where T.RawValue == String {
            guard let text = query[key], !text.isEmpty else { return nil }
            guard let found = T(rawValue: text) else {
                throw .badRequest("\(key) must be one of: \(T.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return found
        }
        status = try value("status", RunStatus.self)
        trigger = try value("trigger", RunTrigger.self)
        range = try value("range", Range.self) ?? .all
        if let text = query["page"], !text.isEmpty {
            guard let number = Int(text), number >= 1, number <= 1_000_000 else {
                throw .badRequest("page must be a number from 1")
            }
            page = number
        }
    }

    /// The query string for these filters on `page`, empty values left out.
    public func query(page: Int) -> String {
        var items: [String] = []
        if let status { items.append("status=\(status.rawValue)") }
        if let trigger { items.append("trigger=\(trigger.rawValue)") }
        if range != .all { items.append("range=\(range.rawValue)") }
        if page != 1 { items.append("page=\(page)") }
        return items.isEmpty ? "" : "?" + items.joined(separator: "&")
    }
}

/// A page of a job's runs.
public struct JobRuns: Sendable {
    public var now: Date
    public var job: String
    /// Nil when the job is in the history but no longer configured.
    public var configured: JobOverview?
    public var filter: RunFilter
    public var runs: [RunRecord]
    public var hasNextPage: Bool
}

/// What the dashboard answers with instead of a page.
public enum DashboardError: Error, Sendable, Equatable {
    case notFound(String)
    case badRequest(String)
}
