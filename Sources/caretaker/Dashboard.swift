import ArgumentParser
import CaretakerCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension Caretaker {
    /// `caretaker dashboard`: replaces this process with `caretaker-dashboard`, the
    /// binary installed beside this one, so `caretaker` itself never links the HTTP server.
    struct Dashboard: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Serve a read-only web dashboard of the jobs and their run history.",
            discussion: """
                Runs caretaker-dashboard from the directory of this binary. \
                \(DashboardOptions.helpDiscussion(launcher: true))
                """)

        @Option(name: .long, help: "Path of jobs.toml (else $CARETAKER_CONFIG, ./jobs.toml, /etc/caretaker/jobs.toml).")
        var config: String?

        @Option(name: .long, help: "HOST:PORT to listen on (default: [dashboard] listen, 127.0.0.1:8080).")
        var listen: String?

        @Option(name: .long, help: "Log format: logfmt or json (default: worker.log_format).")
        var logFormat: WorkerOptions.LogFormat?

        func validate() throws {
            if let listen, ListenAddress(parsing: listen) == nil {
                throw ValidationError("--listen \"\(listen)\" is not \(ListenAddress.expectedForm)")
            }
        }

        func run() throws {
            let binary = Self.dashboardBinary()
            var arguments = [binary]
            if let config { arguments += ["--config", config] }
            if let listen { arguments += ["--listen", listen] }
            if let logFormat { arguments += ["--log-format", logFormat.rawValue] }
            let pointers = arguments.map { strdup($0) } + [nil]
            execv(binary, pointers)
            let reason = SystemError.message(errno)
            printError(
                "cannot run \(binary): \(reason) — the dashboard is a separate binary, caretaker-dashboard, which "
                    + "the caretaker package installs beside caretaker: install the package (apt install caretaker); "
                    + "from source, build it with `swift build -c release --product caretaker-dashboard` and install "
                    + "it beside caretaker")
            // Not 69: the database is not the problem. 1, as when the dashboard cannot listen.
            throw ExitCode(ExitStatus.jobFailed.rawValue)
        }

        /// `caretaker-dashboard` in the directory of the running executable (`/proc/self/exe`).
        static func dashboardBinary() -> String {
            var buffer = [CChar](repeating: 0, count: 4096)
            let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
            guard length > 0 else { return "caretaker-dashboard" }
            let path = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(
                separator: "/")
            return directory + "/caretaker-dashboard"
        }
    }
}
