#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "CSandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int csandbox_memfd(const char *name) {
    int fd = memfd_create(name, MFD_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

int csandbox_spawn(const char *path, char *const argv[], int in_fd, int out_fd, int err_fd, pid_t *pid) {
    posix_spawn_file_actions_t actions;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) return -rc;
    // dup2 clears close-on-exec on the copies; everything else the parent holds stays behind.
    if ((rc = posix_spawn_file_actions_adddup2(&actions, in_fd, 0)) == 0 &&
        (rc = posix_spawn_file_actions_adddup2(&actions, out_fd, 1)) == 0 &&
        (rc = posix_spawn_file_actions_adddup2(&actions, err_fd, 2)) == 0) {
        rc = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    }
    if (rc == 0) rc = posix_spawn(pid, path, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    return rc == 0 ? 0 : -rc;
}

static int set_limit(int resource, long long value) {
    struct rlimit limit = {.rlim_cur = (rlim_t)value, .rlim_max = (rlim_t)value};
    return setrlimit(resource, &limit) == 0 ? 0 : -errno;
}

int csandbox_limit_self(long long address_space_bytes, long long cpu_seconds, long long file_bytes) {
    int rc;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return -errno;
    // The parent may have died before the line above: then we were adopted and must not go on.
    if (getppid() == 1) return -ECHILD;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -errno;
    if ((rc = set_limit(RLIMIT_AS, address_space_bytes)) != 0) return rc;
    // SIGXCPU at the soft limit kills; the hard limit one second later is SIGKILL.
    struct rlimit cpu = {.rlim_cur = (rlim_t)cpu_seconds, .rlim_max = (rlim_t)cpu_seconds + 1};
    if (setrlimit(RLIMIT_CPU, &cpu) != 0) return -errno;
    if ((rc = set_limit(RLIMIT_FSIZE, file_bytes)) != 0) return rc;
    if ((rc = set_limit(RLIMIT_CORE, 0)) != 0) return rc;
    return set_limit(RLIMIT_NOFILE, 16);
}

int csandbox_poll(pid_t pid, int *code) {
    int status = 0;
    pid_t done;
    do {
        done = waitpid(pid, &status, WNOHANG);
    } while (done < 0 && errno == EINTR);
    if (done < 0) return -errno;
    if (done == 0) return CSANDBOX_RUNNING;
    if (WIFSIGNALED(status)) {
        *code = WTERMSIG(status);
        return CSANDBOX_SIGNALED;
    }
    *code = WEXITSTATUS(status);
    return CSANDBOX_EXITED;
}

int csandbox_spawn_close_others(posix_spawn_file_actions_t *actions) {
    int rc = posix_spawn_file_actions_addclosefrom_np(actions, 3);
    return rc == 0 ? 0 : -rc;
}

int csandbox_kill(pid_t pid) {
    return kill(pid, SIGKILL) == 0 ? 0 : -errno;
}

int csandbox_signal(pid_t pid, int signal) {
    return kill(pid, signal) == 0 ? 0 : -errno;
}

int csandbox_limit_data(long long bytes) {
    struct rlimit limit = {(rlim_t)bytes, (rlim_t)bytes};
    return setrlimit(RLIMIT_DATA, &limit) == 0 ? 0 : -errno;
}

int csandbox_end_with_parent(pid_t parent) {
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) return -errno;
    /* The parent may have ended between the spawn and the prctl: then no signal would ever come. */
    return getppid() == parent ? 0 : -ESRCH;
}

static int signal_pipe_write = -1;
static int signal_pipe_read = -1;

static void write_signal(int signal) {
    int saved = errno;  // a handler must leave errno as it found it
    unsigned char byte = (unsigned char)signal;
    // Non-blocking: a full buffer drops the byte, never blocks. MSG_NOSIGNAL: once the reader has shut its
    // side down, a late signal gets EPIPE, not SIGPIPE.
    (void)send(signal_pipe_write, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    errno = saved;
}

int csandbox_signal_pipe(const int *signals, int count) {
    int ends[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) return -errno;
    signal_pipe_read = ends[0];
    signal_pipe_write = ends[1];
    struct sigaction action = {0};
    action.sa_handler = write_signal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < count; i++) {
        if (sigaction(signals[i], &action, NULL) != 0) return -errno;
    }
    return ends[0];
}

void csandbox_signal_pipe_shutdown(void) {
    // Not a write: a wake-up byte could be lost to a failing write(2) (libfiu's storage faults fail them
    // all), and the reader would wait for ever. shutdown(2) on its own end ends a blocked read with 0.
    if (signal_pipe_read >= 0) (void)shutdown(signal_pipe_read, SHUT_RD);
}
