#ifndef CMOSQUITTO_LOADER_H
#define CMOSQUITTO_LOADER_H

#include <stddef.h>

/// Loads libmosquitto, once per process; 0, or -1 with the reason in `error`. Until it has loaded, the
/// library's functions the shim calls fail as libmosquitto's do (MOSQ_ERR_NOT_SUPPORTED, NULL).
int cmosq_load(char *error, size_t error_capacity);

#endif
