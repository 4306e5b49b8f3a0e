import CaretakerTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct ChildProcessTests {
    @Test("a child gets only standard input, output and error, not this process's other descriptors")
    func noInheritedDescriptors() throws {
        let directory = NSTemporaryDirectory() + "caretaker-child-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Open for writing and not close-on-exec, as Foundation's writes are.
        let held = open(directory + "/held", O_WRONLY | O_CREAT, 0o644)
        try #require(held > 2)
        defer { close(held) }
        let status = try ChildProcess.run(
            ["/bin/sh", "-c", "ls /proc/$$/fd"], stdoutPath: directory + "/out", stderrPath: directory + "/err")
        #expect(status == 0)
        let listed = try String(contentsOfFile: directory + "/out", encoding: .utf8).split(separator: "\n")
        #expect(!listed.contains("\(held)"), "the child holds descriptor \(held): \(listed)")
    }
}
