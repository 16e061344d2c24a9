#include "CExifShim.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libexif/exif-data.h>
#include <libexif/exif-utils.h>

// The EXIF and XMP segments sit before the image data; reading stops here even if the segments go on.
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

// A GPSLatitude/GPSLongitude value: up to three rationals (degrees, minutes, seconds), or why it is unusable.
static int coordinate(ExifData *data, ExifTag value_tag, ExifTag ref_tag, char positive, char negative,
                      double *degrees) {
    ExifEntry *value = entry(data, EXIF_IFD_GPS, value_tag);
    ExifEntry *ref = entry(data, EXIF_IFD_GPS, ref_tag);
    if (value == NULL || ref == NULL) {
        return CEXIF_NO_GPS;
    }
    if (value->format != EXIF_FORMAT_RATIONAL || value->components < 1 || value->size < 8 * value->components
        || ref->format != EXIF_FORMAT_ASCII) {
        return CEXIF_OUT_OF_RANGE;
    }
    ExifByteOrder order = exif_data_get_byte_order(data);
    static const double scale[3] = {1.0, 60.0, 3600.0};
    double sum = 0;
    unsigned long parts = value->components < 3 ? value->components : 3;
    for (unsigned long i = 0; i < parts; i++) {
        ExifRational r = exif_get_rational(value->data + 8 * i, order);
        if (r.denominator == 0) {
            return CEXIF_OUT_OF_RANGE;
        }
        sum += ((double)r.numerator / (double)r.denominator) / scale[i];
    }
    char hemisphere = (char)(ref->data[0] & ~0x20);  // upper case
    if (hemisphere != positive && hemisphere != negative) {
        return CEXIF_OUT_OF_RANGE;
    }
    *degrees = hemisphere == positive ? sum : -sum;
    return CEXIF_GPS;
}

// Fills the position when both coordinates are usable; the worse verdict of the two otherwise.
static int place(double lat, int lat_verdict, double lon, int lon_verdict, cexif_info *out) {
    if (lat_verdict == CEXIF_NO_GPS || lon_verdict == CEXIF_NO_GPS) {
        return CEXIF_NO_GPS;
    }
    if (lat_verdict != CEXIF_GPS || lon_verdict != CEXIF_GPS || !isfinite(lat) || !isfinite(lon) || fabs(lat) > 90
        || fabs(lon) > 180) {
        return CEXIF_OUT_OF_RANGE;
    }
    // Exactly 0/0 is what cameras write when they had no fix, not a photo in the Gulf of Guinea.
    if (lat == 0 && lon == 0) {
        return CEXIF_GPS_VOID;
    }
    out->has_gps = true;
    out->latitude = lat;
    out->longitude = lon;
    return CEXIF_GPS;
}

static int read_gps(ExifData *data, cexif_info *out) {
    // GPSStatus "V" marks a void measurement (receiver without a fix).
    ExifEntry *status = entry(data, EXIF_IFD_GPS, EXIF_TAG_GPS_STATUS);
    if (status != NULL && status->format == EXIF_FORMAT_ASCII && (status->data[0] & ~0x20) == 'V') {
        return CEXIF_GPS_VOID;
    }
    double lat = 0, lon = 0;
    int lat_verdict = coordinate(data, EXIF_TAG_GPS_LATITUDE, EXIF_TAG_GPS_LATITUDE_REF, 'N', 'S', &lat);
    int lon_verdict = coordinate(data, EXIF_TAG_GPS_LONGITUDE, EXIF_TAG_GPS_LONGITUDE_REF, 'E', 'W', &lon);
    return place(lat, lat_verdict, lon, lon_verdict, out);
}

// A TIFF header ("II*\0" or "MM\0*") whose first IFD starts inside the block: what libexif needs to read
// anything. libexif reports nothing when it cannot, so this is checked here.
static bool has_tiff_header(const unsigned char *block, size_t size) {
    if (size < 6 + 8) {
        return false;
    }
    const unsigned char *tiff = block + 6;
    size_t tiff_size = size - 6;
    bool little = memcmp(tiff, "II*\0", 4) == 0;
    if (!little && memcmp(tiff, "MM\0*", 4) != 0) {
        return false;
    }
    uint32_t first = little ? (uint32_t)tiff[4] | (uint32_t)tiff[5] << 8 | (uint32_t)tiff[6] << 16
                                  | (uint32_t)tiff[7] << 24
                            : (uint32_t)tiff[4] << 24 | (uint32_t)tiff[5] << 16 | (uint32_t)tiff[6] << 8
                                  | (uint32_t)tiff[7];
    return first >= 8 && (size_t)first + 2 <= tiff_size;
}

// Reads an APP1 Exif payload ("Exif\0\0" and the TIFF block). `cut`: the segment runs past the data read.
static int read_exif(const unsigned char *block, size_t size, bool cut, cexif_info *out) {
    if (!has_tiff_header(block, size)) {
        return CEXIF_UNREADABLE;
    }
    ExifData *data = exif_data_new();
    if (data == NULL) {
        return CEXIF_NO_MEMORY;
    }
    // Read what the file says: no tags added or "fixed" to the specification's defaults.
    exif_data_unset_option(data, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION);
    exif_data_load_data(data, block, (unsigned int)size);
    int verdict = read_gps(data, out);
    ascii_tag(data, EXIF_IFD_0, EXIF_TAG_IMAGE_DESCRIPTION, out->title, sizeof(out->title));
    if (out->title[0] == '\0') {
        xp_title_tag(data, out->title, sizeof(out->title));
    }
    ascii_tag(data, EXIF_IFD_0, EXIF_TAG_ARTIST, out->artist, sizeof(out->artist));
    copyright_tag(data, out->copyright, sizeof(out->copyright));
    ascii_tag(data, EXIF_IFD_EXIF, EXIF_TAG_DATE_TIME_ORIGINAL, out->taken, sizeof(out->taken));
    exif_data_unref(data);
    // A block cut short may have lost its GPS tags: that is not "no GPS".
    return cut && verdict == CEXIF_NO_GPS ? CEXIF_UNREADABLE : verdict;
}

// MARK: XMP

// Finds `needle` in [from, end); NULL if absent.
static const unsigned char *find(const unsigned char *from, const unsigned char *end, const char *needle) {
    size_t length = strlen(needle);
    for (const unsigned char *at = from; at < end && (size_t)(end - at) >= length; at++) {
        if (*at == (unsigned char)needle[0] && memcmp(at, needle, length) == 0) {
            return at;
        }
    }
    return NULL;
}

// The value of XMP property `prefix:name`, as an attribute (name="v") or an element (<name>v<), into `value`.
static bool xmp_property(const unsigned char *xmp, size_t size, const char *prefix, const char *name, char *value,
                         size_t capacity) {
    char qualified[80];
    if ((size_t)snprintf(qualified, sizeof(qualified), "%s:%s", prefix, name) >= sizeof(qualified)) {
        return false;
    }
    const unsigned char *end = xmp + size;
    size_t length = strlen(qualified);
    for (const unsigned char *at = find(xmp, end, qualified); at != NULL; at = find(at + 1, end, qualified)) {
        // Whole names only: "exif:GPSLatitude" must not match "exif:GPSLatitudeRef" or "myexif:GPSLatitude".
        if (at == xmp || !(at[-1] == '<' || at[-1] == ' ' || at[-1] == '\t' || at[-1] == '\n' || at[-1] == '\r')) {
            continue;
        }
        const unsigned char *p = at + length;
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) {
            p++;
        }
        unsigned char close;
        if (at[-1] == '<' && p < end && *p == '>') {
            close = '<';
        } else if (at[-1] != '<' && p + 1 < end && *p == '=' && (p[1] == '"' || p[1] == '\'')) {
            close = p[1];
            p++;
        } else {
            continue;
        }
        p++;
        const unsigned char *stop = memchr(p, close, (size_t)(end - p));
        if (stop == NULL || (size_t)(stop - p) >= capacity) {
            return false;
        }
        memcpy(value, p, (size_t)(stop - p));
        value[stop - p] = '\0';
        return true;
    }
    return false;
}

// The prefix the packet binds to the EXIF namespace (xmlns:exif="http://ns.adobe.com/exif/1.0/" as a rule).
static bool xmp_exif_prefix(const unsigned char *xmp, size_t size, char *prefix, size_t capacity) {
    static const char namespace[] = "http://ns.adobe.com/exif/1.0/";
    const unsigned char *end = xmp + size;
    for (const unsigned char *at = find(xmp, end, "xmlns:"); at != NULL; at = find(at + 1, end, "xmlns:")) {
        const unsigned char *name = at + 6;
        const unsigned char *equals = name;
        while (equals < end && (size_t)(equals - name) < capacity
               && (isalnum(*equals) || *equals == '_' || *equals == '-')) {
            equals++;
        }
        size_t length = (size_t)(equals - name);
        if (length == 0 || length >= capacity || end - equals < (ptrdiff_t)sizeof(namespace) + 2 || *equals != '='
            || (equals[1] != '"' && equals[1] != '\'') || memcmp(equals + 2, namespace, sizeof(namespace) - 1) != 0
            || equals[2 + sizeof(namespace) - 1] != equals[1]) {
            continue;
        }
        memcpy(prefix, name, length);
        prefix[length] = '\0';
        return true;
    }
    return false;
}

// An unsigned decimal number ("51", "30.123") at *text, without strtod's locale. NAN if none.
static double decimal(const char **text) {
    const char *p = *text;
    double value = 0, scale = 1;
    bool digits = false, point = false;
    for (; (*p >= '0' && *p <= '9') || (*p == '.' && !point); p++) {
        if (*p == '.') {
            point = true;
        } else if (point) {
            scale /= 10;
            value += (*p - '0') * scale;
            digits = true;
        } else {
            value = value * 10 + (*p - '0');
            digits = true;
        }
    }
    *text = p;
    return digits ? value : NAN;
}

// An XMP GPSCoordinate: "DDD,MM,SSk" or "DDD,MM.mmk" (XMP Specification Part 2, EXIF schema), k one of the
// two hemisphere letters.
static int xmp_coordinate(const char *text, char positive, char negative, double *degrees) {
    while (*text == ' ' || *text == '\t' || *text == '\n' || *text == '\r') {
        text++;
    }
    static const double scale[3] = {1.0, 60.0, 3600.0};
    double sum = 0;
    for (int part = 0; part < 3; part++) {
        double value = decimal(&text);
        if (isnan(value)) {
            return CEXIF_OUT_OF_RANGE;
        }
        sum += value / scale[part];
        if (*text != ',') {
            break;
        }
        text++;
    }
    char hemisphere = (char)(*text & ~0x20);
    if (hemisphere != positive && hemisphere != negative) {
        return CEXIF_OUT_OF_RANGE;
    }
    for (text++; *text == ' ' || *text == '\t' || *text == '\n' || *text == '\r'; text++) {
    }
    if (*text != '\0') {
        return CEXIF_OUT_OF_RANGE;
    }
    *degrees = hemisphere == positive ? sum : -sum;
    return CEXIF_GPS;
}

// The position in an XMP packet's exif:GPSLatitude/exif:GPSLongitude (exif:GPSStatus V: void).
static int read_xmp(const unsigned char *xmp, size_t size, cexif_info *out) {
    char prefix[32];
    if (!xmp_exif_prefix(xmp, size, prefix, sizeof(prefix))) {
        return CEXIF_NO_GPS;
    }
    char status[8], lat_text[64], lon_text[64];
    if (xmp_property(xmp, size, prefix, "GPSStatus", status, sizeof(status)) && (status[0] & ~0x20) == 'V') {
        return CEXIF_GPS_VOID;
    }
    bool has_lat = xmp_property(xmp, size, prefix, "GPSLatitude", lat_text, sizeof(lat_text));
    bool has_lon = xmp_property(xmp, size, prefix, "GPSLongitude", lon_text, sizeof(lon_text));
    double lat = 0, lon = 0;
    int lat_verdict = has_lat ? xmp_coordinate(lat_text, 'N', 'S', &lat) : CEXIF_NO_GPS;
    int lon_verdict = has_lon ? xmp_coordinate(lon_text, 'E', 'W', &lon) : CEXIF_NO_GPS;
    return place(lat, lat_verdict, lon, lon_verdict, out);
}

// MARK: JPEG segments

static const char exif_signature[6] = {'E', 'x', 'i', 'f', 0, 0};
static const char xmp_signature[] = "http://ns.adobe.com/xap/1.0/";  // and its NUL

// The first APP1 Exif and APP1 XMP segments' payloads, as far as the data holds them.
typedef struct {
    const unsigned char *exif;
    size_t exif_size;
    bool exif_cut;  // the Exif segment runs past the data
    const unsigned char *xmp;
    size_t xmp_size;
} segments;

// Walks the markers from SOI to SOS (APPn, COM, tables, in any order). Returns true when done (the image
// data, the end, or bytes that are no marker); false when a segment runs past `size` and more data could
// follow (`at_end` false). Lengths are never trusted past `size`.
static bool find_segments(const unsigned char *data, size_t size, bool at_end, segments *found) {
    memset(found, 0, sizeof(*found));
    if (size < 2) {
        return at_end;
    }
    if (data[0] != 0xFF || data[1] != 0xD8) {
        return true;
    }
    size_t at = 2;
    for (;;) {
        if (at >= size) {
            return at_end;
        }
        if (data[at] != 0xFF) {
            return true;
        }
        while (at < size && data[at] == 0xFF) {  // fill bytes
            at++;
        }
        if (at + 2 >= size) {
            return at_end;
        }
        unsigned char marker = data[at++];
        if (marker == 0xDA || marker == 0xD9 || marker == 0x00) {  // SOS, EOI, or a stuffed byte: no header here
            return true;
        }
        if (marker == 0x01 || marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7)) {  // no length
            continue;
        }
        size_t length = (size_t)data[at] << 8 | data[at + 1];
        if (length < 2) {
            return true;
        }
        const unsigned char *payload = data + at + 2;
        size_t available = size - at - 2;
        size_t payload_size = length - 2;
        bool whole = payload_size <= available;
        if (marker == 0xE1) {
            size_t head = payload_size < available ? payload_size : available;
            if (found->exif == NULL && head >= sizeof(exif_signature)
                && memcmp(payload, exif_signature, sizeof(exif_signature)) == 0) {
                if (!whole && !at_end) {
                    return false;
                }
                found->exif = payload;
                found->exif_size = head;
                found->exif_cut = !whole;
            } else if (found->xmp == NULL && head >= sizeof(xmp_signature)
                       && memcmp(payload, xmp_signature, sizeof(xmp_signature)) == 0 && whole) {
                found->xmp = payload + sizeof(xmp_signature);
                found->xmp_size = payload_size - sizeof(xmp_signature);
            } else if (head < sizeof(xmp_signature) && !whole && !at_end) {
                return false;  // cannot tell yet what this APP1 holds
            }
        }
        if (!whole) {
            return at_end;
        }
        at += length;
    }
}

// EXIF first; XMP where EXIF gives no position, or where only XMP says why there is none.
static int interpret(const segments *found, cexif_info *out) {
    int verdict = CEXIF_NO_EXIF;
    if (found->exif != NULL) {
        verdict = read_exif(found->exif, found->exif_size, found->exif_cut, out);
        if (verdict == CEXIF_GPS || verdict == CEXIF_NO_MEMORY) {
            return verdict;
        }
    }
    if (found->xmp != NULL) {
        int xmp_verdict = read_xmp(found->xmp, found->xmp_size, out);
        if (xmp_verdict == CEXIF_GPS
            || ((xmp_verdict == CEXIF_GPS_VOID || xmp_verdict == CEXIF_OUT_OF_RANGE)
                && (verdict == CEXIF_NO_EXIF || verdict == CEXIF_NO_GPS))) {
            return xmp_verdict;
        }
    }
    return verdict;
}

int cexif_read_file(const char *path, cexif_info *out) {
    memset(out, 0, sizeof(*out));
    // O_NONBLOCK: a FIFO must not hang the scan (the caller also skips what is not a regular file).
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        out->error_number = errno;
        return CEXIF_CANNOT_OPEN;
    }
    unsigned char *head = malloc(CEXIF_HEAD_LIMIT);
    if (head == NULL) {
        close(fd);
        return CEXIF_NO_MEMORY;
    }
    // Reads on until the segments before the image data are all in, the file ends or the limit is reached.
    size_t size = 0;
    segments found;
    int result = 0;
    for (;;) {
        ssize_t got = read(fd, head + size, CEXIF_HEAD_LIMIT - size < 65536 ? CEXIF_HEAD_LIMIT - size : 65536);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            out->error_number = errno;
            result = CEXIF_CANNOT_READ;
            break;
        }
        size += (size_t)got;
        if (find_segments(head, size, got == 0 || size == CEXIF_HEAD_LIMIT, &found)) {
            result = interpret(&found, out);
            break;
        }
    }
    close(fd);
    free(head);
    return result;
}

int cexif_read_data(const unsigned char *data, size_t length, cexif_info *out) {
    memset(out, 0, sizeof(*out));
    size_t size = length < CEXIF_HEAD_LIMIT ? length : CEXIF_HEAD_LIMIT;
    segments found;
    find_segments(data, size, true, &found);
    return interpret(&found, out);
}
