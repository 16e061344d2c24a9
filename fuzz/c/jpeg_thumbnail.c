// libFuzzer target for cjpeg_thumbnail (Sources/CJPEG/shim.c) with the options fieldlog uses
// (Thumbnailer's defaults: 320 px, quality 80, 50 MP, 100 scans, reading only the scans the scale
// needs, memory given back), except libjpeg's memory cap: 64 MiB instead of 512 MiB, so that
// AddressSanitizer's RSS limit is never what stops a large file. The last byte of the input picks a
// second set of options now and then (other sizes, full decode of progressive files, quality 95).
#include "CJPEG.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(int ok, const char *what, const cjpeg_result *result) {
    if (!ok) {
        fprintf(stderr, "invariant broken: %s (%dx%d, message: %s)\n", what, result->width, result->height,
                result->message);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cjpeg_options options = {
        .size = 320, .quality = 80, .max_pixels = 50000000, .max_scans = 100,
        .max_memory = 64 << 20, .dc_only = true, .keep_memory = false,
    };
    if (size > 0 && data[size - 1] >= 0xF0) {
        static const int sizes[] = {1, 7, 64, 160, 640, 1024, 2048, 65535};
        uint8_t pick = data[size - 1] & 0x0F;
        options.size = sizes[pick & 7];
        options.dc_only = (pick & 8) == 0;
        options.quality = 95;
    }
    cjpeg_result result;
    int code = cjpeg_thumbnail(data, size, &options, &result);
    check(code >= CJPEG_OK && code <= CJPEG_INTERNAL, "a known result code", &result);
    check(code != CJPEG_INVALID_OPTIONS, "valid options accepted", &result);
    check(memchr(result.message, 0, sizeof(result.message)) != NULL, "message NUL-terminated", &result);
    if (code == CJPEG_OK) {
        check(result.jpeg != NULL && result.jpeg_size > 4, "a thumbnail", &result);
        check(result.jpeg[0] == 0xFF && result.jpeg[1] == 0xD8, "the thumbnail is a JPEG", &result);
        check(result.width >= 1 && result.height >= 1, "a non-empty thumbnail", &result);
        check(result.width <= options.size && result.height <= options.size, "within the size asked", &result);
        check(result.orientation >= 1 && result.orientation <= 8, "an EXIF orientation", &result);
        check((int64_t)result.source_width * result.source_height <= options.max_pixels, "within max_pixels",
              &result);
    } else {
        check(result.jpeg == NULL && result.jpeg_size == 0, "no thumbnail on failure", &result);
        check(result.message[0] != '\0', "a message on failure", &result);
    }
    cjpeg_result_free(&result);
    return 0;
}
