import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Events for the scheduler thread, posted from any thread (signal handlers,
/// job threads). The scheduler sleeps in `poll(2)` on a self-pipe, optionally
/// together with the LISTEN connection's socket, so it wakes on the first of:
/// an event, a notification, or its deadline. No polling loop, no wall clock.
final class EventQueue<Event: Sendable>: Sendable {
    private let pending = Mutex<[Event]>([])
    private let readEnd: Int32
    private let writeEnd: Int32

    init() {
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0, "pipe() failed")
        readEnd = fds[0]
        writeEnd = fds[1]
        _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(writeEnd, F_SETFL, fcntl(writeEnd, F_GETFL) | O_NONBLOCK)
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// Queues an event and wakes the waiting thread. Safe from any thread.
    func post(_ event: Event) {
        pending.withLock { $0.append(event) }
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Waits up to `timeout` (nil: forever) for events or for one of `sockets` to become
    /// readable, and returns the events queued by then (none when a socket or the timeout
    /// woke it: the caller reads the sockets and its clock itself). `beforeSleeping` runs
    /// just before `poll(2)`, when nothing is left to do but sleep (the idle memory release,
    /// after which every code page that runs is mapped back).
    func wait(timeout: Duration?, sockets: [Int32] = [], beforeSleeping: () -> Void = {}) -> [Event] {
        if let ready = takeIfAny() { return ready }
        var descriptors = [pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)]
        for socket in sockets { descriptors.append(pollfd(fd: socket, events: Int16(POLLIN), revents: 0)) }
        let milliseconds: Int32 = timeout.map { Int32(clamping: max(0, ($0.microseconds + 999) / 1000)) } ?? -1
        beforeSleeping()
        _ = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
        drainPipe()
        return takeIfAny() ?? []
    }

    private func takeIfAny() -> [Event]? {
        pending.withLock { queue in
            guard !queue.isEmpty else { return nil }
            defer { queue.removeAll() }
            return queue
        }
    }

    private func drainPipe() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readEnd, &buffer, buffer.count) > 0 {}
    }
}
