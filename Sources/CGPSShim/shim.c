#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // pthread_setname_np
#endif
#include "CGPSShim.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>
#include <gps.h>

// gpsd 3.23.1 renamed STATUS_DGPS_FIX to STATUS_DGPS without bumping the API version.
#ifdef STATUS_DGPS_FIX
#define CGPS_STATUS_DGPS STATUS_DGPS_FIX
#else
#define CGPS_STATUS_DGPS STATUS_DGPS
#endif

static int cgps_send(cgps_session *session, const char *command);

// Errors of our own (an errno) are told apart from libgps's small negative NL_* codes.
#define CGPS_ERRNO_BASE (-1000)

struct cgps_session {
    struct gps_data_t data;
    char message[16384];
    // The last read found no whole line: libgps's own gps_waiting would then say "data waiting" at once
    // (its buffer is not empty) and the reader would spin, so the next wait polls the socket instead.
    bool partial;
};

// libgps connects with a blocking connect(2): to an address that drops packets (a gpsd host off the
// network, a full listen queue) it blocks for a minute or more, and with it the reader, its stop and any
// reconnect. So the address is tried first with a deadline: 0 when it accepts, else an errno.
static int cgps_reachable(const char *host, const char *port, int timeout_ms) {
    struct addrinfo hints;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo *addresses = NULL;
    if (getaddrinfo(host, port, &hints, &addresses) != 0) {
        return EHOSTUNREACH;
    }
    int result = ECONNREFUSED;
    for (struct addrinfo *address = addresses; address != NULL && result != 0; address = address->ai_next) {
        int fd = socket(address->ai_family, address->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, address->ai_protocol);
        if (fd < 0) {
            continue;
        }
        if (connect(fd, address->ai_addr, address->ai_addrlen) == 0) {
            result = 0;
        } else if (errno == EINPROGRESS) {
            struct pollfd ready = {.fd = fd, .events = POLLOUT};
            int failure = 0;
            socklen_t length = sizeof(failure);
            if (poll(&ready, 1, timeout_ms) != 1) {
                result = ETIMEDOUT;
            } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length) == 0 && failure == 0) {
                result = 0;
            } else {
                result = failure != 0 ? failure : ECONNREFUSED;
            }
        } else {
            result = errno;
        }
        close(fd);
    }
    freeaddrinfo(addresses);
    return result;
}

cgps_session *cgps_open(const char *host, const char *port, int *error) {
    int unreachable = cgps_reachable(host, port, 2000);
    if (unreachable != 0) {
        *error = CGPS_ERRNO_BASE - unreachable;
        return NULL;
    }
    cgps_session *session = calloc(1, sizeof(*session));
    if (session == NULL) {
        *error = CGPS_ERRNO_BASE - ENOMEM;
        return NULL;
    }
    if (gps_open(host, port, &session->data) != 0) {
        *error = errno;
        free(session);
        return NULL;
    }
    // Our own send, not gps_stream/gps_send: their write(2) raises SIGPIPE, which kills the process, when
    // the peer has already reset the connection (a gpsd that dies at once, or anything else on the port).
    // It also sidesteps gps_stream's signature change in gpsd 3.25.
    if (cgps_send(session, "?WATCH={\"enable\":true,\"json\":true};\n") != 0) {
        *error = CGPS_ERRNO_BASE - errno;
        gps_close(&session->data);
        free(session);
        return NULL;
    }
    // Never block inside gps_read on a line that does not end (a hostile or broken peer): libgps returns
    // 0 for "nothing yet" on a non-blocking socket.
    int flags = fcntl(session->data.gps_fd, F_GETFL);
    if (flags != -1) {
        (void)fcntl(session->data.gps_fd, F_SETFL, flags | O_NONBLOCK);
    }
    *error = 0;
    return session;
}

const char *cgps_error_text(int error) {
    if (error > CGPS_ERRNO_BASE) {
        return gps_errstr(error);
    }
    switch (CGPS_ERRNO_BASE - error) {
    case ETIMEDOUT: return "no answer to connect within 2 s";
    case EHOSTUNREACH: return "address not found or unreachable";
    default: return strerror(CGPS_ERRNO_BASE - error);
    }
}

int cgps_wait(cgps_session *session, int timeout_us) {
    if (session->partial) {
        struct pollfd fd = {.fd = session->data.gps_fd, .events = POLLIN};
        int ready = poll(&fd, 1, timeout_us / 1000);
        if (ready < 0) {
            return errno == EINTR ? 0 : -1;
        }
        if (ready == 0) {
            return 0;
        }
        session->partial = false;
        return 1;
    }
    errno = 0;
    if (gps_waiting(&session->data, timeout_us)) {
        return 1;
    }
    return errno == 0 || errno == EINTR ? 0 : -1;
}

static double finite_or_nan(double value) {
    return isfinite(value) ? value : NAN;
}

int cgps_read(cgps_session *session, cgps_fix *out) {
    struct gps_data_t *data = &session->data;
    // libgps only ever adds bits to `set`; clear it so this read reports only what this message carried.
    data->set = 0;
    session->message[0] = '\0';
    int status = gps_read(data, session->message, (int)sizeof(session->message));
    session->partial = status == 0;
    if (status < 0) {
        return CGPS_READ_GONE;
    }
    if (status == 0) {
        return CGPS_READ_NONE;
    }
    // libgps ignores what it cannot parse, and fills fields from the start of a cut-off line: only a
    // whole JSON object counts as a message, so that garbage and torn lines never become a fix.
    size_t length = strlen(session->message);
    while (length > 0 && (session->message[length - 1] == '\r' || session->message[length - 1] == ' ')) {
        length--;
    }
    if (strncmp(session->message, "{\"class\":\"", 10) != 0 || session->message[length - 1] != '}') {
        return CGPS_READ_BAD;
    }
    // libgps sets no data bit for an object it could not parse (a wrong type, an unknown class).
    if ((data->set & ~(PACKET_SET | ONLINE_SET)) == 0) {
        return CGPS_READ_BAD;
    }
    if ((data->set & VERSION_SET) != 0) {
        return CGPS_READ_VERSION;
    }
    if (strstr(session->message, "\"class\":\"TPV\"") == NULL) {
        return CGPS_READ_OTHER;
    }
    if ((data->set & MODE_SET) == 0) {
        return CGPS_READ_OTHER;
    }
    const struct gps_fix_t *fix = &data->fix;
    memset(out, 0, sizeof(*out));
    out->mode = fix->mode;
    out->has_time = (data->set & TIME_SET) != 0 && fix->time.tv_sec != 0;
    out->time_sec = (int64_t)fix->time.tv_sec;
    out->time_nsec = (int64_t)fix->time.tv_nsec;
    out->differential = fix->status >= CGPS_STATUS_DGPS && fix->status <= STATUS_RTK_FLT;
    bool has_position = (data->set & LATLON_SET) != 0 && fix->mode >= MODE_2D;
    out->lat = has_position ? finite_or_nan(fix->latitude) : NAN;
    out->lon = has_position ? finite_or_nan(fix->longitude) : NAN;
    out->alt = fix->mode >= MODE_3D ? finite_or_nan(fix->altHAE) : NAN;
    out->eph = finite_or_nan(fix->eph);
    out->speed = finite_or_nan(fix->speed);
    out->track = finite_or_nan(fix->track);
    return CGPS_READ_FIX;
}

static int cgps_send(cgps_session *session, const char *command) {
    size_t length = strlen(command);
    ssize_t sent = send(session->data.gps_fd, command, length, MSG_NOSIGNAL);
    return sent == (ssize_t)length ? 0 : -1;
}

int cgps_probe(cgps_session *session) {
    return cgps_send(session, "?VERSION;\n");
}

void cgps_close(cgps_session *session) {
    if (session == NULL) {
        return;
    }
    // No ?WATCH={"enable":false}: gpsd forgets a watcher when its connection closes, and a write to a
    // connection gpsd has dropped would raise SIGPIPE.
    gps_close(&session->data);
    free(session);
}

void cgps_name_reader_thread(void) {
    pthread_setname_np(pthread_self(), "gpsd-reader");
}
