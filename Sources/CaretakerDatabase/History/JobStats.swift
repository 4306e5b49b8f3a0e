/// A run's counters, in the order the job first reported them; stored in `job_runs.stats`.
public struct JobStats: Sendable, Equatable, CustomStringConvertible {
    public private(set) var counters: [(name: String, value: Int)] = []

    public init(_ counters: [(String, Int)] = []) {
        for (name, value) in counters { add(name, value) }
    }

    public static func == (lhs: JobStats, rhs: JobStats) -> Bool {
        lhs.counters.elementsEqual(rhs.counters) { $0.name == $1.name && $0.value == $1.value }
    }

    /// Adds `value` to the counter `name`, creating it at zero first.
    public mutating func add(_ name: String, _ value: Int = 1) {
        if let index = counters.firstIndex(where: { $0.name == name }) {
            counters[index].value += value
        } else {
            counters.append((name, value))
        }
    }

    /// The counter `name`, or nil when the job did not report it: a reader that
    /// expects a count (a test's `== 0`) notices a counter renamed or never added.
    public subscript(_ name: String) -> Int? {
        counters.first { $0.name == name }?.value
    }

    /// `{"posts_deleted": 512, "packs_deleted": 3}`; names are job-defined identifiers.
    public var json: String {
        "{" + counters.map { "\"\($0.name)\": \($0.value)" }.joined(separator: ", ") + "}"
    }

    /// `posts_deleted=512 packs_deleted=3`
    public var description: String {
        counters.map { "\($0.name)=\($0.value)" }.joined(separator: " ")
    }
}
