package import CSandbox
import Glibc

/// Starting another program with only the descriptors it is given, for the photo worker and the processes
/// beside the recorder.
package enum ChildProcess {
    /// Starts `arguments[0]` with `input`, `output` and `error` as its standard input, output and error, and no
    /// other descriptor of this process; returns its pid.
    package static func spawn(
        _ arguments: [String], input: Int32, output: Int32, error: Int32
    ) throws(ChildProcessError) -> pid_t {
        var pid: pid_t = 0
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let rc = argv.withUnsafeBufferPointer { pointers in
            csandbox_spawn(arguments[0], pointers.baseAddress, input, output, error, &pid)
        }
        guard rc == 0 else { throw ChildProcessError(reason: String(cString: strerror(-rc))) }
        return pid
    }
}

/// A program that could not be started; `reason` is the system's word for it.
package struct ChildProcessError: Error, CustomStringConvertible {
    package var reason: String
    package var description: String { reason }
}

/// Seconds of the monotonic clock: for intervals and deadlines, never for walk logic (which runs on GPS time).
package func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// Limits this process's data (heap, thread stacks, private writable mappings: RLIMIT_DATA) to `bytes` for good:
/// past it an allocation fails where the process would otherwise grow. False when the system refuses.
package func limitDataMemory(to bytes: Int) -> Bool {
    csandbox_limit_data(Int64(bytes)) == 0
}

/// Whether process `pid` exists, another user's too (kill(2) with no signal).
package func processExists(_ pid: Int32) -> Bool {
    pid > 0 && (kill(pid, 0) == 0 || errno == EPERM)
}
