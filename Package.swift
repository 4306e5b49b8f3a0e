// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "caretaker",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "caretaker", targets: ["caretaker"]),
        // The web dashboard is its own binary, so `caretaker` never links SwiftNIO.
        .executable(name: "caretaker-dashboard", targets: ["caretaker-dashboard"]),
        .library(name: "CaretakerCore", targets: ["CaretakerCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Only the dashboard uses it; no default traits (swift-configuration, full Foundation).
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "CCrypt",
            providers: [.apt(["libcrypt-dev"])]
        ),
        // glibc's <malloc.h> (malloc_trim, for low-footprint mode's idle release).
        .systemLibrary(name: "CMalloc"),
        // libcurl, with small C helpers for the variadic curl_easy_setopt.
        .target(
            name: "CCurl",
            linkerSettings: [.linkedLibrary("curl")]
        ),
        .target(
            name: "Postgres",
            dependencies: ["CLibPQ"]
        ),
        // Small targets along dependency lines (no libpq, no libcurl), so the parsers
        // build, test and fuzz on their own. CaretakerCore re-exports them.
        // Text helpers that FoundationEssentials lacks.
        .target(name: "CaretakerText"),
        // The TOML subset `jobs.toml` uses, with the source line of every key.
        .target(name: "CaretakerTOML"),
        // Schedules: cron, `@every`, durations, the tz database reader and wall-clock arithmetic.
        .target(
            name: "CaretakerSchedule",
            dependencies: ["CaretakerText"]
        ),
        // RFC 5322 addresses and messages (what the SMTP and file transports send).
        .target(name: "CaretakerMailFormat"),
        // caretaker's own layers, each depending only on those above it here, so that the
        // compiler keeps the layering (the graph: docs/design/layers.md).
        // Threads, files, errors of the C library, idle memory, the log's line format.
        .target(
            name: "CaretakerSupport",
            dependencies: ["CaretakerText", "CMalloc", .product(name: "Logging", package: "swift-log")]
        ),
        // jobs.toml: its model, its reader and its validation; no job by name.
        .target(
            name: "CaretakerConfig",
            dependencies: [
                "CaretakerSupport", "CaretakerText", "CaretakerTOML", "CaretakerSchedule", "CaretakerMailFormat",
            ]
        ),
        // The database: connecting, its clock, caretaker's schema (migrations) and the run history.
        .target(
            name: "CaretakerDatabase",
            dependencies: ["CaretakerSupport", "CaretakerConfig", "Postgres"]
        ),
        // Sending mail: SMTP (libcurl) and the file transport.
        .target(
            name: "CaretakerMail",
            dependencies: [
                "CaretakerSupport", "CaretakerConfig", "CaretakerDatabase", "CaretakerMailFormat", "CCurl",
            ]
        ),
        // The built-in jobs and their catalogue, the job context and pacing, and what
        // `check` and `migrate --grant` derive from the jobs' declarations.
        .target(
            name: "CaretakerJobs",
            dependencies: [
                "CaretakerSupport", "CaretakerConfig", "CaretakerDatabase", "CaretakerMail", "Postgres", "CCrypt",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Metrics, health pings, alerts and the status report.
        .target(
            name: "CaretakerMonitoring",
            dependencies: [
                "CaretakerSupport", "CaretakerConfig", "CaretakerDatabase", "CaretakerMail", "CaretakerJobs",
                "Postgres", "CCurl",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // The runtime: the scheduler, the runner and the daemon. It re-exports the layers
        // below, so the executables, the dashboard and the tests import CaretakerCore only.
        .target(
            name: "CaretakerCore",
            dependencies: [
                "CaretakerSupport", "CaretakerConfig", "CaretakerDatabase", "CaretakerMail", "CaretakerJobs",
                "CaretakerMonitoring", "Postgres",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "caretaker",
            dependencies: [
                "CaretakerCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The dashboard's pages (pure functions over values), its queries and its HTTP server.
        .target(
            name: "CaretakerDashboard",
            dependencies: [
                "CaretakerCore",
                "Postgres",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "caretaker-dashboard",
            dependencies: [
                "CaretakerDashboard",
                "CaretakerCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .target(
            name: "CaretakerTestSupport",
            dependencies: ["CaretakerCore", "Postgres", .product(name: "Logging", package: "swift-log")]
        ),
        // The scripts' share of the test support: the /proc reader the bench and the soak use,
        // the bench's READY=1 listener.
        .executableTarget(
            name: "caretaker-testkit",
            dependencies: ["CaretakerTestSupport"]
        ),
        // The small targets' tests, each depending on the target it tests only: they
        // build and run without libpq, libcurl or CaretakerCore.
        .testTarget(name: "CaretakerTextTests", dependencies: ["CaretakerText"]),
        // The seeded generator and the fuzz harness the random and fuzz tests share
        // (nothing of caretaker).
        .target(name: "SeededRandom"),
        .testTarget(name: "CaretakerTOMLTests", dependencies: ["CaretakerTOML", "SeededRandom"]),
        .testTarget(name: "CaretakerScheduleTests", dependencies: ["CaretakerSchedule", "SeededRandom"]),
        .testTarget(name: "CaretakerMailFormatTests", dependencies: ["CaretakerMailFormat", "SeededRandom"]),
        .testTarget(
            name: "CaretakerCoreTests",
            dependencies: [
                "CaretakerCore", "CaretakerTOML", "CaretakerSchedule", "CaretakerMailFormat", "CaretakerText",
                "SeededRandom",
            ]
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "CaretakerCore", "CaretakerTestSupport", "Postgres", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "DashboardTests",
            dependencies: ["CaretakerDashboard", "CaretakerCore", "CaretakerTestSupport", "Postgres"]
        ),
        .testTarget(
            name: "CLITests",
            dependencies: ["CaretakerCore", "CaretakerTestSupport", "Postgres"]
        ),
    ]
)

// The libFuzzer harness (Fuzz/) is a package product only when scripts/fuzz asks for it
// (CARETAKER_FUZZ=1 with --sanitize fuzzer): libFuzzer supplies `main`, so a plain
// `swift build` could not link it.
if Context.environment["CARETAKER_FUZZ"] == "1" {
    package.products.append(.executable(name: "caretaker-fuzz", targets: ["caretaker-fuzz"]))
    package.targets.append(
        .executableTarget(
            name: "caretaker-fuzz",
            dependencies: ["CaretakerCore"],
            path: "Fuzz",
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ))
}
