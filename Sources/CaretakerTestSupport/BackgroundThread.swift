import Foundation

/// Blocking work (a libpq call that waits for a lock, a migration) on an OS thread of
/// its own. A `Task.detached` would run it on Swift concurrency's pool, which has one
/// thread per core: two tests blocked that way on a two-core machine leave no thread
/// for anything else, and each waits for ever for what the other holds up.
public final class BackgroundThread<Value: Sendable>: @unchecked Sendable {
    private let finished = NSCondition()
    private var result: Result<Value, any Error>?

    /// Starts `body` at once.
    public init(_ body: @escaping @Sendable () throws -> Value) {
        Thread { [self] in
            let outcome = Result { try body() }
            finished.lock()
            result = outcome
            finished.broadcast()
            finished.unlock()
        }.start()
    }

    /// Waits for `body` to return, and returns what it returned or throws what it threw.
    public func value() throws -> Value {
        finished.lock()
        defer { finished.unlock() }
        while result == nil { finished.wait() }
        return try result!.get()
    }
}
