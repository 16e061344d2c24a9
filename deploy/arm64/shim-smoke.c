// deploy/arm64/shim-smoke.c: exercises fieldlog's three C shims (CJPEG, CExifShim, CGPSShim) through their
// public headers, the way the Swift code calls them. deploy/arm64/check-shims builds it twice, for aarch64
// against a Debian 12 arm64 sysroot (run under qemu-aarch64-static) and for the host, and compares the two.
//
//   shim-smoke libs                         the C libraries loaded and their versions
//   shim-smoke jpeg PHOTOS_DIR OUT_DIR      thumbnails real photos (written to OUT_DIR) and feeds bad files
//   shim-smoke exif DEMO_PHOTOS_DIR         reads the EXIF position of every demo photo
//   shim-smoke gps-closed                   cgps_open to a closed loopback port must fail cleanly
//   shim-smoke gps PORT FIXES               reads FIXES timed fixes from a gpsd (gpsfake) on 127.0.0.1:PORT
//   shim-smoke compare A.jpg B.jpg MIN_DB   PSNR of two JPEGs of the same size (used on the host only)
//
// Prints "PASS name: ..." or "FAIL name: ..." per check and "DATA ..." lines for the cross-architecture
// comparison; exits 1 if any check failed.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <link.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jpeglib.h>

#include "CExifShim.h"
#include "CGPSShim.h"
#include "CJPEG.h"

static int failures = 0;

static void check(int ok, const char *name, const char *format, ...) {
    va_list args;
    va_start(args, format);
    printf("%s %s: ", ok ? "PASS" : "FAIL", name);
    vprintf(format, args);
    printf("\n");
    va_end(args);
    fflush(stdout);
    if (!ok) {
        failures++;
    }
}

static uint8_t *read_file(const char *path, size_t *size) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        return NULL;
    }
    size_t capacity = 1 << 16, used = 0;
    uint8_t *data = malloc(capacity);
    size_t got;
    while (data != NULL && (got = fread(data + used, 1, capacity - used, file)) > 0) {
        used += got;
        if (used == capacity) {
            capacity *= 2;
            uint8_t *grown = realloc(data, capacity);
            if (grown == NULL) {
                free(data);
            }
            data = grown;
        }
    }
    fclose(file);
    *size = used;
    return data;
}

static const char *code_name(int code) {
    static const char *names[] = {"OK", "EMPTY", "NOT_JPEG", "TRUNCATED", "CORRUPT", "TOO_LARGE",
                                  "TOO_MANY_SCANS", "UNSUPPORTED", "OUT_OF_MEMORY", "INVALID_OPTIONS", "INTERNAL"};
    return code >= 0 && code <= CJPEG_INTERNAL ? names[code] : "?";
}

// fieldlog's Thumbnailer defaults (Sources/FieldLog/Thumbnails/Thumbnailer.swift).
static cjpeg_options default_options(void) {
    cjpeg_options options = {
        .size = 320, .quality = 80, .max_pixels = 50000000, .max_scans = 100, .max_memory = 512 << 20,
        .dc_only = true,
    };
    return options;
}

// --- libs ---------------------------------------------------------------------------------------------------

static int print_object(struct dl_phdr_info *info, size_t size, void *context) {
    (void)size;
    (void)context;
    if (info->dlpi_name != NULL && info->dlpi_name[0] != '\0') {
        printf("DATA loaded %s\n", info->dlpi_name);
    }
    return 0;
}

static void run_libs(void) {
    dl_iterate_phdr(print_object, NULL);
    int version = cjpeg_library_version();
    check(version > 0, "libjpeg-turbo", "version %d (libjpeg API %d)", version, JPEG_LIB_VERSION);
}

// --- jpeg ---------------------------------------------------------------------------------------------------

// Decodes a thumbnail with plain libjpeg (it was just made by libjpeg, so the default error handler, which
// exits, is acceptable here) and returns its pixels.
static uint8_t *decode(const uint8_t *jpeg, size_t size, int *width, int *height, int *components) {
    struct jpeg_decompress_struct info;
    struct jpeg_error_mgr error;
    info.err = jpeg_std_error(&error);
    jpeg_create_decompress(&info);
    jpeg_mem_src(&info, jpeg, (unsigned long)size);
    jpeg_read_header(&info, TRUE);
    jpeg_start_decompress(&info);
    *width = (int)info.output_width;
    *height = (int)info.output_height;
    *components = info.output_components;
    size_t stride = (size_t)*width * (size_t)*components;
    uint8_t *pixels = malloc(stride * (size_t)*height);
    while (info.output_scanline < info.output_height) {
        JSAMPROW row = pixels + stride * info.output_scanline;
        jpeg_read_scanlines(&info, &row, 1);
    }
    jpeg_finish_decompress(&info);
    jpeg_destroy_decompress(&info);
    return pixels;
}

static uint64_t fnv1a(const uint8_t *data, size_t size) {
    uint64_t hash = 1469598103934665603ULL;
    for (size_t i = 0; i < size; i++) {
        hash = (hash ^ data[i]) * 1099511628211ULL;
    }
    return hash;
}

// A real photo: the thumbnail must be made, have the right size and aspect, decode again, and look like
// a picture (not flat grey).
static void thumbnail_photo(const char *dir, const char *name, const char *out_dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t size = 0;
    uint8_t *data = read_file(path, &size);
    if (data == NULL) {
        check(0, name, "cannot read %s: %s", path, strerror(errno));
        return;
    }
    cjpeg_options options = default_options();
    cjpeg_result result;
    memset(&result, 0, sizeof result);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int code = cjpeg_thumbnail(data, size, &options, &result);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    free(data);
    if (code != CJPEG_OK) {
        check(0, name, "cjpeg_thumbnail returned %s: %s", code_name(code), result.message);
        cjpeg_result_free(&result);
        return;
    }
    // Expected size: the source turned upright, its long side brought down to 320 (never up).
    int sw = result.source_width, sh = result.source_height;
    if (result.orientation >= 5) {
        int t = sw;
        sw = sh;
        sh = t;
    }
    int longest = sw > sh ? sw : sh;
    int target = longest < options.size ? longest : options.size;
    double ew = (double)sw * target / longest, eh = (double)sh * target / longest;
    int size_ok = fabs(result.width - ew) <= 1.0 && fabs(result.height - eh) <= 1.0
        && (result.width == target || result.height == target);
    int markers = result.jpeg_size > 4 && result.jpeg[0] == 0xFF && result.jpeg[1] == 0xD8
        && result.jpeg[result.jpeg_size - 2] == 0xFF && result.jpeg[result.jpeg_size - 1] == 0xD9;

    int dw = 0, dh = 0, dc = 0;
    uint8_t *pixels = decode(result.jpeg, result.jpeg_size, &dw, &dh, &dc);
    size_t count = (size_t)dw * (size_t)dh;
    double mean[3] = {0, 0, 0}, sq[3] = {0, 0, 0};
    for (size_t i = 0; i < count; i++) {
        for (int c = 0; c < dc; c++) {
            double v = pixels[i * (size_t)dc + (size_t)c];
            mean[c] += v;
            sq[c] += v * v;
        }
    }
    double spread = 0;
    for (int c = 0; c < dc; c++) {
        mean[c] /= (double)count;
        double sd = sqrt(sq[c] / (double)count - mean[c] * mean[c]);
        spread = sd > spread ? sd : spread;
    }
    free(pixels);
    int decoded_ok = dw == result.width && dh == result.height && dc == result.components;
    int pixels_ok = spread > 8.0 && mean[0] > 4.0 && mean[0] < 251.0;

    char out_path[4096];
    snprintf(out_path, sizeof out_path, "%s/%s", out_dir, name);
    FILE *out = fopen(out_path, "wb");
    int written = out != NULL && fwrite(result.jpeg, 1, result.jpeg_size, out) == result.jpeg_size;
    if (out != NULL && fclose(out) != 0) {
        written = 0;
    }

    char label[300];
    snprintf(label, sizeof label, "thumbnail %s", name);
    check(size_ok && markers && decoded_ok && pixels_ok && written, label,
          "%dx%d orientation %d -> %dx%d (%d component%s, DCT scale %d/8%s), %zu bytes, "
          "decodes to %dx%d, mean %.1f, sd up to %.1f, %.1f ms",
          result.source_width, result.source_height, result.orientation, result.width, result.height,
          result.components, result.components == 1 ? "" : "s", result.scale_eighths,
          result.dc_only ? ", DC scans only" : "", result.jpeg_size, dw, dh, mean[0], spread, ms);
    printf("DATA thumb %s %dx%d %d %d %d %d fnv=%016llx\n", name, result.width, result.height, result.components,
           result.orientation, result.scale_eighths, result.dc_only, (unsigned long long)fnv1a(result.jpeg, result.jpeg_size));
    cjpeg_result_free(&result);
}

// A bad file: cjpeg_thumbnail must come back with `expected` and a message (reaching the check at all
// means it did not crash or exit).
static void reject(const char *label, const uint8_t *data, size_t size, cjpeg_options options, int expected) {
    cjpeg_result result;
    memset(&result, 0, sizeof result);
    int code = cjpeg_thumbnail(data, size, &options, &result);
    check(code == expected && result.jpeg == NULL && result.message[0] != '\0', label, "%s (expected %s): %s",
          code_name(code), code_name(expected), result.message);
    printf("DATA %s %s\n", label, code_name(code));
    cjpeg_result_free(&result);
    cjpeg_result_free(&result);  // documented as safe twice
}

static void reject_file(const char *dir, const char *name, cjpeg_options options, int expected) {
    char path[4096], label[300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(label, sizeof label, "reject %s", name);
    size_t size = 0;
    uint8_t *data = read_file(path, &size);
    if (data == NULL) {
        check(0, label, "cannot read %s: %s", path, strerror(errno));
        return;
    }
    reject(label, data, size, options, expected);
    free(data);
}

static void run_jpeg(const char *dir, const char *out_dir) {
    static const char *photos[] = {
        "p05_left01_gray.jpg",    // baseline grayscale
        "p09_ela_original.jpg",   // progressive 4:4:4
        "p13_aloeL.jpg",          // baseline 4:2:0
        "p27_life_orient6.jpg",   // progressive 4:2:2, 6.3 MP, EXIF orientation 6 (the 1/8 DC-only path)
        "a11_cmyk_pillow.jpg",    // Adobe CMYK/YCCK
        "a12_small_orient6.jpg",  // smaller than a thumbnail, orientation 6
        "a14_arith_photo.jpg",    // arithmetic coded
    };
    for (size_t i = 0; i < sizeof photos / sizeof photos[0]; i++) {
        thumbnail_photo(dir, photos[i], out_dir);
    }

    cjpeg_options options = default_options();
    reject_file(dir, "a06_corrupt_dht.jpg", options, CJPEG_CORRUPT);
    reject_file(dir, "a01_empty.jpg", options, CJPEG_EMPTY);
    reject_file(dir, "a07_bomb_header_65000.jpg", options, CJPEG_TOO_LARGE);
    reject_file(dir, "a09_bomb_30000_arith.jpg", options, CJPEG_TOO_LARGE);
    reject_file(dir, "a15_scan_bomb_5000.jpg", options, CJPEG_TOO_LARGE);
    cjpeg_options big = options;
    big.size = 2000;
    big.max_pixels = 100000000;
    reject_file(dir, "a15_scan_bomb_5000.jpg", big, CJPEG_CORRUPT);  // the full decode meets the repeated scans

    char path[4096];
    snprintf(path, sizeof path, "%s/p13_aloeL.jpg", dir);
    size_t size = 0;
    uint8_t *data = read_file(path, &size);
    if (data == NULL) {
        check(0, "reject p13 damaged", "cannot read %s", path);
        return;
    }
    reject("reject p13_aloeL.jpg cut in half", data, size / 2, options, CJPEG_TRUNCATED);
    uint64_t state = 0x9E3779B97F4A7C15ULL;  // 256 bytes of xorshift noise over the middle
    for (size_t i = size / 2; i < size / 2 + 256 && i < size; i++) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        data[i] = (uint8_t)state;
    }
    reject("reject p13_aloeL.jpg with noise in the middle", data, size, options, CJPEG_CORRUPT);
    free(data);
    static const uint8_t png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
    reject("reject a PNG header", png, sizeof png, options, CJPEG_NOT_JPEG);
}

// --- compare (host only) ------------------------------------------------------------------------------------

static int run_compare(const char *a_path, const char *b_path, double min_db) {
    size_t a_size = 0, b_size = 0;
    uint8_t *a = read_file(a_path, &a_size), *b = read_file(b_path, &b_size);
    if (a == NULL || b == NULL || a_size == 0 || b_size == 0) {
        printf("compare: cannot read %s or %s\n", a_path, b_path);
        return 1;
    }
    int aw, ah, ac, bw, bh, bc;
    uint8_t *pa = decode(a, a_size, &aw, &ah, &ac), *pb = decode(b, b_size, &bw, &bh, &bc);
    if (aw != bw || ah != bh || ac != bc) {
        printf("compare: %dx%dx%d vs %dx%dx%d\n", aw, ah, ac, bw, bh, bc);
        return 1;
    }
    size_t n = (size_t)aw * (size_t)ah * (size_t)ac, differ = 0;
    double sum = 0;
    int worst = 0;
    for (size_t i = 0; i < n; i++) {
        int d = (int)pa[i] - (int)pb[i];
        sum += (double)d * d;
        differ += d != 0;
        worst = abs(d) > worst ? abs(d) : worst;
    }
    int identical = a_size == b_size && memcmp(a, b, a_size) == 0;
    double psnr = sum == 0 ? INFINITY : 10 * log10(255.0 * 255.0 / (sum / (double)n));
    printf("%s, %.2f%% of samples differ, by at most %d, PSNR %.1f dB\n",
           identical ? "byte-identical" : "bytes differ", 100.0 * (double)differ / (double)n, worst, psnr);
    return psnr >= min_db ? 0 : 1;
}

// --- exif ---------------------------------------------------------------------------------------------------

static void run_exif(const char *dir) {
    static const char *photos[] = {
        "Bridge_by_Sander_Klootwijk.jpg", "seeding_by_Clements_Engelhardt.jpg", "Dragonfly_by_Bolly.jpg",
        "sunset_by_Aitzol_Berasategi.jpg", "Kleiber_by_Lukas_Baubkus.jpg", "friends_by_Aitzol_Berasategi.jpg",
        "picosdeeuropa_by_Aitzol_Berasategi.jpg", "aitzgorri_by_Aitzol_Berasategi.jpg",
    };
    for (size_t i = 0; i < sizeof photos / sizeof photos[0]; i++) {
        char path[4096], label[300];
        snprintf(path, sizeof path, "%s/%s", dir, photos[i]);
        snprintf(label, sizeof label, "exif %s", photos[i]);
        cexif_info info;
        memset(&info, 0x55, sizeof info);  // the shim must fill every field
        int code = cexif_read_file(path, &info);
        // demo/photos/README.md: every photo is tagged within a few hundred metres of the walk on the
        // IJsselmeer (52.85014 N, 5.3135817 E, going 430 m south-west).
        int near = code == CEXIF_GPS && info.has_gps && info.latitude > 52.83 && info.latitude < 52.87
            && info.longitude > 5.28 && info.longitude < 5.34;
        check(near && info.artist[0] != '\0' && info.copyright[0] != '\0', label,
              "%.6f, %.6f; \"%s\" by %s (%s)%s%s", info.latitude, info.longitude, info.title, info.artist,
              info.copyright, info.taken[0] ? ", taken " : ", no date", info.taken);
        printf("DATA exif %s code=%d lat=%.12f lon=%.12f title=%s|artist=%s|copyright=%s|taken=%s\n", photos[i],
               code, info.latitude, info.longitude, info.title, info.artist, info.copyright, info.taken);
    }
    // The same block from memory, and the error paths.
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, photos[0]);
    size_t size = 0;
    uint8_t *data = read_file(path, &size);
    cexif_info from_file, from_memory;
    cexif_read_file(path, &from_file);
    int code = data != NULL ? cexif_read_data(data, size, &from_memory) : -99;
    check(code == CEXIF_GPS && from_memory.latitude == from_file.latitude
              && from_memory.longitude == from_file.longitude,
          "exif from memory", "cexif_read_data gives the same position as cexif_read_file");
    free(data);
    cexif_info info;
    code = cexif_read_file("/nonexistent/fieldlog.jpg", &info);
    check(code == CEXIF_CANNOT_OPEN && info.error_number == ENOENT, "exif missing file",
          "code %d, errno %d (%s)", code, info.error_number, strerror(info.error_number));
    static const unsigned char not_jpeg[] = "<html>no</html>";
    code = cexif_read_data(not_jpeg, sizeof not_jpeg, &info);
    check(code == CEXIF_NO_EXIF && !info.has_gps, "exif not a JPEG", "code %d", code);
}

// --- gps ----------------------------------------------------------------------------------------------------

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void run_gps_closed(void) {
    // A port that was free a moment ago: bind to port 0, read the port back, close.
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = 0};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (fd < 0 || bind(fd, (struct sockaddr *)&address, sizeof address) != 0
        || getsockname(fd, (struct sockaddr *)&address, &length) != 0) {
        check(0, "gps closed port", "cannot find a free port: %s", strerror(errno));
        return;
    }
    close(fd);
    char port[16];
    snprintf(port, sizeof port, "%u", ntohs(address.sin_port));
    int error = 0;
    cgps_session *session = cgps_open("127.0.0.1", port, &error);
    const char *text = cgps_error_text(error);
    check(session == NULL && error != 0 && text != NULL && text[0] != '\0', "gps closed port",
          "cgps_open(127.0.0.1:%s) -> NULL, error %d: %s", port, error, text != NULL ? text : "(null)");
    printf("DATA gps-closed error=%d text=%s\n", error, text != NULL ? text : "(null)");
    cgps_close(session);  // NULL is allowed
}

static void run_gps(const char *port, int want_fixes) {
    double start = now();
    int error = 0, attempts = 0;
    cgps_session *session = NULL;
    // gpsfake starts its gpsd in the background: retry for a while.
    while (session == NULL && now() - start < 20) {
        attempts++;
        session = cgps_open("127.0.0.1", port, &error);
        if (session == NULL) {
            usleep(100 * 1000);
        }
    }
    if (session == NULL) {
        check(0, "gps gpsfake", "no gpsd on 127.0.0.1:%s after %d attempts: %s", port, attempts,
              cgps_error_text(error));
        return;
    }
    int fixes = 0, positions = 0, timed = 0, outside = 0, reads = 0;
    cgps_fix first, last;
    memset(&first, 0, sizeof first);
    memset(&last, 0, sizeof last);
    const char *ended = "timeout";
    while (now() - start < 90) {
        int waiting = cgps_wait(session, 500000);
        if (waiting < 0) {
            ended = "socket error";
            break;
        }
        if (waiting == 0) {
            continue;
        }
        cgps_fix fix;
        int status = cgps_read(session, &fix);
        reads++;
        if (status == CGPS_READ_GONE) {
            ended = "gpsd closed the connection";
            break;
        }
        if (status != CGPS_READ_FIX) {
            continue;
        }
        fixes++;
        if (fix.mode >= 2 && !isnan(fix.lat) && !isnan(fix.lon)) {
            positions++;
            // The capture: a boat on the IJsselmeer, 52.85014 N 5.3135817 E, 430 m south-west.
            if (!(fix.lat > 52.83 && fix.lat < 52.87 && fix.lon > 5.28 && fix.lon < 5.34)) {
                outside++;
            }
            // The capture's first sentences carry a position but no date yet; count the fixes with both.
            if (fix.has_time && fix.time_sec > 1500000000) {
                if (timed == 0) {
                    first = fix;
                }
                last = fix;
                timed++;
            }
        }
        if (timed >= want_fixes) {
            ended = "enough fixes";
            break;
        }
    }
    cgps_close(session);
    char first_time[32] = "", last_time[32] = "";
    time_t t = (time_t)first.time_sec;
    strftime(first_time, sizeof first_time, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    t = (time_t)last.time_sec;
    strftime(last_time, sizeof last_time, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    check(timed >= want_fixes && outside == 0, "gps gpsfake",
          "%d TPV reports, %d with a position (%d off the IJsselmeer), %d of them timed, in %d reads, %.1f s, "
          "ended: %s; first timed %.6f, %.6f at %s, last %.6f, %.6f at %s (eph %.1f m, speed %.2f m/s)",
          fixes, positions, outside, timed, reads, now() - start, ended, first.lat, first.lon, first_time, last.lat,
          last.lon, last_time, last.eph, last.speed);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "libs") == 0 && argc == 2) {
        run_libs();
    } else if (strcmp(mode, "jpeg") == 0 && argc == 4) {
        run_jpeg(argv[2], argv[3]);
    } else if (strcmp(mode, "exif") == 0 && argc == 3) {
        run_exif(argv[2]);
    } else if (strcmp(mode, "gps-closed") == 0 && argc == 2) {
        run_gps_closed();
    } else if (strcmp(mode, "gps") == 0 && argc == 4) {
        run_gps(argv[2], atoi(argv[3]));
    } else if (strcmp(mode, "compare") == 0 && argc == 5) {
        return run_compare(argv[2], argv[3], atof(argv[4]));
    } else {
        fprintf(stderr, "usage: shim-smoke libs | jpeg PHOTOS OUT | exif DIR | gps-closed | gps PORT FIXES"
                        " | compare A B MIN_DB\n");
        return 2;
    }
    return failures == 0 ? 0 : 1;
}
