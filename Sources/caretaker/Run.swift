import ArgumentParser
import CaretakerCore

extension Caretaker {
    /// `caretaker run [--config PATH] [--low-footprint]`: the daemon.
    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Run the scheduler as a long-running service.")

        @OptionGroup var common: CommonOptions

        @Flag(help: "Low-footprint mode for small machines (SPEC §5).")
        var lowFootprint = false

        func run() async throws {
            try exiting {
                _ = try common.loadConfiguration(lowFootprint: lowFootprint)
                throw Failure(.usage, "the daemon is not implemented yet")
            }
        }
    }
}
