#include "CBuildStamp.h"

#ifndef FIELDLOG_VERSION
#define FIELDLOG_VERSION "unknown"
#endif

const char *fieldlog_build_version(void) {
    return FIELDLOG_VERSION;
}
