// A narrow view of libexif for Swift: one call fills one plain struct; no ExifData pointer leaves C.
// Only the tags fieldlog needs for a milestone photo: where it was taken and how to credit it. The shim finds
// the APP1 Exif segment itself (libexif's loader gives up at APPn segments it does not know, such as
// Photoshop's APP12 "Ducky"), and falls back to an APP1 XMP packet's exif:GPSLatitude/exif:GPSLongitude.
#ifndef CEXIFSHIM_H
#define CEXIFSHIM_H

#include <stdbool.h>
#include <stddef.h>

enum {
    CEXIF_TEXT_CAPACITY = 256,  // bytes per text field, NUL included; longer text is cut at a UTF-8 boundary
};

/// What a JPEG's EXIF says. Text is UTF-8 (control characters replaced by spaces, trimmed), "" when absent.
typedef struct {
    bool has_gps;       // a usable position (EXIF, else XMP): both coordinates with their hemispheres, in range
    double latitude;    // degrees, south negative; 0 unless has_gps
    double longitude;   // degrees, west negative
    char title[CEXIF_TEXT_CAPACITY];      // ImageDescription, else XPTitle (Windows, UTF-16)
    char artist[CEXIF_TEXT_CAPACITY];     // Artist
    char copyright[CEXIF_TEXT_CAPACITY];  // Copyright (the photographer's part, else the editor's)
    char taken[32];     // DateTimeOriginal as written, "YYYY:MM:DD HH:MM:SS"
    int error_number;   // errno when the result is CEXIF_CANNOT_OPEN or CEXIF_CANNOT_READ
} cexif_info;

enum {
    CEXIF_CANNOT_READ = -3,  // read(2) failed; see error_number
    CEXIF_NO_MEMORY = -2,
    CEXIF_CANNOT_OPEN = -1,  // see error_number
    CEXIF_GPS = 0,           // a usable position (and whatever attribution the EXIF has)
    CEXIF_NO_GPS = 1,        // EXIF (or XMP) without both coordinates and their references
    CEXIF_NO_EXIF = 2,       // no EXIF segment and no XMP position (or not a JPEG)
    CEXIF_UNREADABLE = 3,    // an EXIF segment without a valid TIFF header, or cut short before any GPS tags
    CEXIF_GPS_VOID = 4,      // GPSStatus V (no fix), or exactly 0/0
    CEXIF_OUT_OF_RANGE = 5,  // a coordinate beyond 90/180 degrees, with a zero denominator, a wrong type or a
                             // hemisphere other than N/S, E/W
};
// Attribution fields are filled whenever the EXIF has them, whatever the result.

/// Reads the EXIF and XMP segments of the JPEG at `path` (at most its first MiB, never the image data).
int cexif_read_file(const char *path, cexif_info *out);
/// The same for a JPEG in memory.
int cexif_read_data(const unsigned char *data, size_t length, cexif_info *out);

#endif
