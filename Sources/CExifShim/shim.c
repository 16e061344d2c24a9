#include "CExifShim.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <libexif/exif-data.h>
#include <libexif/exif-loader.h>
#include <libexif/exif-utils.h>

// The EXIF block sits in the file's first segments; reading stops here even if the loader wants more
// (a file that is not a JPEG, or APP segments stacked in front of it).
#define CEXIF_HEAD_LIMIT (1 << 20)

// Copies text of `length` bytes into `out`: stops at the first NUL, turns control characters into spaces,
// trims spaces, and cuts at a UTF-8 boundary to fit.
static void copy_text(const unsigned char *text, size_t length, char *out, size_t capacity) {
    size_t used = 0;
    for (size_t i = 0; i < length && text[i] != 0 && used + 1 < capacity; i++) {
        unsigned char c = text[i];
        out[used++] = (char)((c < 0x20 || c == 0x7f) ? ' ' : c);
    }
    // A multi-byte sequence cut by the capacity is dropped whole.
    if (used + 1 >= capacity) {
        size_t end = used;
        while (end > 0 && (((unsigned char)out[end - 1]) & 0xC0) == 0x80) {
            end--;
        }
        if (end > 0 && ((unsigned char)out[end - 1]) >= 0xC0) {
            unsigned char lead = (unsigned char)out[end - 1];
            size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
            if (used - (end - 1) < need) {
                used = end - 1;
            }
        }
    }
    while (used > 0 && out[used - 1] == ' ') {
        used--;
    }
    size_t start = 0;
    while (start < used && out[start] == ' ') {
        start++;
    }
    memmove(out, out + start, used - start);
    out[used - start] = '\0';
}

static ExifEntry *entry(ExifData *data, ExifIfd ifd, ExifTag tag) {
    ExifContent *content = data->ifd[ifd];
    ExifEntry *found = content != NULL ? exif_content_get_entry(content, tag) : NULL;
    if (found == NULL || found->data == NULL || found->size == 0) {
        return NULL;
    }
    return found;
}

static void ascii_tag(ExifData *data, ExifIfd ifd, ExifTag tag, char *out, size_t capacity) {
    ExifEntry *e = entry(data, ifd, tag);
    if (e != NULL && (e->format == EXIF_FORMAT_ASCII || e->format == EXIF_FORMAT_UNDEFINED)) {
        copy_text(e->data, e->size, out, capacity);
    }
}

// Copyright is "photographer NUL editor"; a photographer's part of one space means "editor only".
static void copyright_tag(ExifData *data, char *out, size_t capacity) {
    ExifEntry *e = entry(data, EXIF_IFD_0, EXIF_TAG_COPYRIGHT);
    if (e == NULL || e->format != EXIF_FORMAT_ASCII) {
        return;
    }
    copy_text(e->data, e->size, out, capacity);
    if (out[0] == '\0') {
        const unsigned char *nul = memchr(e->data, 0, e->size);
        if (nul != NULL) {
            size_t skip = (size_t)(nul - e->data) + 1;
            copy_text(nul + 1, e->size - skip, out, capacity);
        }
    }
}

static size_t put_utf8(uint32_t scalar, unsigned char *out) {
    if (scalar < 0x80) {
        out[0] = (unsigned char)scalar;
        return 1;
    }
    if (scalar < 0x800) {
        out[0] = (unsigned char)(0xC0 | (scalar >> 6));
        out[1] = (unsigned char)(0x80 | (scalar & 0x3F));
        return 2;
    }
    if (scalar < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (scalar >> 12));
        out[1] = (unsigned char)(0x80 | ((scalar >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (scalar & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (scalar >> 18));
    out[1] = (unsigned char)(0x80 | ((scalar >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((scalar >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (scalar & 0x3F));
    return 4;
}

// XPTitle: UTF-16LE bytes (format BYTE), NUL-terminated; unpaired surrogates become U+FFFD.
static void xp_title_tag(ExifData *data, char *out, size_t capacity) {
    ExifEntry *e = entry(data, EXIF_IFD_0, EXIF_TAG_XP_TITLE);
    if (e == NULL || (e->format != EXIF_FORMAT_BYTE && e->format != EXIF_FORMAT_UNDEFINED)) {
        return;
    }
    unsigned char utf8[CEXIF_TEXT_CAPACITY * 2];
    size_t used = 0;
    size_t units = e->size / 2;
    for (size_t i = 0; i < units && used + 4 < sizeof(utf8); i++) {
        uint32_t unit = (uint32_t)e->data[2 * i] | ((uint32_t)e->data[2 * i + 1] << 8);
        if (unit == 0) {
            break;
        }
        uint32_t scalar = unit;
        if (unit >= 0xD800 && unit <= 0xDBFF && i + 1 < units) {
            uint32_t low = (uint32_t)e->data[2 * i + 2] | ((uint32_t)e->data[2 * i + 3] << 8);
            if (low >= 0xDC00 && low <= 0xDFFF) {
                scalar = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                i++;
            } else {
                scalar = 0xFFFD;
            }
        } else if (unit >= 0xD800 && unit <= 0xDFFF) {
            scalar = 0xFFFD;
        }
        used += put_utf8(scalar, utf8 + used);
    }
    copy_text(utf8, used, out, capacity);
}

// A GPSLatitude/GPSLongitude value: up to three rationals (degrees, minutes, seconds). NAN if unusable.
static double coordinate(ExifData *data, ExifTag value_tag, ExifTag ref_tag, char positive, char negative) {
    ExifEntry *value = entry(data, EXIF_IFD_GPS, value_tag);
    ExifEntry *ref = entry(data, EXIF_IFD_GPS, ref_tag);
    if (value == NULL || ref == NULL || value->format != EXIF_FORMAT_RATIONAL || value->components < 1
        || value->size < 8 * value->components || ref->format != EXIF_FORMAT_ASCII) {
        return NAN;
    }
    ExifByteOrder order = exif_data_get_byte_order(data);
    static const double scale[3] = {1.0, 60.0, 3600.0};
    double degrees = 0;
    unsigned long parts = value->components < 3 ? value->components : 3;
    for (unsigned long i = 0; i < parts; i++) {
        ExifRational r = exif_get_rational(value->data + 8 * i, order);
        if (r.denominator == 0) {
            return NAN;
        }
        degrees += ((double)r.numerator / (double)r.denominator) / scale[i];
    }
    char hemisphere = (char)(ref->data[0] & ~0x20);  // upper case
    if (hemisphere == positive) {
        return degrees;
    }
    if (hemisphere == negative) {
        return -degrees;
    }
    return NAN;
}

static void read_gps(ExifData *data, cexif_info *out) {
    // GPSStatus "V" marks a void measurement (receiver without a fix).
    ExifEntry *status = entry(data, EXIF_IFD_GPS, EXIF_TAG_GPS_STATUS);
    if (status != NULL && status->format == EXIF_FORMAT_ASCII && (status->data[0] & ~0x20) == 'V') {
        return;
    }
    double lat = coordinate(data, EXIF_TAG_GPS_LATITUDE, EXIF_TAG_GPS_LATITUDE_REF, 'N', 'S');
    double lon = coordinate(data, EXIF_TAG_GPS_LONGITUDE, EXIF_TAG_GPS_LONGITUDE_REF, 'E', 'W');
    if (!isfinite(lat) || !isfinite(lon) || fabs(lat) > 90 || fabs(lon) > 180) {
        return;
    }
    // Exactly 0/0 is what cameras write when they had no fix, not a photo in the Gulf of Guinea.
    if (lat == 0 && lon == 0) {
        return;
    }
    out->has_gps = true;
    out->latitude = lat;
    out->longitude = lon;
}

// Parses the EXIF block the loader collected.
static int interpret(ExifLoader *loader, cexif_info *out) {
    const unsigned char *block = NULL;
    unsigned int size = 0;
    exif_loader_get_buf(loader, &block, &size);
    if (block == NULL || size == 0) {
        return CEXIF_NO_EXIF;
    }
    ExifData *data = exif_data_new();
    if (data == NULL) {
        return CEXIF_NO_MEMORY;
    }
    // Read what the file says: no tags added or "fixed" to the specification's defaults.
    exif_data_unset_option(data, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION);
    exif_data_load_data(data, block, size);
    read_gps(data, out);
    ascii_tag(data, EXIF_IFD_0, EXIF_TAG_IMAGE_DESCRIPTION, out->title, sizeof(out->title));
    if (out->title[0] == '\0') {
        xp_title_tag(data, out->title, sizeof(out->title));
    }
    ascii_tag(data, EXIF_IFD_0, EXIF_TAG_ARTIST, out->artist, sizeof(out->artist));
    copyright_tag(data, out->copyright, sizeof(out->copyright));
    ascii_tag(data, EXIF_IFD_EXIF, EXIF_TAG_DATE_TIME_ORIGINAL, out->taken, sizeof(out->taken));
    exif_data_unref(data);
    return out->has_gps ? CEXIF_GPS : CEXIF_NO_GPS;
}

int cexif_read_file(const char *path, cexif_info *out) {
    memset(out, 0, sizeof(*out));
    // O_NONBLOCK: a FIFO must not hang the scan (the caller also skips what is not a regular file).
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        out->error_number = errno;
        return CEXIF_CANNOT_OPEN;
    }
    ExifLoader *loader = exif_loader_new();
    if (loader == NULL) {
        close(fd);
        return CEXIF_NO_MEMORY;
    }
    unsigned char chunk[4096];
    size_t total = 0;
    int result = 0;
    while (total < CEXIF_HEAD_LIMIT) {
        ssize_t got = read(fd, chunk, sizeof(chunk));
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            out->error_number = errno;
            result = CEXIF_CANNOT_READ;
            break;
        }
        if (got == 0 || !exif_loader_write(loader, chunk, (unsigned int)got)) {
            break;
        }
        total += (size_t)got;
    }
    close(fd);
    if (result == 0) {
        result = interpret(loader, out);
    }
    exif_loader_unref(loader);
    return result;
}

int cexif_read_data(const unsigned char *data, size_t length, cexif_info *out) {
    memset(out, 0, sizeof(*out));
    ExifLoader *loader = exif_loader_new();
    if (loader == NULL) {
        return CEXIF_NO_MEMORY;
    }
    size_t offset = 0;
    size_t limit = length < CEXIF_HEAD_LIMIT ? length : CEXIF_HEAD_LIMIT;
    while (offset < limit) {
        size_t count = limit - offset < 4096 ? limit - offset : 4096;
        // exif_loader_write only reads from the buffer; its parameter is not const for historical reasons.
        if (!exif_loader_write(loader, (unsigned char *)(data + offset), (unsigned int)count)) {
            break;
        }
        offset += count;
    }
    int result = interpret(loader, out);
    exif_loader_unref(loader);
    return result;
}
