/// A problem in `jobs.toml`: names the file, the line and the key (exit 78).
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let file: String
    /// 1-based; 0 when the problem is not on one line (a missing file, a missing key).
    public let line: Int
    /// Dotted path of the key, e.g. `jobs.expire-content.schedule`; empty for the whole file.
    public let key: String
    public let message: String

    public init(file: String, line: Int, key: String, message: String) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
    }

    public var description: String {
        let place = line > 0 ? "\(file):\(line)" : file
        return key.isEmpty ? "\(place): \(message)" : "\(place): \(key): \(message)"
    }
}
