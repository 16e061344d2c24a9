#ifndef CSANDBOX_H
#define CSANDBOX_H

#include <spawn.h>
#include <sys/types.h>

/// The photo worker's system interface: an anonymous memory file to pass bytes through, a child
/// process started with only those files, its limits, and a non-blocking wait; and the recorder's own
/// shutdown signals. Every function returns
/// 0 or a positive result on success and -errno on failure.

/// An anonymous in-memory file (memfd), close-on-exec.
int csandbox_memfd(const char *name);

/// Starts `path` with `argv` (NULL-terminated); the child's stdin, stdout and stderr are `in_fd`,
/// `out_fd` and `err_fd`, and no other descriptor of the parent is open in it. Stores its pid.
int csandbox_spawn(const char *path, char *const argv[], int in_fd, int out_fd, int err_fd, pid_t *pid);

/// Adds to `actions` the closing of every descriptor from 3 up in the child (glibc's addclosefrom, which Swift
/// does not see).
int csandbox_spawn_close_others(posix_spawn_file_actions_t *actions);

/// Limits the calling process for good: address space, CPU seconds and the size of files it writes, no
/// core dumps, few descriptors, no new privileges, and death when its parent dies.
int csandbox_limit_self(long long address_space_bytes, long long cpu_seconds, long long file_bytes);

enum {
    CSANDBOX_RUNNING = 0,
    CSANDBOX_EXITED = 1,
    CSANDBOX_SIGNALED = 2,
};

/// Whether child `pid` is still running; once it has ended, reaps it and stores its exit status or the
/// signal that ended it in `code`.
int csandbox_poll(pid_t pid, int *code);

/// Sends SIGKILL to `pid`.
int csandbox_kill(pid_t pid);

/// Sends `signal` to `pid`.
int csandbox_signal(pid_t pid, int signal);

/// Limits the calling process's data (heap and private writable mappings, thread stacks included) to `bytes`:
/// an allocation past it fails instead of growing the process.
int csandbox_limit_data(long long bytes);

/// Makes the calling process receive SIGTERM when its parent ends; fails with -ESRCH when its parent is not
/// `parent` any more (it ended before this call).
int csandbox_end_with_parent(pid_t parent);

/// Makes each of the `count` signals write its number, as one byte, to a socket pair instead of its default
/// action, and returns the end to read (close-on-exec). A thread that reads it waits for a signal without
/// libdispatch or a periodic wake-up. Once per process.
int csandbox_signal_pipe(const int *signals, int count);
/// Shuts the reading end down: a read waiting on it (or any later one) returns 0, as for no signal.
void csandbox_signal_pipe_shutdown(void);

#endif
