import Foundation

/// A cgroup v1 memory controller group, as systemd's MemoryMax= makes one; nil where none can be made.
package struct MemoryCgroup {
    package let path: String

    package init?(limit: Int) {
        let root = "/sys/fs/cgroup/memory"
        guard access(root, W_OK) == 0 else { return nil }
        path = root + "/fieldlog-test-" + UUID().uuidString.prefix(8)
        guard mkdir(path, 0o755) == 0 else { return nil }
        guard
            (try? "\(limit)".write(toFile: path + "/memory.limit_in_bytes", atomically: false, encoding: .utf8)) != nil
        else {
            rmdir(path)
            return nil
        }
    }

    package var enterCommand: String { "echo $$ > \(path)/cgroup.procs && " }

    package var peakBytes: Int { Int(value("memory.max_usage_in_bytes") ?? "") ?? 0 }

    package var oomKills: Int {
        let line = value("memory.oom_control")?.split(separator: "\n").first { $0.hasPrefix("oom_kill ") }
        return line.flatMap { Int($0.dropFirst("oom_kill ".count)) } ?? 0
    }

    private func value(_ name: String) -> String? {
        (try? String(contentsOfFile: path + "/" + name, encoding: .utf8))?.trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    package func remove() {
        rmdir(path)
    }
}
