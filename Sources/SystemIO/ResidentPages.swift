import Glibc

/// Gives back the pages of code and read-only data that a long-running process mapped once and no longer runs.
///
/// Why: the kernel maps a file's pages 64 KiB at a time around each page a process touches, and they stay
/// mapped for the life of the process. The recorder touches several MB of its code once (argument parsing,
/// reading the journal back, a photo's requests and decoding) and then runs a small part of it per fix; the
/// rest stays resident though nothing runs it. Unmapping it loses nothing: such a mapping is a clean copy of
/// its file, read back from the page cache on the next touch, and the pages left to the page cache are the
/// first the kernel reclaims under memory pressure. (The kernel does the same with its own start-up code.)
package enum ResidentPages {
    /// Unmaps (`MADV_DONTNEED`) the resident pages of every file mapping that cannot be written and holds no
    /// private copy of a page (smaps' `Anonymous: 0 kB`): the code and read-only data of the executable and its
    /// libraries. Never data relocated at start (RELRO: private copies), anything writable or locked, or the
    /// kernel's own mappings. Returns the bytes that were resident in the mappings released.
    @discardableResult
    package static func releaseCleanFileMappings() -> Int {
        var released = 0
        for mapping in cleanFileMappings() {
            guard let start = UnsafeMutableRawPointer(bitPattern: mapping.start) else { continue }
            if madvise(start, mapping.end - mapping.start, MADV_DONTNEED) == 0 {
                released += mapping.residentKB * 1024
            }
        }
        return released
    }

    /// The bytes resident in the mappings `releaseCleanFileMappings` would release, read from smaps now.
    package static func cleanFileMappingsResident() -> Int {
        cleanFileMappings().reduce(0) { $0 + $1.residentKB * 1024 }
    }

    private static func cleanFileMappings() -> [Mapping] {
        guard let smaps = try? FileIO.readAll("/proc/self/smaps") else { return [] }
        return Mapping.parse(smaps).filter(\.isCleanReadOnlyFile)
    }

    /// One mapping of /proc/self/smaps, in the fields read here.
    package struct Mapping {
        package var start = 0
        package var end = 0
        package var permissions = ""
        package var path = ""
        package var residentKB = 0
        /// -1 until smaps says.
        package var anonymousKB = -1
        package var flags: [String] = []

        package var isCleanReadOnlyFile: Bool {
            path.hasPrefix("/") && permissions.hasPrefix("r") && !permissions.contains("w")
                && permissions.hasSuffix("p") && anonymousKB == 0 && residentKB > 0
                && !flags.contains { $0 == "lo" || $0 == "io" || $0 == "pf" }
        }

        /// Header lines ("start-end perms offset dev inode [path]") open a mapping; "Key: value kB" lines
        /// and "VmFlags:" describe it.
        package static func parse(_ smaps: [UInt8]) -> [Mapping] {
            var mappings: [Mapping] = []
            for line in smaps.split(separator: UInt8(ascii: "\n")) {
                let fields = line.split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
                guard fields.count >= 2 else { continue }
                let range = fields[0].split(separator: "-")
                if fields.count >= 5, range.count == 2, let start = Int(range[0], radix: 16),
                    let end = Int(range[1], radix: 16)
                {
                    mappings.append(
                        Mapping(
                            start: start, end: end, permissions: fields[1], path: fields.count >= 6 ? fields[5] : ""))
                    continue
                }
                guard !mappings.isEmpty else { continue }
                switch fields[0] {
                case "Rss:": mappings[mappings.count - 1].residentKB = Int(fields[1]) ?? 0
                case "Anonymous:": mappings[mappings.count - 1].anonymousKB = Int(fields[1]) ?? -1
                case "VmFlags:": mappings[mappings.count - 1].flags = Array(fields.dropFirst())
                default: break
                }
            }
            return mappings
        }
    }
}
