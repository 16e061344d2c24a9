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
    double speed;       // m/s, NaN when absent
} cgps_fix;

enum {
    CGPS_READ_GONE = -1,    // gpsd closed the connection or the socket failed
    CGPS_READ_OTHER = 0,    // a partial or non-TPV message; nothing to report
    CGPS_READ_FIX = 1,      // `out` holds a TPV report
};

/// Connects and asks for JSON watch reports. Returns NULL and sets *error (a libgps code) on failure.
cgps_session *cgps_open(const char *host, const char *port, int *error);
/// Human-readable text for a libgps error code from cgps_open.
const char *cgps_error_text(int error);
/// Waits up to timeout_us for data: 1 data, 0 timeout, -1 socket error.
int cgps_wait(cgps_session *session, int timeout_us);
/// Reads one message; see CGPS_READ_*.
int cgps_read(cgps_session *session, cgps_fix *out);
void cgps_close(cgps_session *session);

#endif
