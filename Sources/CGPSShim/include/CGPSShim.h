// A narrow view of libgps for Swift: one opaque session and one plain fix struct.
// Swift cannot `#if` on C macros, so every libgps version difference is settled here.
#ifndef CGPSSHIM_H
#define CGPSSHIM_H

#include <stdbool.h>
#include <stdint.h>

typedef struct cgps_session cgps_session;

/// One TPV report, with libgps's "not set" states already turned into flags and NaNs.
typedef struct {
    bool has_time;      // GPS time present (TIME_SET and a non-zero timestamp)
    int64_t time_sec;   // seconds since 1970-01-01 UTC
    int64_t time_nsec;
    int mode;           // 0 not seen, 1 no fix, 2 2D, 3 3D (gpsd's MODE_*)
    bool differential;  // DGPS, RTK or better, as far as gpsd reports it
    double lat;         // degrees, NaN when absent
    double lon;
    double alt;         // metres above the ellipsoid (altHAE), NaN when absent or not 3D
    double eph;         // metres, NaN when absent
    double speed;       // m/s over ground, NaN when absent
    double track;       // degrees from true north, NaN when absent (gpsd sends none when it derived `speed` itself)
} cgps_fix;

enum {
    CGPS_READ_BAD = -2,     // a line that is not a whole gpsd JSON object (nothing to report)
    CGPS_READ_GONE = -1,    // gpsd closed the connection, the socket failed, or a line overflowed libgps
    CGPS_READ_NONE = 0,     // no whole line yet
    CGPS_READ_OTHER = 1,    // a gpsd message other than a TPV report
    CGPS_READ_FIX = 2,      // `out` holds a TPV report
    CGPS_READ_VERSION = 3,  // gpsd's VERSION: what it sends first on every connection, and answers to a probe
};

/// Connects (giving up after 2 s without an answer) and asks for JSON watch reports. Returns NULL and
/// sets *error (for cgps_error_text) on failure.
cgps_session *cgps_open(const char *host, const char *port, int *error);
/// Human-readable text for a libgps error code from cgps_open.
const char *cgps_error_text(int error);
/// Waits up to timeout_us for data: 1 data, 0 timeout, -1 socket error.
int cgps_wait(cgps_session *session, int timeout_us);
/// Reads one message; see CGPS_READ_*.
int cgps_read(cgps_session *session, cgps_fix *out);
/// Asks gpsd for its VERSION: a live gpsd answers even with no receiver attached. 0 sent, -1 failed.
int cgps_probe(cgps_session *session);
void cgps_close(cgps_session *session);
/// Names the calling thread (the reader's) "gpsd-reader", for top -H and perf.
void cgps_name_reader_thread(void);

#endif
