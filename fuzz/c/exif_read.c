// libFuzzer target for the EXIF reader (Sources/CExifShim/shim.c): cexif_read_data on the input, and
// now and then cexif_read_file on the same bytes in a memfd (the path LocalPhotoSource takes), which
// must agree. Checks what Swift relies on: NUL-terminated text without control characters, positions
// in range.
#define _GNU_SOURCE
#include "CExifShim.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "invariant broken: %s\n", what);
        abort();
    }
}

static void check_text(const char *text, size_t capacity) {
    const char *end = memchr(text, 0, capacity);
    check(end != NULL, "text NUL-terminated");
    for (const char *p = text; p < end; p++) {
        unsigned char c = (unsigned char)*p;
        check(c >= 0x20 && c != 0x7f, "no control characters in text");
    }
    check(end == text || (text[0] != ' ' && end[-1] != ' '), "text trimmed");
}

static void check_info(int code, const cexif_info *info) {
    check(code == CEXIF_GPS || code == CEXIF_NO_GPS || code == CEXIF_NO_EXIF || code == CEXIF_UNREADABLE
              || code == CEXIF_GPS_VOID || code == CEXIF_OUT_OF_RANGE,
          "a result for bytes in memory");
    check((code == CEXIF_GPS) == info->has_gps, "has_gps matches the result");
    if (info->has_gps) {
        check(isfinite(info->latitude) && fabs(info->latitude) <= 90, "latitude in range");
        check(isfinite(info->longitude) && fabs(info->longitude) <= 180, "longitude in range");
    } else {
        check(info->latitude == 0 && info->longitude == 0, "no position without has_gps");
    }
    check_text(info->title, sizeof(info->title));
    check_text(info->artist, sizeof(info->artist));
    check_text(info->copyright, sizeof(info->copyright));
    check_text(info->taken, sizeof(info->taken));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cexif_info info;
    int code = cexif_read_data(data, size, &info);
    check_info(code, &info);
    if (size > 0 && data[0] == 0xFF && (size & 7) == 0) {
        static int fd = -1;
        if (fd < 0) fd = memfd_create("exif-fuzz", MFD_CLOEXEC);
        check(fd >= 0, "memfd_create");
        check(ftruncate(fd, 0) == 0 && pwrite(fd, data, size, 0) == (ssize_t)size, "memfd write");
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        cexif_info from_file;
        int file_code = cexif_read_file(path, &from_file);
        check(file_code == code, "file and memory agree on the result");
        check(memcmp(&from_file, &info, sizeof(info)) == 0, "file and memory agree on the fields");
    }
    return 0;
}
