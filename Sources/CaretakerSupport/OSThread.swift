#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Plain OS threads (Foundation's `Thread` is not in FoundationEssentials).
package enum OSThread {
    /// What a new thread runs, boxed to pass through pthread's `void *` argument.
    private final class Body {
        let name: String
        let run: @Sendable () -> Void

        init(name: String, run: @escaping @Sendable () -> Void) {
            self.name = name
            self.run = run
        }

        /// Names the calling thread (at most 15 bytes are kept on Linux) and runs the closure.
        func start() {
            let shortName = String(decoding: name.utf8.prefix(15), as: UTF8.self)
            #if canImport(Darwin)
            _ = pthread_setname_np(shortName)
            #else
            // pthread_setname_np is hidden behind _GNU_SOURCE; this is what it does.
            let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
            if fd >= 0 {
                _ = shortName.withCString { write(fd, $0, strlen($0)) }
                close(fd)
            }
            #endif
            run()
        }
    }

    /// Starts a detached thread named `name` (visible in `top -H`) with a stack of
    /// `stackSize` bytes, running `body`.
    package static func start(name: String, stackSize: Int, _ body: @escaping @Sendable () -> Void) {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, max(stackSize, Int(PTHREAD_STACK_MIN)))
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        let argument = Unmanaged.passRetained(Body(name: name, run: body)).toOpaque()
        #if canImport(Darwin)
        var thread: pthread_t?
        #else
        var thread = pthread_t()
        #endif
        let started = pthread_create(
            &thread, &attributes,
            { argument in
                Unmanaged<Body>.fromOpaque(argument!).takeRetainedValue().start()
                return nil
            }, argument)
        guard started == 0 else {
            Unmanaged<Body>.fromOpaque(argument).release()
            fatalError("cannot start thread \(name): \(SystemError.message(started))")
        }
    }

    /// Blocks the calling thread for `duration` (rounded down to nanoseconds).
    package static func sleep(for duration: Duration) {
        guard duration > .zero else { return }
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR {
            request = remaining
        }
    }
}
