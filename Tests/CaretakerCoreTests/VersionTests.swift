import CaretakerCore
import Foundation
import Testing

/// The version has one source, `caretakerVersion`; the package's changelog must agree.
@Suite struct VersionTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("debian/changelog's newest entry is caretakerVersion")
    func changelogMatches() throws {
        let changelog = try String(
            contentsOf: Self.repository.appendingPathComponent("debian/changelog"), encoding: .utf8)
        let firstLine = try #require(changelog.split(separator: "\n").first)
        #expect(firstLine.hasPrefix("caretaker (\(caretakerVersion)) "), "\(firstLine)")
    }
}
