import Foundation

/// Polls `condition` every 50 ms until it holds; false when it still does not on a
/// check made after `timeout` has passed (so a slow machine gets its full time).
public func eventually(timeout: Duration = .seconds(10), _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        let expired = ContinuousClock.now >= deadline
        if try condition() { return true }
        if expired { return false }
        try? await Task.sleep(for: .milliseconds(50))
    }
}

/// The same for code that is not `async` (synchronous tests and set-up): it sleeps the thread.
public func eventually(timeout: Duration = .seconds(10), _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        let expired = ContinuousClock.now >= deadline
        if try condition() { return true }
        if expired { return false }
        Thread.sleep(forTimeInterval: 0.05)
    }
}
