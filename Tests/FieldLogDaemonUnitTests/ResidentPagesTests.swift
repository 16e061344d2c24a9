import Glibc
import SystemIO
import Testing

/// Giving back code and read-only data pages, in this process: what is released, what never is, and that the
/// process runs on.
@Suite struct ResidentPagesTests {
    @Test func codeAndReadOnlyDataAreGivenBackAndTheProcessRunsOn() throws {
        let before = ResidentPages.cleanFileMappingsResident()
        #expect(before > 0, "a running test binary has code resident")
        let released = ResidentPages.releaseCleanFileMappings()
        // Between the two reads this thread runs a little code again, 64 KiB a fault.
        #expect(released >= before / 2)
        #expect(ResidentPages.cleanFileMappingsResident() < before / 2)
        // Code and data read back from their files work as before: libc, the Swift runtime, this file's code.
        let text = (1...1000).map(String.init).joined(separator: ",")
        #expect(strlen(text) == text.utf8.count)
        #expect(text.split(separator: ",").compactMap { Int($0) }.reduce(0, +) == 500_500)
    }

    /// Only unwritable file mappings without a private copy of a page are released.
    @Test func writablePrivateAndKernelMappingsAreKept() {
        let smaps = """
            55d0a0000000-55d0a0400000 r-xp 00000000 fe:01 123 /usr/bin/fieldlog
            Rss:                1024 kB
            Anonymous:             0 kB
            VmFlags: rd ex mr mw me sd
            55d0a0400000-55d0a0500000 r--p 00400000 fe:01 123 /usr/bin/fieldlog
            Rss:                 512 kB
            Anonymous:           512 kB
            VmFlags: rd mr mw me ac sd
            55d0a0500000-55d0a0600000 rw-p 00500000 fe:01 123 /usr/bin/fieldlog
            Rss:                 256 kB
            Anonymous:             4 kB
            VmFlags: rd wr mr mw me ac sd
            7f0000000000-7f0000100000 r--p 00000000 fe:01 456 /usr/lib/x86_64-linux-gnu/libc.so.6
            Rss:                 160 kB
            Anonymous:             0 kB
            VmFlags: rd mr mw me lo sd
            7f0000100000-7f0000200000 r--s 00000000 fe:01 789 /var/lib/fieldlog/shared
            Rss:                  16 kB
            Anonymous:             0 kB
            VmFlags: rd mr mw me sd
            7f0000200000-7f0000300000 r--p 00000000 fe:01 790 /usr/lib/libunsaid.so
            Rss:                  16 kB
            VmFlags: rd mr mw me sd
            7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0 [vdso]
            Rss:                   8 kB
            Anonymous:             0 kB
            VmFlags: rd ex mr mw me de sd

            """
        let mappings = ResidentPages.Mapping.parse(Array(smaps.utf8))
        #expect(mappings.count == 7)
        #expect(mappings.first?.start == 0x55d0_a000_0000 && mappings.first?.end == 0x55d0_a040_0000)
        #expect(mappings.map(\.isCleanReadOnlyFile) == [true, false, false, false, false, false, false])
    }
}
