import Foundation

/// The caretaker checkout these sources were compiled from, for the helpers test
/// support shares with the scripts (`scripts/lib/smtp_server.py`,
/// `scripts/lib/postgres.sh`). Found from this file's path, so it works from a fresh
/// clone and from `swift test` without copying anything beside the test binary.
public enum Repository {
    /// The checkout's root directory (this file is `Sources/CaretakerTestSupport/Repository.swift`).
    public static let root: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .path

    /// The path of `relative` in the checkout; throws when it is not there.
    public static func file(_ relative: String) throws -> String {
        let path = root + "/" + relative
        guard FileManager.default.fileExists(atPath: path) else {
            throw RepositoryError(
                description: "\(path) is missing: test support runs it from the caretaker checkout it was built from")
        }
        return path
    }
}

public struct RepositoryError: Error, CustomStringConvertible {
    public let description: String
}
