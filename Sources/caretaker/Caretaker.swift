import ArgumentParser
import CaretakerCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct Caretaker: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "caretaker",
        abstract: "Maintenance worker for a community app on PostgreSQL.",
        discussion: "Manual: /usr/share/doc/caretaker/docs/README.md; configuration: man 5 caretaker.toml.",
        version: caretakerVersion,
        subcommands: [
            Run.self, Once.self, Jobs.self, History.self, Migrate.self, Check.self, Status.self, Dashboard.self,
        ])

    /// As swift-argument-parser's own `main`, but every error on stderr starts
    /// `caretaker: `, like the messages the commands print themselves (`printError`),
    /// so an operator sees one style whether the parser or a command refused.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            let code = exitCode(for: error)
            // --help, --version and the like print as the parser prints them, on stdout.
            if code == .success { exit(withError: error) }
            var message = fullMessage(for: error)
            if message.hasPrefix("Error: ") { message.removeFirst("Error: ".count) }
            if !message.isEmpty { printError(message) }
            exitProcess(code.rawValue)
        }
    }
}

/// The C library's `exit`, which `ParsableCommand`'s own `exit(withError:)` hides inside the type.
private func exitProcess(_ status: Int32) -> Never {
    exit(status)
}
