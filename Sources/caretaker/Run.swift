import ArgumentParser
import CaretakerCore
import Logging

extension Caretaker {
    /// `caretaker run [--config PATH] [--low-footprint]`: the daemon.
    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run the scheduler as a long-running service (systemd Type=notify).",
            discussion:
                "Waits for the database while it is unreachable, rather than exiting 69. SIGTERM/SIGINT stop it cleanly; SIGHUP reloads jobs.toml. Exit status: 0 stopped by SIGTERM or SIGINT, 64 bad usage, 78 bad configuration (also a pooler in transaction or statement mode, or a [metrics] listen address in use)."
        )

        @OptionGroup var common: CommonOptions

        @Flag(help: "Low-footprint mode for small machines: one connection, small paced batches, no LISTEN.")
        var lowFootprint = false

        func run() throws {
            try exiting {
                let configuration = try common.loadConfiguration(lowFootprint: lowFootprint ? true : nil)
                let daemon: Daemon
                do {
                    daemon = try Daemon(
                        configurationPath: configuration.file, lowFootprint: lowFootprint,
                        configuration: configuration, logger: Logger(label: "caretaker"))
                } catch {
                    throw Failure(.configuration, "configuration error: \(error)")
                }
                return daemon.run()
            }
        }
    }
}
