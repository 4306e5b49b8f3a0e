import Testing

@testable import CaretakerCore
@testable import CaretakerSupport

@Suite struct IdleMemoryTests {
    static let smaps = """
        55e56e1a7000-55e56ee94000 r-xp 00000000 fe:00 16253359                   /usr/bin/caretaker
        Size:              13236 kB
        Rss:                2944 kB
        Anonymous:             0 kB
        VmFlags: rd ex mr mw me dw
        55e56ee94000-55e56eeea000 r--p 00cea000 fe:00 16253359                   /usr/bin/caretaker
        Rss:                 344 kB
        Anonymous:           344 kB
        55e56eeea000-55e56f0ea000 rw-p 00d40000 fe:00 16253359                   /usr/bin/caretaker
        Rss:                1020 kB
        Private_Clean:       876 kB
        Private_Dirty:       144 kB
        Anonymous:           144 kB
        55e56f0ea000-55e56f16a000 rw-p 00000000 00:00 0 
        Rss:                 244 kB
        Anonymous:           244 kB
        7fee89400000-7fee894c5000 r--p 00000000 fe:00 333177                     /usr/lib/x86_64-linux-gnu/libcrypto.so.3
        Rss:                 788 kB
        Anonymous:             0 kB
        7fee89500000-7fee89501000 r--p 00000000 fe:00 333178                     /usr/lib/old.so (deleted)
        Rss:                   4 kB
        Anonymous:             0 kB
        7fee89600000-7fee89601000 r--s 00000000 00:05 12                         /dev/zero
        Rss:                   4 kB
        Anonymous:             0 kB
        7ffc1f658000-7ffc1f679000 rw-p 00000000 00:00 0                          [stack]
        Rss:                  40 kB
        Anonymous:            40 kB
        """

    @Test("smaps is read into mappings with their resident, anonymous and private sizes")
    func parse() {
        let mappings = ProcessMapping.parse(Self.smaps)
        #expect(mappings.count == 8)
        #expect(
            mappings[0]
                == ProcessMapping(
                    start: 0x55e5_6e1a_7000, end: 0x55e5_6ee9_4000, permissions: "r-xp",
                    path: "/usr/bin/caretaker", residentBytes: 2944 * 1024, anonymousBytes: 0))
        #expect(mappings[2].privateBytes == (876 + 144) * 1024)
        #expect(mappings[3].path == "")
        #expect(mappings[5].path == "/usr/lib/old.so (deleted)")
        #expect(mappings[7].path == "[stack]")
    }

    @Test("only clean read-only pages of object files are dropped; .data with unwritten pages is paged out")
    func choice() {
        let mappings = ProcessMapping.parse(Self.smaps)
        #expect(
            mappings.map(\.isReleasable) == [true, false, false, false, true, false, false, false],
            "code and clean read-only data only: not relocated (anonymous) pages, not anonymous memory, not deleted files or devices"
        )
        #expect(mappings.map(\.hasCleanFilePages) == [false, false, true, false, false, false, false, false])
    }

    @Test("the plan fills at most its buffer, the mappings to drop first")
    func planWithinBuffer() {
        let advice = withUnsafeTemporaryAllocation(of: IdleMemory.Advice.self, capacity: 4) { buffer in
            Array(buffer.prefix(IdleMemory.plan(into: buffer)))
        }
        #expect(advice.count == 4, "this test process has more than four releasable mappings")
        #expect(advice.allSatisfy { $0.drop })
    }

    /// What `release` promises: the clean read-only pages of object files leave this
    /// process's memory (other tests running meanwhile map back only what they touch),
    /// and nothing is lost (the process goes on working, its data intact).
    @Test("a release in this process drops its releasable pages and leaves it working")
    func releaseInProcess() throws {
        func releasableResident() throws -> Int {
            try ProcessMapping.parse(TextFile.read("/proc/self/smaps")).filter(\.isReleasable).reduce(0) {
                $0 + $1.residentBytes
            }
        }
        let data = (0..<100_000).map { $0 &* 2_654_435_761 }
        let before = try releasableResident()
        IdleMemory.release()
        let after = try releasableResident()
        #expect(before > 1 << 20, "\(before) bytes of releasable pages resident: nothing to release")
        #expect(after < before / 2, "releasable pages resident: \(before) bytes before the release, \(after) after")
        #expect(data.enumerated().allSatisfy { $0.element == $0.offset &* 2_654_435_761 }, "data changed")
    }
}
