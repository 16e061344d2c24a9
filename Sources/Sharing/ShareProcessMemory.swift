import SystemIO

/// The memory bound of a process that only shares (`fieldlog share`, the recorder's sharing process).
/// libmosquitto 2.0.11 allocates whatever packet size a broker announces, up to 256 MiB, and takes no limit on
/// it; under this one the allocation fails instead, and the client disconnects and says so, where the OOM killer
/// would have ended the process (under fieldlog.service's MemoryMax, the recorder with it).
package enum ShareProcessMemory {
    /// Data (heap, thread stacks, private writable mappings: RLIMIT_DATA) of the process. `fieldlog share` uses
    /// about 30 MB of it with 4 threads on 2 cores; each further core adds an event-loop thread (8 MiB of stack).
    package static let limitBytes = 128 << 20

    /// Applies `limitBytes` to the calling process for good. Call it first thing in a process that only shares:
    /// a recorder or a live page under it could fail where they would not have.
    package static func apply() throws(ShareError) {
        guard limitDataMemory(to: limitBytes) else {
            throw ShareError("cannot limit the sharing process's memory to \(limitBytes >> 20) MiB")
        }
    }
}
