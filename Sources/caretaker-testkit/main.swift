import CaretakerTestSupport
import Foundation

/// Test support for the scripts: the bench and the soak read `/proc` through the
/// same `ProcessStatistics` as the tests do, and the bench waits for READY=1 on the
/// tests' `NotifySocket`.
///
///     caretaker-testkit memory PID           RSS USS PSS THREADS PEAK_RSS PRIVATE_DIRTY ANONYMOUS (KiB)
///     caretaker-testkit memory PID --top N   the N files whose mappings hold the most resident memory
///     caretaker-testkit status PID NAME      the number after NAME: in /proc/PID/status
///     caretaker-testkit wakeups PID SECONDS  SWITCHES THREADS_START THREADS_END THREADS_GONE
///     caretaker-testkit ready RUNS COMMAND…  per run, milliseconds from spawning COMMAND to its READY=1
///     caretaker-testkit partitioned-app-schema SCHEMA   the SQL of the reference app schema with
///                                            `posts` partitioned by range on `created_at` (no partition)
///
/// `wakeups` sums every thread's voluntary context switches over SECONDS; a thread
/// born meanwhile counts from zero, one that ended takes its count with it (hence the
/// thread counts). `ready` starts COMMAND RUNS times, one after the other, with
/// `NOTIFY_SOCKET` naming a fresh socket, and prints one line per run: the time to
/// its READY=1 datagram, or `timeout` after 30 s; then it sends SIGTERM and waits
/// (SIGKILL after 30 s). Exit status 64 for a bad command line, 1 when /proc cannot
/// be read or COMMAND cannot be started.
let usage = """
    usage: caretaker-testkit memory PID [--top N]
           caretaker-testkit status PID NAME
           caretaker-testkit wakeups PID SECONDS
           caretaker-testkit ready RUNS COMMAND...
           caretaker-testkit partitioned-app-schema SCHEMA
    """

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("caretaker-testkit: \(message)\n".utf8))
    exit(status)
}

/// `ready RUNS COMMAND…` (see above).
func timeToReady(runs: Int, command: [String]) async throws {
    for _ in 0..<runs {
        let notify = try NotifySocket()
        let environment = DaemonProcess.environment(["NOTIFY_SOCKET": notify.path])
        let started = ContinuousClock.now
        let pid = try ChildProcess.spawn(command, environment: environment)
        if let ready = await notify.waitFor("READY=1", timeout: .seconds(30)) {
            print(String(format: "%.1f", (ready.receivedAt - started) / .milliseconds(1)))
        } else {
            print("timeout")
        }
        kill(pid, SIGTERM)
        _ = await ChildProcess.exitStatus(of: pid, within: .seconds(30))
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "partitioned-app-schema" {
    guard arguments.count == 2 else { fail(usage, status: 64) }
    print(PostsLayout.partitionedAppSchema(appSchema: arguments[1]))
    exit(0)
}
if arguments.first == "ready" {
    guard arguments.count >= 3, let runs = Int(arguments[1]), runs > 0 else { fail(usage, status: 64) }
    do {
        try await timeToReady(runs: runs, command: Array(arguments.dropFirst(2)))
    } catch {
        fail("\(error)", status: 1)
    }
    exit(0)
}
guard arguments.count >= 2, let pid = pid_t(arguments[1]) else { fail(usage, status: 64) }
let process = ProcessStatistics(pid: pid)
do {
    switch (arguments[0], arguments.count) {
    case ("memory", 2):
        let memory = try process.memory()
        print(memory.rss, memory.uss, memory.pss, memory.threads, memory.peakRSS, memory.privateDirty, memory.anonymous)
    case ("memory", 4) where arguments[2] == "--top":
        guard let count = Int(arguments[3]) else { fail(usage, status: 64) }
        for mapping in try process.largestMappings(count) {
            let sizes = String(
                format: "  %6.1f MiB resident, %5.1f MiB private  ",
                Double(mapping.residentKiB) / 1024, Double(mapping.privateKiB) / 1024)
            print(sizes + mapping.name)
        }
    case ("status", 3):
        print(try process.status(arguments[2]))
    case ("wakeups", 3):
        guard let seconds = Double(arguments[2]) else { fail(usage, status: 64) }
        let before = try process.voluntarySwitchesByThread()
        try await Task.sleep(for: .seconds(seconds))
        let after = try process.voluntarySwitchesByThread()
        let switches = after.reduce(0) { $0 + $1.value - before[$1.key, default: 0] }
        let gone = Set(before.keys).subtracting(after.keys).count
        print(switches, before.count, after.count, gone)
    default:
        fail(usage, status: 64)
    }
} catch {
    fail("\(error)", status: 1)
}
