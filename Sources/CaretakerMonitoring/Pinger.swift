import CCurl
import CaretakerSupport
import Dispatch
import Logging
import Synchronization

/// Pings in the protocol of healthchecks.io (Uptime Kuma's push monitors,
/// Cronitor, …): `URL/start` when a run starts, `URL` when it succeeds,
/// `URL/fail` when it fails.
///
/// Pings go out one after another on a queue of their own, so a run never
/// waits for one and `start` always precedes its run's result; each gives up
/// after `timeoutMilliseconds`, and a failure is only logged. While an endpoint
/// hangs, at most `maximumWaiting` pings wait; later ones are dropped (logged).
final class Pinger: Sendable {
    package enum Event: String, Sendable {
        case start, success, fail
    }

    private let queue = DispatchQueue(label: "caretaker.pings")
    private let waiting = Atomic<Int>(0)
    private let logger: Logger
    static let connectTimeoutMilliseconds = 3000
    static let timeoutMilliseconds = 5000
    static let maximumWaiting = 16

    init(logger: Logger) {
        self.logger = logger
    }

    /// The URL for `event` of a job whose `ping_url` is `base`.
    static func url(_ base: String, _ event: Event) -> String {
        let trimmed = base.hasSuffix("/") ? String(base.dropLast()) : base
        switch event {
        case .start: return trimmed + "/start"
        case .success: return trimmed
        case .fail: return trimmed + "/fail"
        }
    }

    /// Queues the ping and returns at once.
    func ping(_ base: String, _ event: Event, job: String) {
        guard waiting.add(1, ordering: .relaxed).newValue <= Self.maximumWaiting else {
            waiting.subtract(1, ordering: .relaxed)
            logger.warning(
                "ping dropped: earlier pings are still waiting for an answer",
                metadata: ["job": "\(job)", "ping": "\(event.rawValue)", "url": "\(Self.redacted(base))"])
            return
        }
        let logger = self.logger
        queue.async { [self] in
            defer { waiting.subtract(1, ordering: .relaxed) }
            if let problem = Self.get(Self.url(base, event)) {
                logger.warning(
                    "ping failed",
                    metadata: [
                        "job": "\(job)", "ping": "\(event.rawValue)",
                        "url": "\(Self.redacted(base))", "error": "\(problem)",
                    ])
            }
        }
    }

    /// Waits until the queued pings are out, or `timeout` passed (the rest are lost with the process).
    func drain(timeout: Duration) {
        let done = DispatchSemaphore(value: 0)
        queue.async { done.signal() }
        _ = done.wait(timeout: .now() + .milliseconds(Int(timeout.microseconds / 1000)))
    }

    /// A GET of `url`; nil on a 2xx/3xx answer, else what went wrong.
    static func get(_ url: String) -> String? {
        guard ccurl_global_init_once() == CURLE_OK, let handle = curl_easy_init() else {
            return "libcurl could not start"
        }
        defer { curl_easy_cleanup(handle) }
        _ = ccurl_setopt_string(handle, CURLOPT_URL, url)
        // Only HTTP(S): a ping URL cannot make us read files or speak other protocols.
        _ = ccurl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = ccurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = ccurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, connectTimeoutMilliseconds)
        _ = ccurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, timeoutMilliseconds)
        _ = ccurl_setopt_string(handle, CURLOPT_USERAGENT, "caretaker/\(caretakerVersion)")
        _ = ccurl_setopt_callback(handle, CURLOPT_WRITEFUNCTION, discardBody)
        let code = curl_easy_perform(handle)
        guard code == CURLE_OK else { return String(cString: curl_easy_strerror(code)) }
        var status = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return status < 400 ? nil : "HTTP status \(status)"
    }

    /// Scheme and host only: the rest of a ping URL (a check's UUID) lets anyone ping it.
    static func redacted(_ url: String) -> String {
        guard let schemeEnd = url.firstRange(of: "://") else { return "(invalid URL)" }
        let rest = url[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let host = authority.split(separator: "@").last.map(String.init) ?? ""
        return url[..<schemeEnd.upperBound] + host + "/…"
    }
}

/// libcurl's CURLOPT_WRITEFUNCTION: the answer to a ping is not needed.
private let discardBody: ccurl_data_callback = { _, size, count, _ in size * count }
