import ArgumentParser
import CaretakerCore

@main
struct Caretaker: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "caretaker",
        abstract: "Maintenance worker for a community app on PostgreSQL.",
        version: caretakerVersion,
        subcommands: [
            Run.self, Once.self, Jobs.self, History.self, Migrate.self, Check.self, Status.self, Dashboard.self,
        ])
}
